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
        let tokens = TokenSource(timeout: configuration.requestTimeout, token)
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
/// `Sendable`: share it between tasks and views; a SwiftUI view reads ``SyncStatusModel``.
///
/// Offline first. A write always lands in the local database first; the rows written here that the server
/// has not acknowledged are the outbox: the rows above a push cursor stored in the database, so they
/// survive a restart or a kill and go when the server answers again. The push cursor moves only after the
/// server's answer, in its own transaction; a row sent twice (an answer lost, the app killed before it
/// recorded the answer) is stored once, because the server merges by the row's stamp (docs/protocol.md §6).
/// When the server forgets (its database replaced or restored from a backup: its cursor names another
/// database, §3), the user's row goes into the outbox again, whoever stamped it.
///
/// Two tasks run the session: the outbox (woken by every commit of the catalog, pushed at once) and the
/// pull: the landmarks (`GET /v1/landmarks` with `If-None-Match`, at start and every
/// ``Configuration/landmarkRefreshInterval``) and the long-poll of `GET /v1/positions`, each answer merged
/// in one transaction with its cursor. A failure is published in ``status`` and retried with a bounded
/// backoff with jitter; a 401 asks the token closure once more first. An answer that makes no progress (a
/// long-poll answered at once with nothing, a page that says `more` without moving its cursor) is backed
/// off like a failure, so a misbehaving proxy cannot make the session spin.
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
        /// How long a request may take beyond a long-poll's wait (s).
        public var requestTimeout: Double = 30
        /// Rows from the server stamped further ahead of this device's clock are quarantined (ms, as
        /// `catalog sync --max-drift`).
        public var maxDriftMilliseconds: Int64 = 300_000
        /// Test hooks (the package's tests only).
        package var hooks = Hooks()
        /// Send over `URLSession` on Linux too (the package's tests; an app never needs it).
        package var forceURLSession = false

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
    /// Bumped by ``retryNow()``: a task that sees it moved starts its backoff again.
    private let retries = SessionLock<UInt64>(0)
    /// The server's last answer to a push quarantined this device's row: kept in ``status`` as its
    /// `lastError` until a push is applied, not cleared by the next long-poll's answer (a device whose
    /// clock is ahead would otherwise fall out of sync with nothing shown).
    private let quarantined = SessionLock<CatalogError?>(nil)
    /// The server said this session's user was erased: the session is ending (once).
    private let accountGone = SessionLock(false)

    init(catalog: Catalog, server: URL, user: String, configuration: Configuration, tokens: TokenSource) {
        self.catalog = catalog
        self.server = ServerConnection.base(for: server)
        self.user = user
        self.configuration = configuration
        endpoint = ServerConnection(
            base: self.server, tokens: tokens, requestTimeout: configuration.requestTimeout, forceURLSession: configuration.forceURLSession)
        key = "\(endpoint.name) as \(user)"
    }

    /// The status now (no wait): connecting, connected, offline or failing; pending changes; last sync;
    /// last error.
    public var status: SyncStatus { broadcaster.status }

    /// The status now, then each change of it, until ``stop()``.
    ///
    /// Each iteration is a subscriber of its own.
    public var statusUpdates: AsyncStream<SyncStatus> { broadcaster.stream() }

    /// Returns once every change written on this device before or while it waits is acknowledged by the
    /// server (at once when there is none).
    ///
    /// While the server cannot be reached it keeps waiting: cancel the calling task to give up (the changes
    /// stay in the outbox), or use ``flush(timeout:)``.
    /// - Throws: `CancellationError` when cancelled; `CatalogError` 64 when the session is stopped first,
    ///   69 with reason `accountErased` when it stopped because the user was erased; database failures.
    public func flush() async throws {
        let read = pendingRead
        if let erased = status.lastError, status.isAccountErased { throw erased }
        for await status in statusUpdates {
            try Task.checkCancellation()
            // The status may lag a commit made just now: the database says whether anything is pending.
            if status.pendingChanges == 0, try await read(catalog).isEmpty { return }
        }
        try Task.checkCancellation()
        // Ended because the user was erased: nothing can be acknowledged any more.
        if let erased = status.lastError, status.isAccountErased { throw erased }
        throw CatalogError(.usage, "the sync session was stopped before every change was acknowledged", hint: "start a new session")
    }

    /// Waits as ``flush()`` does, at most `timeout`: in a background task an app has a few seconds.
    ///
    /// ```swift
    /// let sent = try await session.flush(timeout: .seconds(5))   // false: still in the outbox
    /// ```
    /// - Parameter timeout: the longest wait.
    /// - Returns: true when every change was acknowledged, false when the time ran out first (the changes
    ///   stay in the outbox and go when the server answers).
    /// - Throws: `CancellationError` when cancelled; `CatalogError` 64 when the session is stopped first.
    @discardableResult
    public func flush(timeout: Duration) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { [self] in
                try await flush()
                return true
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            // Both children return or throw; the first to finish decides.
            return try await group.next() ?? false
        }
    }

    /// Tries again now instead of waiting out the backoff: the network is back, or the app has new
    /// credentials (the token closure is asked again before the next request).
    public func retryNow() async {
        await endpoint.tokens.reset()
        retries.withLock { $0 &+= 1 }
        waker.wake()
    }

    /// Stops the session: ends the long-poll and any request in flight, and returns within about a second
    /// whatever the server does.
    ///
    /// What is not yet acknowledged stays in the outbox for the next session. ``statusUpdates`` end.
    public func stop() async {
        await halt()
        broadcaster.finish()
    }

    /// Ends the tasks and the requests in flight (``stop()`` without ending the status streams).
    private func halt() async {
        let running = tasks.withLock { tasks -> [Task<Void, Never>] in
            defer { tasks.removeAll() }
            return tasks
        }
        for task in running { task.cancel() }
        // Cancelling ends the requests in flight; the tasks end at once after that. A bound all the same:
        // stop() returns even if one of them is held (a database write behind another process's lock).
        await Self.first(of: { for task in running { await task.value } }, orAfter: .seconds(1))
        endpoint.close()
    }

    /// Signs this device's user out.
    ///
    /// Stops the session and, with `erasingLocalData`, removes what this device held of the user — their position row (no tombstone: nothing is sent) and this session's
    /// cursors and outbox. The landmarks stay. For a user switch: sign out, then start a session for the
    /// next user with their token.
    ///
    /// A change not yet acknowledged is dropped by an erasing sign-out: call ``flush(timeout:)`` first to
    /// send it.
    /// - Parameter erasingLocalData: remove the user's row and this session's state from the database.
    /// - Throws: database failures (the session is stopped all the same).
    public func signOut(erasingLocalData: Bool) async throws {
        await stop()
        await endpoint.tokens.reset()
        guard erasingLocalData else { return }
        try await forgetUser()
    }

    /// Removes the user's row (no tombstone: nothing is sent) and this session's cursors and outbox, and
    /// scrubs the WAL (docs/erasure.md §3).
    private func forgetUser() async throws {
        _ = try await catalog.write { [user, key] in
            try DeviceSync(store: $0).forget(user: user, key: key)
            // The forgotten rows leave the WAL too (docs/erasure.md §3).
            UserErasure($0).scrub()
        }
    }

    /// The server said this session's user was erased (401 `account_erased`, docs/protocol.md §2), on
    /// either task: that task is cancelled at once (nothing is retried), and a task of its own stops the
    /// session, clears this device's copy of the user as an erasing sign-out does, and only then
    /// publishes ``SyncStatus/State/accountErased`` and ends the status streams.
    private func accountWasErased(_ error: CatalogError) {
        let first = accountGone.withLock { gone in
            defer { gone = true }
            return !gone
        }
        withUnsafeCurrentTask { $0?.cancel() }
        guard first else { return }
        Task { [self] in
            await halt()
            await endpoint.tokens.reset()
            var published = error
            do {
                try await forgetUser()
            } catch let failure {
                published = (failure as? CatalogError) ?? error
            }
            let pending = (try? await pendingRead(catalog).count) ?? 0
            broadcaster.update {
                $0.state = .accountErased
                $0.lastError = published
                $0.pendingChanges = pending
            }
            broadcaster.finish()
        }
    }

    /// Erases this session's user everywhere: `DELETE /v1/users/me` on the server (docs/protocol.md §6a),
    /// then, once the server has answered, clears this device's copy of the user (their row, this
    /// session's cursors and outbox) and signs the session out (``signOut(erasingLocalData:)``).
    ///
    /// The server's erasure wins over every row of the user stamped before it on every node, and the
    /// user's tokens issued until then are refused: the user's other devices end their sessions with
    /// ``SyncStatus/State/accountErased`` at their next exchange, their copy cleared; one that signs in
    /// again has its old rows refused as erased, and they leave its outbox. What the app shows afterwards:
    /// the account and its data were deleted (docs/erasure.md §6).
    /// - Throws: the server's refusal or a network failure (nothing is cleared then: call again);
    ///   database failures while clearing.
    public func eraseUser() async throws {
        _ = try await endpoint.send("DELETE", .users, path: DeviceRoute.eraseMePath)
        try await signOut(erasingLocalData: true)
    }

    /// Waits for `work` or `limit`, whichever comes first (`work` goes on alone after the limit).
    static func first(of work: @escaping @Sendable () async -> Void, orAfter limit: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = SessionLock(false)
            @Sendable func resume() {
                if once.withLock({ done in
                    defer { done = true }
                    return !done
                }) {
                    continuation.resume()
                }
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                resume()
            }
            Task {
                await work()
                timer.cancel()
                resume()
            }
        }
    }

    // MARK: - Running

    func start() async throws {
        let state = try await catalog.read { [key] in try DeviceSync(store: $0).state(key: key) }
        let pending = try await pendingRead(catalog)
        broadcaster.update {
            $0.pendingChanges = pending.count
            $0.hasSynced = state.positionsCursor != nil
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

    /// The two tasks, each with its own last failure: one's success does not hide the other's failure (a
    /// pull refused while pushes go through would flicker between "connected" and the error).
    enum Side: Sendable { case push, pull }
    private let failures = SessionLock<[Side: CatalogError]>([:])

    /// `side`'s exchange succeeded: its failure is gone; connected unless the other side still fails; the
    /// other task stops waiting out its backoff.
    func succeeded(_ side: Side, synced: Bool = false) {
        let wasConnected = broadcaster.status.isConnected
        let kept = quarantined.withLock { $0 }
        let other = failures.withLock { failures -> CatalogError? in
            failures[side] = nil
            return failures.values.first
        }
        broadcaster.update {
            $0.state = other.map(SyncStatus.State.init(failure:)) ?? .connected
            $0.lastSyncedAt = Date()
            $0.lastError = other ?? kept
            if synced { $0.hasSynced = true }
        }
        if !wasConnected { waker.wake() }
    }

    /// `side` has nothing to do (an empty outbox): whatever failed there is moot.
    func idle(_ side: Side) {
        guard
            let other = failures.withLock({ failures -> CatalogError?? in
                guard failures.removeValue(forKey: side) != nil else { return .none }
                return .some(failures.values.first)
            })
        else { return }
        guard broadcaster.status.state != .connecting else { return }
        let kept = quarantined.withLock { $0 }
        broadcaster.update {
            $0.state = other.map(SyncStatus.State.init(failure:)) ?? .connected
            $0.lastError = other ?? kept
        }
    }

    /// Publishes `side`'s failure and waits out the backoff (cut short by ``retryNow()``).
    func failed(_ side: Side, _ error: any Error, backoff: inout Backoff) async {
        var published: CatalogError
        var retryAfter: Double?
        switch error {
        case let failure as ServerConnection.Failure:
            published = failure.error
            retryAfter = failure.retryAfter
        case let error as CatalogError: published = error
        default: published = CatalogError(.software, "internal error in the sync session: \(error)")
        }
        if published.reason == .accountErased {
            accountWasErased(published)
            return
        }
        let state = SyncStatus.State(failure: published)
        failures.withLock { $0[side] = published }
        broadcaster.update {
            $0.state = state
            $0.lastError = published
        }
        // A refused row or request stays refused until something changes: retry at the slowest pace.
        let refused = [400, 403, 413, 415].contains(published.httpStatus ?? 0)
        await waitOut(refused ? configuration.maximumBackoff : backoff.next(atLeast: retryAfter), backoff: &backoff)
    }

    /// Sleeps `seconds` (cut short by the other task's success or ``retryNow()``); after a ``retryNow()``
    /// the backoff starts again.
    private func waitOut(_ seconds: Double, backoff: inout Backoff) async {
        let seen = retries.withLock { $0 }
        await waker.sleep(seconds: seconds)
        if retries.withLock({ $0 }) != seen { backoff.reset() }
    }

    // MARK: - The outbox

    /// Pushes the outbox whenever it is not empty; woken by every commit to the catalog.
    private func runOutbox() async {
        var backoff = Backoff(minimum: configuration.minimumBackoff, maximum: configuration.maximumBackoff)
        while !Task.isCancelled {
            do {
                for try await pending in catalog.observe(pendingRead) {
                    broadcaster.update { $0.pendingChanges = pending.count }
                    if pending.isEmpty { idle(.push) } else { try await pushUntilEmpty(backoff: &backoff) }
                }
                return  // the catalog was closed, or the task cancelled
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                await failed(.push, error, backoff: &backoff)
            }
        }
    }

    private func pushUntilEmpty(backoff: inout Backoff) async throws {
        while true {
            try Task.checkCancellation()
            let pending = try await pendingRead(catalog)
            broadcaster.update { $0.pendingChanges = pending.count }
            guard !pending.isEmpty else {
                idle(.push)
                return
            }
            do {
                try await push(pending)
                backoff.reset()
            } catch let error where !(error is CancellationError) && !Task.isCancelled {
                await failed(.push, error, backoff: &backoff)
            }
        }
    }

    /// One `POST /v1/positions` of the outbox, then (only then) the push cursor moves (docs/protocol.md §6).
    private func push(_ pending: [PendingPosition]) async throws {
        let body = Data(("{\"positions\":[" + pending.map(\.json).joined(separator: ",") + "]}").utf8)
        let answer = try await endpoint.send("POST", .positions, body: body)
        await configuration.hooks.afterPushAnswered?()
        try Task.checkCancellation()
        let outcomes = try PushAnswer.read(answer.body, rows: pending.count, server: endpoint.name)
        // Every outcome is the server's decision on that row: sending it again would change nothing.
        let through = pending.map(\.seq).max() ?? 0
        try await catalog.write { [key] in try DeviceSync(store: $0).acknowledgePositions(key: key, through: through) }
        // A row refused as erased (the user's account was erased on the server) or as expired (older than
        // a deletion the server collected while this device was away): the server holds no row for it, and
        // this copy forgets it too, so it reads the server's state again (docs/erasure.md §4).
        let erased = zip(pending, outcomes.outcomes).filter { $0.1 == .erased || $0.1 == .expired }.map(\.0)
        if !erased.isEmpty { try await catalog.write { try DeviceSync(store: $0).dropErased(erased) } }
        if outcomes.count(.quarantined) > 0 {
            let error = CatalogError(
                .dataInvalid,
                "the server \(endpoint.name) quarantined this device's position: its stamp is too far ahead of the server's clock",
                hint:
                    "check this device's clock; a later position set here is sent again, and is quarantined too while the device's stamps stay ahead",
                reason: .clockAhead)
            quarantined.withLock { $0 = error }
        } else if outcomes.count(.applied) > 0 {
            quarantined.withLock { $0 = nil }
        }
        succeeded(.push)
    }

    // MARK: - Pulling

    /// A long-poll answered with nothing and no move sooner than this fraction of its wait is no progress
    /// (a proxy or server that does not hold long-polls): backed off like a failure.
    static let earlyAnswerFraction = 0.5

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
                if try await pullPositions() {
                    backoff.reset()
                } else {
                    // Nothing, at once: wait as after a failure, without calling it one (the status stays).
                    await waitOut(backoff.next(), backoff: &backoff)
                }
            } catch let error where !(error is CancellationError) && !Task.isCancelled {
                await failed(.pull, error, backoff: &backoff)
            } catch {
                return
            }
        }
    }

    /// Long-polls this user's position rows once (and at once again while the server has more), merging
    /// each answer with its cursor in one transaction.
    /// - Returns: whether the server made progress: rows, a moved cursor, or a wait held for its time.
    private func pullPositions() async throws -> Bool {
        var cursor = try await catalog.read { [key] in try DeviceSync(store: $0).state(key: key) }.positionsCursor
        var wait = max(0, min(configuration.longPollSeconds, 60))
        while true {
            var query: [URLQueryItem] = []
            if let cursor { query.append(URLQueryItem(name: "after", value: cursor)) }
            query.append(URLQueryItem(name: "wait", value: String(wait)))
            let asked = ContinuousClock.now
            let answer = try await endpoint.send("GET", .positions, query: query, wait: Double(wait))
            let merged = try await catalog.write { [key, configuration, endpoint, cursor] store in
                try DeviceSync(store: store).mergeAnswer(
                    [UInt8](answer.body), route: .positions, key: key, server: endpoint.name, after: cursor,
                    maxDriftMilliseconds: configuration.maxDriftMilliseconds)
            }
            let page = merged.page
            let moved = page.rows > 0 || page.cursor != cursor
            let early = ContinuousClock.now - asked < .milliseconds(Int64(Double(wait) * 1000 * Self.earlyAnswerFraction))
            cursor = page.cursor
            succeeded(.pull, synced: !page.more)
            guard page.more else { return moved || wait == 0 || !early }
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
                "GET", .landmarks, query: query, headers: etag.map { ["If-None-Match": $0] } ?? [:], accept: [304])
            if answer.status == 304 {
                succeeded(.pull)
                return
            }
            let tag = answer.etag
            let merged = try await catalog.write { [key, configuration, endpoint, cursor] store in
                try DeviceSync(store: store).mergeAnswer(
                    [UInt8](answer.body), route: .landmarks, key: key, server: endpoint.name, after: cursor, etag: tag,
                    maxDriftMilliseconds: configuration.maxDriftMilliseconds)
            }
            succeeded(.pull)
            guard merged.page.more else { return }
            cursor = merged.page.cursor
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
