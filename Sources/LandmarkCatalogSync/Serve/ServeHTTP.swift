internal import CCurl
import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// A `413` to a request whose caller splits its body (``ServeHTTP/request(_:_:body:contentType:extraHeaders:ifNoneMatch:longPoll:splitsTooLarge:)``):
/// nothing of it was written.
struct ServeBodyTooLarge: Error {}

/// A 2xx answer's body, spooled to an anonymous file (closed when released).
final class ServeBody {
    let fd: Int32
    let bytes: Int64
    /// The answer's headers, names lowercased.
    let headers: [String: String]

    init(fd: Int32, bytes: Int64, headers: [String: String] = [:]) {
        self.fd = fd
        self.bytes = bytes
        self.headers = headers
    }

    deinit { close(fd) }

    /// The whole body (answers are pages: at most a few MB).
    /// - Throws: 74 when the spool file cannot be read.
    func data() throws -> Data {
        var out = Data(count: Int(bytes))
        let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress, Int(bytes), 0) }
        guard n == Int(bytes) else { throw CatalogError(.ioError, "cannot read a spooled answer (\(String(cString: strerror(errno))))") }
        return out
    }
}

/// One request to a serve on libcurl, with the bearer token (RFC 6750) and the run's limits; statuses
/// mapped to exit statuses (docs/protocol.md §9).
///
/// The token is never put in a message.
struct ServeHTTP {
    let token: String
    let name: String
    let options: SyncOptions

    /// Makes one request.
    ///
    /// - Parameters:
    ///   - method: `GET` or `POST`.
    ///   - url: the whole URL.
    ///   - body: a POST's body.
    ///   - contentType: the body's media type (JSON unless said).
    ///   - extraHeaders: more request headers, each `Name: value`.
    ///   - ifNoneMatch: an entity tag to send as `If-None-Match` (RFC 9110 §13.1.2).
    ///   - longPoll: a long-poll's wait (s), added to the time limit.
    ///   - splitsTooLarge: the caller splits a body the server refuses as too large: a 413 throws
    ///     ``ServeBodyTooLarge`` instead of a `CatalogError`.
    /// - Returns: the 2xx answer's body, or nil for a 304 to `ifNoneMatch`.
    /// - Throws: `CatalogError` — 77 for 401 (the token refused) and 403 (rows the token may not write);
    ///   65 for another 4xx (the answer names the field); 69 for no connection, a timeout, 429 or 5xx, and a
    ///   transfer ended by ``SyncOptions/cancellation``.
    func request(
        _ method: String, _ url: String, body: [UInt8]? = nil, contentType: String = "application/json", extraHeaders: [String] = [],
        ifNoneMatch: String? = nil, longPoll: Double = 0, splitsTooLarge: Bool = false
    ) throws -> ServeBody? {
        let easy = try CurlEasy()
        try easy.set(CURLOPT_URL, url, "CURLOPT_URL")
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https", "CURLOPT_PROTOCOLS_STR")
        try easy.set(CURLOPT_NOSIGNAL, 1, "CURLOPT_NOSIGNAL")
        try easy.set(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
        try easy.set(CURLOPT_ACCEPT_ENCODING, "gzip", "CURLOPT_ACCEPT_ENCODING")
        try easy.set(CURLOPT_USERAGENT, "catalog/\(CatalogVersion.string)", "CURLOPT_USERAGENT")
        try easy.set(CURLOPT_TIMEOUT_MS, max(1, Int((options.timeoutSeconds + longPoll) * 1000)), "CURLOPT_TIMEOUT_MS")
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(min(options.timeoutSeconds, 10) * 1000)), "CURLOPT_CONNECTTIMEOUT_MS")
        // Errors come as JSON whatever the body's type (docs/protocol.md §1).
        let accept = contentType == "application/json" ? contentType : contentType + ", application/json"
        var headers = ["Accept: \(accept)", "Authorization: Bearer \(token)"] + extraHeaders
        if body != nil { headers.append("Content-Type: \(contentType)") }
        if let ifNoneMatch { headers.append("If-None-Match: \(ifNoneMatch)") }
        try easy.setHeaders(headers)
        let payload = body ?? []
        let fd = try Spool.makeAnonymousFile(in: NSTemporaryDirectory())
        var keep = false
        defer { if !keep { close(fd) } }
        let transfer = HTTPTransfer(fd: fd, maxBytes: options.maxBytes)
        // serve's refusals say why in a small JSON body (a revoked token, a field): kept to quote it.
        transfer.errorBodyLimit = 4096
        try transfer.install(on: easy)
        try easy.install(cancellation: options.cancellation)
        let code = try payload.withUnsafeBufferPointer { buffer -> CURLcode in
            if body != nil {
                try easy.set(CURLOPT_POST, 1, "CURLOPT_POST")
                try easy.set(CURLOPT_POSTFIELDSIZE, buffer.count, "CURLOPT_POSTFIELDSIZE")
                try easy.set(CURLOPT_POSTFIELDS, pointer: UnsafeMutableRawPointer(mutating: buffer.baseAddress), "CURLOPT_POSTFIELDS")
            } else {
                try easy.set(CURLOPT_HTTPGET, 1, "CURLOPT_HTTPGET")
            }
            return withExtendedLifetime(transfer) { easy.perform() }
        }
        let requestName = "\(method) \(redactedURL(url))"
        if code == CURLE_ABORTED_BY_CALLBACK { throw HTTPClient.stopped(requestName) }
        let status = transfer.status
        if (200..<300).contains(status), code == CURLE_OK {
            keep = true
            return ServeBody(fd: fd, bytes: transfer.bodyBytes, headers: transfer.headers)
        }
        if status == 304, ifNoneMatch != nil, code == CURLE_OK { return nil }
        guard status != 0 else {
            throw CatalogError(
                .unavailable, "source unavailable: \(easy.describe(code)), \(requestName)",
                hint: "the server is down or unreachable; the next run retries")
        }
        if status == 413, splitsTooLarge { throw ServeBodyTooLarge() }
        let detail = transfer.headers["www-authenticate"].map { " (\($0))" } ?? ""
        // The server's own words (docs/protocol.md §1: every error has a JSON body), e.g. "the token has expired".
        let said = Self.errorMessage(fd: fd).map { ": \($0)" } ?? ""
        switch status {
        case 401:
            throw CatalogError(
                .untrusted, "the server refused the bearer token\(said): HTTP 401\(detail), \(requestName)",
                hint:
                    "the token may have expired (exp), been revoked (catalog token revoke) or be signed by a key the server does not trust; put a fresh one in the token file"
            )
        case 403:
            throw CatalogError(
                .untrusted, "the token may not write these rows\(said): HTTP 403, nothing of that request was written, \(requestName)",
                hint: "a user token writes only its user's row; a server node needs an edge token (catalog token issue --scope edge)")
        case 404:
            throw CatalogError(
                .unavailable, "source unavailable: HTTP 404, \(requestName)", hint: "check the URL: catalog+https://HOST/v1, the serve's /v1")
        case 429, 500...599:
            throw CatalogError(.unavailable, "source unavailable: HTTP \(status), \(requestName)", hint: "the next run retries")
        default:
            throw CatalogError(.dataInvalid, "the server refused the request\(said): HTTP \(status), \(requestName)")
        }
    }

    /// The `error.message` of an error answer's JSON body in `fd` (its first 4 KiB), on one line.
    ///
    /// Nil when there is none. A server's text is shown, never a token (serve's messages hold none).
    static func errorMessage(fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0, let object = try? JSONSerialization.jsonObject(with: Data(buffer[0..<n])) as? [String: Any],
            let message = (object["error"] as? [String: Any])?["message"] as? String, !message.isEmpty
        else { return nil }
        let line = message.split(whereSeparator: \.isNewline).joined(separator: " ")
        return String(line.prefix(200))
    }
}
