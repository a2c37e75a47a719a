import CMicroHTTPD
import Foundation

/// An answer: status, headers and body (docs/protocol.md §1).
package struct HTTPReply: Sendable {
    package var status: Int
    package var headers: [(String, String)] = []
    package var body: [UInt8] = []
    /// The same answer made into an MHD response once (``prepared()``): queued as it is, nothing copied.
    var response: PreparedResponse?

    package init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// This answer with its MHD response made now, for one given many times over byte for byte.
    ///
    /// A 304 of an unchanged ETag (docs/serve.md §4): each time it is queued as it is, with no copy of the
    /// body and no header added. nil when MHD cannot make it (no memory); the answer is then made per
    /// request.
    func prepared() -> HTTPReply? {
        guard let response = PreparedResponse(self) else { return nil }
        var reply = self
        reply.response = response
        return reply
    }
}

/// An MHD response made once and queued on any number of connections, from any MHD thread: MHD counts its
/// references (under the response's own lock) and frees it after the last answer sent with it and this
/// object's release (MHD_destroy_response).
final class PreparedResponse: @unchecked Sendable {
    // Safe: `pointer` is never changed after `init`; MHD guards the response's reference count itself.
    let pointer: OpaquePointer

    init?(_ reply: HTTPReply) {
        let made = reply.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let made else { return nil }
        for (name, value) in reply.headers where MHD_add_response_header(made, name, value) != .YES {
            MHD_destroy_response(made)
            return nil
        }
        pointer = made
    }

    deinit { MHD_destroy_response(pointer) }
}

/// One request on one connection, from its headers to its end (MHD's `req_cls`).
///
/// Its fields are touched by the
/// connection's MHD thread while the handler runs, and by the long-poll dispatcher only under its lock while
/// the connection is suspended (docs/serve.md §4).
package final class HTTPRequest: @unchecked Sendable {
    /// MHD's connection: valid until the request completes.
    let mhdConnection: OpaquePointer
    /// Answer with `Connection: close`: its user holds more connections than `--max-connections-per-user`
    /// (docs/serve.md §3).
    package var closeAfter = false
    package let method: String
    /// The path without the query.
    package let path: String
    /// When the headers were complete (monotonic ns).
    package let started: UInt64
    /// The body received so far (POST), at most the daemon's body limit.
    package var body: [UInt8] = []
    /// The body went over the limit: the rest is dropped and the answer is 413.
    package var bodyTooLarge = false
    /// The size of the request line's method and target and of the header lines, as MHD parsed them: the
    /// service refuses it over ``HTTPLimits/headerBytes`` (docs/serve.md §3).
    package var headerBytes = 0
    /// The request counts against its user's requests in hand (docs/serve.md §3) until it is finished.
    package var holdsUserSlot = false
    /// The handler is waiting for the body, or has answered.
    var readingBody = false
    var answered = false

    // What the service keeps for the access log and the long-poll.
    package var route = "other"
    package var user: String?
    /// The token's scope holds `edge`.
    package var edge = false
    /// The `User-Agent` of a positions request with a token (at most 160 bytes), for the operator's page.
    package var agent: String?
    /// A long-poll's end (monotonic ns), once it began waiting.
    package var waitUntil: UInt64?
    package var status = 0
    package var bytesSent = 0
    /// Set by the service while the request is suspended in a long-poll.
    package var waiting: AnyObject?

    init(connection: OpaquePointer, method: String, path: String) {
        self.mhdConnection = connection
        self.method = method
        self.path = path
        started = DispatchTime.now().uptimeNanoseconds
    }

    /// A request header (case-insensitive name), only while the handler runs.
    package func header(_ name: String) -> String? {
        MHD_lookup_connection_value(mhdConnection, .HEADER_KIND, name).map { String(cString: $0) }
    }

    /// Whether request header `name` (case-insensitive) holds exactly `value`'s bytes, with no `String` made;
    /// only while the handler runs.
    func header(_ name: String, is value: [UInt8]) -> Bool {
        guard let text = MHD_lookup_connection_value(mhdConnection, .HEADER_KIND, name) else { return false }
        return value.withUnsafeBytes { v in
            guard let bytes = v.baseAddress else { return text.pointee == 0 }
            return strlen(text) == v.count && memcmp(text, bytes, v.count) == 0
        }
    }

    /// A query parameter, percent-decoded by MHD; only while the handler runs.
    package func query(_ name: String) -> String? {
        MHD_lookup_connection_value(mhdConnection, .GET_ARGUMENT_KIND, name).map { String(cString: $0) }
    }

    /// Suspends the connection (a long-poll): called by the handler before it returns without an answer.
    package func suspend() { MHD_suspend_connection(mhdConnection) }

    /// Resumes a suspended connection: MHD calls the handler again on its thread (any thread may call it).
    package func resume() { MHD_resume_connection(mhdConnection) }

    /// Milliseconds since the headers were complete.
    package var elapsedMilliseconds: Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6 }
}

/// What a service does with a request at each step.
package enum HTTPAction {
    /// Answer now.
    case reply(HTTPReply)
    /// Read the body, then call ``HTTPService/complete(_:)``.
    case readBody
    /// The service suspended the connection (``HTTPRequest/suspend()``) and will resume it.
    case suspended
}

/// The application behind an ``HTTPDaemon``: called on MHD's threads, concurrently for different connections.
package protocol HTTPService: AnyObject, Sendable {
    /// The headers are in: answer, or ask for the body.
    func begin(_ request: HTTPRequest) -> HTTPAction
    /// The body is in (or a suspended request was resumed): answer or suspend.
    func complete(_ request: HTTPRequest) -> HTTPAction
    /// The request is over (answered and sent, or the connection broke).
    func finished(_ request: HTTPRequest, completedNormally: Bool)
}

/// Small text helpers on the request path, on UTF-8 bytes (Foundation's `trimmingCharacters` and
/// `String(format:)` cost more than the rest of a "nothing new" answer; Benchmarks/run.sh --serve).
enum HTTPText {
    /// `text` without leading and trailing spaces and tabs (RFC 9110 §5.6.3's OWS).
    static func trimmingBlanks(_ text: Substring) -> String {
        let bytes = text.utf8
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return "" }
        let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 }) ?? first
        return String(text[first...last])
    }

    /// A rate as written on the command line: `5`, `0.5`.
    static func rate(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// A non-negative number with two decimals ("12.05"); negative values print as 0.00.
    static func twoDecimals(_ value: Double) -> String {
        let hundredths = value.isFinite ? Int64((max(0, value) * 100).rounded()) : 0
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
