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
    // Safe: every stored var is touched under `condition`'s lock, but `markOnDisk` under `markLock`.
    private let condition = NSCondition()
    private var waiters: [WaitKey: [ObjectIdentifier: Waiter]] = [:]
    private var count = 0
    /// Every change through this sequence number has been dispatched.
    private(set) var dispatched: Int64
    private var poked = false
    /// Pokes made, and those whose commits were dispatched: while they differ, a commit of this server is
    /// not in the index yet, and ``nothingNew(for:after:)`` proves nothing (a device reads its own writes).
    private var pokes = 0
    private var pokesDispatched = 0
    private var stopping = false
    private var thread: Thread?
    private let store: CatalogStore
    private let probe: DataVersionProbe
    private let probeMilliseconds: Int
    private let metrics: ServeMetrics
    /// What the dispatched changes and the reads prove (``nothingNew(for:after:)``): for each user in it, the
    /// sequence number of their row (their newest change dispatched, or what a read found; 0: no row); the
    /// others are read; and the newest position change of all (edge tokens' polls).
    private var indexBase: Int64
    private var newestByUser: [String: Int64] = [:]
    private var newestPosition: Int64
    /// Users the index holds at most (about 100 bytes each); past it the index starts again at the
    /// dispatched sequence.
    static let indexLimit = 200_000

    /// Called with the dispatched sequence as it moves (at most once a second, and at the stop): the
    /// cursors handed out, for the restore check (``CursorMark``).
    private let handedOut: @Sendable (Int64) -> Void
    private var handedOutWritten: Int64 = 0
    private var handedOutAt: UInt64 = 0
    /// The highest sequence an answer read from the database or a POST gave out in a cursor (answers from
    /// the index give out at most `dispatched`).
    private var cursorMax: Int64 = 0

    init(path: String, probeMilliseconds: Int, metrics: ServeMetrics, handedOut: @escaping @Sendable (Int64) -> Void = { _ in }) throws {
        self.handedOut = handedOut
        store = try CatalogStore.open(path: path, access: .read)
        probe = try DataVersionProbe(path: path)
        self.probeMilliseconds = probeMilliseconds
        self.metrics = metrics
        dispatched = try store.changeSequence()
        handedOutWritten = dispatched
        indexBase = dispatched
        newestPosition = dispatched
    }

    /// The high-water mark to answer with when the dispatched changes prove that `key` has no row after
    /// `after`, so the poll needs no read of the database; nil when they cannot (a cursor older than the
    /// index, or past the dispatched sequence, or the landmarks).
    ///
    /// A commit not dispatched yet is not seen: the answer is then "nothing new" with the cursor unchanged
    /// (docs/protocol.md §3), and the next poll, or the long-poll this one turns into, gets it.
    func nothingNew(for key: WaitKey, after: Int64) -> Int64? {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping, indexBase != .max, pokes == pokesDispatched, after <= dispatched else { return nil }
        switch key {
        // A user's cursor is its row's sequence (docs/protocol.md §3): nothing new when the row is known to
        // be at it. A cursor past the row is no "nothing new" (it starts again), so it is read.
        case .user(let user): return newestByUser[user] == after ? dispatched : nil
        case .allPositions: return newestPosition <= after ? dispatched : nil
        case .landmarks: return nil
        }
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
        pokes += 1
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
            let pokesSeen = pokes
            let after = dispatched
            condition.unlock()
            let version = probe.version()
            var users: [String: Int64] = [:]
            var changes: (landmarks: Bool, highWater: Int64)?
            if wasPoked || version != lastVersion {
                lastVersion = version
                changes = try? DeviceRows(store).deviceChanges(after: after) { user, seq in users[user] = max(users[user] ?? 0, seq) }
            }
            condition.lock()
            if changes != nil {
                pokesDispatched = pokesSeen
            } else if wasPoked {
                poked = true  // the read failed: the poked commit is looked for again at the next turn
            }
            if let changes, changes.highWater < dispatched {
                // The database went back (restored or replaced under a running server): the index proves
                // nothing any more; every poll reads.
                indexBase = .max
            }
            if let changes, changes.highWater > dispatched {
                dispatched = changes.highWater
                index(users, through: changes.highWater)
                for user in users.keys {
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
            if let through = dueHandedOut(final: false) {
                // The file is written outside the lock: polls and waits never wait for the disk.
                condition.unlock()
                writeHandedOut(through)
                condition.lock()
            }
        }
        condition.unlock()
    }

    /// An answer gave out a cursor through `sequence` (a read of the database, a POST).
    func noteCursor(_ sequence: Int64) {
        condition.lock()
        cursorMax = max(cursorMax, sequence)
        condition.unlock()
    }

    /// Writes the mark now (the drain's end, once no answer can give out another cursor).
    func flushHandedOut() {
        condition.lock()
        let through = dueHandedOut(final: true)
        condition.unlock()
        if let through { writeHandedOut(through) }
    }

    /// The sequence handed out when the mark is due, else nil.
    ///
    /// The dispatched sequence, or a cursor a read or a POST gave past it; due when it moved and a second
    /// passed since the last (always at the stop). Under the lock.
    private func dueHandedOut(final: Bool) -> Int64? {
        let now = DispatchTime.now().uptimeNanoseconds
        let through = max(dispatched, cursorMax)
        guard through > handedOutWritten, final || now - handedOutAt >= 1_000_000_000 else { return nil }
        handedOutWritten = through
        handedOutAt = now
        return through
    }

    /// Writes the mark, never an older value over a newer one (the dispatcher and the drain may both write).
    private let markLock = NSLock()
    private var markOnDisk: Int64 = 0
    private func writeHandedOut(_ through: Int64) {
        markLock.withLock {
            guard through > markOnDisk else { return }
            handedOut(through)
            markOnDisk = through
        }
    }

    /// A read through `high` found `user`'s row at sequence `row` (0: no row): when no change of theirs
    /// past `high` was dispatched, that is where the row is, and the next poll with that cursor needs no
    /// read.
    func learnRow(of user: String, at row: Int64, through high: Int64) {
        condition.lock()
        defer { condition.unlock() }
        // Before `indexBase` the index may have forgotten a dispatched change of this user.
        guard indexBase != .max, high >= indexBase else { return }
        if let newest = newestByUser[user], newest > high { return }  // dispatched past the read: unknown
        newestByUser[user] = row
        trimIndex(at: dispatched)
    }

    /// Past ``indexLimit`` users the index starts again at `high` (under the lock).
    private func trimIndex(at high: Int64) {
        guard newestByUser.count > Self.indexLimit else { return }
        newestByUser = [:]
        indexBase = high
        newestPosition = high
    }

    /// Records dispatched position changes in the index (under the lock).
    private func index(_ users: [String: Int64], through high: Int64) {
        guard indexBase != .max else { return }
        for (user, seq) in users {
            newestByUser[user] = max(newestByUser[user] ?? 0, seq)
            newestPosition = max(newestPosition, seq)
        }
        trimIndex(at: high)
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
