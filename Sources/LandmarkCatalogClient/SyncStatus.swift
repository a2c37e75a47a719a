import Foundation
import LandmarkCatalog

/// What a ``SyncSession`` is doing, for the line an app shows ("Syncing…", "Offline — 1 change waiting").
public struct SyncStatus: Sendable, Equatable {
    /// Where the session stands with the server (docs/swift-library.md, "Showing the status").
    public enum State: String, Sendable, Equatable, CaseIterable {
        /// No answer yet since the session started (first contact).
        case connecting
        /// The last exchange succeeded.
        case connected
        /// The server cannot be reached: no network, no connection, a timeout, or a proxy's 502/503/504
        /// (a stopped, restarting or draining server); or it asked this device to slow down (429, its
        /// per-user limits, docs/serve.md §3; the session waits out `Retry-After`). Nothing to do but wait;
        /// writes go on locally.
        case offline
        /// The server refuses: 401 after a refresh (sign in again), 403 (the token's user is not the
        /// session's), another 4xx but 429, a 500, an answer that is not the protocol or over 64 MiB, a TLS
        /// certificate that does not verify. Someone must act.
        case failing
        /// The server answered that this session's user was erased (401 `account_erased`, docs/protocol.md
        /// §2): the account was deleted, from this device or another. The session has stopped for good
        /// (``SyncStatus/isRunning`` is false) and this device's copy of the user — their row, the
        /// session's cursors and outbox — is cleared; nothing is retried. Show "Your account and its data
        /// were deleted." and return to sign-in (docs/erasure.md §6).
        case accountErased

        /// The state a failure puts the session in: offline, failing, or account erased.
        /// - Parameter failure: the error published.
        public init(failure: CatalogError) {
            switch failure.reason {
            case .offline: self = .offline
            case .accountErased: self = .accountErased
            default: self = .failing
            }
        }
    }

    /// Where the session stands: connecting, connected, offline, failing or account erased.
    public var state: State = .connecting
    /// Whether the server said this session's user was erased (`state == .accountErased`): the session
    /// has stopped and cleared the user's data on this device.
    public var isAccountErased: Bool { state == .accountErased }
    /// Whether the last exchange with the server succeeded (`state == .connected`).
    public var isConnected: Bool { state == .connected }
    /// Whether this device has merged a complete answer for its user from this server, ever (kept in the
    /// database): false on a first launch until the first pull completes, so an app can show "Loading…"
    /// instead of an empty or stale page.
    public var hasSynced = false
    /// Position rows written on this device and not yet acknowledged by the server: the outbox
    /// (docs/protocol.md §6).
    ///
    /// A row written many times while offline counts once, since only its last state is sent
    /// (last-writer-wins keeps nothing else); so for one user it is 0 or 1.
    public var pendingChanges = 0
    /// When the server last answered a request of this session with success (or, before the first answer
    /// of this run, the last good exchange recorded in the database); nil when never.
    public var lastSyncedAt: Date?
    /// The last failure (the server unreachable, the token refused after a refresh, a row refused), nil
    /// after the next success.
    ///
    /// Its `CatalogError.kind` and `CatalogError.httpStatus` say which.
    public var lastError: CatalogError?
    /// False once ``SyncSession/stop()`` was called.
    public var isRunning = true

    public init() {}
}

/// The current status and every change of it, to any number of subscribers.
final class StatusBroadcaster: @unchecked Sendable {
    // Safe: every stored property is touched only while `lock` is held.
    private let lock = NSLock()
    private var current = SyncStatus()
    private var subscribers: [UInt64: AsyncStream<SyncStatus>.Continuation] = [:]
    private var nextID: UInt64 = 0

    var status: SyncStatus {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    /// Changes the status; subscribers get it when it differs.
    func update(_ change: (inout SyncStatus) -> Void) {
        lock.lock()
        var next = current
        change(&next)
        let changed = next != current
        current = next
        let targets = changed ? Array(subscribers.values) : []
        lock.unlock()
        for continuation in targets { continuation.yield(next) }
    }

    /// A stream that yields the current status at once, then each change; it ends after ``finish()``.
    func stream() -> AsyncStream<SyncStatus> {
        AsyncStream(bufferingPolicy: .bufferingNewest(16)) { continuation in
            lock.lock()
            let id = nextID
            nextID += 1
            let running = current.isRunning
            if running { subscribers[id] = continuation }
            let now = current
            lock.unlock()
            continuation.yield(now)
            if !running { continuation.finish() }
            continuation.onTermination = { [weak self] _ in self?.remove(id) }
        }
    }

    private func remove(_ id: UInt64) {
        lock.lock()
        subscribers[id] = nil
        lock.unlock()
    }

    /// Marks the session stopped and ends every stream.
    func finish() {
        update { $0.isRunning = false }
        lock.lock()
        let targets = Array(subscribers.values)
        subscribers.removeAll()
        lock.unlock()
        for continuation in targets { continuation.finish() }
    }
}
