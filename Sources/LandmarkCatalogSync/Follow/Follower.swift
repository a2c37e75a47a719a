import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// One running `catalog sync --follow` (docs/live-sync.md), for
/// ``SyncRunner/follow(sources:options:control:diagnostics:onCycle:)``, which holds the sync lock around it.
///
/// Its state lives in its properties; each turn of ``run(onCycle:)`` is a few steps: ``reload()`` when
/// asked, ``wake()`` (what inotify, the hubs and `PRAGMA data_version` say is due), ``cycle(due:localChanged:)``
/// (``poll(_:in:)`` each due source, then ``SyncRunner``'s finish: maintain, publish, and the ledger row of ``ledgerRow(_:)``), and ``wait()``.
final class Follower {
    let store: CatalogStore
    let requested: [String]
    var options: FollowOptions
    let control: FollowControl
    let diagnostics: (Diagnostic) -> Void
    /// Milliseconds between polls of a source, and the longest wait of a commit by another process.
    let interval: Int64
    /// The longest wait before a failing source is tried again (ms).
    let maxBackoff: Int64
    let startedAt: Int64
    let host = ProcessInfo.processInfo.hostName
    var path: String { store.path }

    var followed: [Followed] = []
    var markerWritten: Int64 = 0

    // inotify: the local sources' directories, and the database's own (its WAL grows at every commit
    // by another process, so a commit is seen at once; `PRAGMA data_version` says whether it was one).
    let watcher = DirectoryWatcher()
    let databaseDirectory: String
    /// Directory → the mask it is watched with (a second inotify_add_watch of a directory replaces
    /// its mask, so each directory is watched with the union of what it needs).
    var watched: [String: UInt32] = [:]

    // Hubs that can be listened to (LISTEN): by source key; retried after a failure, never after a
    // hub that cannot deliver notifications (said once).
    var listeners: [String: any ChangeListener] = [:]
    var listenRetry: [String: Int64] = [:]
    var cannotListen = Set<String>()

    var dataVersion: Int64 = 0
    var first = true
    var publishPending: Bool
    var lastPublishError: String?
    var lastMaintenance: Int64 = 0
    /// When this follower last collected tombstones and erasure records (monotonic ms; nil: not yet, the
    /// first collection comes a day after it started).
    var lastCollection: Int64?
    /// How often a follower collects (`catalog gc` with the default horizon, docs/erasure.md §4): daily.
    static let collectionInterval: Int64 = 86_400_000
    /// When the log files a publish retired are past the publish grace (monotonic ms): a cycle then
    /// publishes again, which removes them even when nothing changed since (docs/erasure.md §3).
    var sweepAt: Int64?
    var context: SyncContext

    // After SIGTERM / SIGINT one last pass publishes and pushes what other processes committed and
    // was not sent yet (docs/live-sync.md §3), polling nothing else.
    var finalPass = false
    /// Counts what this follower saw that the sources it pushes to must get.
    ///
    /// A commit by another process (`data_version` moved), rows merged from another source. Each pushing
    /// source keeps the count it wants pushed and the count its last successful poll covered
    /// (``Followed/pushPending``).
    var changes: Int64 = 0
    /// The longest an HTTP request of the last pass may take (s): SIGTERM ends the follower within about 2 s.
    static let finalPushSeconds = 1.5

    /// What one cycle gathers while it polls its sources.
    struct Cycle {
        let started: Int64
        var report = SyncReport()
        var polled: [Int: SourceReport] = [:]
        var newFailures: [SourceReport] = []
        /// A source failed anew or recovered, or the publish did: the cycle goes into the ledger.
        var stateChanged = false
        /// Hubs that have not been polled since another source merged rows: they push them.
        var pushNeeded = Set<Int>()
    }

    /// Resolves the sources to follow.
    ///
    /// - Throws: `CatalogError` 64 for a bad SOURCE, `-` or nothing to follow.
    init(
        store: CatalogStore, requested: [String], options: FollowOptions, control: FollowControl,
        diagnostics: @escaping (Diagnostic) -> Void
    ) throws {
        self.store = store
        self.requested = requested
        self.options = options
        self.control = control
        self.diagnostics = diagnostics
        interval = Int64(max(0.001, options.intervalSeconds) * 1000)
        maxBackoff = max(interval, Int64(options.maxBackoffSeconds * 1000))
        startedAt = store.wallClock.nowMilliseconds()
        databaseDirectory = CatalogFiles.directory(of: SyncLock.lockPath(for: store.path))
        publishPending = options.sync.publishPath != nil
        context = SyncContext(store: store, options: options.sync, standardInput: -1, diagnostics: diagnostics)
        context.quietWhenUnchangedFor = options.freshnessMilliseconds
        // Each hub's connection is kept from poll to poll (opened, and its schema checked, once).
        context.kept = KeptConnections()
        context.options.cancellation = control.transfers
        followed = try resolve().map(Followed.init)
        guard !followed.isEmpty || options.sync.publishPath != nil else {
            throw CatalogError(
                .usage, "nothing to follow: no SOURCE given and no remotes saved",
                hint: "catalog remote add NAME URL, or catalog sync --follow FILE|URL, or --publish PATH to publish this database's commits")
        }
    }

    /// The sources: the SOURCE arguments, or the saved remotes when none was given.
    func resolve() throws -> [SourceLocator] {
        // Resolved as a `sync` run resolves them (the SOURCE arguments, else the saved remotes).
        let locators = try SyncRunner.locators(requested, saved: try RemoteBook(store).remotes())
        if locators.contains(.standardInput) {
            throw CatalogError(.usage, "'-' (standard input) cannot be followed", hint: "follow a file, a log directory, a URL or a hub")
        }
        return locators
    }

    /// Follows until ``FollowControl/stop()``, then makes the final pass.
    ///
    /// - Parameter onCycle: after each cycle that polled something.
    /// - Throws: `CatalogError` when the database cannot be read before the first cycle.
    func run(onCycle: (FollowCycle) -> Void) throws {
        FollowMarker.write(databasePath: path, status: marker())
        defer { FollowMarker.remove(databasePath: path) }
        markerWritten = monotonicMilliseconds()
        watchAll()
        dataVersion = try store.read { try store.dataVersion() }
        while true {
            if control.isStopping {
                if finalPass { break }
                finalPass = true
            }
            if !finalPass, control.takeReload() { reload() }
            let (due, localChanged) = wake()
            if !due.isEmpty || first || sweepDue || (localChanged && options.sync.publishPath != nil) || (finalPass && publishPending && !first) {
                onCycle(cycle(due: due, localChanged: localChanged))
            }
            if finalPass { break }
            if control.isStopping { continue }
            wait()
        }
    }

    /// The follower's marker (`status` shows it): pid, host, start, interval, and each source's polls.
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

    /// Reads the saved remotes and the signing key again (SIGHUP): a source kept keeps its schedule and state.
    func reload() {
        reloadSigningKey()
        do {
            let fresh = try resolve()
            var kept: [Followed] = []
            for locator in fresh {
                kept.append(followed.first(where: { $0.locator == locator }) ?? Followed(locator))
            }
            followed = kept
            context.kept?.keepOnly(Set(kept.map(\.locator.description)))
            watchAll()
            listen()
            FollowMarker.write(databasePath: path, status: marker())
        } catch {
            diagnostics(
                Diagnostic(
                    severity: .warning,
                    message:
                        "the saved remotes were not read again: \(SourceSync.failure(error, source: path, path: path).message); following the same sources",
                    file: path, kind: "reload"))
        }
    }

    /// Watches the directories not watched yet with the mask they need.
    func watchAll() {
        guard let watcher else { return }
        var masks: [String: UInt32] = [databaseDirectory: UInt32(IN_MODIFY)]
        // IN_MOVE_SELF: a directory renamed away keeps its watch; the watcher drops it.
        let logMask = UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_CREATE) | UInt32(IN_MOVE_SELF)
        for f in followed { if let d = f.watchDirectory { masks[d, default: 0] |= logMask } }
        let missing = masks.filter { watched[$0.key] != $0.value }
        for d in watcher.watch(missing) { watched[d] = masks[d] }
    }

    /// Listens to each hub that can be listened to and is not yet (and drops the listeners of hubs no
    /// longer followed).
    func listen() {
        let now = monotonicMilliseconds()
        // Only a hub that just answered a poll: listening to one that is down would hold up the others
        // for a connect timeout.
        for (n, f) in followed.enumerated() where f.listens && f.tried && f.lastError == nil {
            let key = f.locator.description
            guard listeners[key] == nil, !cannotListen.contains(key), listenRetry[key, default: 0] <= now else { continue }
            guard case .claimed(let claim) = f.locator else { continue }
            do {
                if let listener = try claim.kind.makeListener(claim, options: options.sync) {
                    listeners[key] = listener
                    // A push between the last poll and LISTEN sent no notification here: poll once more.
                    followed[n].dirty = true
                }
            } catch let unsupported as ListenUnsupported {
                cannotListen.insert(key)
                diagnostics(
                    Diagnostic(
                        severity: .warning,
                        message:
                            "cannot listen to the \(claim.kind.name) for changes: \(unsupported.reason); it is polled every \(Durations.describe(milliseconds: interval))",
                        file: key, kind: "listen"))
            } catch {
                listenRetry[key] = now + maxBackoff
            }
        }
        let keys = Set(followed.map(\.locator.description))
        for key in listeners.keys where !keys.contains(key) { listeners[key] = nil }
    }

    /// What woke us (inotify events, the pipe, a hub's notification, or the interval) and what is due.
    ///
    /// - Returns: the indices of the sources due, and whether another process committed to this
    ///   database (`PRAGMA data_version` moved).
    func wake() -> (due: [Int], localChanged: Bool) {
        var localChanged = false
        if let watcher {
            var dropped = Set<String>()
            for event in watcher.drain(dropped: &dropped) {
                for n in followed.indices where followed[n].watchDirectory == event.directory && followed[n].watchName == event.name {
                    followed[n].dirty = true
                }
            }
            // A watched directory removed (its watch dropped by the kernel): its sources watch for its
            // name in the parent, so its return is seen at once, and look once more now (the
            // re-created directory waited for the interval, and a source's grown backoff).
            for d in dropped {
                watched[d] = nil
                for n in followed.indices where followed[n].watchDirectory == d {
                    _ = followed[n].updateWatch()
                    followed[n].dirty = true
                }
            }
            if !dropped.isEmpty { watchAll() }
        }
        for n in followed.indices where followed[n].inFlight?.isFinished == true { followed[n].dirty = true }
        for n in followed.indices where followed[n].listens {
            let key = followed[n].locator.description
            guard let listener = listeners[key] else { continue }
            if listener.consume() { followed[n].dirty = true }
            if listener.descriptor < 0 {
                listeners[key] = nil
                listenRetry[key] = monotonicMilliseconds() + interval
            }
        }
        if let version = try? store.read({ try store.dataVersion() }), version != dataVersion {
            dataVersion = version
            localChanged = true
            wantPush(except: nil)
        }
        let now = monotonicMilliseconds()
        // The last pass pushes to every source with a push pending: this database changed since the last
        // look, or a push seen due earlier was cut by the stop, or not reached before it — a POST that
        // `serve --hub` answered just before SIGTERM (docs/serve.md §8) is on the hub when serve exits 0.
        let due = followed.indices.filter {
            finalPass
                ? followed[$0].pushPending
                : followed[$0].dirty || followed[$0].nextDue <= now + 2 || (localChanged && followed[$0].pushes)
        }
        return (due, localChanged)
    }

    /// Notes that the sources that push (all but `source`) have something to push now.
    func wantPush(except source: Int?) {
        changes += 1
        for h in followed.indices where followed[h].pushes && h != source { followed[h].pushWanted = changes }
    }

    /// One cycle: polls the sources due (and the hubs that must push what merged), releases quarantined
    /// rows that came due, publishes, and records the cycle when it changed something.
    func cycle(due: [Int], localChanged: Bool) -> FollowCycle {
        var cycle = Cycle(started: store.wallClock.nowMilliseconds())
        for n in due {
            // SIGTERM / SIGINT: the source in hand has finished (each is one transaction); stop here.
            if control.isStopping && !finalPass { break }
            if !finalPass && followed[n].pushPending { options.pushStartHook?(control) }
            poll(n, in: &cycle)
        }
        if first { awaitFirstFetches(in: &cycle) }
        // Hubs polled before rows merged from another source (or not due) push those rows now.
        for h in cycle.pushNeeded.sorted() where !control.isStopping || finalPass { poll(h, in: &cycle) }
        // Rows a repair applied (sync --repair) change this database as merged rows do.
        let applied = cycle.report.counts.applied > 0 || cycle.report.repairs.values.contains { $0.rowsApplied > 0 }
        let monotonicNow = monotonicMilliseconds()
        let maintain = applied || monotonicNow - lastMaintenance >= 60_000
        if maintain { lastMaintenance = monotonicNow }
        if let last = lastCollection {
            if monotonicNow - last >= Self.collectionInterval {
                lastCollection = monotonicNow
                // A failure (the database busy) waits for the next day: collecting late loses nothing.
                _ = try? Collector(store).collect(vacuum: false)
            }
        } else {
            lastCollection = monotonicNow
        }
        // Published when this database changed (here, by another process, or by the quarantine upkeep),
        // or a publish is pending.
        let ending = SyncRunner.Ending(
            started: cycle.started, maintain: maintain, publishTo: options.sync.publishPath,
            publishDue: first || localChanged || applied || publishPending || sweepDue, options: options.sync, noteBesideLock: false)
        var newPublishError: CatalogError?
        var report = cycle.report
        let recorded = SyncRunner(store: store).finish(&report, ending, diagnostics: diagnostics) { report in
            cycle.report = report
            newPublishError = notePublish(in: &cycle)
            return ledgerRow(cycle)
        }
        cycle.report = report
        // `data_version` is not read again here: this connection's own commits never move it, so
        // a change seen at the next check is another process's commit made during this cycle,
        // which must be published and pushed (docs/live-sync.md §3: reading it here took
        // up such a commit unseen).
        options.cycleEndHook?(control)
        // `--reset-cursor` is for the first poll of each source only.
        if first { context.options.resetCursor = false }
        first = false
        if recorded || monotonicMilliseconds() - markerWritten >= 10_000 {
            FollowMarker.write(databasePath: path, status: marker())
            markerWritten = monotonicMilliseconds()
        }
        return FollowCycle(report: cycle.report, recorded: recorded, newFailures: cycle.newFailures, newPublishError: newPublishError)
    }

    /// Syncs source `n` (as one `sync` does it) and updates its schedule: the interval after a success,
    /// a doubling backoff after a failure.
    func poll(_ n: Int, in cycle: inout Cycle) {
        let stamps = StampBuffer()
        var context = context
        // After the first cycle, each merged row's write-to-visible lag goes into the histogram.
        if !first { context.appliedStamp = { stamps.add($0) } }
        // The last pass's pushes are not cancelled (SIGTERM ended only the transfers in hand), but an HTTP
        // push gets at most `finalPushSeconds`, so that a hung serve cannot hold the exit for --timeout
        // (31 s); what it could not push stays here for the next run.
        if finalPass {
            context.options.cancellation = nil
            context.options.timeoutSeconds = min(context.options.timeoutSeconds, Self.finalPushSeconds)
            context.options.deadlineSeconds = min(context.options.deadlineSeconds, Self.finalPushSeconds)
        }
        var pollStarted = monotonicMilliseconds()
        // What this poll's push covers: the changes seen so far (a fetch merged now: those seen when it was planned).
        var covers = changes
        var fetched: DetachedFetch?
        if followed[n].detached && !finalPass {
            // On a worker thread: started now, merged in the cycle after it finished.
            if let job = followed[n].inFlight {
                guard job.isFinished else {
                    (followed[n].dirty, followed[n].dueAgain) = (false, true)
                    return
                }
                (fetched, pollStarted, covers) = (job, followed[n].inFlightSince, followed[n].inFlightChanges)
                followed[n].inFlight = nil
            } else if startFetch(n, context: context) {
                return
            }
        }
        var r = fetched.map { SourceSync(store: store).syncReporting($0, context: context) } ?? syncSayingStatesOnce(n, context: &context)
        if options.sync.repair { repairIfDue(n, after: &r, context: context, in: &cycle) }
        if r.error == nil { followed[n].pushedThrough = max(followed[n].pushedThrough, covers) }
        if r.error == nil && !stamps.stamps.isEmpty {
            // Committed: each row's stamp to now is its write-to-visible lag.
            let committed = store.wallClock.nowMilliseconds()
            for stamp in stamps.stamps { followed[n].lag.observe(lagMilliseconds: committed - stamp) }
        }
        if r.error == nil, let listener = listeners[followed[n].locator.description] {
            listener.synced(cursor: try? SourceSync(store: store).storedCursor(followed[n].locator), context: context)
        }
        // Due again while its fetch was in flight, or more to push: fetched again at once.
        followed[n].dirty = fetched != nil && (followed[n].dueAgain || fetched?.wantsAgain == true)
        followed[n].dueAgain = false
        followed[n].polls += 1
        schedule(n, after: r, pollStarted: pollStarted, in: &cycle)
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
        cycle.report.sources.append(r)
        cycle.report.counts = cycle.report.counts + r.counts
        cycle.polled[n] = r
        cycle.pushNeeded.remove(n)
        if r.counts.applied > 0 {
            wantPush(except: n)
            for h in followed.indices where followed[h].pushes && h != n { cycle.pushNeeded.insert(h) }
        }
    }

    /// Schedules source `n`'s next poll after report `r`: at the interval from the poll's start after a
    /// success (30 s for a hub that is listened to), a doubling backoff after a failure, up to the longest.
    ///
    /// - Parameters:
    ///   - n: the source.
    ///   - r: its poll's report.
    ///   - pollStarted: when the poll (or its fetch on a worker) started, monotonic ms.
    ///   - cycle: notes a failure that is news, or a recovery.
    func schedule(_ n: Int, after r: SourceReport, pollStarted: Int64, in cycle: inout Cycle) {
        let after = monotonicMilliseconds()
        if let error = r.error {
            followed[n].failedPolls += 1
            followed[n].failures += 1
            let wait = min(maxBackoff, interval << Int64(min(followed[n].failures - 1, 20)))
            followed[n].nextDue = after + wait
            if followed[n].lastError?.message != error.message || followed[n].lastError?.exitStatus != error.exitStatus {
                cycle.newFailures.append(r)
                cycle.stateChanged = true
            }
            followed[n].lastError = error
        } else {
            if followed[n].lastError != nil { cycle.stateChanged = true }
            followed[n].lastError = nil
            followed[n].failures = 0
            // A hub that is listened to is polled only as a safety net (a notification lost
            // while reconnecting), every 30 s or the interval when longer.
            // At a fixed rate (from the poll's start), so the interval is the longest wait.
            followed[n].nextDue = max(
                pollStarted + (listeners[followed[n].locator.description] != nil ? max(interval, 30_000) : interval), after + 10)
        }
    }

    /// Waits a little for the first fetches on worker threads, so that the first cycle's ledger row (what
    /// `status` shows, and what a caller waiting for the follower to start reads) has their merge.
    ///
    /// A source still fetching after the longer of the interval and 5 s (a hung server) is merged
    /// in a later cycle, when it finishes.
    func awaitFirstFetches(in cycle: inout Cycle) {
        let until = monotonicMilliseconds() + max(interval, 5_000)
        while !control.isStopping {
            for n in followed.indices where followed[n].inFlight?.isFinished == true { poll(n, in: &cycle) }
            let left = until - monotonicMilliseconds()
            guard followed.contains(where: { $0.inFlight != nil }), left > 0 else { return }
            // A worker that finishes writes to the control pipe.
            var fd = pollfd(fd: control.readFD, events: Int16(POLLIN), revents: 0)
            _ = Glibc.poll(&fd, 1, Int32(min(left, 100)))
            control.drain()
        }
    }

    /// Starts fetching source `n` on a worker thread (docs/live-sync.md §3): planned here, fetched
    /// there, merged by ``poll(_:in:)`` in a cycle after the worker woke the follower.
    ///
    /// - Returns: false when the source must be synced here this time (``SourceSync/detachedFetch(_:context:)``).
    func startFetch(_ n: Int, context: SyncContext) -> Bool {
        guard let job = SourceSync(store: store).detachedFetch(followed[n].locator, context: context) else { return false }
        followed[n].inFlight = job
        followed[n].dueAgain = false
        followed[n].inFlightSince = monotonicMilliseconds()
        followed[n].inFlightChanges = changes
        followed[n].dirty = false
        // Not due again until it finished (its end wakes the follower).
        followed[n].nextDue = Int64.max / 2
        let control = self.control
        Thread.detachNewThread {
            job.run()
            control.wake()
        }
        return true
    }

    /// Whether the files retired by the last publish that changed the log are past the grace.
    var sweepDue: Bool { sweepAt.map { monotonicMilliseconds() >= $0 } ?? false }

    /// Notes what the cycle's publish did (``SyncRunner/finish(_:_:diagnostics:progress:row:)`` published):
    /// a failure leaves the publish pending; a success or a new failure changes the follower's state.
    ///
    /// - Returns: the failure when it is news (the last publish succeeded, or failed otherwise).
    func notePublish(in cycle: inout Cycle) -> CatalogError? {
        if cycle.report.published != nil {
            publishPending = false
            if cycle.report.logPublish?.changed == true {
                sweepAt = monotonicMilliseconds() + Int64(options.sync.publish.graceSeconds * 1000) + 1
            } else if sweepDue {
                sweepAt = nil
            }
            if lastPublishError != nil { cycle.stateChanged = true }
            lastPublishError = nil
            return nil
        }
        guard let failure = cycle.report.publishError else { return nil }
        publishPending = true
        let news = lastPublishError != failure.message
        lastPublishError = failure.message
        guard news else { return nil }
        cycle.stateChanged = true
        return failure
    }

    /// The cycle's ledger row, when it is the first, changed something (rows not allowed count), or a
    /// source's state changed; nil when the cycle is not recorded.
    ///
    /// The row lists every followed source: those not polled in this cycle with their last state, so
    /// `status` and `status --check` judge all of them. What the cycle changed besides its sources'
    /// outcomes is the outcome rule's input (a cycle that only published or pushed is `ok`).
    func ledgerRow(_ cycle: Cycle) -> SyncRunner.LedgerRow? {
        let report = cycle.report
        let applied = report.counts.applied > 0
        let pushedWritten = report.sources.compactMap(\.pushed).map(\.written).reduce(0, +)
        let repaired = report.repairs.values.contains { $0.rowsApplied > 0 || $0.rowsSent > 0 }
        let changed =
            applied || repaired || report.counts.quarantined > 0 || report.counts.notAllowed > 0 || pushedWritten > 0
            || report.released.released > 0 || report.logPublish?.changed == true || (report.published != nil && report.logPublish == nil)
        guard first || changed || cycle.stateChanged else { return nil }
        var all: [SourceReport] = []
        for n in followed.indices {
            if let r = cycle.polled[n] {
                all.append(r)
                continue
            }
            // A source never synced yet (its first fetch still in flight on a worker) has no state to
            // show: it is not "not modified" (a hung source counted as healthy).
            guard followed[n].tried else { continue }
            var r = SourceReport(source: followed[n].locator.description, outcome: followed[n].lastError == nil ? .notModified : .failed)
            r.error = followed[n].lastError
            all.append(r)
        }
        return SyncRunner.LedgerRow(sources: all, changedBeyondSources: changed)
    }

    /// Waits for inotify, the pipe, a hub's notification, or the next due source (at most one interval,
    /// the data_version check).
    func wait() {
        if watched.count < Set(followed.compactMap(\.watchDirectory) + [databaseDirectory]).count { watchAll() }
        listen()
        let after = monotonicMilliseconds()
        let due = followed.contains(where: \.dirty) ? after : followed.map(\.nextDue).min() ?? (after + interval)
        let next = min(due, sweepAt ?? due)
        let timeout = Int32(max(0, min(interval, next - after)))
        var fds = [pollfd(fd: control.readFD, events: Int16(POLLIN), revents: 0)]
        if let watcher { fds.append(pollfd(fd: watcher.fd, events: Int16(POLLIN), revents: 0)) }
        let watcherWoke = fds.count
        for listener in listeners.values where listener.descriptor >= 0 {
            fds.append(pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0))
        }
        _ = Glibc.poll(&fds, nfds_t(fds.count), timeout)
        control.drain()
        // A burst of writes (a publish is several files, a commit several WAL writes) is one wake-up.
        if watcherWoke == 2, fds[1].revents != 0 { usleep(2_000) }
    }
}
