import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

@Suite("HTTPClient: the defects of the URLSession fetcher, each with the input that broke it")
struct HTTPClientTests {
    @Test("conditional GET: validators come back, are sent as If-None-Match / If-Modified-Since, 304 is notModified")
    func conditionalGet() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let first = fetch(server.url("/file"))
        let body = try #require(first.outcome?.body, "\(first.error?.message ?? "")")
        let bytes = contents(body)
        #expect(bytes.count == Int(body.bytes))
        #expect(SHA256.hash(bytes) == body.sha256)
        #expect(body.validators.etag == "\"\(SHA256.hex(body.sha256))\"")  // the server's ETag is the body's SHA-256
        #expect(body.validators.lastModified == "Wed, 01 Jan 2020 00:00:00 GMT")
        #expect(body.contentType == "application/json")
        #expect(lseek(body.fd, 0, SEEK_CUR) == 0)

        let second = fetch(server.url("/file"), validators: body.validators)
        #expect(second.error == nil)
        guard case .notModified = second.outcome else {
            Issue.record("expected 304: \(String(describing: second.outcome))")
            return
        }
        let onlyDate = fetch(server.url("/file"), validators: HTTPValidators(etag: nil, lastModified: body.validators.lastModified))
        guard case .notModified = onlyDate.outcome else {
            Issue.record("If-Modified-Since alone: expected 304")
            return
        }

        let log = try server.log().filter { $0["path"] == "/file" }
        try #require(log.count == 3)
        #expect(log[0]["ifNoneMatch"] == nil && log[0]["ifModifiedSince"] == nil)
        #expect(log[1]["ifNoneMatch"] == body.validators.etag)
        #expect(log[1]["ifModifiedSince"] == "Wed, 01 Jan 2020 00:00:00 GMT")
        #expect(log[2]["ifNoneMatch"] == nil)
        for entry in log {
            #expect(entry["userAgent"] == "catalog/\(CatalogVersion.string)")
            #expect(entry["accept"] == "application/json")
            #expect(entry["acceptEncoding"] == "gzip")
        }
    }

    @Test("a 304 to a request without validators is an error (69), not 'nothing new'")
    func notModifiedUnconditional() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let run = fetch(server.url("/not-modified"))
        #expect(run.error?.kind == .unavailable)
        #expect(run.error?.message.contains("answered 304 Not Modified to an unconditional request") == true)
        #expect(run.error?.message.contains(server.url("/not-modified")) == true)
        let conditional = fetch(server.url("/not-modified"), validators: HTTPValidators(etag: "\"x\"", lastModified: nil))
        guard case .notModified = conditional.outcome else {
            Issue.record("expected notModified")
            return
        }
    }

    @Test("a Last-Modified equal to Date is weak (RFC 9110 §8.8.2.2) and not returned as a validator")
    func weakLastModified() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let run = fetch(server.url("/last-modified-now"))
        let body = try #require(run.outcome?.body)
        #expect(body.validators == HTTPValidators(etag: nil, lastModified: nil))
        #expect(body.bytes > 0)
    }

    @Test("Accept-Encoding: gzip is decoded: the body, its size and its SHA-256 are those of the decoded bytes")
    func gzipBody() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let plain = try #require(fetch(server.url("/file")).outcome?.body)
        let run = fetch(server.url("/gzip-file"))
        let body = try #require(run.outcome?.body, "\(run.error?.message ?? "")")
        #expect(contents(body) == contents(plain))
        #expect(body.bytes == plain.bytes)
        #expect(body.sha256 == plain.sha256)
        #expect(body.validators.etag == "\"\(SHA256.hex(plain.sha256))-gzip\"")
    }

    @Test(
        "bodies up to maxBytes arrive whole, with or without Content-Length or chunking",
        arguments: ["/stream/100000", "/chunked/100000"])
    func atTheLimit(path: String) throws {
        let server = try HostileServer()
        defer { server.stop() }
        let run = fetch(server.url(path), HTTPLimits.tests.with { $0.maxBytes = 100_000 })
        let body = try #require(run.outcome?.body, "\(run.error?.message ?? "")")
        #expect(body.bytes == 100_000)
        #expect(contents(body) == pattern(100_000))
        #expect(body.sha256 == SHA256.hash(pattern(100_000)))
    }

    @Test(
        "decoded bytes are counted as they arrive: over maxBytes is 65 within one chunk of the limit",
        arguments: ["/stream/300000", "/chunked/300000", "/bomb"])
    func overTheLimit(path: String) throws {
        let server = try HostileServer()
        defer { server.stop() }
        let limit: Int64 = 100_000
        let run = fetch(server.url(path), HTTPLimits.tests.with { $0.maxBytes = limit })
        let error = try #require(run.error)
        #expect(error.kind == .dataInvalid)
        #expect(error.message.contains("over the limit of 100000 bytes"), "\(error.message)")
        #expect(error.message.contains(server.url(path)))
        #expect(error.hint == "raise it with --max-bytes")
        // "stopped at N bytes": N counts the chunk that crossed the limit; a chunk is at most 16 KiB.
        let stopped = try #require(error.message.firstMatch(of: /stopped at (\d+) bytes/).flatMap { Int64($0.1) })
        #expect(stopped > limit && stopped <= limit + 16_384)
        #expect(run.seconds < 5)
    }

    @Test("an identity body whose Content-Length is over maxBytes is refused before it is read")
    func contentLengthOverLimit() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let run = fetch(server.url("/file"), HTTPLimits.tests.with { $0.maxBytes = 1000 })
        let error = try #require(run.error)
        #expect(error.kind == .dataInvalid)
        #expect(error.message.contains("18348 bytes (Content-Length), over the limit of 1000 bytes"), "\(error.message)")
        #expect(error.message.contains(server.url("/file")))
        #expect(error.hint == "raise it with --max-bytes")
    }

    @Test("a spool write failing with ENOSPC is 74, not a trap; a missing spool directory is 73")
    func spoolFailures() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let full = fetch(server.url("/file")) { _ in open("/dev/full", O_RDWR | O_CLOEXEC) }
        #expect(full.error?.kind == .ioError)
        #expect(full.error?.message.contains(String(cString: strerror(ENOSPC))) == true, "\(full.error?.message ?? "")")
        #expect(full.error?.message.hasSuffix(server.url("/file")) == true)
        let missing = fetch(server.url("/file")) { _ in try Spool.makeAnonymousFile(in: "/nonexistent/spool") }
        #expect(missing.error?.kind == .cantCreate)
        #expect(missing.error?.message.contains("/nonexistent/spool") == true)
    }

    @Test("the deadline bounds the whole fetch: a drip within the stall limit, and retries with backoff")
    func deadline() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let drip = fetch(
            server.url("/drip"),
            HTTPLimits.tests.with {
                $0.stallTimeout = 10
                $0.deadline = 1.5
            })
        #expect(drip.error?.kind == .unavailable)
        #expect(drip.error?.message.contains("did not finish within 1.5 s") == true, "\(drip.error?.message ?? "")")
        #expect(drip.seconds >= 1.4 && drip.seconds < 4)

        let flaky = fetch(
            server.url("/flaky/100"),
            HTTPLimits.tests.with {
                $0.deadline = 2
                $0.retries = 10
                $0.backoff = 0.3
            })
        #expect(flaky.error?.kind == .unavailable)
        let message = flaky.error?.message ?? ""
        #expect(message.contains("within the 2 s deadline") || message.contains("did not finish within 2 s"), "\(message)")
        #expect(flaky.seconds < 2.5)
        #expect(flaky.log.count >= 2)
    }

    @Test("one byte every 0.5 s ends after about stallTimeout (low-speed limit), not the deadline")
    func drip() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let run = fetch(
            server.url("/drip"),
            HTTPLimits.tests.with {
                $0.stallTimeout = 2
                $0.deadline = 60
            })
        #expect(run.error?.kind == .unavailable)
        #expect(run.error?.message.contains("stalled: fewer than 1024 bytes/s for 2 s") == true, "\(run.error?.message ?? "")")
        #expect(run.seconds >= 1.5 && run.seconds < 10)
    }

    @Test("a connection reset mid-body is 69 and not retried; one reset before any byte is retried")
    func resets() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let mid = fetch(server.url("/reset"), HTTPLimits.tests.with { $0.retries = 3 })
        #expect(mid.error?.kind == .unavailable)
        #expect(mid.error?.message.contains("the connection broke after 1000 bytes of the body") == true, "\(mid.error?.message ?? "")")
        #expect(try server.requests("/reset") == 1)
        #expect(mid.log.isEmpty)

        let early = fetch(server.url("/reset-first/2"))
        #expect(early.outcome?.body != nil, "\(early.error?.message ?? "")")
        #expect(try server.requests("/reset-first/2") == 3)
        #expect(early.log.count == 2)
        #expect(early.log.first?.contains("connection broken before the body") == true)
    }

    @Test("429 and 5xx are retried with backoff, each retry logged; the retries are bounded")
    func retries() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let flaky = fetch(server.url("/flaky/2"))
        #expect(flaky.outcome?.body != nil, "\(flaky.error?.message ?? "")")
        #expect(flaky.log.count == 2)
        // backoff 0.05 s ±10 % jitter, then twice that
        #expect(flaky.log.first?.firstMatch(of: /^HTTP 500 from .*\/flaky\/2; retry 1 of 2 in 0\.0[456] s$/) != nil, "\(flaky.log)")
        #expect(flaky.log.last?.firstMatch(of: /; retry 2 of 2 in 0\.(09|1|11) s$/) != nil, "\(flaky.log)")
        let tooFlaky = fetch(server.url("/flaky/3"))
        #expect(tooFlaky.error?.kind == .unavailable)
        #expect(tooFlaky.error?.message == "source unavailable: HTTP 500 after 3 attempts, \(server.url("/flaky/3"))")
        #expect(try server.requests("/flaky/3") == 3)
        // A refused connection is not retried (nothing listens on port 1).
        let refused = fetch("http://127.0.0.1:1/x")
        #expect(refused.error?.kind == .unavailable)
        #expect(refused.error?.message.contains("(curl error 7)") == true, "\(refused.error?.message ?? "")")
        #expect(refused.log.isEmpty)
    }

    @Test(
        "a Retry-After that does not fit in the deadline fails at once, saying how long the server asked for",
        arguments: ["/status/429?retry-after=86400", "/status/503?retry-after=86400", "/retry-date/3600"])
    func retryAfterTooLong(path: String) throws {
        let server = try HostileServer()
        defer { server.stop() }
        let run = fetch(server.url(path), HTTPLimits.tests.with { $0.deadline = 5 })
        let error = try #require(run.error)
        #expect(error.kind == .unavailable)
        let asked = path.hasSuffix("3600") ? "3600" : "86400"
        #expect(error.message.contains("the server asked to wait \(asked) s (Retry-After)"), "\(error.message)")
        #expect(run.seconds < 1.5)
        #expect(try server.requests(path) == 1)
    }

    @Test("Retry-After is honoured as an HTTP-date and as seconds, capped at maxRetryAfter")
    func retryAfterHonoured() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let date = fetch(server.url("/retry-date/1"))
        #expect(date.outcome?.body != nil, "\(date.error?.message ?? "")")
        #expect(date.log == ["HTTP 503 from \(server.url("/retry-date/1")); retry 1 of 2 in 1 s (Retry-After)"])
        #expect(date.seconds >= 0.9)

        let capped = fetch(
            server.url("/status/503?retry-after=30"),
            HTTPLimits.tests.with {
                $0.retries = 1
                $0.maxRetryAfter = 0.2
            })
        #expect(capped.error?.message.contains("HTTP 503 after 2 attempts") == true)
        #expect(capped.log.count == 1 && capped.log[0].hasSuffix("in 0.2 s (Retry-After)"), "\(capped.log)")
        #expect(capped.seconds < 2)
    }

    @Test("redirects: up to 5 followed; a redirect to file:// is refused as such; a loop is 'too many redirects'")
    func redirects() throws {
        let server = try HostileServer()
        defer { server.stop() }
        #expect(fetch(server.url("/redirect/5")).outcome?.body != nil)
        let file = fetch(server.url("/redirect-file"))
        #expect(file.error?.kind == .unavailable)
        #expect(
            file.error?.message.contains("redirect to a file:// URL refused (only http and https are followed): file:///etc/passwd") == true,
            "\(file.error?.message ?? "")")
        #expect(file.error?.message.contains("404") == false)
        for path in ["/loop", "/redirect/6"] {
            let run = fetch(server.url(path))
            #expect(run.error?.kind == .unavailable)
            #expect(run.error?.message.contains("too many redirects (more than 5)") == true, "\(run.error?.message ?? "")")
        }
    }

    @Test(
        "only http:// and https:// URLs are fetched (64)",
        arguments: ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/", "127.0.0.1/x", "", "http://a b/"])
    func schemes(url: String) {
        let run = fetch(url)
        #expect(run.error?.kind == .usage, "\(url): \(run.error?.message ?? "no error")")
    }

    @Test(
        "4xx other than 429 is 69 with status and reason, not retried",
        arguments: [(404, "Not Found"), (403, "Forbidden"), (410, "Gone"), (418, "I'm a teapot")])
    func clientErrors(status: Int, reason: String) throws {
        let server = try HostileServer()
        defer { server.stop() }
        let run = fetch(server.url("/status/\(status)"))
        #expect(run.error?.kind == .unavailable)
        #expect(run.error?.message == "source unavailable: HTTP \(status) \(reason), \(server.url("/status/\(status)"))")
        #expect(try server.requests("/status/\(status)") == 1)
    }

    @Test("TLS is verified: a self-signed certificate, or no TLS at all, is 69 naming the TLS failure")
    func tls() throws {
        let server = try HostileServer(tls: true)
        defer { server.stop() }
        let selfSigned = fetch(server.url("/file"))
        #expect(selfSigned.error?.kind == .unavailable)
        #expect(selfSigned.error?.message.contains("TLS failure: SSL certificate problem") == true, "\(selfSigned.error?.message ?? "")")

        let plain = try HostileServer()
        defer { plain.stop() }
        let notTLS = fetch("https://127.0.0.1:\(plain.port)/file")
        #expect(notTLS.error?.kind == .unavailable)
        #expect(notTLS.error?.message.contains("TLS failure") == true, "\(notTLS.error?.message ?? "")")
    }

    @Test(
        "a password in the URL never appears in an error or a log line",
        arguments: ["/flaky/1", "/status/404", "/redirect-file", "/loop", "/reset", "/stream/2000000", "/status/503?retry-after=86400"])
    func passwordNeverShown(path: String) throws {
        let server = try HostileServer()
        defer { server.stop() }
        let run = fetch(server.url(path, userInfo: "ann:s3cret-PW"), HTTPLimits.tests.with { $0.deadline = 5 })
        #expect(!run.text.isEmpty, "\(path) produced no message")
        for line in run.text { #expect(!line.contains("s3cret"), "\(line)") }
        for line in run.log + [run.error?.message].compactMap({ $0 }) { #expect(line.contains("ann:***@127.0.0.1"), "\(line)") }
    }

    @Test("usable from many threads at once (one easy handle per call)")
    func concurrent() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let client = HTTPClient(limits: .tests, spoolDirectory: NSTemporaryDirectory())
        let url = server.url("/gzip-file")
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var digests: [[UInt8]] = []
        }
        let results = Results()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let digest = (try? client.get(url, validators: nil, log: { _ in }))?.body?.sha256 ?? []
            results.lock.withLock { results.digests.append(digest) }
        }
        #expect(results.digests.count == 8)
        #expect(Set(results.digests).count == 1)
        #expect(results.digests.first?.count == 32)
    }
}

@Suite("HTTPClient support: SHA-256, redaction, HTTP dates")
struct HTTPClientSupportTests {
    @Test("SHA-256 known vectors (FIPS 180-4 examples), fed whole and in uneven pieces")
    func sha256Vectors() {
        let vectors: [([UInt8], String)] = [
            ([], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (Array("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8),
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
            (
                [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000),
                "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
            ),
        ]
        for (input, expected) in vectors {
            #expect(SHA256.hex(SHA256.hash(input)) == expected)
            var hasher = SHA256()
            var offset = 0
            var step = 1
            while offset < input.count {
                let end = min(input.count, offset + step)
                input[offset..<end].withUnsafeBytes { hasher.update($0) }
                offset = end
                step = step * 3 + 1
            }
            #expect(SHA256.hex(hasher.finalize()) == expected)
        }
    }

    @Test("finalize leaves the hasher usable: the digest of a longer input follows")
    func sha256Finalize() {
        var hasher = SHA256()
        hasher.update(Array("ab".utf8))
        _ = hasher.finalize()
        hasher.update(Array("c".utf8))
        #expect(SHA256.hex(hasher.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test(
        "passwords are redacted in URLs, postgres URIs and libpq keyword strings",
        arguments: [
            ("https://ann:pw@example.org/x.json", "https://ann:***@example.org/x.json"),
            ("http://ann@example.org/x", "http://ann@example.org/x"),
            ("http://example.org:8080/x", "http://example.org:8080/x"),
            ("http://[::1]:8080/x@y", "http://[::1]:8080/x@y"),
            ("http://example.org:8080/x/@me", "http://example.org:***@me"),  // an @ in the path: more hidden, never less
            ("https://ann:p@ss/w?rd#x@example.org/x", "https://ann:***@example.org/x"),
            ("https://ann:p/w@example.org/x", "https://ann:***@example.org/x"),
            ("postgres://u:pw@h/db", "postgres://u:***@h/db"),
            ("postgresql://u:pw@h:5432/db?sslmode=require&password=pw2", "postgresql://u:***@h:5432/db?sslmode=require&password=***"),
            ("postgres://h/db?password=pw&user=u#frag", "postgres://h/db?password=***&user=u#frag"),
            ("host=x password=pw dbname=d", "host=x password=*** dbname=d"),
            ("host=x password = 'p w\\'x' dbname=d", "host=x password = *** dbname=d"),
            ("password='unterminated dbname=d", "password=***"),
            ("host=x sslpassword=k user=u", "host=x sslpassword=*** user=u"),
            ("Sync.swift", "Sync.swift"),
        ])
    func redaction(input: String, expected: String) {
        #expect(redactedURL(input) == expected)
    }

    @Test("HTTP-date in its three forms (RFC 9110 §5.6.7); Retry-After as seconds or a date")
    func httpDates() {
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            #expect(HTTPDate.parse(text) == 784_111_777, "\(text)")
        }
        #expect(HTTPDate.parse("Tue, 01 Dec 2026 08:47:17 GMT") == 1_796_114_837)
        #expect(HTTPDate.parse("yesterday") == nil)
        #expect(HTTPDate.parse("Sun, 32 Nov 1994 08:49:37 GMT") == nil)
        #expect(HTTPDate.retryAfterDelay("120", serverDate: nil, now: 0) == 120)
        #expect(HTTPDate.retryAfterDelay(" 7 ", serverDate: nil, now: 0) == 7)
        #expect(HTTPDate.retryAfterDelay("Sun, 06 Nov 1994 08:50:37 GMT", serverDate: 784_111_777, now: 0) == 60)
        #expect(HTTPDate.retryAfterDelay("Sun, 06 Nov 1994 08:49:37 GMT", serverDate: nil, now: 784_111_800) == 0)
        #expect(HTTPDate.retryAfterDelay("-5", serverDate: nil, now: 0) == nil)
        #expect(HTTPDate.retryAfterDelay("99999999999999999999", serverDate: nil, now: 0) == 1e11)
    }
}
