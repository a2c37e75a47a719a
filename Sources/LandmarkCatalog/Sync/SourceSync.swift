import Foundation

#if os(Linux)
    import Glibc
#endif

/// One source's step of a sync run (``SyncRunner``, and each `--follow` cycle's poll): the source made
/// from its locator, fetched since its stored cursor, merged in one transaction with a ``RowMerger``,
/// its cursor stored with the merge, and whatever it throws mapped to its documented status
/// (docs/architecture.md §3).
package struct SourceSync {
    /// The store the source merges into.
    package let store: CatalogStore

    package init(store: CatalogStore) { self.store = store }

    private var path: String { store.path }
    private var ledger: SyncLedger { SyncLedger(store: store) }

    /// What a source's failure is, whatever was thrown (docs/exit-statuses.md: 70 is a bug, never an answer
    /// to bad input, a bad server or a race): a `CatalogError` as it is; SQLite and PostgreSQL errors
    /// mapped to their statuses; a log file gone after the fresh look 69; anything else 70, named.
    package static func failure(_ error: any Error, source: String, path: String) -> CatalogError {
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
    /// (``failure(_:source:path:)``) and, unless a dry run, is noted on the source.
    /// - Parameters:
    ///   - locator: the source.
    ///   - context: the run's options, diagnostics and trust.
    ///   - failed: sees the error first (a caller's hint, its busy handling).
    /// - Returns: the source's outcome, counts, error, bytes fetched and duration.
    package func syncReporting(_ locator: SourceLocator, context: SyncContext, failed: (inout CatalogError) -> Void = { _ in }) -> SourceReport {
        let started = store.wallClock.nowMilliseconds()
        var made: [any SyncSource] = []
        // Another catalog database has no feed to read: under `--repair` the repair that follows is its sync.
        if context.options.repair, SyncRepair.isDatabaseFile(locator) {
            return reporting(locator, started: started, context: context, made: { [] }, failed: failed, body: { (.notModified, MergeCounts()) })
        }
        if SyncRepair.isDatabaseFile(locator) {
            // Not a snapshot: read as one, it fails on its first byte with a message about JSON.
            return reporting(
                locator, started: started, context: context, made: { [] }, failed: failed,
                body: {
                    throw CatalogError(
                        .usage, "a SQLite database, not a snapshot: \(locator.description)",
                        hint:
                            "another catalog database is synced by repair: 'catalog sync --repair \(locator.description)' or 'catalog repair \(locator.description)' (docs/repair.md)"
                    )
                })
        }
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
            var error = Self.failure(error, source: locator.description, path: path)
            failed(&error)
            report.error = error
            if !context.options.dryRun {
                do { try ledger.noteSourceFailure(locator, error: error) } catch {
                    context.diagnostics(
                        Diagnostic(
                            severity: .warning,
                            message:
                                "the failure was not recorded for the source: \(Self.failure(error, source: locator.description, path: path).message)",
                            file: locator.description, kind: "ledger"))
                }
            }
        }
        let made = made()
        report.bytes = made.reduce(0) { $0 + $1.bytesFetched }
        report.pushed = made.lazy.compactMap(\.pushed).first
        report.note = made.last?.note
        report.sourceForgot = made.contains { $0.forgotUs }
        report.durationMilliseconds = store.wallClock.nowMilliseconds() - started
        return report
    }

    /// The cursor stored for a source (nil: never synced).
    ///
    /// - Parameter locator: the source.
    /// - Returns: its cursor.
    /// - Throws: `CatalogError` when the database cannot be read.
    package func storedCursor(_ locator: SourceLocator) throws -> SourceCursor? {
        try store.read { try store.sourceTable.cursor(locator.description) }
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
        let fetch = DetachedFetch(locator: locator, started: store.wallClock.nowMilliseconds())
        var quiet = context
        quiet.diagnostics = { [weak fetch] in fetch?.keep($0) }
        quiet.progress = { _ in }
        do {
            let first = try plan(try makeSource(locator, context: quiet), context: quiet)
            let again = try plan(try makeSource(locator, context: quiet), context: quiet, freshLook: true)
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
    /// - Throws: what the source's fetch or merge throws (``failure(_:source:path:)`` maps it).
    func syncWithFreshLook(
        _ locator: SourceLocator, context: SyncContext,
        made: (any SyncSource) -> Void
    ) throws -> (SourceReport.Outcome, MergeCounts) {
        let source = try makeSource(locator, context: context)
        made(source)
        do {
            return try syncOne(source, context: context)
        } catch is LogFileGone {
            let again = try makeSource(locator, context: context)
            made(again)
            return try syncOne(again, context: context, freshLook: true)
        }
    }

    func makeSource(_ locator: SourceLocator, context: SyncContext) throws -> any SyncSource {
        if let made = context.options.sourceFactory?(locator) { return made }
        switch locator {
        case .standardInput: return StandardInputSource()
        case .file(let path): return FileSource(path: path)
        case .claimed(let claim): return claim.kind.makeSource(claim)
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
        let stored = try store.read { try store.sourceTable.cursor(key) }
        var cursor = context.options.resetCursor ? nil : stored
        if freshLook {
            cursor?["etag"] = nil
            cursor?["lastModified"] = nil
        }
        // Trust (docs/trust.md): the keys this run and the source's remotes require, and its write grant.
        let trust = try RemoteBook(store).trustForSource(key: key)
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
        return try store.transaction {
            let now = store.wallClock.nowMilliseconds()
            guard let feeds else {
                try ledger.noteSourceSuccess(locator, cursor: source.nextCursor, outcome: .notModified, at: now)
                return options.dryRun ? .rollback((.notModified, MergeCounts())) : .commit((.notModified, MergeCounts()))
            }
            var merger = try RowMerger(
                store: store, source: key, quarantineAfter: now + options.maxDriftMilliseconds,
                diagnostics: context.diagnostics)
            merger.allow = plan.allow
            if let kind = locator.kind { merger.invalidRows = kind.invalidRows }
            merger.appliedStamp = context.appliedStamp
            merger.progress = { rows, bytes, total in
                context.progress(CatalogProgress(records: rows, bytes: bytes, totalBytes: total, phase: .merging, subject: key))
            }
            for feed in feeds { try feed.merge(into: &merger) }
            // Later local writes must order after everything merged (docs/merge-rules.md §5).
            if merger.maxSeen.wall > 0 || merger.maxSeen.counter > 0 {
                try store.observeRemoteStamp(wall: merger.maxSeen.wall, counter: merger.maxSeen.counter)
            }
            if locator != .standardInput {
                try ledger.noteSourceSuccess(locator, cursor: source.nextCursor, outcome: .merged, at: now)
            }
            if options.pauseBeforeCommitMilliseconds > 0 { usleep(UInt32(options.pauseBeforeCommitMilliseconds) * 1000) }
            return options.dryRun ? .rollback((.merged, merger.counts)) : .commit((.merged, merger.counts))
        }
    }

    /// Whether the source's last attempt succeeded and its last good sync is within `ms` (a follower's
    /// idle poll then writes nothing).
    private func isFreshSuccess(_ source: String, withinMilliseconds ms: Int64) throws -> Bool {
        let row = try store.read { try store.sourceTable.source(source) }
        guard let row, row.lastStatus == 0, let text = row.lastSuccess, let last = Timestamp.parse(text) else { return false }
        let age = store.wallClock.nowMilliseconds() - last
        return age >= 0 && age < ms
    }
}
