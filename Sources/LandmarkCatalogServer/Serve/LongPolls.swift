import Foundation
import LandmarkCatalog

/// What a long-poll waits for (docs/protocol.md §5).
enum WaitKey: Hashable, Sendable {
    /// One user's position row.
    case user(String)
    /// Any position row (an edge token).
    case allPositions
    /// Any landmark row.
    case landmarks
}

/// A request suspended in a long-poll.
final class Waiter: @unchecked Sendable {
    // Safe: touched only under the registry's lock.
    let request: HTTPRequest
    let key: WaitKey
    let deadline: UInt64
    /// Resumed by a change (false: by its deadline or the drain).
    var woken = false

    init(request: HTTPRequest, key: WaitKey, deadline: UInt64) {
        self.request = request
        self.key = key
        self.deadline = deadline
    }
}

/// The long-polls and the thread that wakes them (docs/serve.md §4).
///
/// Every commit to the database, by this
/// server or any other process, moves the change sequence: the dispatcher notices (poked after this server's
/// own POSTs, and by polling `PRAGMA data_version` every few ms for the others), reads which users' rows and
/// whether landmarks changed since the sequence it last dispatched, and resumes the waiters for them. A
/// waiter is registered only when nothing was dispatched past what its own read saw, so no commit falls
/// between a read and its wait.
final class LongPolls: @unchecked Sendable {
    // Safe: every stored var is touched under `condition`'s lock.
    private let condition = NSCondition()
    private var waiters: [WaitKey: [ObjectIdentifier: Waiter]] = [:]
    private var count = 0
    /// Every change through this sequence number has been dispatched.
    private(set) var dispatched: Int64
    private var poked = false
    private var stopping = false
    private var thread: Thread?
    private let store: CatalogStore
    private let probe: DataVersionProbe
    private let probeMilliseconds: Int
    private let metrics: ServeMetrics

    init(path: String, probeMilliseconds: Int, metrics: ServeMetrics) throws {
        store = try CatalogStore.open(path: path, access: .read)
        probe = try DataVersionProbe(path: path)
        self.probeMilliseconds = probeMilliseconds
        self.metrics = metrics
        dispatched = try store.changeSequence()
    }

    func start() {
        let t = Thread { [self] in run() }
        t.name = "serve-long-polls"
        thread = t
        t.start()
    }

    /// Registers `request` as waiting for `key` until `deadline` and suspends it — unless changes past
    /// `seen` (the high-water mark its read saw) were dispatched meanwhile: then false, and the caller reads again.
    func wait(_ request: HTTPRequest, key: WaitKey, seen: Int64, deadline: UInt64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard dispatched <= seen, !stopping else { return false }
        let waiter = Waiter(request: request, key: key, deadline: deadline)
        waiters[key, default: [:]][ObjectIdentifier(waiter)] = waiter
        count += 1
        nextExpiry = min(nextExpiry, deadline)
        metrics.longPoll(1)
        request.waiting = waiter
        request.suspend()
        return true
    }

    /// This server committed: look now rather than at the next probe.
    func poke() {
        condition.lock()
        poked = true
        condition.signal()
        condition.unlock()
    }

    /// Answers every long-poll now and wakes no more (SIGTERM's drain).
    func stop() {
        condition.lock()
        stopping = true
        for (_, group) in waiters { for (_, w) in group { resume(w) } }
        waiters = [:]
        condition.signal()
        condition.unlock()
    }

    /// Open long-polls.
    var open: Int {
        condition.lock()
        defer { condition.unlock() }
        return count
    }

    /// Under the lock.
    private func resume(_ waiter: Waiter) {
        count -= 1
        metrics.longPoll(-1)
        waiter.request.waiting = nil
        waiter.request.resume()
    }

    private func run() {
        var lastVersion = probe.version()
        condition.lock()
        while !stopping {
            _ = condition.wait(until: Date().addingTimeInterval(Double(probeMilliseconds) / 1000))
            if stopping { break }
            let wasPoked = poked
            poked = false
            let after = dispatched
            condition.unlock()
            let version = probe.version()
            var users: Set<String> = []
            var changes: (landmarks: Bool, highWater: Int64)?
            if wasPoked || version != lastVersion {
                lastVersion = version
                changes = try? DeviceRows(store).deviceChanges(after: after) { users.insert($0) }
            }
            condition.lock()
            if let changes, changes.highWater > dispatched {
                dispatched = changes.highWater
                for user in users {
                    if let group = waiters.removeValue(forKey: .user(user)) {
                        for (_, w) in group {
                            w.woken = true
                            resume(w)
                        }
                    }
                }
                if !users.isEmpty, let group = waiters.removeValue(forKey: .allPositions) {
                    for (_, w) in group {
                        w.woken = true
                        resume(w)
                    }
                }
                if changes.landmarks, let group = waiters.removeValue(forKey: .landmarks) {
                    for (_, w) in group {
                        w.woken = true
                        resume(w)
                    }
                }
            }
            expire()
        }
        condition.unlock()
    }

    /// Resumes the waiters whose deadline passed (under the lock).
    ///
    /// Cheap enough for 10,000 every 50 ms? It
    /// scans only when the earliest deadline is due.
    private var nextExpiry: UInt64 = 0
    private func expire() {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now >= nextExpiry else { return }
        var earliest = UInt64.max
        for key in Array(waiters.keys) {
            guard var group = waiters[key] else { continue }
            for (id, w) in group {
                if w.deadline <= now {
                    group[id] = nil
                    resume(w)
                } else {
                    earliest = min(earliest, w.deadline)
                }
            }
            waiters[key] = group.isEmpty ? nil : group
        }
        nextExpiry = earliest
    }
}
