import Foundation

#if os(Linux)
    import Glibc
#endif

extension CatalogStore {
    /// Syncs with every source, each on its own (docs/cli.md §7).
    ///
    /// A source is fetched, then merged in one transaction with last-writer-wins (docs/merge-rules.md §2)
    /// and its cursor stored; a source that fails changes nothing and is reported, and the others still
    /// merge. Then the merged state is published if asked, and the run is recorded in the ledger.
    ///
    /// - Parameters:
    ///   - requested: SOURCE arguments (see ``SourceLocator/parse(_:remotes:workingDirectory:)``); empty means
    ///     the saved remotes, or — with a publish path — nothing but publishing.
    ///   - options: dry run, drift, HTTP limits, publish path.
    ///   - standardInput: the descriptor `-` reads.
    ///   - diagnostics: warnings (quarantine, ties, retries) and errors with their location.
    ///   - progress: while a source merges, after each batch (phase `.merging`, subject the source, bytes of the
    ///     snapshot file being read); while `--publish` writes (phase `.writing`).
    /// - Returns: per-source outcomes and errors, merge counts, and the publish result; its
    ///   ``SyncReport/exitStatus`` is the first failure's.
    /// - Throws: `CatalogError` only for what stops the whole run before any source: 75 when another sync
    ///   holds the lock (at once), 64 for a bad SOURCE or nothing to do, 73 when the lock file cannot be made.
    public func sync(
        sources requested: [String], options: SyncOptions = SyncOptions(), standardInput: Int32 = 0,
        diagnostics: @escaping (Diagnostic) -> Void = { _ in },
        progress: @escaping (CatalogProgress) -> Void = { _ in }
    ) throws -> SyncReport {
        let started = wallClock.nowMilliseconds()
        let lock = try acquireSyncLock(requested: requested, options: options, started: started)
        defer { withExtendedLifetime(lock) {} }
        // Holding the lock, no follower runs: a marker left by one that was killed is stale.
        if lock != nil { FollowMarker.remove(databasePath: path) }

        let (saved, locators) = try syncLocators(requested, options: options)
        var report = SyncReport()
        report.dryRun = options.dryRun
        var runID: Int64?
        if !options.dryRun {
            do {
                runID = try recordRunStart(started: started, sources: locators.map(\.description))
            } catch let error as CatalogError where error.databaseBusy {
                // Another process holds the database's write lock: nothing can merge, so the run stops
                // here, within one busy timeout, and leaves its ledger line beside the lock.
                noteRunBeside(started: started, sources: locators.map(\.description), outcome: "busy", error: error)
                throw error
            }
        }
        let context = SyncContext(store: self, options: options, standardInput: standardInput, diagnostics: diagnostics, progress: progress)
        defer { setBusyTimeout(milliseconds: Self.busyTimeoutMilliseconds) }
        let busy = syncEach(locators, requested: requested, saved: saved, context: context, into: &report)
        if !options.dryRun && busy == nil {
            // Rows held back earlier that are now within the allowance are applied by the merge rule (a log
            // or a hub never delivers them again), and ties older than the retention are pruned.
            if let released = maintainAfterSync(maxDriftMilliseconds: options.maxDriftMilliseconds, diagnostics: diagnostics) {
                report.released = released
            }
        }
        if let publish = options.publishPath, !options.dryRun {
            publishAfterSync(to: publish, options: options, progress: progress, into: &report)
        }
        if !options.dryRun && path != ":memory:" { recordSkippedRunsReporting(diagnostics: diagnostics) }
        if !options.dryRun { recordSyncRun(report, started: started, runID: runID, diagnostics: diagnostics) }
        return report
    }

    /// Takes the sync lock for a `sync` run (none for an in-memory database).
    ///
    /// When another sync holds it, the overlapping run is recorded too (unless a dry run), so `catalog
    /// log` shows it, and it still fails at once.
    /// - Parameters:
    ///   - requested: the SOURCE arguments, as the ledger names them.
    ///   - options: the run's options (a dry run records nothing).
    ///   - started: when the run started (wall ms).
    /// - Returns: the lock, held until it is released; nil for an in-memory database.
    /// - Throws: `CatalogError` 75 when another sync holds the lock, 73 when the lock file cannot be made.
    private func acquireSyncLock(requested: [String], options: SyncOptions, started: Int64) throws -> SyncLock? {
        do {
            return path == ":memory:" ? nil : try SyncLock.acquire(databasePath: path, now: started)
        } catch let error as CatalogError {
            if error.kind == .tempFail && !options.dryRun {
                // The overlapping run is recorded too, so `catalog log` shows it, and it still exits at once:
                // it waits at most 200 ms for the holder's transaction, else it leaves a line that the
                // holder moves into the ledger when its run ends.
                setBusyTimeout(milliseconds: 200)
                defer { setBusyTimeout(milliseconds: 5000) }
                // As a run that got the lock records them: absolute paths, remotes resolved, no password.
                let saved = (try? remotes()) ?? []
                let sources = requested.map { (try? SourceLocator.parse($0, remotes: saved).description) ?? redactedURL($0) }
                do {
                    try recordRun(started: started, sources: sources, reports: [], outcome: "busy", status: error.exitStatus, message: error.message)
                } catch _ {
                    var w = JSONWriter()
                    w.raw("{\"message\":")
                    w.string(error.message)
                    w.raw(",\"sources\":")
                    w.stringArray(sources)
                    w.raw(",\"started\":")
                    w.int(started)
                    w.raw(",\"finished\":")
                    w.int(wallClock.nowMilliseconds())
                    w.raw("}")
                    SyncLock.noteSkipped(databasePath: path, line: String(decoding: w.bytes, as: UTF8.self))
                }
            }
            throw error
        }
    }

    /// The sources of a `sync` run: the SOURCE arguments, or the saved remotes when none was given.
    ///
    /// - Parameters:
    ///   - requested: the SOURCE arguments.
    ///   - options: the run's options (with a publish path, no source is needed).
    /// - Returns: the saved remotes and the sources.
    /// - Throws: `CatalogError` 64 for a bad SOURCE, `-` twice, or nothing to do.
    private func syncLocators(_ requested: [String], options: SyncOptions) throws -> (saved: [Remote], locators: [SourceLocator]) {
        let saved = try remotes()
        var locators = try requested.map { try SourceLocator.parse($0, remotes: saved) }
        if locators.isEmpty {
            locators = try saved.map { try SourceLocator.parse($0.url) }
            guard !locators.isEmpty || options.publishPath != nil else {
                throw CatalogError(
                    .usage, "nothing to sync: no SOURCE given and no remotes saved",
                    hint: "catalog remote add NAME URL, or catalog sync FILE|URL|-, or --publish PATH to only publish")
            }
        }
        guard locators.filter({ $0 == .standardInput }).count <= 1 else {
            throw CatalogError(.usage, "'-' (standard input) can be given only once")
        }
        return (saved, locators)
    }

    /// Syncs each source in turn into `report`, until the database is found busy.
    ///
    /// Once the database is found busy (another process's write lock outlived the busy timeout), the
    /// sources left are not tried and the run's own bookkeeping waits briefly, so the run ends within
    /// about one busy timeout instead of one per write (issue 17: six in a row took 30 s).
    /// - Parameters:
    ///   - locators: the sources, in order.
    ///   - requested: what was typed for each (fewer when the saved remotes are synced).
    ///   - saved: the saved remotes (for the hint of a mistyped remote name).
    ///   - context: what each source's sync needs.
    ///   - report: gains each source's report and counts.
    /// - Returns: the error that found the database busy, or nil.
    private func syncEach(
        _ locators: [SourceLocator], requested: [String], saved: [Remote], context: SyncContext, into report: inout SyncReport
    ) -> CatalogError? {
        var busy: CatalogError?
        for (n, locator) in locators.enumerated() {
            // What was typed for it (nil for the saved remotes synced when none was given).
            let typed = requested.indices.contains(n) ? requested[n] : nil
            if let busy {
                var skipped = SourceReport(source: locator.description, outcome: .failed)
                skipped.error = CatalogError(.tempFail, "not synced: \(busy.message)", hint: busy.hint)
                report.sources.append(skipped)
                continue
            }
            let sourceReport = syncReporting(locator, context: context) { error in
                // A bare word that is no remote and no file was most likely meant as a remote's name.
                if error.kind == .noInput, case .file = locator, let word = typed, !word.contains("/"), SourceLocator.scheme(of: word) == nil,
                    !saved.contains(where: { $0.name == word })
                {
                    error.hint =
                        Suggest.nearest(to: word, in: saved.map(\.name)).map { "no remote is named '\(word)' either; did you mean '\($0)'?" }
                        ?? "no remote is named '\(word)' either (catalog remote list shows them)"
                }
                if error.databaseBusy {
                    busy = error
                    setBusyTimeout(milliseconds: Self.busyBookkeepingMilliseconds)
                }
            }
            report.counts = report.counts + sourceReport.counts
            if let note = sourceReport.note {
                context.diagnostics(Diagnostic(severity: .warning, message: note, file: locator.description, kind: "behind"))
            }
            report.sources.append(sourceReport)
        }
        return busy
    }

    /// Publishes the merged state to `publish` (`--publish`): a snapshot log, or a snapshot file.
    ///
    /// - Parameters:
    ///   - publish: the log directory or snapshot file.
    ///   - options: the run's options (the log's signing and retention).
    ///   - progress: while the files are written.
    ///   - report: gains what was published, or the failure.
    private func publishAfterSync(to publish: String, options: SyncOptions, progress: (CatalogProgress) -> Void, into report: inout SyncReport) {
        do {
            if Self.publishesLog(publish) {
                report.logPublish = try publishLog(to: publish, options: options.publish, progress: progress)
            } else {
                try exportSnapshot(toFile: publish, progress: progress)
            }
            report.published = publish
        } catch {
            let error = Self.sourceFailure(error, source: publish, path: path)
            report.publishError = CatalogError(error.kind, "publishing failed: \(error.message)", hint: error.hint)
        }
    }

    /// Records a `sync` run in the ledger, in place of its `running` row.
    ///
    /// - Parameters:
    ///   - report: what the run did.
    ///   - started: when it started (wall ms).
    ///   - runID: its `running` row, when it has one.
    ///   - diagnostics: a warning when the ledger cannot be written.
    private func recordSyncRun(_ report: SyncReport, started: Int64, runID: Int64?, diagnostics: (Diagnostic) -> Void) {
        let failed = report.firstError
        let outcome =
            failed != nil
            ? "failed"
            : report.sources.allSatisfy({ $0.outcome == .notModified }) && !report.sources.isEmpty ? "not-modified" : "ok"
        do {
            try recordRun(
                started: started, sources: report.sources.map(\.source), reports: report.sources, outcome: outcome,
                status: report.exitStatus, message: failed?.message, counts: report.counts, runID: runID)
        } catch {
            // The ledger could not be written (the database busy, the disk full): the run is noted beside
            // the lock, and the next run records it in place of its `running` row.
            noteRunBeside(
                started: started, sources: report.sources.map(\.source), outcome: outcome,
                error: failed ?? Self.sourceFailure(error, source: path, path: path), status: report.exitStatus, runID: runID)
            diagnostics(
                Diagnostic(
                    severity: .warning,
                    message:
                        "the run was not recorded in the ledger (\(Self.sourceFailure(error, source: path, path: path).message)); it is noted beside the sync lock and recorded by the next run",
                    file: path, kind: "ledger"))
        }
    }

    /// The busy timeout of every connection (SQLite `busy_timeout`, ms).
    static let busyTimeoutMilliseconds: Int32 = 5000
    /// The busy timeout for a run's bookkeeping once the database was found busy (ms).
    static let busyBookkeepingMilliseconds: Int32 = 200

    /// What a source's failure is, whatever was thrown (docs/exit-statuses.md: 70 is a bug, never an answer
    /// to bad input, a bad server or a race): a `CatalogError` as it is; SQLite and PostgreSQL errors
    /// mapped to their statuses; a log file gone after the fresh look 69; anything else 70, named.
    package static func sourceFailure(_ error: any Error, source: String, path: String) -> CatalogError {
        switch error {
        case let error as CatalogError: return error
        case let error as SQLiteError: return CatalogError(error, path: path)
        case let gone as LogFileGone:
            return CatalogError(
                .unavailable, "the log file \(gone.name) named by \(source) was removed while it was read, also after a fresh look at the manifest",
                hint:
                    "the publisher may be removing files too early (publish --grace), and the next run tries again; if the file is gone for good, run 'catalog publish' on the publisher: it starts a new generation when files its manifest names are missing"
            )
        default:
            for kind in SourceKinds.all {
                if let mapped = kind.failure(error, source: source) { return mapped }
            }
            return CatalogError(
                .software, "internal error while syncing \(source): \(error)",
                hint: "this is a bug in catalog; the other sources were synced")
        }
    }

    /// Syncs one source and reports it: the per-source step of `sync` and of each `--follow` cycle.
    ///
    /// The source is fetched and merged in one transaction (with the fresh look of
    /// ``syncWithFreshLook(_:context:made:)``); whatever it throws becomes its documented status
    /// (``sourceFailure(_:source:path:)``) and, unless a dry run, is noted on the source.
    /// - Parameters:
    ///   - locator: the source.
    ///   - context: the run's options, diagnostics and trust.
    ///   - failed: sees the error first (a caller's hint, its busy handling).
    /// - Returns: the source's outcome, counts, error, bytes fetched and duration.
    package func syncReporting(_ locator: SourceLocator, context: SyncContext, failed: (inout CatalogError) -> Void = { _ in }) -> SourceReport {
        let started = wallClock.nowMilliseconds()
        var made: [any SyncSource] = []
        return reporting(
            locator, started: started, context: context, made: { made }, failed: failed,
            body: { try syncWithFreshLook(locator, context: context) { made.append($0) } })
    }

    /// Merges what a ``DetachedFetch`` fetched on its worker thread, and reports it as
    /// ``syncReporting(_:context:failed:)`` does (the follower's HTTP sources, docs/live-sync.md §3).
    ///
    /// - Parameters:
    ///   - fetched: a fetch whose ``DetachedFetch/run()`` returned.
    ///   - context: the run's options and diagnostics (the fetch's own warnings are replayed to them).
    /// - Returns: the source's outcome, counts, error, bytes fetched and duration (from the fetch's start).
    package func syncReporting(_ fetched: DetachedFetch, context: SyncContext) -> SourceReport {
        for diagnostic in fetched.takeDiagnostics() { context.diagnostics(diagnostic) }
        let merge = { () throws -> (SourceReport.Outcome, MergeCounts) in
            var (plan, feeds) = try fetched.fetched()
            // The merge reports to this cycle (the fetch's own warnings were kept and replayed above).
            plan.context.diagnostics = context.diagnostics
            plan.context.progress = context.progress
            plan.context.appliedStamp = context.appliedStamp
            return try self.merge(plan, feeds: feeds)
        }
        return reporting(fetched.locator, started: fetched.started, context: context, made: { fetched.made }, body: merge)
    }

    /// Runs one source's `body` and reports it: errors mapped and noted on the source.
    ///
    /// - Parameters:
    ///   - locator: the source.
    ///   - started: when its sync started (wall ms).
    ///   - context: the run's options and diagnostics.
    ///   - made: the source objects made, for bytes and notes (read after `body`).
    ///   - failed: sees the error first.
    ///   - body: fetches and merges.
    /// - Returns: the report.
    private func reporting(
        _ locator: SourceLocator, started: Int64, context: SyncContext, made: () -> [any SyncSource],
        failed: (inout CatalogError) -> Void = { _ in }, body: () throws -> (SourceReport.Outcome, MergeCounts)
    ) -> SourceReport {
        var report = SourceReport(source: locator.description, outcome: .failed)
        do {
            (report.outcome, report.counts) = try body()
        } catch {
            var error = Self.sourceFailure(error, source: locator.description, path: path)
            failed(&error)
            report.error = error
            if !context.options.dryRun {
                do { try noteSourceFailure(locator, error: error) } catch {
                    context.diagnostics(
                        Diagnostic(
                            severity: .warning,
                            message:
                                "the failure was not recorded for the source: \(Self.sourceFailure(error, source: locator.description, path: path).message)",
                            file: locator.description, kind: "ledger"))
                }
            }
        }
        let made = made()
        report.bytes = made.reduce(0) { $0 + $1.bytesFetched }
        report.pushed = made.lazy.compactMap(\.pushed).first
        report.note = made.last?.note
        report.durationMilliseconds = wallClock.nowMilliseconds() - started
        return report
    }

    /// The cursor stored for a source (nil: never synced).
    ///
    /// - Parameter locator: the source.
    /// - Returns: its cursor.
    /// - Throws: `CatalogError` when the database cannot be read.
    package func storedCursor(_ locator: SourceLocator) throws -> SourceCursor? {
        try read { try sourceTable.cursor(locator.description) }
    }

    /// Plans a fetch to run on another thread (a follower's HTTP source or serve): the cursor, trust and
    /// whatever the source reads from the database are read here, on the store's thread;
    /// ``DetachedFetch/run()`` touches no database.
    ///
    /// - Parameters:
    ///   - locator: the source.
    ///   - context: the run's options; its diagnostics are not called from the worker (they are kept and
    ///     replayed by ``syncReporting(_:context:)``).
    /// - Returns: the fetch, to run on a worker thread; nil when this sync must run here (a serve with
    ///   more rows to push than are read ahead).
    package func detachedFetch(_ locator: SourceLocator, context: SyncContext) -> DetachedFetch? {
        let fetch = DetachedFetch(locator: locator, started: wallClock.nowMilliseconds())
        var quiet = context
        quiet.diagnostics = { [weak fetch] in fetch?.keep($0) }
        quiet.progress = { _ in }
        do {
            let first = try plan(try makeSource(locator), context: quiet)
            let again = try plan(try makeSource(locator), context: quiet, freshLook: true)
            guard try first.source.prepareDetached(since: first.cursor, context: first.context),
                try again.source.prepareDetached(since: again.cursor, context: again.context)
            else { return nil }
            fetch.plans = (first, again)
        } catch {
            fetch.finish(.failure(error))
        }
        return fetch
    }

    /// Syncs one source, with one fresh look at the manifest when a log file is gone.
    ///
    /// When a log file is gone while it is merged (a publisher rolled a generation, a cleanup job), its
    /// transaction rolls back and the source takes one fresh look at the manifest (docs/log-format.md);
    /// gone again, it fails with 69.
    /// - Parameters:
    ///   - locator: the source.
    ///   - context: the run's options, diagnostics and trust.
    ///   - made: each source object made (two after a fresh look), for bytes and notes.
    /// - Returns: the outcome and the merge counts.
    /// - Throws: what the source's fetch or merge throws (``sourceFailure(_:source:path:)`` maps it).
    func syncWithFreshLook(
        _ locator: SourceLocator, context: SyncContext,
        made: (any SyncSource) -> Void
    ) throws -> (SourceReport.Outcome, MergeCounts) {
        let source = try makeSource(locator)
        made(source)
        do {
            return try syncOne(source, context: context)
        } catch is LogFileGone {
            let again = try makeSource(locator)
            made(again)
            return try syncOne(again, context: context, freshLook: true)
        }
    }

    /// Whether `--publish PATH` means a snapshot log: PATH is a directory, or does not end in `.json`.
    public static func publishesLog(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) { return isDirectory.boolValue }
        return !path.lowercased().hasSuffix(".json")
    }

    func makeSource(_ locator: SourceLocator) throws -> any SyncSource {
        if let made = sourceFactory?(locator) { return made }
        switch locator {
        case .standardInput: return StandardInputSource()
        case .file(let path): return FileSource(path: path)
        case .http, .hub, .serve:
            for kind in SourceKinds.all {
                if let made = kind.makeSource(locator) { return made }
            }
            throw CatalogError(
                .usage, "\(locator.kindName) sources need the LandmarkCatalogSync library, which this program does not link: \(locator.description)",
                hint: "link LandmarkCatalogSync and call NetworkSources.register()")
        }
    }

    /// Fetches and merges one source in one transaction, storing its cursor with the merge.
    ///
    /// - Parameters:
    ///   - source: the source object.
    ///   - context: the run's options, diagnostics and trust.
    ///   - freshLook: fetch without the stored HTTP validators (an unconditional look).
    /// - Returns: the outcome and the merge counts.
    /// - Throws: what the fetch or the merge throws; `LogFileGone` when a log file went away.
    private func syncOne(_ source: any SyncSource, context: SyncContext, freshLook: Bool = false) throws -> (SourceReport.Outcome, MergeCounts) {
        let plan = try plan(source, context: context, freshLook: freshLook)
        return try merge(plan, feeds: try source.fetch(since: plan.cursor, context: plan.context))
    }

    /// Reads what one source's fetch and merge need: its stored cursor and its trust.
    ///
    /// - Parameters:
    ///   - source: the source object.
    ///   - context: the run's options, diagnostics and trust.
    ///   - freshLook: fetch without the stored HTTP validators (an unconditional look).
    /// - Returns: the plan.
    /// - Throws: `CatalogError` when the database or a trusted key cannot be read.
    func plan(_ source: any SyncSource, context: SyncContext, freshLook: Bool = false) throws -> SourceSyncPlan {
        let key = source.locator.description
        let stored = try read {
            try sourceTable.cursor(key)
        }
        var cursor = context.options.resetCursor ? nil : stored
        if freshLook {
            cursor?["etag"] = nil
            cursor?["lastModified"] = nil
        }
        // Trust (docs/trust.md): the keys this run and the source's remotes require, and its write grant.
        let trust = try trustForSource(key: key)
        var context = context
        context.trustedKeys = context.options.trustedKeys + trust.keys.filter { !context.options.trustedKeys.contains($0) }
        return SourceSyncPlan(source: source, stored: stored, cursor: cursor, context: context, allow: trust.allow)
    }

    /// Merges a planned source's feeds in one transaction, storing its cursor with the merge.
    ///
    /// - Parameters:
    ///   - plan: what ``plan(_:context:freshLook:)`` read.
    ///   - feeds: what the source's fetch returned (nil: not modified).
    /// - Returns: the outcome and the merge counts.
    /// - Throws: what the merge throws; `LogFileGone` when a log file went away.
    func merge(_ plan: SourceSyncPlan, feeds: [any ChangeFeed]?) throws -> (SourceReport.Outcome, MergeCounts) {
        let source = plan.source
        let locator = source.locator
        let key = locator.description
        let context = plan.context
        let options = context.options
        // A follower's idle poll writes nothing (docs/live-sync.md §4): same cursor, a recent good sync.
        if feeds == nil, let every = context.quietWhenUnchangedFor, !options.dryRun, source.nextCursor == plan.stored,
            try isFreshSuccess(key, withinMilliseconds: every)
        {
            return (.notModified, MergeCounts())
        }
        return try transaction {
            let now = wallClock.nowMilliseconds()
            guard let feeds else {
                try noteSourceSuccess(locator, cursor: source.nextCursor, outcome: "not-modified", at: now)
                return options.dryRun ? .rollback((.notModified, MergeCounts())) : .commit((.notModified, MergeCounts()))
            }
            var merger = try RowMerger(
                store: self, source: key, quarantineAfter: now + options.maxDriftMilliseconds,
                diagnostics: context.diagnostics)
            merger.allow = plan.allow
            merger.appliedStamp = context.appliedStamp
            merger.progress = { rows, bytes, total in
                context.progress(CatalogProgress(records: rows, bytes: bytes, totalBytes: total, phase: .merging, subject: key))
            }
            for feed in feeds { try feed.merge(into: &merger) }
            // Later local writes must order after everything merged (docs/merge-rules.md §5).
            if merger.maxSeen.wall > 0 || merger.maxSeen.counter > 0 {
                try observeRemoteStamp(wall: merger.maxSeen.wall, counter: merger.maxSeen.counter)
            }
            if locator != .standardInput {
                try noteSourceSuccess(locator, cursor: source.nextCursor, outcome: "merged", at: now)
            }
            if options.pauseBeforeCommitMilliseconds > 0 { usleep(UInt32(options.pauseBeforeCommitMilliseconds) * 1000) }
            return options.dryRun ? .rollback((.merged, merger.counts)) : .commit((.merged, merger.counts))
        }
    }

}
