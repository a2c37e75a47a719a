internal import CCurl
import Foundation
import LandmarkCatalog

/// Bounds on one `HTTPClient.get`: time, size and retries.
struct HTTPLimits: Sendable {
    /// Seconds: the connect timeout (CURLOPT_CONNECTTIMEOUT_MS), and how long the transfer may run below
    /// 1024 bytes/s before it is abandoned (CURLOPT_LOW_SPEED_LIMIT / CURLOPT_LOW_SPEED_TIME; libcurl
    /// takes whole seconds, so this is rounded up).
    ///
    /// Must be > 0.
    var stallTimeout: Double = 30
    /// Seconds for the whole fetch of one URL: every attempt, backoff and `Retry-After` wait included.
    ///
    /// Each attempt gets what is left as CURLOPT_TIMEOUT_MS. Must be > 0.
    var deadline: Double = 300
    /// Largest decoded body accepted, in bytes (after `Content-Encoding: gzip` is undone), counted as the
    /// bytes arrive.
    ///
    /// Must be ≥ 0.
    var maxBytes: Int64 = 1 << 30
    /// Retries after the first attempt, on 429, 5xx, and a connection that broke before any body byte
    /// arrived.
    ///
    /// Must be ≥ 0.
    var retries: Int = 3
    /// Seconds before the first retry; each later one waits twice as long as the one before (±10 %
    /// jitter).
    ///
    /// A `Retry-After` replaces it. Must be ≥ 0.
    var backoff: Double = 0.5
    /// Longest `Retry-After` honoured, in seconds: a server asking for more is retried after this long.
    ///
    /// Must be ≥ 0.
    var maxRetryAfter: Double = 60
    /// Ends the fetch early, its transfer and its waits between retries (a follower stopping).
    var cancellation: TransferCancellation?
}

/// What a GET produced.
enum HTTPOutcome: Sendable {
    /// 304 Not Modified (RFC 9110 §15.4.5): the validators sent still match; there is no body.
    case notModified
    /// A 2xx response; its decoded body is in an anonymous spool file.
    case fetched(HTTPBody)
}

/// A downloaded body: an anonymous temporary file and what is known about its content.
///
/// The file was unlinked as soon as it was created, so nothing is left on disk however the process ends;
/// its space is freed when `fd` is closed, which `deinit` does. Read it with `read(2)` from offset 0
/// (where `fd` is positioned) or `pread(2)`; do not close `fd` yourself.
final class HTTPBody: Sendable {
    /// The spool file, open read-write, positioned at offset 0.
    ///
    /// Closed by `deinit`.
    let fd: Int32
    /// Size of the decoded body in bytes.
    let bytes: Int64
    /// SHA-256 (32 bytes) of the decoded body, computed while it was written.
    let sha256: [UInt8]
    /// Validators to send with the next request for this URL (a weak `Last-Modified` is left out).
    let validators: HTTPValidators
    /// The `Content-Type` header, if the server sent one.
    let contentType: String?

    /// Takes ownership of `fd`.
    init(fd: Int32, bytes: Int64, sha256: [UInt8], validators: HTTPValidators, contentType: String?) {
        self.fd = fd
        self.bytes = bytes
        self.sha256 = sha256
        self.validators = validators
        self.contentType = contentType
    }

    deinit { close(fd) }
}

/// A GET-only HTTP(S) client on libcurl for catalog sources.
///
/// - Only `http://` and `https://`, for the URL and every redirect (CURLOPT_PROTOCOLS_STR,
///   CURLOPT_REDIR_PROTOCOLS_STR); at most 5 redirects (CURLOPT_MAXREDIRS).
/// - Conditional GET from stored validators (RFC 9110 §13.1); `Accept-Encoding: gzip`
///   (CURLOPT_ACCEPT_ENCODING), decoded by libcurl; `User-Agent: catalog/<version>`;
///   `Accept: application/json`. TLS peer and host verification stay on (libcurl's defaults, set
///   explicitly).
/// - The body goes to an anonymous spool file, hashed with SHA-256 on the way, its decoded size checked
///   against `maxBytes` chunk by chunk: a gzip bomb or an endless stream is stopped at the limit.
/// - Retries on 429, 5xx, and a connection that broke before any body byte arrived (reset, closed with
///   no response), with exponential backoff or the server's `Retry-After` (RFC 9110 §10.2.3). A
///   connection that breaks after part of the body is not retried (the server may be failing mid-way
///   every time; the next sync run tries again). A refused connection is not retried either.
/// - Everything within `deadline`; passwords in the URL never appear in messages (`redactedURL`).
///
/// A value type holding only settings: use it from any thread, concurrently. Each `get` uses its own
/// libcurl easy handle (CURLOPT_NOSIGNAL set, as threaded programs need).
struct HTTPClient: Sendable {
    /// The limits every `get` runs under.
    let limits: HTTPLimits
    /// Where spool files are created (and at once unlinked).
    let spoolDirectory: String
    /// Creates a spool file in the given directory; tests replace it (e.g., with `/dev/full`).
    var makeSpoolFile: @Sendable (String) throws -> Int32 = { try Spool.makeAnonymousFile(in: $0) }

    /// - Parameters:
    ///   - limits: must satisfy the bounds documented on `HTTPLimits` (traps otherwise: a bug).
    ///   - spoolDirectory: an existing directory; by default `$TMPDIR` or `/tmp` (`NSTemporaryDirectory()`).
    init(limits: HTTPLimits, spoolDirectory: String = NSTemporaryDirectory()) {
        precondition(
            limits.stallTimeout > 0 && limits.deadline > 0 && limits.stallTimeout.isFinite && limits.deadline.isFinite,
            "HTTPLimits: timeouts must be positive and finite")
        precondition(limits.maxBytes >= 0 && limits.retries >= 0, "HTTPLimits: maxBytes and retries must be ≥ 0")
        precondition(limits.backoff >= 0 && limits.maxRetryAfter >= 0, "HTTPLimits: delays must be ≥ 0")
        self.limits = limits
        self.spoolDirectory = spoolDirectory
    }

    /// GETs `url`, conditionally when `validators` has any.
    ///
    /// - Parameters:
    ///   - url: an `http://` or `https://` URL; user information in it is sent as Basic authentication by
    ///     libcurl and shown as `user:***` in every message.
    ///   - validators: from the previous fetch of this URL, or nil for an unconditional request.
    ///   - log: receives one line per retry (status or failure, attempt, delay in s); passwords redacted.
    /// - Returns: `.notModified` for a 304 to a conditional request; `.fetched` for a 2xx.
    /// - Throws: `CatalogError` —
    ///   `.usage` (64): not an http(s) URL, or a malformed one;
    ///   `.dataInvalid` (65): the body is over `maxBytes` (hint: `--max-bytes`), or its gzip is corrupt;
    ///   `.unavailable` (69): connection or TLS failure, a stall, the deadline, 4xx, 429/5xx after the
    ///   retries or with a `Retry-After` past the deadline, a redirect to another scheme or more than 5
    ///   redirects, a 304 to an unconditional request, a connection broken mid-body;
    ///   `.cantCreate` (73) / `.ioError` (74): the spool file cannot be created / written (disk full);
    ///   `.software` (70): libcurl cannot be initialised or lacks an option this client needs.
    func get(_ url: String, validators: HTTPValidators?, log: (String) -> Void) throws -> HTTPOutcome {
        let secret = urlPassword(url).flatMap { $0.count >= 4 ? $0 : nil }
        // Belt and braces: the messages are built from the redacted URL, but libcurl's own texts are
        // quoted too; no password of four characters or more gets through whatever its origin.
        func scrub(_ text: String) -> String {
            guard let secret else { return text }
            return text.replacingOccurrences(of: secret, with: "***")
        }
        do {
            return try fetch(url, validators: validators) { log(scrub($0)) }
        } catch var error as CatalogError {
            error.message = scrub(error.message)
            error.hint = error.hint.map(scrub)
            throw error
        }
    }

    /// `get` without the final scrubbing: the attempt loop (deadline, retries, backoff, `Retry-After`).
    private func fetch(_ url: String, validators: HTTPValidators?, log: (String) -> Void) throws -> HTTPOutcome {
        let shown = redactedURL(url)
        try Self.checkFetchable(url, shown: shown)
        let sent = HTTPValidators(
            etag: validators?.etag.flatMap(headerSafe),
            lastModified: validators?.lastModified.flatMap(headerSafe))
        let conditional = sent.etag != nil || sent.lastModified != nil

        let easy = try CurlEasy()
        try configure(easy, url: url, validators: sent)
        try easy.install(cancellation: limits.cancellation)
        let fd: Int32
        do {
            fd = try makeSpoolFile(spoolDirectory)
        } catch var error as CatalogError {
            // Name what was being fetched, and where the spool goes.
            error.message += ", \(redactedURL(url))"
            error.hint =
                error.hint ?? "downloads are kept in TMPDIR (\(spoolDirectory)) while they are merged: free space there, or point TMPDIR elsewhere"
            throw error
        }
        var keepFile = false
        defer { if !keepFile { close(fd) } }
        let transfer = HTTPTransfer(fd: fd, maxBytes: limits.maxBytes)
        try transfer.install(on: easy)

        let clock = ContinuousClock()
        let start = clock.now
        func elapsed() -> Double { seconds(clock.now - start) }
        let deadlineText = "did not finish within \(format(limits.deadline)) s"

        var attempt = 0
        while true {
            let budget = limits.deadline - elapsed()
            guard budget > 0 else { throw CatalogError(.unavailable, "source unavailable: \(deadlineText), \(shown)") }
            transfer.reset()
            try easy.set(CURLOPT_TIMEOUT_MS, max(1, Int((budget * 1000).rounded(.up))), "CURLOPT_TIMEOUT_MS")
            try easy.set(
                CURLOPT_CONNECTTIMEOUT_MS, max(1, Int((min(limits.stallTimeout, budget) * 1000).rounded(.up))),
                "CURLOPT_CONNECTTIMEOUT_MS")
            let attemptStart = clock.now
            let code = withExtendedLifetime(transfer) { easy.perform() }
            let attemptTook = seconds(clock.now - attemptStart)

            let retry: Retry
            switch try classify(
                code, easy: easy, transfer: transfer, conditional: conditional, shown: shown,
                timedOutAtDeadline: attemptTook + 0.05 >= budget, deadlineText: deadlineText)
            {
            case .notModified:
                return .notModified
            case .fetched:
                guard lseek(fd, 0, SEEK_SET) == 0 else { throw Spool.error(errno, "cannot rewind the spool file", at: shown) }
                keepFile = true
                return .fetched(
                    HTTPBody(
                        fd: fd, bytes: transfer.bodyBytes, sha256: transfer.hasher.finalize(),
                        validators: responseValidators(transfer.headers),
                        contentType: transfer.headers["content-type"]))
            case .retry(let r):
                retry = r
            }

            let delay = try retryDelay(after: retry, attempt: attempt, left: limits.deadline - elapsed(), shown: shown)
            attempt += 1
            log(
                "\(retry.what) from \(shown); retry \(attempt) of \(limits.retries) in \(format(delay)) s"
                    + (retry.retryAfter != nil ? " (Retry-After)" : ""))
            if let cancellation = limits.cancellation {
                guard cancellation.sleep(seconds: delay) else { throw Self.stopped(shown) }
            } else {
                Thread.sleep(forTimeInterval: delay)
            }
        }
    }

    /// Refuses a URL that is not http(s), or holds spaces or control characters, with 64.
    ///
    /// - Parameters:
    ///   - url: the URL to fetch.
    ///   - shown: how messages name it (no password).
    /// - Throws: `CatalogError` 64.
    private static func checkFetchable(_ url: String, shown: String) throws {
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            throw CatalogError(.usage, "only http:// and https:// URLs can be fetched, \(shown)")
        }
        guard !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7f }) else {
            throw CatalogError(.usage, "malformed URL (spaces or control characters), \(shown)")
        }
    }

    /// How long to wait before retry `attempt + 1`: the server's `Retry-After` (at most `maxRetryAfter`) or
    /// the exponential backoff with ±10 % jitter.
    ///
    /// - Parameters:
    ///   - retry: what failed, and the `Retry-After` asked for.
    ///   - attempt: the attempts made so far, less one.
    ///   - left: seconds left of the deadline.
    ///   - shown: the URL as messages show it (password redacted).
    /// - Returns: the delay in seconds.
    /// - Throws: `CatalogError` 69 when the retries are used up, or the wait would pass the deadline.
    private func retryDelay(after retry: Retry, attempt: Int, left: Double, shown: String) throws -> Double {
        guard attempt < limits.retries else {
            throw CatalogError(.unavailable, "source unavailable: \(retry.what) after \(plural(attempt + 1, "attempt")), \(shown)")
        }
        let delay: Double
        if let asked = retry.retryAfter {
            delay = min(asked, limits.maxRetryAfter)
            guard delay < left else {
                throw CatalogError(
                    .unavailable,
                    "source unavailable: \(retry.what), and the server asked to wait "
                        + "\(format(asked)) s (Retry-After), more than the \(format(left)) s left of the "
                        + "\(format(limits.deadline)) s deadline, \(shown)")
            }
        } else {
            delay = limits.backoff * pow(2, Double(attempt)) * Double.random(in: 0.9...1.1)
            guard delay < left else {
                throw CatalogError(
                    .unavailable,
                    "source unavailable: \(retry.what) after \(plural(attempt + 1, "attempt")); "
                        + "another retry would not finish within the \(format(limits.deadline)) s deadline, \(shown)")
            }
        }
        return delay
    }

    /// The options that stay the same for every attempt.
    private func configure(_ easy: CurlEasy, url: String, validators: HTTPValidators) throws {
        try easy.set(CURLOPT_URL, url, "CURLOPT_URL")
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https", "CURLOPT_PROTOCOLS_STR")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https", "CURLOPT_REDIR_PROTOCOLS_STR")
        try easy.set(CURLOPT_FOLLOWLOCATION, 1, "CURLOPT_FOLLOWLOCATION")
        try easy.set(CURLOPT_MAXREDIRS, Self.maxRedirects, "CURLOPT_MAXREDIRS")
        try easy.set(CURLOPT_HTTPGET, 1, "CURLOPT_HTTPGET")
        try easy.set(CURLOPT_NOSIGNAL, 1, "CURLOPT_NOSIGNAL")
        try easy.set(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
        try easy.set(CURLOPT_ACCEPT_ENCODING, "gzip", "CURLOPT_ACCEPT_ENCODING")
        try easy.set(CURLOPT_USERAGENT, "catalog/\(CatalogVersion.string)", "CURLOPT_USERAGENT")
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, Self.lowSpeedBytesPerSecond, "CURLOPT_LOW_SPEED_LIMIT")
        try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(limits.stallTimeout.rounded(.up))), "CURLOPT_LOW_SPEED_TIME")
        var headers = ["Accept: application/json"]
        if let etag = validators.etag { headers.append("If-None-Match: \(etag)") }
        if let lastModified = validators.lastModified { headers.append("If-Modified-Since: \(lastModified)") }
        try easy.setHeaders(headers)
    }

    /// A fetch ended by its ``HTTPLimits/cancellation``: 69, as any transfer that did not finish.
    ///
    /// - Parameter shown: the URL as messages show it.
    /// - Returns: the error.
    static func stopped(_ shown: String) -> CatalogError {
        CatalogError(.unavailable, "source unavailable: the transfer was stopped (the follower is stopping), \(shown)")
    }

    /// Redirects followed at most (CURLOPT_MAXREDIRS).
    static let maxRedirects = 5
    /// Below this rate (bytes/s) for `stallTimeout` the transfer is abandoned (CURLOPT_LOW_SPEED_LIMIT).
    static let lowSpeedBytesPerSecond = 1024

    /// What to do after an attempt that did not fail for good.
    private enum Attempt {
        case notModified
        case fetched
        case retry(Retry)
    }

    /// A retryable failure: its description (`HTTP 503`) and the `Retry-After` delay (s) if one came.
    private struct Retry {
        var what: String
        var retryAfter: Double?
    }

    /// Decides what one attempt's result means.
    /// - Throws: the `CatalogError` documented on `get` for a failure that is not retried.
    private func classify(
        _ code: CURLcode, easy: CurlEasy, transfer: HTTPTransfer, conditional: Bool, shown: String,
        timedOutAtDeadline: Bool, deadlineText: String
    ) throws -> Attempt {
        func unavailable(_ what: String) -> CatalogError { CatalogError(.unavailable, "source unavailable: \(what), \(shown)") }
        switch transfer.stop {
        case .overLimit(let received):
            throw CatalogError(
                .dataInvalid,
                "the body is over the limit of \(limits.maxBytes) bytes "
                    + "(stopped at \(received) bytes), \(shown)", hint: "raise it with --max-bytes")
        case .contentLengthOverLimit(let length):
            throw CatalogError(
                .dataInvalid,
                "the body is \(length) bytes (Content-Length), over the limit of "
                    + "\(limits.maxBytes) bytes, \(shown)", hint: "raise it with --max-bytes")
        case .spoolWrite(let errno):
            throw Spool.error(errno, "cannot write the body to a spool file in \(spoolDirectory)", at: shown)
        case .unwantedBody, nil:
            break
        }

        switch code {
        case CURLE_ABORTED_BY_CALLBACK:
            throw Self.stopped(shown)
        case CURLE_OK:
            return try statusOutcome(transfer, conditional: conditional, unavailable: unavailable)
        case CURLE_WRITE_ERROR where transfer.stop == .unwantedBody:
            return try statusOutcome(transfer, conditional: conditional, unavailable: unavailable)
        case CURLE_OPERATION_TIMEDOUT:
            if timedOutAtDeadline { throw unavailable(deadlineText) }
            if easy.info(offset: CURLINFO_CONNECT_TIME_T) == 0 {
                throw unavailable("could not connect within \(format(limits.stallTimeout)) s")
            }
            throw unavailable(
                "stalled: fewer than \(Self.lowSpeedBytesPerSecond) bytes/s for "
                    + "\(max(1, Int(limits.stallTimeout.rounded(.up)))) s")
        case CURLE_TOO_MANY_REDIRECTS:
            throw unavailable("too many redirects (more than \(Self.maxRedirects))")
        case CURLE_UNSUPPORTED_PROTOCOL:
            if let location = transfer.redirectLocation, location.contains(":"),
                case let scheme = location.prefix(while: { $0 != ":" && $0 != "/" }).lowercased(),
                scheme != "http", scheme != "https"
            {
                throw unavailable(
                    "redirect to a \(scheme):// URL refused (only http and https are followed): "
                        + redactedURL(location))
            }
            throw unavailable(easy.describe(code))
        case CURLE_URL_MALFORMAT:
            throw CatalogError(.usage, "malformed URL: \(easy.describe(code)), \(shown)")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE:
            guard transfer.bodyBytes == 0 else {
                throw unavailable("the connection broke after \(transfer.bodyBytes) bytes of the body: \(easy.describe(code))")
            }
            return .retry(Retry(what: "connection broken before the body (\(easy.describe(code)))"))
        case CURLE_BAD_CONTENT_ENCODING:
            throw CatalogError(.dataInvalid, "the body cannot be decoded: \(easy.describe(code)), \(shown)")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_USE_SSL_FAILED:
            throw unavailable("TLS failure: \(easy.describe(code))")
        default:
            throw unavailable(easy.describe(code))
        }
    }

    /// What the final response's status means, once its headers (and maybe its body) arrived.
    private func statusOutcome(
        _ transfer: HTTPTransfer, conditional: Bool,
        unavailable: (String) -> CatalogError
    ) throws -> Attempt {
        let status = transfer.status
        let phrase = httpReasonPhrase(status, sent: transfer.reason)
        let statusText = phrase.isEmpty ? "HTTP \(status)" : "HTTP \(status) \(phrase)"
        switch status {
        case 200...299:
            return .fetched
        case 304 where conditional:
            return .notModified
        case 304:
            throw unavailable("answered 304 Not Modified to an unconditional request")
        case 429, 500...599:
            let date = transfer.headers["date"].flatMap(HTTPDate.parse)
            let retryAfter = transfer.headers["retry-after"].flatMap {
                HTTPDate.retryAfterDelay($0, serverDate: date, now: Date().timeIntervalSince1970)
            }
            return .retry(Retry(what: "HTTP \(status)", retryAfter: retryAfter))
        case 300...399:
            throw unavailable("\(statusText) without a usable Location")
        default:
            var error = unavailable(statusText)
            error.httpStatus = status
            throw error
        }
    }

    /// The validators of a 2xx response.
    ///
    /// A `Last-Modified` less than one second before the response's `Date` (or this machine's clock,
    /// without one) is weak (RFC 9110 §8.8.2.2) and left out, as is one that is not an HTTP-date.
    private func responseValidators(_ headers: [String: String]) -> HTTPValidators {
        var lastModified = headers["last-modified"]
        if let text = lastModified {
            let date = headers["date"].flatMap(HTTPDate.parse) ?? Int64(Date().timeIntervalSince1970)
            if let modified = HTTPDate.parse(text), date - modified >= 1 {} else { lastModified = nil }
        }
        return HTTPValidators(etag: headers["etag"].flatMap { $0.isEmpty ? nil : $0 }, lastModified: lastModified)
    }
}

/// `value` if it can go in a request header (no control characters: CR or LF would split it), else nil.
private func headerSafe(_ value: String) -> String? {
    value.isEmpty || value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) ? nil : value
}

/// A duration in seconds.
private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

/// Seconds for a message: `2`, `1.5`, `0.25`.
private func format(_ seconds: Double) -> String {
    let rounded = (seconds * 100).rounded() / 100
    if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int64(rounded)) }
    return String(rounded)
}
