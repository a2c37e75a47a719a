import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// How `catalog sync --follow` runs (docs/live-sync.md).
public struct FollowOptions: Sendable {
    /// What each source's sync and the publish do, as for one `sync` run (`dryRun` is refused).
    public var sync = SyncOptions()
    /// Seconds between polls of a source (HTTP conditional GET, a hub, a local log as inotify's fallback),
    /// and the longest a commit by another process waits before it is published or pushed. Default 1 s.
    public var intervalSeconds: Double = 1
    /// The longest wait before a failing source is tried again, in seconds (the wait doubles from the
    /// interval up to this). Default 60 s.
    public var maxBackoffSeconds: Double = 60
    /// An unchanged source's last good sync is written again at most this often (ms), so that
    /// `status --check --max-age` sees an idle follower's sources as fresh. Default 60 s.
    public var freshnessMilliseconds: Int64 = 60_000
    /// Test hook: called at the end of every cycle, after its ledger row, before the follower waits.
    @_spi(Testing) public var cycleEndHook: (@Sendable (FollowControl) -> Void)?

    public init() {}
}

/// Stops or reloads a running follower (``CatalogStore/follow(sources:options:control:diagnostics:onCycle:)``)
/// from any thread: a signal handler's queue calls ``stop()`` for SIGTERM/SIGINT and ``reload()`` for SIGHUP.
/// Each call also writes a byte to a pipe the follower polls, so it wakes at once.
public final class FollowControl: @unchecked Sendable {
    private let lock = NSLock()
    private var stopping = false
    private var reloading = false
    /// The pipe's ends (non-blocking, close-on-exec).
    let readFD: Int32
    private let writeFD: Int32

    /// - Throws: `CatalogError.cantCreate` (73) when no pipe can be made (out of descriptors).
    public init() throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw CatalogError(.cantCreate, "cannot make the follower's wake-up pipe (\(String(cString: strerror(errno))))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    /// Asks the follower to finish the source in hand, record the cycle and return.
    public func stop() {
        lock.withLock { stopping = true }
        wake()
    }

    /// Asks the follower to read the saved remotes again before its next cycle.
    public func reload() {
        lock.withLock { reloading = true }
        wake()
    }

    /// Whether ``stop()`` was called.
    public var isStopping: Bool { lock.withLock { stopping } }

    func takeReload() -> Bool {
        lock.withLock {
            defer { reloading = false }
            return reloading
        }
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readFD, &buffer, buffer.count) > 0 {}
    }
}

/// What one cycle of a follower did.
public struct FollowCycle: Sendable {
    /// The sources polled in this cycle (in order) with what merging, pushing and publishing did.
    public var report: SyncReport
    /// Whether the cycle went into the run ledger: the first cycle, and any that changed rows, pushed or
    /// published something, or in which a source failed anew or recovered.
    public var recorded: Bool
    /// The failures that are news (the source was fine before, or failed for another reason), to print
    /// once rather than at every retry.
    public var newFailures: [SourceReport]
    /// A publish failure that is news.
    public var newPublishError: CatalogError?
}

/// inotify on the directories of local sources and of the database (docs/live-sync.md §2).
private final class DirectoryWatcher {
    let fd: Int32
    private var directories: [Int32: String] = [:]

    init?() {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 { return nil }
    }

    deinit { close(fd) }

    /// Watches each directory for the union of its masks (a second `inotify_add_watch` of the same
    /// directory would replace the first mask). Directories that cannot be watched (not there yet) are
    /// skipped: their sources are polled at the interval.
    func watch(_ masks: [String: UInt32]) -> Set<String> {
        var watched = Set<String>()
        for (directory, mask) in masks {
            let wd = inotify_add_watch(fd, directory, mask)
            if wd >= 0 {
                directories[wd] = directory
                watched.insert(directory)
            }
        }
        return watched
    }

    /// The events queued: directory and file name. A watch the kernel dropped (its directory removed)
    /// is forgotten, so the caller can watch the directory again when it reappears.
    func drain(dropped: inout Set<String>) -> [(directory: String, name: String)] {
        var events: [(String, String)] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            var offset = 0
            while offset + 16 <= n {
                let (wd, mask, length) = buffer.withUnsafeBytes { raw in
                    (
                        raw.loadUnaligned(fromByteOffset: offset, as: Int32.self), raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                        Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    )
                }
                var name = ""
                if length > 0 {
                    let bytes = buffer[(offset + 16)..<min(n, offset + 16 + length)]
                    name = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                }
                if let directory = directories[wd] {
                    if mask & UInt32(IN_IGNORED) != 0 {
                        directories[wd] = nil
                        dropped.insert(directory)
                    } else {
                        events.append((directory, name))
                    }
                }
                offset += 16 + length
            }
        }
        return events
    }
}

/// The stamps of the rows one source's merge applied (the first 10,000: enough for the histogram).
private final class StampBuffer {
    var stamps: [Int64] = []
    func add(_ stamp: Int64) { if stamps.count < 10_000 { stamps.append(stamp) } }
}

/// Milliseconds of the monotonic clock (for scheduling; the ledger uses the wall clock).
private func monotonicMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// One followed source and its schedule.
private struct Followed {
    var locator: SourceLocator
    /// When it is next due (monotonic ms).
    var nextDue: Int64 = 0
    /// Failures in a row (its backoff).
    var failures = 0
    /// The last attempt's failure, nil when it succeeded (or was not tried yet).
    var lastError: CatalogError?
    /// Whether it was ever tried.
    var tried = false
    var lastNote: String?
    var polls: Int64 = 0
    var failedPolls: Int64 = 0
    var lag = FollowerStatus.Source(source: "", polls: 0, failures: 0)
    /// inotify: the directory and file name whose change makes it due (a local source).
    var watchDirectory: String?
    var watchName: String?
    /// An inotify event arrived for it.
    var dirty = false

    var isHub: Bool { if case .hub = locator { return true } else { return false } }

    init(_ locator: SourceLocator) {
        self.locator = locator
        _ = updateWatch()
    }

    /// Where inotify looks for it: a log directory's manifest, else the path's name in its parent (a
    /// snapshot file, a manifest given by path, or a directory not there yet).
    /// - Returns: whether that changed (a directory appeared, or was replaced by a file).
    mutating func updateWatch() -> Bool {
        guard case .file(let path) = locator else { return false }
        var isDirectory: ObjCBool = false
        let target: (String, String)
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            target = (path, LogManifest.fileName)
        } else {
            target = (CatalogStore.directory(of: path), String(path.split(separator: "/").last ?? ""))
        }
        guard watchDirectory != target.0 || watchName != target.1 else { return false }
        (watchDirectory, watchName) = target
        return true
    }
}

extension CatalogStore {
    /// Follows sources until ``FollowControl/stop()`` (docs/live-sync.md): `catalog sync --follow`.
    ///
    /// Holds the sync lock all along (another `sync` exits 75 meanwhile). Each cycle syncs the sources
    /// that are due, each with the same per-source code as ``sync(sources:options:standardInput:diagnostics:progress:)``
    /// (one transaction per source, its cursor stored with its rows), releases quarantined rows that came
    /// due, and publishes to `options.sync.publishPath` when this database changed (rows merged, or
    /// commits by other processes seen through `PRAGMA data_version`). A source is due every interval; a
    /// local log (or snapshot file) also as soon as inotify reports its manifest (or file) written; a hub
    /// also when this database changed (its push sends the change). A failing source waits twice as long
    /// after each failure, up to `maxBackoffSeconds`, while the others go on.
    ///
    /// The ledger gets one run per cycle that changed something, or in which a source failed anew or
    /// recovered, plus the first cycle: an idle follower adds no rows, and its idle polls write nothing
    /// except a source's last good sync once per `freshnessMilliseconds`.
    ///
    /// - Parameters:
    ///   - requested: SOURCE arguments, as for `sync`; empty means the saved remotes (read again after
    ///     ``FollowControl/reload()``).
    ///   - options: the sync options of each cycle and the poll interval (``FollowOptions``).
    ///   - control: how the caller stops it (SIGTERM, SIGINT) or makes it reload (SIGHUP).
    ///   - diagnostics: warnings and errors, as for `sync`.
    ///   - onCycle: after each cycle that polled something.
    /// - Throws: `CatalogError` only for what stops it before the first cycle: 75 when another sync holds
    ///   the lock, 64 for a bad SOURCE, `-`, `dryRun`, an in-memory database or nothing to follow, 73
    ///   when the lock cannot be made. Once following, failures are reported per cycle, never thrown.
    public func follow(
        sources requested: [String], options: FollowOptions, control: FollowControl,
        diagnostics: @escaping (Diagnostic) -> Void = { _ in },
        onCycle: (FollowCycle) -> Void = { _ in }
    ) throws {
        guard path != ":memory:" else { throw CatalogError(.usage, "an in-memory database cannot be followed into") }
        guard !options.sync.dryRun else { throw CatalogError(.usage, "--follow cannot be combined with --dry-run") }
        let lock = try SyncLock.acquire(databasePath: path, now: wallClock.nowMilliseconds(), following: true)
        defer { withExtendedLifetime(lock) {} }
        let interval = Int64(max(0.001, options.intervalSeconds) * 1000)
        let maxBackoff = max(interval, Int64(options.maxBackoffSeconds * 1000))

        func resolve() throws -> [SourceLocator] {
            let saved = try remotes()
            var locators = try requested.map { try SourceLocator.parse($0, remotes: saved) }
            if requested.isEmpty { locators = try saved.map { try SourceLocator.parse($0.url) } }
            if locators.contains(.standardInput) {
                throw CatalogError(.usage, "'-' (standard input) cannot be followed", hint: "follow a file, a log directory, a URL or a hub")
            }
            return locators
        }
        var followed = try resolve().map(Followed.init)
        guard !followed.isEmpty || options.sync.publishPath != nil else {
            throw CatalogError(
                .usage, "nothing to follow: no SOURCE given and no remotes saved",
                hint: "catalog remote add NAME URL, or catalog sync --follow FILE|URL, or --publish PATH to publish this database's commits")
        }

        let startedAt = wallClock.nowMilliseconds()
        let host = ProcessInfo.processInfo.hostName
        func marker() -> FollowerStatus {
            FollowerStatus(
                pid: getpid(), host: host, since: Timestamp.format(milliseconds: startedAt), intervalSeconds: options.intervalSeconds,
                alive: true,
                sources: followed.map { f in
                    var s = f.lag
                    (s.source, s.polls, s.failures) = (f.locator.description, f.polls, f.failedPolls)
                    return s
                })
        }
        FollowMarker.write(databasePath: path, status: marker())
        defer { FollowMarker.remove(databasePath: path) }
        var markerWritten = monotonicMilliseconds()

        // inotify: the local sources' directories, and the database's own (its WAL grows at every commit
        // by another process, so a commit is seen at once; `PRAGMA data_version` says whether it was one).
        let watcher = DirectoryWatcher()
        let databaseDirectory = CatalogStore.directory(of: SyncLock.lockPath(for: path))
        // Directory → the mask it is watched with (a second inotify_add_watch of a directory replaces
        // its mask, so each directory is watched with the union of what it needs).
        var watched: [String: UInt32] = [:]
        func watchAll() {
            guard let watcher else { return }
            var masks: [String: UInt32] = [databaseDirectory: UInt32(IN_MODIFY)]
            let logMask = UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_CREATE)
            for f in followed { if let d = f.watchDirectory { masks[d, default: 0] |= logMask } }
            let missing = masks.filter { watched[$0.key] != $0.value }
            for d in watcher.watch(missing) { watched[d] = masks[d] }
        }
        watchAll()

        // Hubs that can be listened to (LISTEN): by source key; retried after a failure, never after a
        // hub that cannot deliver notifications (said once).
        var listeners: [String: any ChangeListener] = [:]
        var listenRetry: [String: Int64] = [:]
        var cannotListen = Set<String>()
        func listen() {
            let now = monotonicMilliseconds()
            // Only a hub that just answered a poll: listening to one that is down would hold up the others
            // for a connect timeout.
            for (n, f) in followed.enumerated() where f.isHub && f.tried && f.lastError == nil {
                let key = f.locator.description
                guard listeners[key] == nil, !cannotListen.contains(key), listenRetry[key, default: 0] <= now else { continue }
                for kind in SourceKinds.all {
                    do {
                        if let listener = try kind.makeListener(f.locator, options: options.sync) {
                            listeners[key] = listener
                            // A push between the last poll and LISTEN sent no notification here: poll once more.
                            followed[n].dirty = true
                            break
                        }
                    } catch let unsupported as ListenUnsupported {
                        cannotListen.insert(key)
                        diagnostics(
                            Diagnostic(
                                severity: .warning,
                                message:
                                    "cannot LISTEN to the hub: \(unsupported.reason); it is polled every \(Durations.describe(milliseconds: interval))",
                                file: key, kind: "listen"))
                        break
                    } catch {
                        listenRetry[key] = now + maxBackoff
                        break
                    }
                }
            }
            let keys = Set(followed.map(\.locator.description))
            for key in listeners.keys where !keys.contains(key) { listeners[key] = nil }
        }

        var dataVersion = try read { try self.dataVersion() }
        var first = true
        var publishPending = options.sync.publishPath != nil
        var lastPublishError: String?
        var lastMaintenance: Int64 = 0
        var context = SyncContext(store: self, options: options.sync, standardInput: -1, diagnostics: diagnostics)
        context.quietWhenUnchangedFor = options.freshnessMilliseconds

        // After SIGTERM / SIGINT one last pass publishes and pushes what other processes committed and
        // was not sent yet (docs/live-sync.md §3), polling nothing else.
        var finalPass = false
        while true {
            if control.isStopping {
                if finalPass { break }
                finalPass = true
            }
            if !finalPass, control.takeReload() {
                do {
                    let fresh = try resolve()
                    var kept: [Followed] = []
                    for locator in fresh {
                        kept.append(followed.first(where: { $0.locator == locator }) ?? Followed(locator))
                    }
                    followed = kept
                    watchAll()
                    listen()
                    FollowMarker.write(databasePath: path, status: marker())
                } catch {
                    diagnostics(
                        Diagnostic(
                            severity: .warning,
                            message:
                                "the saved remotes were not read again: \(Self.sourceFailure(error, source: path, path: path).message); following the same sources",
                            file: path, kind: "reload"))
                }
            }

            // What woke us: inotify events, the pipe, or the interval.
            var localChanged = false
            if let watcher {
                var dropped = Set<String>()
                for event in watcher.drain(dropped: &dropped) {
                    for n in followed.indices where followed[n].watchDirectory == event.directory && followed[n].watchName == event.name {
                        followed[n].dirty = true
                    }
                }
                for d in dropped { watched[d] = nil }
            }
            for n in followed.indices where followed[n].isHub {
                let key = followed[n].locator.description
                guard let listener = listeners[key] else { continue }
                if listener.consume() { followed[n].dirty = true }
                if listener.descriptor < 0 {
                    listeners[key] = nil
                    listenRetry[key] = monotonicMilliseconds() + interval
                }
            }
            if let version = try? read({ try self.dataVersion() }), version != dataVersion {
                dataVersion = version
                localChanged = true
            }
            let now = monotonicMilliseconds()
            var due = followed.indices.filter {
                finalPass
                    ? localChanged && followed[$0].isHub
                    : followed[$0].dirty || followed[$0].nextDue <= now + 2 || (localChanged && followed[$0].isHub)
            }

            if !due.isEmpty || first || (localChanged && options.sync.publishPath != nil) || (finalPass && publishPending && !first) {
                let cycleStarted = wallClock.nowMilliseconds()
                var report = SyncReport()
                var polled: [Int: SourceReport] = [:]
                var newFailures: [SourceReport] = []
                var stateChanged = false
                // Hubs that have not been polled since another source merged rows: they push them.
                var pushNeeded = Set<Int>()
                let live = !first
                func poll(_ n: Int) {
                    let stamps = StampBuffer()
                    var context = context
                    if live { context.appliedStamp = { stamps.add($0) } }
                    let pollStarted = monotonicMilliseconds()
                    let r = syncReporting(followed[n].locator, context: context)
                    if r.error == nil && !stamps.stamps.isEmpty {
                        // Committed: each row's stamp to now is its write-to-visible lag.
                        let committed = wallClock.nowMilliseconds()
                        for stamp in stamps.stamps { followed[n].lag.observe(lagMilliseconds: committed - stamp) }
                    }
                    followed[n].dirty = false
                    followed[n].polls += 1
                    let after = monotonicMilliseconds()
                    if let error = r.error {
                        followed[n].failedPolls += 1
                        followed[n].failures += 1
                        let wait = min(maxBackoff, interval << Int64(min(followed[n].failures - 1, 20)))
                        followed[n].nextDue = after + wait
                        if followed[n].lastError?.message != error.message || followed[n].lastError?.exitStatus != error.exitStatus {
                            newFailures.append(r)
                            stateChanged = true
                        }
                        followed[n].lastError = error
                    } else {
                        if followed[n].lastError != nil { stateChanged = true }
                        followed[n].lastError = nil
                        followed[n].failures = 0
                        // A hub that is listened to is polled only as a safety net (a notification lost
                        // while reconnecting), every 30 s or the interval when longer.
                        // At a fixed rate (from the poll's start), so the interval is the longest wait.
                        followed[n].nextDue = max(
                            pollStarted + (listeners[followed[n].locator.description] != nil ? max(interval, 30_000) : interval), after + 10)
                    }
                    followed[n].tried = true
                    // A log directory that appeared: watch its manifest, and look once more (it may have
                    // been written before the watch).
                    if followed[n].updateWatch() {
                        watchAll()
                        followed[n].dirty = true
                    }
                    if r.note != followed[n].lastNote, let note = r.note {
                        diagnostics(Diagnostic(severity: .warning, message: note, file: r.source, kind: "behind"))
                    }
                    followed[n].lastNote = r.note
                    report.sources.append(r)
                    report.counts = report.counts + r.counts
                    polled[n] = r
                    pushNeeded.remove(n)
                    if r.counts.landmarksApplied + r.counts.positionsApplied > 0 {
                        for h in followed.indices where followed[h].isHub && h != n { pushNeeded.insert(h) }
                    }
                }
                for n in due {
                    // SIGTERM / SIGINT: the source in hand has finished (each is one transaction); stop here.
                    if control.isStopping && !finalPass { break }
                    poll(n)
                }
                // Hubs polled before rows merged from another source (or not due) push those rows now.
                for h in pushNeeded.sorted() where !control.isStopping || finalPass { poll(h) }
                due = []
                let applied = report.counts.landmarksApplied + report.counts.positionsApplied > 0
                let monotonicNow = monotonicMilliseconds()
                if applied || monotonicNow - lastMaintenance >= 60_000 {
                    lastMaintenance = monotonicNow
                    if let released = maintainAfterSync(maxDriftMilliseconds: options.sync.maxDriftMilliseconds, diagnostics: diagnostics) {
                        report.released = released
                    }
                }
                var newPublishError: CatalogError?
                if let publish = options.sync.publishPath, first || localChanged || applied || report.released.released > 0 || publishPending {
                    do {
                        if Self.publishesLog(publish) {
                            report.logPublish = try publishLog(to: publish, options: options.sync.publish)
                        } else {
                            try exportSnapshot(toFile: publish)
                        }
                        report.published = publish
                        publishPending = false
                        if lastPublishError != nil { stateChanged = true }
                        lastPublishError = nil
                    } catch {
                        let error = Self.sourceFailure(error, source: publish, path: path)
                        let failure = CatalogError(error.kind, "publishing failed: \(error.message)", hint: error.hint)
                        report.publishError = failure
                        publishPending = true
                        if lastPublishError != failure.message {
                            newPublishError = failure
                            stateChanged = true
                        }
                        lastPublishError = failure.message
                    }
                }
                do { try recordSkippedRuns() } catch {}

                let pushedWritten = report.sources.compactMap(\.pushed).map(\.written).reduce(0, +)
                let changed =
                    applied || report.counts.quarantined > 0 || pushedWritten > 0 || report.released.released > 0
                    || report.logPublish?.changed == true || (report.published != nil && report.logPublish == nil)
                let record = first || changed || stateChanged
                if record {
                    // The run lists every followed source: those not polled in this cycle with their last
                    // state, so `status` and `status --check` judge all of them.
                    var all: [SourceReport] = []
                    for n in followed.indices {
                        if let r = polled[n] {
                            all.append(r)
                            continue
                        }
                        var r = SourceReport(source: followed[n].locator.description, outcome: followed[n].lastError == nil ? .notModified : .failed)
                        r.error = followed[n].lastError
                        all.append(r)
                    }
                    var row = report
                    row.sources = all
                    let failed = row.firstError
                    let outcome =
                        failed != nil
                        ? "failed"
                        : all.allSatisfy({ $0.outcome == .notModified }) && !all.isEmpty && !changed ? "not-modified" : "ok"
                    do {
                        try recordRun(
                            started: cycleStarted, sources: all.map(\.source), reports: all, outcome: outcome,
                            status: row.exitStatus, message: failed?.message, counts: report.counts)
                    } catch {
                        diagnostics(
                            Diagnostic(
                                severity: .warning,
                                message:
                                    "a follow cycle was not recorded in the ledger: \(Self.sourceFailure(error, source: path, path: path).message)",
                                file: path, kind: "ledger"))
                    }
                }
                // `data_version` is not read again here: this connection's own commits never move it, so
                // a change seen at the next check is another process's commit made during this cycle,
                // which must be published and pushed (docs/live-sync.md §3; issue 25: reading it here took
                // up such a commit unseen).
                options.cycleEndHook?(control)
                // `--reset-cursor` is for the first poll of each source only.
                if first { context.options.resetCursor = false }
                first = false
                if record || monotonicMilliseconds() - markerWritten >= 10_000 {
                    FollowMarker.write(databasePath: path, status: marker())
                    markerWritten = monotonicMilliseconds()
                }
                onCycle(FollowCycle(report: report, recorded: record, newFailures: newFailures, newPublishError: newPublishError))
            }

            if finalPass { break }
            if control.isStopping { continue }
            // Wait for inotify, the pipe, or the next due source (at most one interval, the data_version check).
            if watched.count < Set(followed.compactMap(\.watchDirectory) + [databaseDirectory]).count { watchAll() }
            listen()
            let after = monotonicMilliseconds()
            let next = followed.contains(where: \.dirty) ? after : followed.map(\.nextDue).min() ?? (after + interval)
            let timeout = Int32(max(0, min(interval, next - after)))
            var fds = [pollfd(fd: control.readFD, events: Int16(POLLIN), revents: 0)]
            if let watcher { fds.append(pollfd(fd: watcher.fd, events: Int16(POLLIN), revents: 0)) }
            let watcherWoke = fds.count
            for listener in listeners.values where listener.descriptor >= 0 {
                fds.append(pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0))
            }
            _ = poll(&fds, nfds_t(fds.count), timeout)
            control.drain()
            // A burst of writes (a publish is several files, a commit several WAL writes) is one wake-up.
            if watcherWoke == 2, fds[1].revents != 0 { usleep(2_000) }
        }
    }
}
