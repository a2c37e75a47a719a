internal import CCurl
import Foundation
import LandmarkCatalog

/// The state of one attempt of a GET, filled in by libcurl's header and write callbacks
/// (CURLOPT_HEADERFUNCTION, CURLOPT_WRITEFUNCTION), which receive it as their `userdata`.
///
/// With redirects followed, the header callback sees every response in turn; only the last one's status
/// and headers are kept. Bodies of followed redirects are dropped by libcurl and never reach the write
/// callback. Not `Sendable`: libcurl calls back on the thread running `curl_easy_perform`.
final class HTTPTransfer {
    /// Why a callback stopped the transfer (by returning a count other than the one it was given, which
    /// makes `curl_easy_perform` return CURLE_WRITE_ERROR).
    enum Stop: Equatable {
        /// The decoded body passed `maxBytes`; `received` counts the chunk that crossed the limit (bytes).
        case overLimit(received: Int64)
        /// The identity-encoded body's `Content-Length` (bytes) is over `maxBytes`: refused before any byte.
        case contentLengthOverLimit(Int64)
        /// `write(2)` to the spool file failed with this `errno`.
        case spoolWrite(errno: Int32)
        /// The final response is not 2xx; its body is not wanted (status and headers are kept).
        case unwantedBody
    }

    /// The spool file's descriptor (owned by the caller).
    let fd: Int32
    /// Largest decoded body accepted, in bytes.
    let maxBytes: Int64

    /// The last response's status code (0 until a status line arrived).
    private(set) var status = 0
    /// The last response's reason phrase as the server sent it (HTTP/2 has none).
    private(set) var reason = ""
    /// The last response's header fields, by lowercased name; a repeated field keeps its last value.
    private(set) var headers: [String: String] = [:]
    /// The `Location` of the last 3xx response, as sent (maybe relative).
    private(set) var redirectLocation: String?
    /// Decoded body bytes written to the spool file.
    private(set) var bodyBytes: Int64 = 0
    /// SHA-256 of the bytes written.
    private(set) var hasher = SHA256()
    /// Set when a callback stopped the transfer.
    private(set) var stop: Stop?
    /// Whether the last response's header block ended (later lines are chunked trailers).
    private var headersComplete = false
    /// How much of a non-2xx body to keep in the spool file (bytes; 0: none), for a server whose errors
    /// have a JSON body worth quoting (docs/protocol.md §1); the transfer must not be retried after one.
    var errorBodyLimit = 0
    /// Bytes of a non-2xx body written to the spool file (not counted in ``bodyBytes``).
    private var errorBytes = 0

    /// - Parameters:
    ///   - fd: the spool file (not owned).
    ///   - maxBytes: largest decoded body accepted, in bytes.
    init(fd: Int32, maxBytes: Int64) {
        self.fd = fd
        self.maxBytes = maxBytes
    }

    /// Forgets everything of a previous attempt.
    ///
    /// The spool file is still empty: an attempt that wrote body bytes is never retried.
    func reset() {
        precondition(bodyBytes == 0, "HTTPTransfer: a retry after \(bodyBytes) body bytes were spooled")
        status = 0
        reason = ""
        headers = [:]
        redirectLocation = nil
        bodyBytes = 0
        hasher = SHA256()
        stop = nil
        headersComplete = false
    }

    /// Installs the callbacks on `easy`, with `self` as their `userdata`.
    ///
    /// The caller keeps `self` alive for as long as `easy` may run (both live for one `HTTPClient.get`).
    func install(on easy: CurlEasy) throws {
        let me = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_HEADERDATA, pointer: me, "CURLOPT_HEADERDATA")
        try easy.set(CURLOPT_WRITEDATA, pointer: me, "CURLOPT_WRITEDATA")
        try easy.set(
            CURLOPT_HEADERFUNCTION,
            callback: { data, size, count, userdata in
                // libcurl passes back the HEADERDATA/WRITEDATA pointer set above, never nil.
                // swift-format-ignore: NeverForceUnwrap
                let transfer = Unmanaged<HTTPTransfer>.fromOpaque(userdata!).takeUnretainedValue()
                let buffer = UnsafeRawBufferPointer(start: data, count: size * count)
                return transfer.header(buffer) ? size * count : 0
            }, "CURLOPT_HEADERFUNCTION")
        try easy.set(
            CURLOPT_WRITEFUNCTION,
            callback: { data, size, count, userdata in
                // libcurl passes back the HEADERDATA/WRITEDATA pointer set above, never nil.
                // swift-format-ignore: NeverForceUnwrap
                let transfer = Unmanaged<HTTPTransfer>.fromOpaque(userdata!).takeUnretainedValue()
                let buffer = UnsafeRawBufferPointer(start: data, count: size * count)
                return transfer.body(buffer) ? size * count : 0
            }, "CURLOPT_WRITEFUNCTION")
    }

    /// One header line (with its CRLF), the status line, or the blank line ending a header block.
    /// - Returns: false to stop the transfer (a body refused by its `Content-Length`).
    private func header(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let line = String(decoding: bytes, as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            // "HTTP/1.1 200 OK" or "HTTP/2 200": a new response (after a redirect or a 100 Continue).
            let parts = line.trimmingHTTPWhitespace.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            reason = parts.count > 2 ? String(parts[2]) : ""
            headers = [:]
            headersComplete = false
            return true
        }
        if line.trimmingHTTPWhitespace.isEmpty {
            guard !headersComplete else { return true }  // the end of chunked trailers
            headersComplete = true
            return headerBlockEnded()
        }
        guard !headersComplete, let colon = line.firstIndex(of: ":") else { return true }  // trailers, folding
        let name = line[..<colon].lowercased()
        headers[name] = String(line[line.index(after: colon)...]).trimmingHTTPWhitespace
        return true
    }

    /// The blank line after a response's header fields: remembers a redirect's `Location`, and refuses a
    /// 2xx whose identity-encoded `Content-Length` (bytes) is over `maxBytes` before any body byte is read.
    /// - Returns: false to stop the transfer.
    private func headerBlockEnded() -> Bool {
        if (300...399).contains(status) { redirectLocation = headers["location"] }
        guard (200...299).contains(status), headers["transfer-encoding"] == nil else { return true }
        let encoding = headers["content-encoding"]?.lowercased() ?? "identity"
        if encoding == "identity", let length = headers["content-length"].flatMap({ Int64($0) }), length > maxBytes {
            stop = .contentLengthOverLimit(length)
            return false
        }
        return true
    }

    /// A piece of the decoded body (at most CURL_MAX_WRITE_SIZE bytes, 16 KiB).
    /// - Returns: false to stop the transfer: over `maxBytes`, a failed spool write, or a non-2xx body.
    private func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard (200...299).contains(status) else {
            if errorBodyLimit > 0, errorBytes + bytes.count <= errorBodyLimit, Spool.writeAll(fd, bytes) == 0 {
                errorBytes += bytes.count
                return true
            }
            stop = .unwantedBody
            return false
        }
        let count = Int64(bytes.count)
        guard bodyBytes + count <= maxBytes else {
            stop = .overLimit(received: bodyBytes + count)
            return false
        }
        let failure = Spool.writeAll(fd, bytes)
        guard failure == 0 else {
            stop = .spoolWrite(errno: failure)
            return false
        }
        hasher.update(bytes)
        bodyBytes += count
        return true
    }
}

@available(*, unavailable, message: "libcurl calls back on the thread running the transfer")
extension HTTPTransfer: Sendable {}

/// Reason phrases of the statuses a catalog source is likely to answer (RFC 9110 §15, RFC 6585 §4),
/// used instead of the server's text when known, and where HTTP/2 sends none.
func httpReasonPhrase(_ status: Int, sent: String) -> String {
    let known: [Int: String] = [
        400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        406: "Not Acceptable", 407: "Proxy Authentication Required", 408: "Request Timeout", 409: "Conflict",
        410: "Gone", 411: "Length Required", 412: "Precondition Failed", 413: "Content Too Large",
        414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable", 418: "I'm a teapot",
        421: "Misdirected Request", 422: "Unprocessable Content", 426: "Upgrade Required", 429: "Too Many Requests",
        451: "Unavailable For Legal Reasons", 500: "Internal Server Error", 501: "Not Implemented",
        502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
    ]
    if let phrase = known[status] { return phrase }
    // The server's own phrase, only if it is short printable ASCII (it ends up in a terminal).
    let text = sent.trimmingHTTPWhitespace
    guard text.count <= 60, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return "" }
    return text
}
