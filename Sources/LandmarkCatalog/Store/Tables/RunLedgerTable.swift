/// The run ledger (`sync_runs`, one row per `catalog sync` run or follower cycle, and `sync_run_sources`,
/// one row per source of a run): its row types, its column maps and every statement that touches it
/// (docs/operations.md §2). A column is added here and in a migration: a counter through
/// ``MergeCounts/fields``, anything else through ``RunLedger/detailColumns`` (docs/architecture.md §5).

/// One `catalog sync` run as the ledger (`sync_runs`) recorded it.
public struct SyncRun: Sendable, Equatable {
    /// The ledger's row id: runs are numbered in the order they were recorded.
    public var id: Int64
    /// When the run started and finished (UTC, RFC 3339).
    public var startedAt: String
    public var finishedAt: String
    /// Wall time of the run, in ms.
    public var durationMilliseconds: Int64
    /// `ok`, `not-modified`, `failed`, `busy` (another sync held the lock; nothing was done), `running`
    /// (not ended yet) or `interrupted` (the process died).
    public var outcome: String
    /// The run's exit status (0, or the first failure's).
    public var exitStatus: Int
    /// The first failure's message.
    public var message: String?
    /// What merging did, over every source of the run.
    public var counts: MergeCounts
    /// Each source, in the run's order (a busy run lists what it was asked to sync, with no detail).
    public var sources: [SyncRunSource]
    /// The ledger's further columns (``RunLedger/detailColumns``), in their order.
    public var details: [RunDetail] = []
}

/// One source of one run (`sync_run_sources`).
public struct SyncRunSource: Sendable, Equatable {
    /// The source (never a password).
    public var source: String
    /// `merged`, `not-modified` or `failed`; nil when the run recorded no detail (a busy run).
    public var outcome: String?
    /// Its exit status (0 when good).
    public var exitStatus: Int
    /// Bytes fetched.
    public var bytes: Int64
    /// Wall time spent on it, in ms.
    public var durationMilliseconds: Int64
    /// What merging it did.
    public var counts: MergeCounts
    /// Why it failed.
    public var message: String?
}

/// The value of one of ``RunLedger/detailColumns`` in one run, as `catalog log` shows it.
public struct RunDetail: Sendable, Equatable {
    /// Its key in `catalog log --json`.
    public var json: String
    /// Its label in `catalog log`'s text (`  label: value`).
    public var label: String
    /// The value (the columns are integers).
    public var value: Int64
}

/// What a run knew when it ended: what ``RunLedger/detailColumns`` record.
package struct EndedRun {
    /// Start and end, in ms since the epoch (UTC).
    package var started: Int64
    package var finished: Int64
    /// Each source's report, in the run's order.
    package var reports: [SourceReport]
    /// The counts over every source.
    package var counts: MergeCounts
}

/// The run ledger's extension points.
public enum RunLedger {
    /// A column of `sync_runs` beyond the fixed ones (an integer, `NOT NULL DEFAULT 0` in its migration):
    /// recorded when a run ends, read back into ``SyncRun/details`` and shown by `catalog log` — text
    /// `  label: value`, JSON key `json` — for every run that did work (not a busy one).
    public struct DetailColumn: Sendable {
        /// The column's SQL name.
        public let column: String
        /// Its key in `catalog log --json`.
        public let json: String
        /// Its label in `catalog log`'s text.
        public let label: String
        /// Its value from the ended run.
        let value: @Sendable (EndedRun) -> Int64
    }

    /// Every further column, once: adding a column to the ledger and showing it in `catalog log` is a
    /// migration (`ALTER TABLE sync_runs ADD COLUMN … INTEGER NOT NULL DEFAULT 0`) and a row here.
    public static let detailColumns: [DetailColumn] = [
        DetailColumn(column: "bytes", json: "bytes", label: "bytes fetched") { run in run.reports.reduce(0) { $0 + $1.bytes } }
    ]
}

/// `sync_runs`' fixed columns, in the order the ledger's reader selects them; ``MergeCounts/fields`` and
/// ``RunLedger/detailColumns`` follow.
package enum RunColumn: Int32, TableColumn {
    case id, startedAt, finishedAt, durationMs, outcome, exitStatus, message, sources

    package static let tableName = "sync_runs"

    /// Every column a run row is read and written with: the fixed ones, the counters, the details.
    static var fullList: String {
        ([selectList, MergeCounts.columnList] + RunLedger.detailColumns.map(\.column)).joined(separator: ", ")
    }
    /// Where the counters start in ``fullList``.
    static var countersStart: Int { allCases.count }
    /// Where the details start in ``fullList``.
    static var detailsStart: Int { allCases.count + MergeCounts.fields.count }
}

/// `sync_run_sources`' columns, in the order its reader selects them; ``MergeCounts/fields`` follow.
package enum RunSourceColumn: Int32, TableColumn {
    case runID, position, source, outcome, exitStatus, bytes, durationMs, message

    package static let tableName = "sync_run_sources"
}

extension SyncRun {
    /// Decodes a row selected with ``RunColumn/fullList``.
    init(row s: Statement) {
        self.init(
            id: s.int(RunColumn.id), startedAt: s.text(RunColumn.startedAt) ?? "", finishedAt: s.text(RunColumn.finishedAt) ?? "",
            durationMilliseconds: s.int(RunColumn.durationMs), outcome: s.text(RunColumn.outcome) ?? "",
            exitStatus: Int(s.int(RunColumn.exitStatus)), message: s.text(RunColumn.message),
            counts: MergeCounts(statement: s, from: RunColumn.countersStart), sources: [])
        for (n, column) in RunLedger.detailColumns.enumerated() {
            details.append(RunDetail(json: column.json, label: column.label, value: s.int(RunColumn.detailsStart + n)))
        }
    }
}

extension SyncRunSource {
    /// Decodes a row selected with `RunSourceColumn.selectList, MergeCounts.columnList`.
    init(row s: Statement) {
        self.init(
            source: s.text(RunSourceColumn.source) ?? "", outcome: s.text(RunSourceColumn.outcome),
            exitStatus: Int(s.int(RunSourceColumn.exitStatus)), bytes: s.int(RunSourceColumn.bytes),
            durationMilliseconds: s.int(RunSourceColumn.durationMs),
            counts: MergeCounts(statement: s, from: RunSourceColumn.allCases.count), message: s.text(RunSourceColumn.message))
    }
}

/// The run ledger's statements on one connection; call inside the store's `read` or `write`.
package struct RunLedgerTable {
    let db: Connection

    /// The newest `limit` runs, newest first, each with its sources (a busy run's from its JSON list).
    func runs(limit: Int) throws -> [SyncRun] {
        var runs: [SyncRun] = []
        var sourceLists: [String] = []
        try db.forEachRow(sql: "SELECT \(RunColumn.fullList) FROM sync_runs ORDER BY id DESC LIMIT ?", [.integer(Int64(limit))]) { s in
            runs.append(SyncRun(row: s))
            sourceLists.append(s.text(RunColumn.sources) ?? "[]")
        }
        for n in runs.indices {
            runs[n].sources = try sources(ofRun: runs[n].id)
            if runs[n].sources.isEmpty {
                // No detail rows (a busy run): the sources it was asked for, from its JSON list.
                runs[n].sources = try Self.names(inList: sourceLists[n], db: db).map {
                    SyncRunSource(
                        source: $0, outcome: nil, exitStatus: runs[n].exitStatus, bytes: 0, durationMilliseconds: 0, counts: MergeCounts(),
                        message: nil)
                }
            }
        }
        return runs
    }

    /// One run, without its sources; nil when there is none.
    func run(id: Int64) throws -> SyncRun? {
        try db.firstRow(sql: "SELECT \(RunColumn.fullList) FROM sync_runs WHERE id = ?", [.integer(id)]) { SyncRun(row: $0) }
    }

    /// A run's per-source rows, in the run's order.
    func sources(ofRun id: Int64) throws -> [SyncRunSource] {
        var sources: [SyncRunSource] = []
        try db.forEachRow(
            sql: "SELECT \(RunSourceColumn.selectList), \(MergeCounts.columnList) FROM sync_run_sources WHERE run_id = ? ORDER BY position",
            [.integer(id)]
        ) { sources.append(SyncRunSource(row: $0)) }
        return sources
    }

    /// The strings of a JSON array of strings (a run's `sources` column).
    private static func names(inList json: String, db: Connection) throws -> [String] {
        var names: [String] = []
        try db.forEachRow(sql: "SELECT value FROM json_each(?) ORDER BY key", [.text(json)]) { names.append($0.text(0) ?? "") }
        return names
    }

    /// "The last run" (docs/operations.md §3), the one place that decides it: the newest run, except
    /// runs that found another sync holding the lock (`busy`); with `includingRunning` false, not one
    /// still going either.
    func lastRunID(includingRunning: Bool) throws -> Int64? {
        try db.scalarInt(
            sql: "SELECT max(id) FROM sync_runs WHERE outcome NOT IN (?1, ?2)",
            [.text(RunOutcome.busy.rawValue), .text((includingRunning ? RunOutcome.busy : .running).rawValue)])
    }

    /// The newest run that succeeded (`ok` or `not-modified`).
    func lastSucceeded() throws -> SyncRun? {
        try db.firstRow(
            sql: "SELECT \(RunColumn.fullList) FROM sync_runs WHERE outcome IN (?1, ?2) ORDER BY id DESC LIMIT 1",
            [.text(RunOutcome.ok.rawValue), .text(RunOutcome.notModified.rawValue)]
        ) { SyncRun(row: $0) }
    }

    /// Runs recorded per outcome, in outcome order.
    func countsByOutcome() throws -> [(outcome: String, count: Int)] {
        var runs: [(String, Int)] = []
        try db.forEachRow(sql: "SELECT outcome, count(*) FROM sync_runs GROUP BY outcome ORDER BY outcome") { s in
            runs.append((s.text(0) ?? "", Int(s.int(1))))
        }
        return runs
    }

    /// The counters summed over every run.
    func totals() throws -> MergeCounts {
        let sums = MergeCounts.fields.map { "coalesce(sum(\($0.column)), 0)" }.joined(separator: ", ")
        return try db.firstRow(sql: "SELECT \(sums) FROM sync_runs") { MergeCounts(statement: $0, from: 0) } ?? MergeCounts()
    }

    /// Bytes fetched per source over the ledger.
    func bytesBySource() throws -> [String: Int64] {
        var bytes: [String: Int64] = [:]
        try db.forEachRow(sql: "SELECT source, sum(bytes) FROM sync_run_sources GROUP BY source") { s in bytes[s.text(0) ?? ""] = s.int(1) }
        return bytes
    }

    /// The source names of one run's detail rows.
    func sourceNames(ofRun id: Int64) throws -> [String] {
        var names: [String] = []
        try db.forEachRow(sql: "SELECT source FROM sync_run_sources WHERE run_id = ? ORDER BY position", [.integer(id)]) {
            names.append($0.text(0) ?? "")
        }
        return names
    }

    /// Replaces every recorded message that names `user` with a note that it named an erased user
    /// (docs/erasure.md §3); returns how many runs and sources were changed.
    func redact(mentioning user: String) throws -> Int {
        let note = "(a message naming an erased user was removed)"
        try db.execute(sql: "UPDATE sync_runs SET message = ?2 WHERE instr(message, ?1) > 0", [.text(user), .text(note)])
        var changed = db.changes
        try db.execute(sql: "UPDATE sync_run_sources SET message = ?2 WHERE instr(message, ?1) > 0", [.text(user), .text(note)])
        changed += db.changes
        return changed
    }

    /// Marks runs left `running` (their process died) as `interrupted`.
    func markInterrupted() throws {
        try db.execute(
            sql: """
                UPDATE sync_runs SET outcome = ?1, exit_status = -1,
                    message = 'the run ended before it finished (the process was killed, or the machine stopped)'
                WHERE outcome = ?2
                """, [.text(RunOutcome.interrupted.rawValue), .text(RunOutcome.running.rawValue)])
    }

    /// Records a run as `running`; returns its id.
    func insertRunning(started: Int64, sources: [String]) throws -> Int64 {
        try db.execute(
            sql: "INSERT INTO sync_runs (started_at, finished_at, sources, outcome, exit_status) VALUES (?1, ?1, ?2, ?3, 0)",
            [.text(Timestamp.format(milliseconds: started)), .text(Self.list(sources)), .text(RunOutcome.running.rawValue)])
        return db.lastInsertRowID
    }

    /// Records an ended run with its sources, replacing its `running` row (`id`) when it has one.
    func insertEnded(
        id: Int64?, run: EndedRun, sources: [String], outcome: String, status: Int32, message: String?
    ) throws {
        if let id { try delete(id: id) }
        let columns = RunColumn.fullList
        let count = RunColumn.allCases.count + MergeCounts.fields.count + RunLedger.detailColumns.count
        let placeholders = Array(repeating: "?", count: count).joined(separator: ", ")
        let fixed: [SQLValue] = [
            id.map(SQLValue.integer) ?? .null, .text(Timestamp.format(milliseconds: run.started)),
            .text(Timestamp.format(milliseconds: run.finished)),
            .integer(run.finished - run.started), .text(outcome), .integer(Int64(status)), message.map(SQLValue.text) ?? .null,
            .text(Self.list(sources)),
        ]
        let details = RunLedger.detailColumns.map { SQLValue.integer($0.value(run)) }
        try db.execute(sql: "INSERT INTO sync_runs (\(columns)) VALUES (\(placeholders))", fixed + run.counts.sqlValues + details)
        let runID = db.lastInsertRowID
        let sourceColumns = "\(RunSourceColumn.selectList), \(MergeCounts.columnList)"
        let sourcePlaceholders = Array(repeating: "?", count: RunSourceColumn.allCases.count + MergeCounts.fields.count).joined(separator: ", ")
        for (i, r) in run.reports.enumerated() {
            try db.execute(
                sql: "INSERT INTO sync_run_sources (\(sourceColumns)) VALUES (\(sourcePlaceholders))",
                [
                    .integer(runID), .integer(Int64(i)), .text(r.source), .text(r.outcome.rawValue), .integer(Int64(r.error?.exitStatus ?? 0)),
                    .integer(r.bytes), .integer(r.durationMilliseconds), r.error.map { .text($0.message) } ?? .null,
                ] + r.counts.sqlValues)
        }
    }

    /// Records a run noted beside the sync lock (it could not write the ledger), replacing its
    /// `running` row (`id`) when it has one.
    ///
    /// `sourcesJSON` is its JSON list of sources.
    func insertNoted(
        id: Int64?, started: Int64, finished: Int64, sourcesJSON: String, outcome: String, status: Int64, message: String?
    ) throws {
        if let id { try delete(id: id) }
        try db.execute(
            sql: """
                INSERT INTO sync_runs (id, started_at, finished_at, sources, outcome, exit_status, message, duration_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            [
                id.map(SQLValue.integer) ?? .null, .text(Timestamp.format(milliseconds: started)), .text(Timestamp.format(milliseconds: finished)),
                .text(sourcesJSON), .text(outcome), .integer(status), message.map(SQLValue.text) ?? .null, .integer(finished - started),
            ])
    }

    private func delete(id: Int64) throws {
        try db.execute(sql: "DELETE FROM sync_runs WHERE id = ?", [.integer(id)])
    }

    /// A JSON array of strings.
    static func list(_ strings: [String]) -> String {
        var w = JSONWriter()
        w.stringArray(strings)
        return String(decoding: w.bytes, as: UTF8.self)
    }
}

extension CatalogStore {
    /// The run ledger's statements on this store's connection.
    package var runLedger: RunLedgerTable { RunLedgerTable(db: connection) }
}
