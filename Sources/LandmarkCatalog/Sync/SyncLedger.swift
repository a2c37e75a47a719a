import Foundation

#if os(Linux)
    import Glibc
#endif

/// The sync run ledger and the per-source bookkeeping a sync writes (`sync_runs`, `sync_run_sources`,
/// `sync_sources`), and the runs noted beside the sync lock when the database could not be written.
///
/// A feature over the store's table modules (``CatalogStore/runLedger``, ``CatalogStore/sourceTable``):
/// ``SyncRunner`` and the follower write through it.
struct SyncLedger {
    /// The store whose ledger this is.
    let store: CatalogStore

    init(store: CatalogStore) { self.store = store }

    private var path: String { store.path }

    /// Notes a run beside the sync lock when the ledger cannot be written (the database busy): the next
    /// run moves the line into the ledger (replacing the run's `running` row when it has one).
    ///
    /// - Parameters:
    ///   - started: when the run started (wall ms since the epoch).
    ///   - sources: the sources it lists.
    ///   - outcome: how it ended.
    ///   - error: its message (and its exit status when `status` is nil).
    ///   - status: its exit status.
    ///   - runID: its `running` row, when it has one.
    func noteRunBeside(started: Int64, sources: [String], outcome: RunOutcome, error: CatalogError, status: Int32? = nil, runID: Int64? = nil) {
        guard path != ":memory:" else { return }
        var w = JSONWriter()
        w.raw("{\"exitStatus\":")
        w.int(Int64(status ?? error.exitStatus))
        w.raw(",\"finished\":")
        w.int(store.wallClock.nowMilliseconds())
        if let runID {
            w.raw(",\"id\":")
            w.int(runID)
        }
        w.raw(",\"message\":")
        w.string(error.message)
        w.raw(",\"outcome\":")
        w.string(outcome.rawValue)
        w.raw(",\"sources\":")
        w.stringArray(sources)
        w.raw(",\"started\":")
        w.int(started)
        w.raw("}")
        SyncLock.noteSkipped(databasePath: path, line: String(decoding: w.bytes, as: UTF8.self))
    }

    /// Records a good sync of a source (inside the caller's transaction): its cursor, outcome and time.
    func noteSourceSuccess(_ locator: SourceLocator, cursor: SourceCursor?, outcome: SourceReport.Outcome, at now: Int64) throws {
        try store.sourceTable.noteSuccess(locator.description, kind: locator.kindName, cursor: cursor, outcome: outcome.rawValue, at: now)
    }

    /// Records a source's failure in its own transaction (standard input keeps no state).
    func noteSourceFailure(_ locator: SourceLocator, error: CatalogError) throws {
        guard locator != .standardInput else { return }
        try store.write {
            try store.sourceTable.noteFailure(
                locator.description, kind: locator.kindName, at: store.wallClock.nowMilliseconds(), status: error.exitStatus,
                message: error.message)
        }
    }

    /// Moves the runs that found the lock held, and noted themselves beside it, into the ledger.
    ///
    /// - Throws: the ledger's error; the runs not recorded yet stay noted for the next try.
    func recordSkippedRuns() throws {
        try SyncLock.takeSkipped(databasePath: path) { line in
            guard let members = JSONValue.parseObject(line) else { return }
            var fields: [String: JSONValue] = [:]
            for m in members { fields[m.key] = m.value }
            guard case .number(let s)? = fields["started"], let started = s.int64Value,
                case .number(let f)? = fields["finished"], let finished = f.int64Value
            else { return }
            var sources = "[]"
            if let list = fields["sources"] { sources = list.serialized() }
            let message: String? = { if case .string(let m)? = fields["message"] { return m } else { return nil } }()
            let outcome: String = {
                if case .string(let o)? = fields["outcome"] { return o } else { return RunOutcome.busy.rawValue }
            }()
            let status: Int64 = { if case .number(let n)? = fields["exitStatus"], let v = n.int64Value { return v } else { return 75 } }()
            let id: Int64? = { if case .number(let n)? = fields["id"], let v = n.int64Value { return v } else { return nil } }()
            try store.write {
                // A run that got the lock but could not write its end replaces its own `running` row.
                try store.runLedger.insertNoted(
                    id: id, started: started, finished: finished, sourcesJSON: sources, outcome: outcome, status: status, message: message)
            }
        }
    }

    /// Moves the runs noted beside the sync lock into the ledger, as ``recordSkippedRuns()`` does.
    ///
    /// A failure is a warning (kind `ledger`), not an error: the run that moves them goes on.
    /// - Parameter diagnostics: where the warning goes.
    func recordSkippedRunsReporting(diagnostics: (Diagnostic) -> Void) {
        do { try recordSkippedRuns() } catch {
            diagnostics(
                Diagnostic(
                    severity: .warning,
                    message: "runs noted beside the lock were not moved into the ledger yet: \(error); the next run tries again",
                    file: path, kind: "ledger"))
        }
    }

    /// Records a run as `running` as soon as it holds the lock, so a run that dies (SIGKILL, a power
    /// cut) leaves a trace; the next run marks such rows `interrupted`.
    /// - Returns: the run's ledger id.
    func recordRunStart(started: Int64, sources: [String]) throws -> Int64 {
        try store.write {
            try store.runLedger.markInterrupted()
            return try store.runLedger.insertRunning(started: started, sources: sources)
        }
    }

    /// Records an ended run, in place of its `running` row (`runID`) when it has one.
    ///
    /// - Parameters:
    ///   - started: when it started (wall ms since the epoch); it ends now.
    ///   - sources: the sources it lists.
    ///   - reports: their details (empty for a busy run).
    ///   - outcome: how it ended.
    ///   - status: its exit status.
    ///   - message: the first failure's message.
    ///   - counts: what merging did over every source.
    ///   - runID: its `running` row, when it has one.
    /// - Throws: `CatalogError` when the ledger cannot be written.
    func recordRun(
        started: Int64, sources: [String], reports: [SourceReport], outcome: RunOutcome, status: Int32, message: String?,
        counts: MergeCounts = MergeCounts(), runID: Int64? = nil
    ) throws {
        let run = EndedRun(started: started, finished: store.wallClock.nowMilliseconds(), reports: reports, counts: counts)
        try store.write {
            try store.runLedger.insertEnded(
                id: runID, run: run, sources: sources, outcome: outcome.rawValue, status: status, message: message)
        }
    }
}
