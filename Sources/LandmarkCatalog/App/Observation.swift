import Foundation

#if os(Linux)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension Catalog {
    /// Observes a read: yields its result at once, then again after every commit that changes it — this
    /// process's or another's (a cron `catalog sync`, an `import`) — never the same value twice in a row
    /// (docs/swift-library.md).
    ///
    /// ```swift
    /// for try await pages in catalog.observe({ try await $0.featured() }) { show(pages) }
    /// ```
    ///
    /// How commits are found: this catalog's own writes wake observers at once. Other connections' commits
    /// (another process, or another connection in this one) are seen through the OS: one monitor thread per
    /// catalog, alive while something observes, sleeps until the database's directory reports a change to
    /// the database, its `-wal` or its `-journal` (inotify on Linux, dispatch sources on Darwin; elsewhere, or
    /// when inotify fails, a check once a second), then checks `PRAGMA data_version` and the file's identity
    /// (a file replaced at the path counts as a change). Idle, it makes no wake-ups. Then each observer runs
    /// `read` again (on a reader connection) and yields only a value different from the last one it yielded. Commits that come
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
/// - This process's writes through the ``Catalog`` bump the generation at once (``noteLocalWrite()``):
///   every write path of `Catalog` (``Catalog/write(_:)``, which imports and `setPosition` and the
///   client's sync session use, and `sideWrite`, which `sync` uses) calls it when it returns.
/// - Other connections' commits (other processes, or other connections in this one) are seen through the
///   OS: a thread, which exists only while something observes, blocks until the database's directory
///   reports a change to `<db>`, `<db>-wal` or `<db>-journal` (Linux: inotify; Darwin: dispatch sources
///   on the directory, the database and its WAL, see ``FileEvents``). Then it runs ``check()``: `stat`
///   the path (another file there — replaced, restored, created — is a change, and the probe connection
///   is reopened on it) and `PRAGMA data_version` on a read-only connection of its own (it moves when
///   another connection has committed: https://sqlite.org/pragma.html#pragma_data_version). Only a real
///   commit or a new file bumps the generation; a checkpoint or a reader's `-wal` does not.
/// - Idle, the thread sleeps in `poll()` with no timeout: no wake-ups at all (the 50 ms `data_version`
///   poll before was 20 a second). Where there are no such events (another OS) or they cannot be had
///   (inotify out of watches, the directory gone), it checks once a second.
///
/// One thread serves every observer of the catalog; a pipe wakes it when the last one leaves or the
/// catalog closes.
final class ChangeMonitor: @unchecked Sendable {
    // Safe: the stored `var`s marked "state" are touched only while `condition` is locked, those marked
    // "check" only while `checkLock` is locked (the order is `checkLock`, then `condition`; the connection is
    // used only under `checkLock`, so by one thread at a time). No continuation is resumed while either
    // lock is held: see ``resume(_:with:)``.

    /// How often the thread checks when there are no file events (no inotify, no dispatch sources): 1 s.
    static let fallbackInterval: Int32 = 1000
    /// When the thread checks again after the last file event, in ms after the check before (1, 5, 20, 100
    /// and 500 ms after the event).
    ///
    /// A WAL commit's last `write` to `-wal` comes before SQLite publishes the commit in the shared-memory
    /// index (a store to mapped memory, which makes no file event): a check that runs between the two finds
    /// nothing, and nothing would come to check again. With one check per event, 2 of 7 runs of
    /// `ObserveTests` beside `CatalogLibraryTests` on the shared 2-core machine missed a commit so. The
    /// thread usually wakes at the commit's first write, before it is published: with 5 ms first, another
    /// process's commit reached `catalog watch` in 5.2 ms p50 (release build), so the first is 1 ms.
    static let settleDelays: [Int32] = [1, 4, 15, 80, 400]

    let path: String
    private let condition = NSCondition()
    private var generation: UInt64 = 0  // state
    private var waiters: [UInt64: CheckedContinuation<UInt64, any Error>] = [:]  // state
    private var nextWaiter: UInt64 = 0  // state
    private var subscribers = 0  // state
    /// Whether the thread runs (from a subscription until it has seen that nobody observes).
    private var watching = false  // state
    /// The write end of the pipe that wakes the thread, while it runs (else -1).
    private var wakeFD: Int32 = -1  // state
    private var isClosed = false  // state
    private let checkLock = NSLock()
    private var probe: DataVersionProbe?  // check
    private var dataVersion: Int64?  // check
    private var identity: FileIdentity?  // check
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
        /// Runs on the thread after each of its checks: why it checked, and whether it found a change.
        var didCheck: (@Sendable (CheckCause, Bool) -> Void)?
        /// When true, a thread that starts goes without file events, as when inotify fails.
        var withoutFileEvents = false
    }

    /// Why the thread checked.
    enum CheckCause: Sendable, Equatable {
        /// It has just started watching: a commit since the subscriber's baseline.
        case start
        /// The OS reported a change to one of the database's files.
        case fileEvent
        /// A moment after a file event (see ``settleDelays``).
        case afterFileEvent
        /// ``fallbackInterval`` passed with no file events to wait for.
        case interval
    }

    init(path: String) { self.path = path }

    /// How many observers wait for a change now (for tests).
    var waiterCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiters.count
    }

    /// The current generation (for tests).
    var currentGeneration: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return generation
    }

    /// Registers an observer and returns the current generation, once the baseline (the file's identity
    /// and data version) is taken: a commit after this call is seen.
    ///
    /// Starts the thread if it does not run; it watches first and checks against this baseline then, so a
    /// commit between the two is not missed. A subscriber that comes while another starts the thread waits
    /// for that baseline (`checkLock`).
    func subscribe() -> UInt64 {
        checkLock.lock()
        condition.lock()
        subscribers += 1
        let start = !watching && !isClosed
        if start { watching = true }
        condition.unlock()
        if start {
            _ = check()
            startThread()
        }
        checkLock.unlock()
        condition.lock()
        defer { condition.unlock() }
        return generation
    }

    func unsubscribe() {
        condition.lock()
        subscribers -= 1
        if subscribers == 0 { wakeThread() }
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
        wakeThread()
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

    // MARK: - The thread

    /// Under both locks, with `watching` just set: starts the thread and its wake-up pipe.
    private func startThread() {
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            // No descriptors left: nothing can wake a thread; observers see this process's writes only.
            condition.lock()
            watching = false
            condition.unlock()
            return
        }
        for fd in pipeFDs {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        condition.lock()
        wakeFD = pipeFDs[1]
        condition.unlock()
        let wakeRead = pipeFDs[0]
        let thread = Thread { [self] in run(wakeRead: wakeRead) }
        thread.name = "LandmarkCatalog.ChangeMonitor"
        thread.stackSize = 256 << 10
        thread.start()
    }

    /// Under `condition`: makes the thread look at `subscribers` and `isClosed` again.
    private func wakeThread() {
        guard wakeFD >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(wakeFD, &byte, 1)  // a full pipe (EAGAIN) already wakes it
    }

    /// The thread: watch, check once (a commit since the subscriber's baseline), then check on each file
    /// event until nobody observes.
    private func run(wakeRead: Int32) {
        var events = hooks.withLock { $0.withoutFileEvents } ? nil : FileEvents(path: path)
        // The delays of the checks still to come after the last file event.
        var settling: [Int32] = []
        checkAndBump(.start)
        while true {
            condition.lock()
            let stop = subscribers == 0 || isClosed
            if stop {
                watching = false
                closeDescriptor(wakeFD)
                wakeFD = -1
            }
            let closed = isClosed
            condition.unlock()
            if stop {
                if closed { checkLock.withLock { probe = nil } }
                break
            }
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            if let events { fds.append(pollfd(fd: events.fd, events: Int16(POLLIN), revents: 0)) }
            let timeout = events == nil ? Self.fallbackInterval : (settling.first ?? -1)
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            guard ready >= 0 else { continue }  // EINTR
            if fds[0].revents != 0 { Self.drain(wakeRead) }
            var due: CheckCause?
            if ready == 0 {
                due = settling.isEmpty ? .interval : .afterFileEvent
                if !settling.isEmpty { settling.removeFirst() }
            }
            if fds.count > 1 && fds[1].revents != 0 {
                switch events?.drain() {
                case .some(true):
                    due = .fileEvent
                    settling = Self.settleDelays
                case .some(false): break
                case .none:
                    events = nil  // the watch is gone: poll from now on
                    due = .fileEvent
                }
            }
            if let due { checkAndBump(due) }
        }
        events = nil
        closeDescriptor(wakeRead)
    }

    private static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }

    private func checkAndBump(_ cause: CheckCause) {
        checkLock.lock()
        let changed = check()
        checkLock.unlock()
        if changed { bump() }
        hooks.withLock { $0.didCheck }?(cause, changed)
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

/// `close(2)`, named so inside types that have a `close()` of their own.
func closeDescriptor(_ fd: Int32) {
    #if os(Linux)
        _ = Glibc.close(fd)
    #elseif canImport(Darwin)
        _ = Darwin.close(fd)
    #endif
}
