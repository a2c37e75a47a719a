import Foundation

/// A sync run, the one `catalog sync` and each `catalog sync --follow` cycle go through.
///
/// A run is **begun** (the sync lock, the sources resolved once, the ledger's `running` row), takes **one
/// step per source** (fetched, merged in one transaction with last-writer-wins, its cursor stored with
/// the merge), and is **finished** (quarantine upkeep, `--publish`, the runs noted beside the lock, the
/// run's outcome by one rule, the ledger row). ``sync(sources:options:standardInput:diagnostics:progress:)``
/// does all three; a follower holds the lock for its whole life and finishes each cycle the same way.
///
/// ```swift
/// let store = try CatalogStore.open(path: "catalog.db")
/// let report = try SyncRunner(store: store).sync(sources: ["/srv/exchange/laptop-log"])
/// ```
public struct SyncRunner {
    /// The store the run syncs into.
    public let store: CatalogStore

    /// A runner for `store`; it keeps no state of its own (the lock and the ledger do).
    public init(store: CatalogStore) { self.store = store }

    private var path: String { store.path }
    private var ledger: SyncLedger { SyncLedger(store: store) }

    /// The busy timeout of every connection (SQLite `busy_timeout`, ms).
    static let busyTimeoutMilliseconds: Int32 = 5000
    /// The busy timeout for a run's bookkeeping once the database was found busy (ms).
    static let busyBookkeepingMilliseconds: Int32 = 200

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
        let run = try begin(requested, options: options)
        defer { withExtendedLifetime(run.lock) {} }
        var report = SyncReport()
        report.dryRun = options.dryRun
        let context = SyncContext(store: store, options: options, standardInput: standardInput, diagnostics: diagnostics, progress: progress)
        defer { store.setBusyTimeout(milliseconds: Self.busyTimeoutMilliseconds) }
        let busy = syncEach(run, context: context, into: &report)
        // A dry run changes nothing: no upkeep, no publish, no ledger row.
        guard !options.dryRun else { return report }
        let ending = Ending(
            started: run.started, runID: run.runID, maintain: busy == nil, publishTo: options.publishPath, options: options,
            noteBesideLock: true)
        finish(&report, ending, diagnostics: diagnostics, progress: progress) { report in
            // `sync` judges a run by its sources alone (a publish after unchanged sources is not-modified).
            LedgerRow(sources: report.sources, changedBeyondSources: false)
        }
        return report
    }

    /// Whether `--publish PATH` means a snapshot log: PATH is a directory, or does not end in `.json`.
    ///
    /// - Parameter path: the `--publish` path.
    /// - Returns: true for a snapshot log directory, false for a snapshot file.
    public static func publishesLog(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) { return isDirectory.boolValue }
        return !path.lowercased().hasSuffix(".json")
    }

    // MARK: Begin

    /// A begun `sync` run: its lock, its sources, its ledger row.
    struct Begun {
        /// The sync lock, held while this value lives (nil for an in-memory database).
        let lock: SyncLock?
        /// When the run started (wall ms since the epoch).
        let started: Int64
        /// The `running` row (nil for a dry run).
        let runID: Int64?
        /// What was typed (fewer than `locators` when the saved remotes are synced).
        let requested: [String]
        /// The saved remotes (for the hint of a mistyped remote name).
        let saved: [Remote]
        /// The sources, resolved once.
        let locators: [SourceLocator]
    }

    /// Begins a `sync` run: takes the sync lock, resolves the sources, records the run as `running`.
    ///
    /// - Parameters:
    ///   - requested: the SOURCE arguments.
    ///   - options: the run's options (a dry run records nothing).
    /// - Returns: the begun run; the lock is held while it lives.
    /// - Throws: `CatalogError` 75 when another sync holds the lock or the database is busy (the run is
    ///   recorded as `busy`), 64 for a bad SOURCE or nothing to do, 73 when the lock file cannot be made.
    func begin(_ requested: [String], options: SyncOptions) throws -> Begun {
        let started = store.wallClock.nowMilliseconds()
        let lock = try acquireSyncLock(requested: requested, options: options, started: started)
        // Holding the lock, no follower runs: a marker left by one that was killed is stale.
        if lock != nil { FollowMarker.remove(databasePath: path) }
        let saved = try RemoteBook(store).remotes()
        let locators = try Self.locators(requested, saved: saved)
        guard !locators.isEmpty || options.publishPath != nil else {
            throw CatalogError(
                .usage, "nothing to sync: no SOURCE given and no remotes saved",
                hint: "catalog remote add NAME URL, or catalog sync FILE|URL|-, or --publish PATH to only publish")
        }
        guard locators.filter({ $0 == .standardInput }).count <= 1 else {
            throw CatalogError(.usage, "'-' (standard input) can be given only once")
        }
        var runID: Int64?
        if !options.dryRun {
            do {
                runID = try ledger.recordRunStart(started: started, sources: locators.map(\.description))
            } catch let error as CatalogError where error.databaseBusy {
                // Another process holds the database's write lock: nothing can merge, so the run stops
                // here, within one busy timeout, and leaves its ledger line beside the lock.
                ledger.noteRunBeside(started: started, sources: locators.map(\.description), outcome: .busy, error: error)
                throw error
            }
        }
        return Begun(lock: lock, started: started, runID: runID, requested: requested, saved: saved, locators: locators)
    }

    /// The sources of a run: the SOURCE arguments, or the saved remotes when none was given.
    ///
    /// - Parameters:
    ///   - requested: the SOURCE arguments.
    ///   - saved: the saved remotes.
    /// - Returns: the sources, in order.
    /// - Throws: `CatalogError` 64 for a bad SOURCE or a saved remote's bad URL.
    package static func locators(_ requested: [String], saved: [Remote]) throws -> [SourceLocator] {
        if requested.isEmpty { return try saved.map { try SourceLocator.parse($0.url) } }
        return try requested.map { try SourceLocator.parse($0, remotes: saved) }
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
            if error.kind == .tempFail && !options.dryRun { recordBusy(requested: requested, started: started, error: error) }
            throw error
        }
    }

    /// Records a run that found the lock held as `busy`: in the ledger when its holder's transaction
    /// lets it within 200 ms, else as a line beside the lock that the holder moves into the ledger.
    private func recordBusy(requested: [String], started: Int64, error: CatalogError) {
        store.setBusyTimeout(milliseconds: 200)
        defer { store.setBusyTimeout(milliseconds: Self.busyTimeoutMilliseconds) }
        // As a run that got the lock records them: absolute paths, remotes resolved, no password.
        let saved = (try? RemoteBook(store).remotes()) ?? []
        let sources = requested.map { (try? SourceLocator.parse($0, remotes: saved).description) ?? redactedURL($0) }
        do {
            try ledger.recordRun(started: started, sources: sources, reports: [], outcome: .busy, status: error.exitStatus, message: error.message)
        } catch _ {
            var w = JSONWriter()
            w.raw("{\"message\":")
            w.string(error.message)
            w.raw(",\"sources\":")
            w.stringArray(sources)
            w.raw(",\"started\":")
            w.int(started)
            w.raw(",\"finished\":")
            w.int(store.wallClock.nowMilliseconds())
            w.raw("}")
            SyncLock.noteSkipped(databasePath: path, line: String(decoding: w.bytes, as: UTF8.self))
        }
    }

    // MARK: Steps

    /// Syncs each source in turn into `report`, until the database is found busy.
    ///
    /// Once the database is found busy (another process's write lock outlived the busy timeout), the
    /// sources left are not tried and the run's own bookkeeping waits briefly, so the run ends within
    /// about one busy timeout instead of one per write (six in a row took 30 s).
    /// - Parameters:
    ///   - run: the begun run (its sources, what was typed, the saved remotes).
    ///   - context: what each source's sync needs.
    ///   - report: gains each source's report and counts.
    /// - Returns: the error that found the database busy, or nil.
    private func syncEach(_ run: Begun, context: SyncContext, into report: inout SyncReport) -> CatalogError? {
        var busy: CatalogError?
        let steps = SourceSync(store: store)
        for (n, locator) in run.locators.enumerated() {
            // What was typed for it (nil for the saved remotes synced when none was given).
            let typed = run.requested.indices.contains(n) ? run.requested[n] : nil
            if let busy {
                var skipped = SourceReport(source: locator.description, outcome: .failed)
                skipped.error = CatalogError(.tempFail, "not synced: \(busy.message)", hint: busy.hint)
                report.sources.append(skipped)
                continue
            }
            var sourceReport = steps.syncReporting(locator, context: context) { error in
                // A bare word that is no remote and no file was most likely meant as a remote's name.
                if error.kind == .noInput, case .file = locator, let word = typed, !word.contains("/"), SourceLocator.scheme(of: word) == nil,
                    !run.saved.contains(where: { $0.name == word })
                {
                    error.hint =
                        Suggest.nearest(to: word, in: run.saved.map(\.name)).map { "no remote is named '\(word)' either; did you mean '\($0)'?" }
                        ?? "no remote is named '\(word)' either (catalog remote list shows them)"
                }
                if error.databaseBusy {
                    busy = error
                    store.setBusyTimeout(milliseconds: Self.busyBookkeepingMilliseconds)
                }
            }
            if context.options.repair, let repaired = SyncRepair(store: store).afterSync(locator, report: &sourceReport, context: context) {
                report.repairs[locator.description] = repaired
            }
            report.counts = report.counts + sourceReport.counts
            if let note = sourceReport.note {
                context.diagnostics(Diagnostic(severity: .warning, message: note, file: locator.description, kind: "behind"))
            }
            report.sources.append(sourceReport)
        }
        return busy
    }

    // MARK: Finish

    /// How a run is finished, besides its report.
    package struct Ending {
        /// When the run started (wall ms since the epoch).
        package var started: Int64
        /// Its `running` row, when it has one (a follow cycle has none).
        package var runID: Int64?
        /// Whether to release quarantined rows that came due and prune old ties.
        package var maintain: Bool
        /// Where to publish (`--publish`), when this run publishes.
        package var publishTo: String?
        /// Whether the publish is due whatever the upkeep does (`sync`: always; a follow cycle: when this
        /// database changed or a publish is pending); rows the upkeep releases make it due too.
        package var publishDue: Bool
        /// The run's options (the drift allowance, the log's signing and retention).
        package var options: SyncOptions
        /// When the ledger cannot be written: note the run beside the lock for the next run (`sync`), or
        /// only warn (a follow cycle, whose follower holds the lock).
        package var noteBesideLock: Bool

        package init(
            started: Int64, runID: Int64? = nil, maintain: Bool, publishTo: String?, publishDue: Bool = true, options: SyncOptions,
            noteBesideLock: Bool
        ) {
            (self.started, self.runID, self.maintain, self.publishTo, self.publishDue) = (started, runID, maintain, publishTo, publishDue)
            (self.options, self.noteBesideLock) = (options, noteBesideLock)
        }
    }

    /// What a finished run's ledger row lists.
    package struct LedgerRow {
        /// The sources, in order (a follow cycle lists those not polled with their last state).
        package var sources: [SourceReport]
        /// The input of ``RunOutcome/ended(sources:failed:changedBeyondSources:)``.
        package var changedBeyondSources: Bool

        package init(sources: [SourceReport], changedBeyondSources: Bool) {
            self.sources = sources
            self.changedBeyondSources = changedBeyondSources
        }
    }

    /// Finishes a run: quarantine upkeep, `--publish`, the runs noted beside the lock, the ledger row.
    ///
    /// - Parameters:
    ///   - report: the run's report; gains the rows released and what was published (or its failure: a
    ///     publish tried leaves ``SyncReport/published`` or ``SyncReport/publishError`` set).
    ///   - ending: what to do.
    ///   - diagnostics: warnings (a ledger that cannot be written, rows released).
    ///   - progress: while `--publish` writes.
    ///   - row: after publishing, what the ledger row lists; nil records nothing (an idle follow cycle).
    /// - Returns: whether the run was recorded (or meant to be: a ledger failure is a warning).
    @discardableResult
    package func finish(
        _ report: inout SyncReport, _ ending: Ending, diagnostics: @escaping (Diagnostic) -> Void,
        progress: (CatalogProgress) -> Void = { _ in }, row: (SyncReport) -> LedgerRow?
    ) -> Bool {
        if ending.maintain {
            // Rows held back earlier that are now within the allowance are applied by the merge rule (a log
            // or a hub never delivers them again), and ties older than the retention are pruned.
            if let released = Quarantine(store).maintainAfterSync(maxDriftMilliseconds: ending.options.maxDriftMilliseconds, diagnostics: diagnostics)
            {
                report.released = released
            }
        }
        if let publish = ending.publishTo, ending.publishDue || report.released.released > 0 {
            self.publish(to: publish, options: ending.options, progress: progress, into: &report)
        }
        if path != ":memory:" { ledger.recordSkippedRunsReporting(diagnostics: diagnostics) }
        // Erasures merged: the WAL is checkpointed and truncated, so no old frame keeps the erased rows (docs/erasure.md §3).
        defer { if report.counts.erasuresApplied > 0 { UserErasure(store).scrub() } }
        guard let listed = row(report) else { return false }
        record(report, listing: listed, ending: ending, diagnostics: diagnostics)
        return true
    }

    /// Publishes the merged state to `publish` (`--publish`): a snapshot log, or a snapshot file.
    ///
    /// - Parameters:
    ///   - publish: the log directory or snapshot file.
    ///   - options: the run's options (the log's signing and retention).
    ///   - progress: while the files are written.
    ///   - report: gains what was published, or the failure.
    private func publish(to publish: String, options: SyncOptions, progress: (CatalogProgress) -> Void, into report: inout SyncReport) {
        do {
            if let refusal = SourceKinds.publishRefusal(publish) { throw refusal }
            if Self.publishesLog(publish) {
                report.logPublish = try LogPublisher(store).publishLog(to: publish, options: options.publish, progress: progress)
            } else {
                try SnapshotExporter(store).exportSnapshot(toFile: publish, progress: progress)
            }
            report.published = publish
        } catch {
            let error = SourceSync.failure(error, source: publish, path: path)
            report.publishError = CatalogError(error.kind, "publishing failed: \(error.message)", hint: error.hint)
        }
    }

    /// Records a finished run in the ledger, in place of its `running` row when it has one.
    ///
    /// - Parameters:
    ///   - report: what the run did.
    ///   - listed: the sources the row lists, and the outcome rule's input.
    ///   - ending: its start, its `running` row, and what to do when the ledger cannot be written.
    ///   - diagnostics: a warning when the ledger cannot be written.
    private func record(_ report: SyncReport, listing listed: LedgerRow, ending: Ending, diagnostics: (Diagnostic) -> Void) {
        var row = report
        row.sources = listed.sources
        let failed = row.firstError
        let outcome = RunOutcome.ended(sources: listed.sources, failed: failed != nil, changedBeyondSources: listed.changedBeyondSources)
        let sources = listed.sources.map(\.source)
        do {
            try ledger.recordRun(
                started: ending.started, sources: sources, reports: listed.sources, outcome: outcome, status: row.exitStatus,
                message: failed?.message, counts: report.counts, runID: ending.runID)
        } catch {
            let reason = SourceSync.failure(error, source: path, path: path)
            guard ending.noteBesideLock else {
                diagnostics(
                    Diagnostic(
                        severity: .warning, message: "a follow cycle was not recorded in the ledger: \(reason.message)", file: path, kind: "ledger"))
                return
            }
            // The ledger could not be written (the database busy, the disk full): the run is noted beside
            // the lock, and the next run records it in place of its `running` row.
            ledger.noteRunBeside(
                started: ending.started, sources: sources, outcome: outcome, error: failed ?? reason, status: row.exitStatus, runID: ending.runID)
            diagnostics(
                Diagnostic(
                    severity: .warning,
                    message:
                        "the run was not recorded in the ledger (\(reason.message)); it is noted beside the sync lock and recorded by the next run",
                    file: path, kind: "ledger"))
        }
    }
}
