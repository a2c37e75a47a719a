import Foundation
import LandmarkCatalog

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The device side of the `/v1` requests (docs/protocol.md) over the platform's transport (``HTTPTransport``:
/// `URLSession` on Apple platforms, libcurl on Linux): it builds each request, sends the bearer token
/// (refreshed once on a 401, §2), and turns every failure into a `CatalogError` whose `httpStatus` is the
/// server's status (nil when it was never reached).
///
/// A token never reaches a message.
final class ServerConnection: Sendable {
    /// The server's `/v1` base (ends in `/v1`).
    let base: URL
    let transport: any HTTPTransport
    let tokens: TokenSource
    /// Per request, at most this long (s), beyond a long-poll's wait.
    let requestTimeout: Double
    /// Set by ``close()``: no request starts after it.
    private let closed = SessionLock(false)
    /// Tests only: runs just before each request is handed to the transport (a race's hook).
    let beforeRequest = SessionLock<(@Sendable () async -> Void)?>(nil)

    init(base: URL, tokens: TokenSource, requestTimeout: Double, forceURLSession: Bool = false) {
        self.base = base
        self.tokens = tokens
        self.requestTimeout = requestTimeout
        transport = makeTransport(requestTimeout: requestTimeout, forceURLSession: forceURLSession)
    }

    /// The `/v1` base for a server URL: `https://host` and `https://host/v1` both give `https://host/v1`.
    static func base(for server: URL) -> URL {
        var text = server.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        if !text.hasSuffix("/v1") { text += "/v1" }
        return URL(string: text) ?? server
    }

    /// The server's name in messages: the base URL without any user or password.
    var name: String { SourceLocator.redacted(base.absoluteString) }

    struct Answer: Sendable {
        var status: Int
        var body: Data
        var etag: String?
        /// `Retry-After` in seconds (RFC 9110 §10.2.3), when given as a number.
        var retryAfter: Double?
    }

    /// An error answer: the error to publish and how long the server asked to wait.
    struct Failure: Error {
        var error: CatalogError
        var retryAfter: Double?
    }

    /// Sends one request with the token; on a 401 asks the token source once more and sends it again.
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - route: the `/v1` route (docs/protocol.md).
    ///   - query: the query items.
    ///   - body: the request body, if any.
    ///   - headers: more header fields.
    ///   - wait: the long-poll's wait (s), added to the timeout.
    ///   - accept: statuses answered without an error (200 always; 304 for a conditional GET).
    ///   - explicitPath: the path relative to `/v1/` when it is not the route's own (`users/me`).
    /// - Returns: the answer's status and body, with its `ETag` and `Retry-After`.
    /// - Throws: `CatalogError` 69 (`httpStatus` nil) when the server cannot be reached; ``Failure`` for an
    ///   error status (the status and the server's `code` and message, §1: 401 after the refresh, 403, 4xx,
    ///   5xx); `CancellationError` when the task is cancelled.
    func send(
        _ method: String, _ route: DeviceRoute, query: [URLQueryItem] = [], body: Data? = nil, headers: [String: String] = [:],
        wait: Double = 0, accept: Set<Int> = [200], path explicitPath: String? = nil
    ) async throws -> Answer {
        let path = explicitPath ?? route.rawValue
        var answer = try await sendOnce(method, path, query: query, body: body, headers: headers, wait: wait, token: try await tokens.current())
        // An erased account is not refreshed: a new token for the same id would be a new account's (§2).
        if answer.answer.status == 401, Self.errorCode(answer.answer.body) != Self.accountErasedCode {
            let fresh = try await tokens.refresh(after: answer.token)
            answer = try await sendOnce(method, path, query: query, body: body, headers: headers, wait: wait, token: fresh)
        }
        let result = answer.answer
        guard result.status == 200 || accept.contains(result.status) else {
            if result.status == 401 { await tokens.forget(answer.token) }
            throw Failure(error: Self.failure(result, method: method, path: path, server: name), retryAfter: result.retryAfter)
        }
        return result
    }

    private func sendOnce(
        _ method: String, _ path: String, query: [URLQueryItem], body: Data?, headers: [String: String], wait: Double, token: String
    ) async throws -> (answer: Answer, token: String) {
        var components = URLComponents(url: base.appendingPathComponent(path), resolvingAgainstBaseURL: false)
        if !query.isEmpty { components?.queryItems = query }
        guard let url = components?.url else {
            throw CatalogError(.usage, "cannot make a request URL from \(name) and \(path)")
        }
        var fields = ["Authorization": "Bearer \(token)", "Accept": "application/json"]
        for (field, value) in headers { fields[field] = value }
        if body != nil { fields["Content-Type"] = "application/json; charset=utf-8" }
        let request = TransportRequest(method: method, url: url, headers: fields, body: body, timeout: requestTimeout + wait)
        if let hook = beforeRequest.withLock({ $0 }) { await hook() }
        try Task.checkCancellation()
        guard !isClosed else { throw CancellationError() }
        let answer: TransportAnswer
        do {
            answer = try await transport.send(request)
        } catch let failure as TransportFailure {
            if Task.isCancelled { throw CancellationError() }
            guard failure.isOffline else {
                throw CatalogError(
                    .unavailable, "the server \(name) cannot be used: \(failure)",
                    hint: "check the server's certificate and address; the changes stay on this device")
            }
            throw CatalogError(
                .unavailable, "cannot reach the server \(name): \(failure)",
                hint: "the changes stay on this device and are sent when the server answers again", reason: .offline)
        }
        let retryAfter = answer.headers["retry-after"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        return (Answer(status: answer.status, body: answer.body, etag: answer.headers["etag"], retryAfter: retryAfter), token)
    }

    /// The code of a 401 whose token's account was erased (docs/protocol.md §2).
    static let accountErasedCode = "account_erased"

    /// The `error.code` of an error answer's body (docs/protocol.md §1), or nil.
    static func errorCode(_ body: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        return (object["error"] as? [String: Any])?["code"] as? String
    }

    /// The error for an error answer: the status, the server's code and message (docs/protocol.md §1).
    static func failure(_ answer: Answer, method: String, path: String, server: String) -> CatalogError {
        var code = ""
        var message = ""
        var field = ""
        if let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any],
            let error = object["error"] as? [String: Any]
        {
            code = error["code"] as? String ?? ""
            message = error["message"] as? String ?? ""
            field = error["field"] as? String ?? ""
        }
        let detail = [code, message, field.isEmpty ? "" : "field \(field)"].filter { !$0.isEmpty }.joined(separator: ": ")
        let what = "the server \(server) answered \(method) /v1/\(path) with \(answer.status)\(detail.isEmpty ? "" : " (\(detail))")"
        var error: CatalogError
        switch answer.status {
        case 401 where code == accountErasedCode:
            error = CatalogError(
                .unavailable, what, hint: "the account was erased: this device's copy of it is cleared; sign in to another account",
                reason: .accountErased)
        case 401:
            error = CatalogError(
                .unavailable, what, hint: "the token was refused, also after asking for a fresh one: sign in again", reason: .unauthorized)
        case 403:
            error = CatalogError(.usage, what, hint: "the token's user (sub) must be the session's user", reason: .forbidden)
        case 400, 413, 415:
            error = CatalogError(.dataInvalid, what)
        case 429:
            // serve's per-user limits (docs/serve.md §3): too many requests at once or POSTs too fast. Nothing
            // is wrong; the session waits out Retry-After and sends again.
            error = CatalogError(
                .unavailable, what,
                hint: "the server asked this device to slow down; the changes stay on this device and go after the wait it gave (Retry-After)",
                reason: .offline)
        case 502, 503, 504:
            // A proxy in front of a stopped or restarting server (nginx's own pages are HTML, not §1's
            // shape), or serve draining: the device is offline for now, not broken.
            error = CatalogError(
                .unavailable, what, hint: "the server is stopped, restarting or draining; the changes stay on this device and go when it answers",
                reason: .offline)
        default:
            error = CatalogError(.unavailable, what)
        }
        error.httpStatus = answer.status
        return error
    }

    /// Whether ``close()`` was called.
    var isClosed: Bool { closed.withLock { $0 } }

    /// Ends every request in flight; none starts after it.
    ///
    /// Call it once the tasks that send have ended (``SyncSession/stop()`` does): a request started
    /// between a check and the invalidation would trap.
    /// A second call does nothing (a session stopped after it ended by itself).
    func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        if first { transport.close() }
    }
}

/// The app's token closure, asked once and again only after a 401 (a refresh, docs/protocol.md §2).
actor TokenSource {
    private let fetch: @Sendable () async throws -> String
    private var cached: String?
    /// How long the closure may take (s): one that never returns would hold the session in
    /// "connecting" with nothing said.
    let timeout: Double

    init(timeout: Double = 30, _ fetch: @escaping @Sendable () async throws -> String) {
        self.fetch = fetch
        self.timeout = timeout
    }

    struct TokenTimeout: Error { var seconds: Double }

    /// `fetch`'s result, or ``TokenTimeout`` after `seconds`, or `CancellationError` when the caller is
    /// cancelled (the closure goes on alone then, its result unused).
    static func bounded(_ fetch: @escaping @Sendable () async throws -> String, seconds: Double) async throws -> String {
        typealias Waiting = CheckedContinuation<String, any Error>
        // The first result wins; a result that comes before the continuation is registered waits for it.
        let state = SessionLock<(waiting: Waiting?, result: Result<String, any Error>?)>((nil, nil))
        @Sendable func finish(_ result: Result<String, any Error>) {
            let waiting = state.withLock { state -> Waiting? in
                guard state.result == nil else { return nil }
                state.result = result
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume(with: result)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiting) in
                let early = state.withLock { state -> Result<String, any Error>? in
                    if state.result == nil { state.waiting = continuation }
                    return state.result
                }
                if let early {
                    continuation.resume(with: early)
                    return
                }
                let timer = Task {
                    try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                    finish(.failure(TokenTimeout(seconds: seconds)))
                }
                Task {
                    do { finish(.success(try await fetch())) } catch { finish(.failure(error)) }
                    timer.cancel()
                }
            }
        } onCancel: {
            finish(.failure(CancellationError()))
        }
    }

    /// The token to send: the one held, or a new one from the closure.
    /// - Throws: `CatalogError` 69 (`httpStatus` 401) when the closure throws or gives an empty token.
    func current() async throws -> String {
        if let cached { return cached }
        return try await ask()
    }

    /// After `refused` was answered with a 401: a new token from the closure (unless another request
    /// already got one since).
    func refresh(after refused: String) async throws -> String {
        if let cached, cached != refused { return cached }
        cached = nil
        return try await ask()
    }

    /// Drops the token held, so the next request asks the closure (new credentials, a sign-out).
    func reset() { cached = nil }

    /// Drops `refused`, so the next request asks the closure again.
    func forget(_ refused: String) {
        if cached == refused { cached = nil }
    }

    private func ask() async throws -> String {
        let token: String
        do {
            token = try await Self.bounded(fetch, seconds: timeout)
        } catch let error as TokenTimeout {
            var failure = CatalogError(
                .unavailable, "the token closure did not return within \(Int(error.seconds)) s",
                hint: "the closure must return a token or throw; it is asked again at the next try", reason: .unauthorized)
            failure.httpStatus = 401
            throw failure
        } catch {
            if error is CancellationError { throw error }
            var failure = CatalogError(.unavailable, "the token closure failed: \(error)", hint: "sign in again", reason: .unauthorized)
            failure.httpStatus = 401
            throw failure
        }
        let trimmed = token.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            var failure = CatalogError(.unavailable, "the token closure returned an empty token", hint: "sign in again", reason: .unauthorized)
            failure.httpStatus = 401
            throw failure
        }
        cached = trimmed
        return trimmed
    }

    /// The `sub` claim of a compact JWS JWT (RFC 7519 §4.1.2), read without verifying the signature:
    /// the server verifies it (docs/protocol.md §2); the device only needs to know whose rows it holds.
    /// - Throws: `CatalogError` 64 when the token is not a JWT or has no non-empty string `sub`.
    static func subject(of token: String) throws -> String {
        let parts = token.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw CatalogError(
                .usage, "the token is not a compact JWT (three dot-separated parts)", hint: "pass the user with startSync(server:user:token:)")
        }
        guard let peek = TokenPeek.peek(token) else {
            throw CatalogError(
                .usage, "the token's claims hold no user (a non-empty string sub)", hint: "pass the user with startSync(server:user:token:)")
        }
        return peek.user
    }
}
