import Foundation

extension Catalog {
    /// Observes a read: yields its result at once, then again after every commit that changes it — this
    /// process's or another's (a cron `catalog sync`, an `import`) — never the same value twice in a row
    /// (docs/swift-library.md).
    ///
    /// ```swift
    /// for try await pages in catalog.observe({ try await $0.featured() }) { show(pages) }
    /// ```
    ///
    /// How commits are found: this catalog's own writes wake observers at once; other connections' commits
    /// are found by one monitor thread per catalog every 50 ms (`PRAGMA data_version` and the file's identity). Then each observer runs `read` again (on a reader
    /// connection) and yields only a value different from the last one it yielded. Commits that come
    /// faster than the observer iterates are folded into one read: an observer sees the latest state,
    /// not every intermediate one.
    ///
    /// Cancelling the iterating task ends the sequence (`next()` returns nil). A read that fails is retried
    /// once on a newly opened connection (the file may have been replaced); if it fails again, the
    /// sequence throws that error and ends. ``close()`` ends every observation with `CatalogError` 64.
    /// - Parameter read: what to observe; use one call that reads in one snapshot (such as
    ///   ``carousel(user:)``) when several values must agree.
    /// - Returns: the values `read` returns, the first at once and then each change, until cancelled or closed.
    public func observe<Value: Equatable & Sendable>(_ read: @escaping @Sendable (Catalog) async throws -> Value) -> CatalogObservation<Value> {
        CatalogObservation(catalog: self, read: read)
    }
}

/// The `AsyncSequence` of ``Catalog/observe(_:)``: a read's result, then its changes.
public struct CatalogObservation<Value: Equatable & Sendable>: AsyncSequence, Sendable {
    public typealias Element = Value
    let catalog: Catalog
    let read: @Sendable (Catalog) async throws -> Value

    public func makeAsyncIterator() -> Iterator { Iterator(catalog: catalog, read: read) }

    /// Iterates one observation; it subscribes to changes on its first `next()` and unsubscribes when it
    /// is released, cancelled or ends.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let catalog: Catalog
        let read: @Sendable (Catalog) async throws -> Value
        var subscription: ChangeSubscription?
        var seen: UInt64 = 0
        var last: Value?
        var finished = false

        public mutating func next() async throws -> Value? {
            guard !finished, !Task.isCancelled else { return end() }
            guard subscription != nil else {
                // Subscribe before the first read: a commit after it is then never missed.
                let subscription = ChangeSubscription(catalog.monitor)
                self.subscription = subscription
                seen = subscription.start
                let value = try await readOnce()
                last = value
                return value
            }
            while true {
                do {
                    seen = try await catalog.monitor.wait(after: seen)
                } catch is CancellationError {
                    return end()
                } catch {
                    _ = end()
                    throw error
                }
                let value = try await readOnce()
                if value != last {
                    last = value
                    return value
                }
            }
        }

        private mutating func end() -> Value? {
            finished = true
            subscription = nil
            return nil
        }

        private mutating func readOnce() async throws -> Value {
            do {
                return try await read(catalog)
            } catch  where !Catalog.keepsConnection(after: error) {
                do { return try await read(catalog) } catch {
                    _ = end()
                    throw error
                }
            } catch {
                _ = end()
                throw error
            }
        }
    }
}

/// One observer's registration with a ``ChangeMonitor`` (released: unregistered).
final class ChangeSubscription: Sendable {
    let monitor: ChangeMonitor
    /// The change generation when it subscribed.
    let start: UInt64
    init(_ monitor: ChangeMonitor) {
        self.monitor = monitor
        start = monitor.subscribe()
    }
    deinit { monitor.unsubscribe() }
}

/// Finds commits to one database and counts them in a generation number that observers wait on.
///
/// - This process's writes through the ``Catalog`` bump the generation at once (``noteLocalWrite()``).
/// - Other connections' commits (other processes, or other `CatalogStore`s here) are found by a thread
///   that every ``interval`` runs `PRAGMA data_version` on a read-only connection of its own (the value
///   changes when another connection has committed: https://sqlite.org/pragma.html#pragma_data_version)
///   and `stat`s the path: a different file (replaced, restored, created) counts as a change and the
///   connection is reopened on it.
///
/// Why 50 ms: another process's commit then reaches observers in at most ~50 ms plus one read (the target
/// is a p95 under 100 ms, a frame or two of a page animation), and a check costs one `stat` and one
/// pragma that reads the WAL index in shared memory (no disk I/O): 20 a second, well under 1 % of a core.
/// The thread exists only while something observes; one thread serves every observer of the catalog.
final class ChangeMonitor: @unchecked Sendable {
    // Safe: the stored `var`s marked "state" are touched only while `condition` is locked, those marked
    // "check" only while `checkLock` is locked (the order is `checkLock`, then `condition`; the connection is
    // used only under `checkLock`, so by one thread at a time). No continuation is resumed while either
    // lock is held: see ``resume(_:with:)``.
    static let interval: TimeInterval = 0.05

    let path: String
    private let condition = NSCondition()
    private var generation: UInt64 = 0  // state
    private var waiters: [UInt64: CheckedContinuation<UInt64, any Error>] = [:]  // state
    private var nextWaiter: UInt64 = 0  // state
    private var subscribers = 0  // state
    private var threadRunning = false  // state
    private var isClosed = false  // state
    private let checkLock = NSLock()
    private var probe: DataVersionProbe?  // check
    private var dataVersion: Int64?  // check
    private var identity: FileIdentity?  // check
    private var started = false  // check
    /// Test hooks; behind a lock of their own that is never held while anything else is done.
    let hooks = Protected(Hooks())

    /// Where a test can step into a delivery (both nil in the product).
    struct Hooks {
        /// Runs on the delivering thread of a new generation with the number of waiters taken out of the
        /// waiting list (when there are any), after the monitor's locks are released and before the first
        /// of them is resumed.
        var willResume: (@Sendable (Int) -> Void)?
        /// Runs inside a waiter's cancellation handler (within `Task.cancel()`), before it takes the lock.
        var willCancel: (@Sendable () -> Void)?
    }

    init(path: String) { self.path = path }

    /// How many observers wait for a change now (for tests).
    var waiterCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiters.count
    }

    /// Registers an observer and returns the current generation, once the baseline (the file's identity
    /// and data version) is taken: a commit after this call is seen.
    ///
    /// Starts the thread if needed.
    func subscribe() -> UInt64 {
        checkLock.lock()
        if !started {
            started = true
            _ = check()
        }
        checkLock.unlock()
        condition.lock()
        defer { condition.unlock() }
        subscribers += 1
        if !threadRunning && !isClosed {
            threadRunning = true
            let thread = Thread { [self] in loop() }
            thread.name = "LandmarkCatalog.ChangeMonitor"
            thread.stackSize = 256 << 10
            thread.start()
        }
        return generation
    }

    func unsubscribe() {
        condition.lock()
        subscribers -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// This process wrote: wake every observer now.
    func noteLocalWrite() { bump() }

    /// Waits until the generation passes `seen` and returns it.
    /// - Throws: `CancellationError` when the task is cancelled; `CatalogError` 64 when the catalog is closed.
    func wait(after seen: UInt64) async throws -> UInt64 {
        let id = newWaiterID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UInt64, any Error>) in
                condition.lock()
                let now: Result<UInt64, any Error>?
                if isClosed {
                    now = .failure(closedError())
                } else if generation > seen {
                    now = .success(generation)
                } else if Task.isCancelled {
                    // The cancellation handler ran before this registration: it found nothing to resume.
                    now = .failure(CancellationError())
                } else {
                    waiters[id] = continuation
                    now = nil
                }
                condition.unlock()
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            cancelWaiter(id)
        }
    }

    private func newWaiterID() -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        nextWaiter += 1
        return nextWaiter
    }

    /// Ends one wait with `CancellationError`.
    ///
    /// Runs inside `Task.cancel()`, which holds the task's status lock meanwhile. It takes `condition` only
    /// to remove one entry: nobody holding `condition` ever waits for anything (a task's lock included),
    /// so this never waits for long.
    private func cancelWaiter(_ id: UInt64) {
        hooks.withLock { $0.willCancel }?()
        condition.lock()
        let continuation = waiters.removeValue(forKey: id)
        condition.unlock()
        if let continuation { resume([continuation], with: .failure(CancellationError())) }
    }

    /// Ends every wait and the thread; closes the connection.
    func close() {
        condition.lock()
        isClosed = true
        let ended = Array(waiters.values)
        waiters.removeAll()
        condition.broadcast()
        condition.unlock()
        checkLock.lock()
        probe = nil
        checkLock.unlock()
        resume(ended, with: .failure(closedError()))
    }

    private func closedError() -> CatalogError {
        CatalogError(.usage, "the catalog was closed, \(path)", reason: .closed)
    }

    /// A new generation; every waiter resumes with it.
    private func bump() {
        condition.lock()
        generation += 1
        let next = generation
        let woken = Array(waiters.values)
        waiters.removeAll()
        condition.unlock()
        if !woken.isEmpty { hooks.withLock { $0.willResume }?(woken.count) }
        resume(woken, with: .success(next))
    }

    /// Resumes `continuations` (taken out of `waiters` under the lock) with no lock held.
    ///
    /// Resuming a task may wait for its status lock, which `Task.cancel()` holds while it runs the task's
    /// cancellation handler (``cancelWaiter(_:)``, which takes `condition`): resuming under `condition`
    /// deadlocked, 2 % of rounds with 20 observers cancelled during a delivery.
    private func resume(_ continuations: [CheckedContinuation<UInt64, any Error>], with result: Result<UInt64, any Error>) {
        for continuation in continuations { continuation.resume(with: result) }
    }

    private func loop() {
        while true {
            condition.lock()
            if subscribers > 0 && !isClosed { _ = condition.wait(until: Date(timeIntervalSinceNow: Self.interval)) }
            let stop = subscribers == 0 || isClosed
            if stop { threadRunning = false }
            condition.unlock()
            if stop { return }
            checkLock.lock()
            let changed = check()
            checkLock.unlock()
            if changed { bump() }
        }
    }

    /// Under `checkLock`: whether the database changed since the last check (another file at the path, or
    /// another connection's commit).
    private func check() -> Bool {
        condition.lock()
        let closed = isClosed
        condition.unlock()
        guard !closed else {
            probe = nil
            return false
        }
        let now = FileIdentity(path: path)
        if probe == nil || now != identity {
            let changed = now != identity
            identity = now
            probe = nil
            dataVersion = nil
            if now != nil, let fresh = try? DataVersionProbe(path: path) {
                probe = fresh
                dataVersion = fresh.version()
            }
            return changed
        }
        guard let version = probe?.version() else {
            probe = nil  // reopened at the next check
            return true
        }
        defer { dataVersion = version }
        return version != dataVersion
    }
}
