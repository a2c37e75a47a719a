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
    // Safe: every stored var is touched under `condition`'s lock, but `markOnDisk` under `markLock`, `probe`
    // under `probeLock` (but its `walIndexHeader()`, memory only), and `lastVersion` read by the dispatcher
    // alone outside it.
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
    /// Used under `probeLock` (by the dispatcher, and by ``landmarkTag(_:)`` on MHD's threads).
    private let probe: DataVersionProbe
    private let probeLock = NSLock()
    /// The probe's data version that every commit dispatched was read through (nil: unknown, a read failed).
    private var dispatchedVersion: Int64?
    /// The database's wal-index header when every commit it shows had been dispatched (nil: unknown, or no
    /// wal-index, when the data version is asked instead).
    private var dispatchedStamp: WALIndexHeader?
    private let hasWALIndex: Bool
    private var lastVersion: Int64?
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
    /// The landmark pages' ETags (``LandmarkTag``) that reads found since the last landmark change was
    /// dispatched, by the page asked for; emptied when one is dispatched or the database goes back.
    private var landmarkTags: [LandmarkPage: LandmarkTag] = [:]
    /// Moves each time `landmarkTags` is emptied: a read begun before the move does not fill it.
    private var landmarkEpoch: UInt64 = 0
    /// Landmark pages held at most (a cursor and a limit each; devices share a few): past it they start again.
    static let landmarkTagLimit = 1024

    init(path: String, probeMilliseconds: Int, metrics: ServeMetrics, handedOut: @escaping @Sendable (Int64) -> Void = { _ in }) throws {
        self.handedOut = handedOut
        store = try CatalogStore.open(path: path, access: .read)
        probe = try DataVersionProbe(path: path)
        self.probeMilliseconds = probeMilliseconds
        self.metrics = metrics
        // The wal-index header and the version first: every commit they show is in the sequence read next.
        dispatchedStamp = probe.walIndexHeader()
        hasWALIndex = dispatchedStamp != nil
        lastVersion = probe.version()
        dispatchedVersion = lastVersion
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

    /// The ETag of landmark page `page` as a read since the last landmark change dispatched found it, so a
    /// conditional GET is answered without a read; nil when none is held, or when nothing can be proved
    /// now (the database's data version moved past what the dispatcher read: a commit of this server or
    /// another process not dispatched yet; the database went back; the drain).
    ///
    /// Unlike ``nothingNew(for:after:)``, a commit the dispatcher has not read yet is never hidden: the
    /// wal-index header is compared each time (``WALIndexHeader``, a few loads; without one, `PRAGMA
    /// data_version`), so the next conditional GET after a commit reads (docs/serve.md §4).
    func landmarkTag(_ page: LandmarkPage) -> LandmarkTag? {
        condition.lock()
        guard !stopping, indexBase != .max, pokes == pokesDispatched, let known = dispatchedVersion, let tag = landmarkTags[page]
        else {
            condition.unlock()
            return nil
        }
        let knownStamp = dispatchedStamp
        condition.unlock()
        // Any commit since, by any process, moved the wal-index header (or the data version, without one):
        // the dispatcher has not read it yet, so the tag proves nothing; it is asked to look now, and this
        // request reads.
        let current =
            hasWALIndex ? knownStamp != nil && probe.walIndexHeader() == knownStamp : probeLock.withLock({ probe.version() }) == known
        guard current else {
            condition.lock()
            condition.signal()
            condition.unlock()
            return nil
        }
        return tag
    }

    /// Taken before a read of landmarks, for ``rememberLandmarkTag(_:for:epoch:)``.
    var landmarkTagEpoch: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return landmarkEpoch
    }

    /// A read begun at `epoch` (``landmarkTagEpoch``) found `tag` for `page`: kept unless a landmark change
    /// was dispatched since the read began (it may not have seen it).
    func rememberLandmarkTag(_ tag: LandmarkTag, for page: LandmarkPage, epoch: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        guard epoch == landmarkEpoch, !stopping, indexBase != .max else { return }
        if landmarkTags.count >= Self.landmarkTagLimit { landmarkTags = [:] }
        landmarkTags[page] = tag
    }

    /// Landmarks changed (or may have): every ETag held is forgotten (under the lock).
    private func forgetLandmarkTags() {
        landmarkTags = [:]
        landmarkEpoch &+= 1
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
        condition.lock()
        while !stopping {
            _ = condition.wait(until: Date().addingTimeInterval(Double(probeMilliseconds) / 1000))
            if stopping { break }
            let wasPoked = poked
            poked = false
            let pokesSeen = pokes
            let after = dispatched
            condition.unlock()
            // The header before the version: a commit it shows, the version counts.
            let stampSeen = probe.walIndexHeader()
            let version = probeLock.withLock { probe.version() }
            var users: [String: Int64] = [:]
            var changes: (landmarks: Bool, highWater: Int64, erasures: Int64)?
            let look = wasPoked || version != lastVersion
            if look {
                changes = try? DeviceRows(store).deviceChanges(after: after) { user, seq in users[user] = max(users[user] ?? 0, seq) }
            }
            condition.lock()
            if changes != nil {
                pokesDispatched = pokesSeen
                lastVersion = version
                dispatchedVersion = version
                dispatchedStamp = stampSeen
            } else if look {
                // The read failed: the commits are looked for again at the next turn.
                if wasPoked { poked = true }
                lastVersion = nil
                dispatchedVersion = nil
                dispatchedStamp = nil
            } else if version != nil, version == dispatchedVersion {
                // Nothing committed since the last read (a checkpoint may have moved the header).
                dispatchedStamp = stampSeen
            }
            if let changes, changes.highWater < dispatched {
                // The database went back (restored or replaced under a running server): the index proves
                // nothing any more; every poll reads.
                indexBase = .max
                forgetLandmarkTags()
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
                if changes.erasures > 0, indexBase != .max { newestPosition = max(newestPosition, changes.erasures) }
                if !users.isEmpty || changes.erasures > 0, let group = waiters.removeValue(forKey: .allPositions) {
                    for (_, w) in group {
                        w.woken = true
                        resume(w)
                    }
                }
                if changes.landmarks { forgetLandmarkTags() }
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

/// A landmark page as a GET asks for it: the cursor's sequence number (0 without one, or for another
/// database's) and the limit (docs/protocol.md §4).
struct LandmarkPage: Hashable, Sendable {
    var after: Int64
    var limit: Int
}

/// What a read found for a ``LandmarkPage``: its ETag, whether it held no rows, and the 304 made once
/// for it.
final class LandmarkTag: Sendable {
    /// The ETag's value, quoted (`"<database id>:<sequence>"`), as bytes.
    let etag: [UInt8]
    /// The page had no rows (a long-poll would wait on it).
    let empty: Bool
    /// The 304 for a request whose `If-None-Match` is this ETag.
    let notModified: HTTPReply

    init(etag: [UInt8], empty: Bool, notModified: HTTPReply) {
        self.etag = etag
        self.empty = empty
        self.notModified = notModified
    }
}
