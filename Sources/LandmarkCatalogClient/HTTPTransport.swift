import Foundation
import LandmarkCatalog

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP request of a ``SyncSession``, as the transport sends it.
struct TransportRequest: Sendable {
    var method: String
    var url: URL
    var headers: [String: String]
    var body: Data?
    /// The whole request's bound (s): the long-poll's wait plus the session's `requestTimeout`.
    var timeout: Double
}

/// A transport's answer: any status, the body, and the header fields (names lowercased).
struct TransportAnswer: Sendable {
    var status: Int
    var body: Data
    var headers: [String: String]
}

/// Why a request got no HTTP answer: words for a message, never a URL's query or a token.
struct TransportFailure: Error, CustomStringConvertible {
    var description: String
    /// Whether waiting can cure it: offline.
    ///
    /// True for the server unreachable, the connection lost, a timeout; false for a certificate that does
    /// not verify or an answer over the size bound: someone must act.
    var isOffline = true
}

/// What sends a session's requests: Apple's `URLSession` on Apple platforms, libcurl's multi interface on
/// Linux (docs/swift-library.md, "What a phone costs idle").
///
/// Why two: on Linux, FoundationNetworking keeps a libdispatch write source on a newly connected socket
/// after libcurl has asked for read readiness only, so a request that waits for its answer on a new
/// connection (a long-poll, a server that never answers) wakes a thread for every writable event: a whole
/// core for as long as it waits. libcurl's own `curl_multi_poll` waits in the kernel instead.
protocol HTTPTransport: Sendable {
    /// Sends one request; cancelling the calling task ends it.
    /// - Throws: ``TransportFailure`` when no answer came; `CancellationError` when cancelled or closed.
    func send(_ request: TransportRequest) async throws -> TransportAnswer
    /// Ends every request in flight; none starts after it.
    func close()
}

/// The platform's transport: libcurl on Linux, `URLSession` elsewhere; `URLSession` anywhere when
/// `forceURLSession` (the package's tests compare the two).
func makeTransport(requestTimeout: Double, forceURLSession: Bool) -> any HTTPTransport {
    #if os(Linux)
        if !forceURLSession { return CurlTransport() }
    #endif
    return URLSessionTransport(requestTimeout: requestTimeout)
}

/// Requests over the platform's `URLSession`: ephemeral sessions with no cache and no cookies.
final class URLSessionTransport: HTTPTransport {
    /// For requests answered at once (pushes, landmarks): at most `requestTimeout`.
    let session: URLSession
    /// For long-polls: their wait (at most 60 s, docs/protocol.md §5) longer.
    let pollSession: URLSession
    let requestTimeout: Double
    private let closed = SessionLock(false)

    init(requestTimeout: Double) {
        self.requestTimeout = requestTimeout
        // The session's own timeout, not only the request's: FoundationNetworking times a request out by
        // the configuration's `timeoutIntervalForRequest` (60 s by default). A POST sent on a kept-alive
        // connection the server had just closed was re-sent by it without its body and hung those 60 s
        // (ClientFuzzTests, through a proxy that drops connections); now it fails after `requestTimeout`
        // and is retried. Long-polls get a session of their own, whose bound is their wait longer.
        func make(_ timeout: Double) -> URLSession {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpMaximumConnectionsPerHost = 4
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            configuration.urlCache = nil
            configuration.httpCookieStorage = nil
            configuration.timeoutIntervalForRequest = timeout
            return URLSession(configuration: configuration)
        }
        session = make(requestTimeout)
        pollSession = make(requestTimeout + 60)
    }

    func send(_ request: TransportRequest) async throws -> TransportAnswer {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for (field, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: field) }
        urlRequest.httpBody = request.body
        // FoundationNetworking traps ("Session invalidated") when a task is made on an invalidated session.
        guard !closed.withLock({ $0 }) else { throw CancellationError() }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await (request.timeout > requestTimeout ? pollSession : session).data(for: urlRequest)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw TransportFailure(description: Self.describe(error))
        }
        guard let http = response as? HTTPURLResponse else { throw TransportFailure(description: "the answer was not HTTP") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return TransportAnswer(status: http.statusCode, body: data, headers: headers)
    }

    func close() {
        closed.withLock { $0 = true }
        session.invalidateAndCancel()
        pollSession.invalidateAndCancel()
    }

    /// A transport error's words without the URL's query (never a token: tokens go in a header).
    static func describe(_ error: any Error) -> String {
        if let error = error as? URLError {
            switch error.code {
            case .cannotConnectToHost: return "connection refused"
            case .timedOut: return "timed out"
            case .notConnectedToInternet: return "not connected to the internet"
            case .networkConnectionLost: return "the connection was lost"
            case .cannotFindHost: return "no such host"
            default: return "URL error \(error.code.rawValue)"
            }
        }
        return "\(type(of: error))"
    }
}
