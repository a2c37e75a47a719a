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
    // Safe: every stored `var` is touched only while `condition` is locked; the connection is used only
    // under the lock, so by one thread at a time.
    static let interval: TimeInterval = 0.05

    let path: String
    private let condition = NSCondition()
    private var generation: UInt64 = 0
    private var waiters: [UInt64: CheckedContinuation<UInt64, any Error>] = [:]
    private var nextWaiter: UInt64 = 0
    private var subscribers = 0
    private var threadRunning = false
    private var isClosed = false
    private var probe: DataVersionProbe?
    private var dataVersion: Int64?
    private var identity: FileIdentity?
    private var started = false

    init(path: String) { self.path = path }

    /// Registers an observer and returns the current generation, once the baseline (the file's identity
    /// and data version) is taken: a commit after this call is seen.
    ///
    /// Starts the thread if needed.
    func subscribe() -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        subscribers += 1
        if !started {
            started = true
            _ = check()
        }
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
    func noteLocalWrite() {
        condition.lock()
        bump()
        condition.unlock()
    }

    /// Waits until the generation passes `seen` and returns it.
    /// - Throws: `CancellationError` when the task is cancelled; `CatalogError` 64 when the catalog is closed.
    func wait(after seen: UInt64) async throws -> UInt64 {
        let id = newWaiterID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UInt64, any Error>) in
                condition.lock()
                defer { condition.unlock() }
                if isClosed {
                    continuation.resume(throwing: CatalogError(.usage, "the catalog was closed, \(path)", reason: .closed))
                } else if generation > seen {
                    continuation.resume(returning: generation)
                } else if Task.isCancelled {
                    // The cancellation handler ran before this registration: it found nothing to resume.
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiters[id] = continuation
                }
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

    private func cancelWaiter(_ id: UInt64) {
        condition.lock()
        let continuation = waiters.removeValue(forKey: id)
        condition.unlock()
        continuation?.resume(throwing: CancellationError())
    }

    /// Ends every wait and the thread; closes the connection.
    func close() {
        condition.lock()
        defer { condition.unlock() }
        isClosed = true
        probe = nil
        for continuation in waiters.values {
            continuation.resume(throwing: CatalogError(.usage, "the catalog was closed, \(path)", reason: .closed))
        }
        waiters.removeAll()
        condition.broadcast()
    }

    /// Under the lock: a new generation; every waiter resumes with it.
    private func bump() {
        generation += 1
        for continuation in waiters.values { continuation.resume(returning: generation) }
        waiters.removeAll()
    }

    private func loop() {
        condition.lock()
        while subscribers > 0 && !isClosed {
            _ = condition.wait(until: Date(timeIntervalSinceNow: Self.interval))
            guard subscribers > 0 && !isClosed else { break }
            if check() { bump() }
        }
        threadRunning = false
        condition.unlock()
    }

    /// Under the lock: whether the database changed since the last check (another file at the path, or
    /// another connection's commit).
    private func check() -> Bool {
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
