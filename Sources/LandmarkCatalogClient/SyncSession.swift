import Foundation
import LandmarkCatalog

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Catalog {
    /// Starts syncing this catalog with a `catalog serve` endpoint (docs/protocol.md), for the user the
    /// token names: every local position write is pushed as soon as it commits, the server's changes for
    /// this user arrive by long-poll and are merged here (so ``Catalog/observe(_:)`` and `CarouselModel`
    /// move), and the landmarks are fetched at start and rarely after (docs/swift-library.md, "Syncing
    /// from the app").
    ///
    /// ```swift
    /// let session = try await catalog.startSync(server: URL(string: "https://catalog.example.com")!) {
    ///     try await auth.currentToken()   // asked again after a 401
    /// }
    /// ```
    ///
    /// The user is the token's `sub` claim, read without verifying the token (the server verifies it);
    /// pass it explicitly with ``startSync(server:user:configuration:token:)``.
    /// - Parameters:
    ///   - server: the server's base URL (`https://host`; the `/v1` routes are under it, and a URL that
    ///     already ends in `/v1` is taken as is).
    ///   - token: gives the bearer token (a JWT, docs/protocol.md §2); called at start, and again once
    ///     after the server refuses the one it gave (a refresh).
    /// - Returns: the running session; it runs until ``SyncSession/stop()``, whether or not the server can
    ///   be reached (writes always land locally first).
    /// - Throws: `CatalogError` 64 when the token has no `sub`, 69 when the token closure throws;
    ///   database failures.
    public func startSync(server: URL, token: @escaping @Sendable () async throws -> String) async throws -> SyncSession {
        try await startSync(server: server, user: nil, token: token)
    }

    /// Starts syncing this catalog for `user` (or, when nil, the token's `sub`), as ``startSync(server:token:)``.
    /// - Parameters:
    ///   - server: the server's base URL.
    ///   - user: the user whose position this device keeps; nil: the token's `sub`. It must be the token's
    ///     user, or the server refuses the writes (403, published in ``SyncStatus/lastError``).
    ///   - configuration: the long-poll's wait, the backoff's bounds, the landmarks' refresh interval.
    ///   - token: gives the bearer token; asked again once after a 401.
    /// - Returns: the session, already syncing.
    /// - Throws: `CatalogError` 64 for a bad user id or a token without `sub`, 69 when the token closure
    ///   throws (only when `user` is nil); database failures.
    public func startSync(
        server: URL, user: String?, configuration: SyncSession.Configuration = SyncSession.Configuration(),
        token: @escaping @Sendable () async throws -> String
    ) async throws -> SyncSession {
        let tokens = TokenSource(token)
        let named: String
        if let user { named = user } else { named = try TokenSource.subject(of: try await tokens.current()) }
        let resolved = try UserID.normalize(named)
        let session = SyncSession(catalog: self, server: server, user: resolved, configuration: configuration, tokens: tokens)
        try await session.start()
        return session
    }
}

/// One catalog syncing with one `catalog serve` endpoint for one user (docs/protocol.md,
/// docs/swift-library.md "Syncing from the app").
///
/// `Sendable`: share it between tasks and views.
///
/// Offline first. A write always lands in the local database first; the rows written here that the server
/// has not acknowledged are the outbox: the rows above a push cursor stored in the database, so they
/// survive a restart or a kill and go when the server answers again. The push cursor moves only after the
/// server's answer, in its own transaction; a row sent twice (an answer lost, the app killed before it
/// recorded the answer) is stored once, because the server merges by the row's stamp (docs/protocol.md §6).
///
/// Three tasks run the session: the outbox (woken by every commit, as `Catalog.observe(_:)` is), the
/// long-poll of `GET /v1/positions` (each answer merged in one transaction with its cursor), and the
/// landmarks (`GET /v1/landmarks` with `If-None-Match`, at start and every
/// ``Configuration/landmarkRefreshInterval``). A failure is published in ``status`` and retried with a
/// bounded backoff with jitter; a 401 asks the token closure once more first.
public final class SyncSession: Sendable {
    /// The bounds of a session; the defaults suit an app (an idle session sends about one request a minute).
    public struct Configuration: Sendable {
        /// How long the server holds a long-poll with nothing new (s, 0…60, docs/protocol.md §5).
        public var longPollSeconds: Int = 55
        /// How often the landmarks are fetched again after the first time (s).
        public var landmarkRefreshInterval: Double = 3600
        /// The first retry's wait after a failure (s); it doubles per failure up to ``maximumBackoff``.
        public var minimumBackoff: Double = 0.5
        /// The longest wait between retries (s).
        public var maximumBackoff: Double = 30
        /// How long a request may go without a byte, beyond a long-poll's wait (s).
        public var requestTimeout: Double = 30
        /// Rows from the server stamped further ahead of this device's clock are quarantined (ms, as
        /// `catalog sync --max-drift`).
        public var maxDriftMilliseconds: Int64 = 300_000
        /// Test hooks (the package's tests only).
        package var hooks = Hooks()

        public init() {}
    }

    /// Points where the package's tests stop or break a session.
    package struct Hooks: Sendable {
        /// Called after the server answered a push and before the answer is recorded.
        package var afterPushAnswered: (@Sendable () async -> Void)?
        package init() {}
    }

    /// The catalog this session syncs.
    public let catalog: Catalog
    /// The server's `/v1` base URL.
    public let server: URL
    /// The user whose position this device keeps and pushes.
    public let user: String
    let configuration: Configuration
    let endpoint: ServerConnection
    /// This session's row in the database's source list (`catalog status` lists it, kind `device`).
    let key: String
    let broadcaster = StatusBroadcaster()
    let waker = Waker()
    private let tasks = SessionLock<[Task<Void, Never>]>([])
    /// The server's last answer to a push quarantined this device's row: kept in ``status`` as its
    /// `lastError` until a push is applied, not cleared by the next long-poll's answer (a device whose
    /// clock is ahead would otherwise fall out of sync with nothing shown).
    private let quarantined = SessionLock<CatalogError?>(nil)

    init(catalog: Catalog, server: URL, user: String, configuration: Configuration, tokens: TokenSource) {
        self.catalog = catalog
        self.server = ServerConnection.base(for: server)
        self.user = user
        self.configuration = configuration
        endpoint = ServerConnection(base: self.server, tokens: tokens, requestTimeout: configuration.requestTimeout)
        key = "\(endpoint.name) as \(user)"
    }

    /// The status now (no wait): connected, pending changes, last sync, last error.
    public var status: SyncStatus { broadcaster.status }

    /// The status now, then each change of it, until ``stop()``.
    ///
    /// Each iteration is a subscriber of its own.
    public var statusUpdates: AsyncStream<SyncStatus> { broadcaster.stream() }

    /// Returns once every change written on this device before or while it waits is acknowledged by the
    /// server (at once when there is none).
    ///
    /// While the server cannot be reached it keeps waiting: cancel the calling task to give up (the changes
    /// stay in the outbox).
    /// - Throws: `CancellationError` when cancelled; `CatalogError` 64 when the session is stopped first;
    ///   database failures.
    public func flush() async throws {
        let read = pendingRead
        for await status in statusUpdates {
            try Task.checkCancellation()
            // The status may lag a commit made just now: the database says whether anything is pending.
            if status.pendingChanges == 0, try await read(catalog).isEmpty { return }
        }
        try Task.checkCancellation()
        throw CatalogError(.usage, "the sync session was stopped before every change was acknowledged", hint: "start a new session")
    }

    /// Stops the session: ends the long-poll and any request in flight and waits for its tasks.
    ///
    /// What is not yet acknowledged stays in the outbox for the next session. ``statusUpdates`` end.
    public func stop() async {
        let running = tasks.withLock { tasks -> [Task<Void, Never>] in
            defer { tasks.removeAll() }
            return tasks
        }
        // Cancel, wait, then close: cancelling ends the requests in flight (URLSession's tasks are cancelled
        // with the Swift task), and a session invalidated while a task could still start a request made
        // FoundationNetworking trap ("Session invalidated"), which a test run once hit.
        for task in running { task.cancel() }
        for task in running { await task.value }
        endpoint.close()
        broadcaster.finish()
    }

    // MARK: - Running

    func start() async throws {
        let state = try await catalog.read { [key] in try DeviceSync(store: $0).state(key: key) }
        let pending = try await pendingRead(catalog)
        broadcaster.update {
            $0.pendingChanges = pending.count
            $0.lastSyncedAt = state.lastSuccess.flatMap { Timestamp.parse($0) }.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        }
        let outbox = Task { [self] in await runOutbox() }
        let pull = Task { [self] in await runPull() }
        tasks.withLock { $0 = [outbox, pull] }
    }

    /// Reads the outbox.
    var pendingRead: @Sendable (Catalog) async throws -> [PendingPosition] {
        { [user, key] catalog in try await catalog.read { try DeviceSync(store: $0).pendingPositions(user: user, key: key) } }
    }

    /// The server answered: connected, no error; the other task stops waiting out its backoff.
    func succeeded() {
        let wasConnected = broadcaster.status.isConnected
        let kept = quarantined.withLock { $0 }
        broadcaster.update {
            $0.isConnected = true
            $0.lastSyncedAt = Date()
            $0.lastError = kept
        }
        if !wasConnected { waker.wake() }
    }

    /// Publishes a failure and waits out the backoff.
    func failed(_ error: any Error, backoff: inout Backoff) async {
        var published: CatalogError
        var retryAfter: Double?
        switch error {
        case let failure as ServerConnection.Failure:
            published = failure.error
            retryAfter = failure.retryAfter
        case let error as CatalogError: published = error
        default: published = CatalogError(.software, "internal error in the sync session: \(error)")
        }
        // A refused row or request stays refused until something changes: retry at the slowest pace.
        let refused = [400, 403, 413, 415].contains(published.httpStatus ?? 0)
        broadcaster.update {
            if published.httpStatus == nil || published.httpStatus == 401 || (published.httpStatus ?? 0) >= 500 { $0.isConnected = false }
            $0.lastError = published
        }
        await waker.sleep(seconds: refused ? configuration.maximumBackoff : backoff.next(atLeast: retryAfter))
    }

    // MARK: - The outbox

    /// Pushes the outbox whenever it is not empty; woken by every commit to the catalog.
    private func runOutbox() async {
        var backoff = Backoff(minimum: configuration.minimumBackoff, maximum: configuration.maximumBackoff)
        while !Task.isCancelled {
            do {
                for try await pending in catalog.observe(pendingRead) {
                    broadcaster.update { $0.pendingChanges = pending.count }
                    if !pending.isEmpty { try await pushUntilEmpty(backoff: &backoff) }
                }
                return  // the catalog was closed, or the task cancelled
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                await failed(error, backoff: &backoff)
            }
        }
    }

    private func pushUntilEmpty(backoff: inout Backoff) async throws {
        while true {
            try Task.checkCancellation()
            let pending = try await pendingRead(catalog)
            broadcaster.update { $0.pendingChanges = pending.count }
            guard !pending.isEmpty else { return }
            do {
                try await push(pending)
                backoff.reset()
            } catch let error where !(error is CancellationError) && !Task.isCancelled {
                await failed(error, backoff: &backoff)
            }
        }
    }

    /// One `POST /v1/positions` of the outbox, then (only then) the push cursor moves (docs/protocol.md §6).
    private func push(_ pending: [PendingPosition]) async throws {
        let body = Data(("{\"positions\":[" + pending.map(\.json).joined(separator: ",") + "]}").utf8)
        let answer = try await endpoint.send("POST", "positions", body: body)
        await configuration.hooks.afterPushAnswered?()
        try Task.checkCancellation()
        guard let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any],
            let results = object["results"] as? [[String: Any]], results.count == pending.count
        else {
            throw CatalogError(
                .dataInvalid, "the server \(endpoint.name) answered POST /v1/positions without one result per row (docs/protocol.md §6)")
        }
        let outcomes = results.map { $0["outcome"] as? String ?? "" }
        if let unknown = outcomes.first(where: { !["applied", "stale", "tie", "quarantined"].contains($0) }) {
            throw CatalogError(
                .dataInvalid, "the server \(endpoint.name) answered an unknown outcome \(String(reflecting: unknown)) (docs/protocol.md §6)")
        }
        // Every outcome is the server's decision on that row: sending it again would change nothing.
        let through = pending.map(\.seq).max() ?? 0
        try await catalog.write { [key] in try DeviceSync(store: $0).acknowledgePositions(key: key, through: through) }
        if outcomes.contains("quarantined") {
            let error = CatalogError(
                .dataInvalid,
                "the server \(endpoint.name) quarantined this device's position: its stamp is too far ahead of the server's clock",
                hint:
                    "check this device's clock; a later position set here is sent again, and is quarantined too while the device's stamps stay ahead",
                reason: .clockAhead)
            quarantined.withLock { $0 = error }
        } else if outcomes.contains("applied") {
            quarantined.withLock { $0 = nil }
        }
        succeeded()
    }

    // MARK: - Pulling

    /// The landmarks now and then, and the long-poll of this user's position, until cancelled.
    private func runPull() async {
        var backoff = Backoff(minimum: configuration.minimumBackoff, maximum: configuration.maximumBackoff)
        var landmarksFetched: ContinuousClock.Instant?
        let refresh = Duration.milliseconds(Int64(max(configuration.landmarkRefreshInterval, 1) * 1000))
        while !Task.isCancelled {
            do {
                if landmarksFetched.map({ ContinuousClock.now - $0 >= refresh }) ?? true {
                    try await pullLandmarks()
                    landmarksFetched = .now
                }
                try await pullPositions()
                backoff.reset()
            } catch let error where !(error is CancellationError) && !Task.isCancelled {
                await failed(error, backoff: &backoff)
            } catch {
                return
            }
        }
    }

    /// One answer's cursor, whether it has more, and whether it holds rows (docs/protocol.md §4).
    private func page(_ answer: ServerConnection.Answer, route: String) throws -> (cursor: String, more: Bool, rows: Int) {
        guard let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any], let cursor = object["cursor"] as? String
        else {
            throw CatalogError(.dataInvalid, "the server \(endpoint.name) answered GET /v1/\(route) without a cursor (docs/protocol.md §4)")
        }
        let rows = ((object["positions"] as? [Any])?.count ?? 0) + ((object["landmarks"] as? [Any])?.count ?? 0)
        return (cursor, object["more"] as? Bool ?? false, rows)
    }

    /// Long-polls this user's position rows once (and at once again while the server has more), merging
    /// each answer with its cursor in one transaction.
    private func pullPositions() async throws {
        var cursor = try await catalog.read { [key] in try DeviceSync(store: $0).state(key: key) }.positionsCursor
        var wait = max(0, min(configuration.longPollSeconds, 60))
        while true {
            var query: [URLQueryItem] = []
            if let cursor { query.append(URLQueryItem(name: "after", value: cursor)) }
            query.append(URLQueryItem(name: "wait", value: String(wait)))
            let answer = try await endpoint.send("GET", "positions", query: query, wait: Double(wait))
            let page = try page(answer, route: "positions")
            if page.rows > 0 || page.cursor != cursor {
                let next = page.cursor
                _ = try await catalog.write { [key, configuration] store in
                    try DeviceSync(store: store).mergeAnswer(
                        page.rows > 0 ? [UInt8](answer.body) : nil, key: key, maxDriftMilliseconds: configuration.maxDriftMilliseconds
                    ) { $0.positionsCursor = next }
                }
            }
            cursor = page.cursor
            succeeded()
            guard page.more else { return }
            wait = 0
        }
    }

    /// Fetches the landmarks changed since the last fetch (`If-None-Match`: a 304 when none).
    private func pullLandmarks() async throws {
        let state = try await catalog.read { [key] in try DeviceSync(store: $0).state(key: key) }
        var cursor = state.landmarksCursor
        var etag = state.landmarksETag
        while true {
            var query: [URLQueryItem] = []
            if let cursor { query.append(URLQueryItem(name: "after", value: cursor)) }
            let answer = try await endpoint.send(
                "GET", "landmarks", query: query, headers: etag.map { ["If-None-Match": $0] } ?? [:], accept: [304])
            if answer.status == 304 {
                succeeded()
                return
            }
            let page = try page(answer, route: "landmarks")
            let tag = answer.etag
            _ = try await catalog.write { [key, configuration] store in
                try DeviceSync(store: store).mergeAnswer(
                    page.rows > 0 ? [UInt8](answer.body) : nil, key: key, maxDriftMilliseconds: configuration.maxDriftMilliseconds
                ) {
                    $0.landmarksCursor = page.cursor
                    $0.landmarksETag = tag
                }
            }
            succeeded()
            guard page.more else { return }
            cursor = page.cursor
            etag = nil
        }
    }
}

/// A value behind a lock.
final class SessionLock<Value: Sendable>: @unchecked Sendable {
    // Safe: `value` is only touched inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
