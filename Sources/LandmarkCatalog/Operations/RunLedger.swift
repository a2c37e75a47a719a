/// One `catalog sync` run as the ledger (`sync_runs`) recorded it.
public struct SyncRun: Sendable, Equatable {
    /// The ledger's row id: runs are numbered in the order they were recorded.
    public var id: Int64
    /// When the run started and finished (UTC, RFC 3339).
    public var startedAt: String
    public var finishedAt: String
    /// Wall time of the run, in ms.
    public var durationMilliseconds: Int64
    /// `ok`, `not-modified`, `failed`, or `busy` (another sync held the lock; nothing was done).
    public var outcome: String
    /// The run's exit status (0, or the first failure's).
    public var exitStatus: Int
    /// The first failure's message.
    public var message: String?
    /// What merging did, over every source of the run.
    public var counts: MergeCounts
    /// Each source, in the run's order (a busy run lists what it was asked to sync, with no detail).
    public var sources: [SyncRunSource]
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

extension CatalogStore {
    /// The run ledger, newest first, with per-source detail.
    /// - Parameter limit: at most this many runs.
    public func syncRuns(limit: Int) throws -> [SyncRun] {
        try read {
            var runs: [SyncRun] = []
            var sourceLists: [String] = []
            try connection.forEachRow(
                sql: """
                    SELECT id, started_at, finished_at, duration_ms, outcome, exit_status, message, sources, \(MergeCounts.columnList)
                    FROM sync_runs ORDER BY id DESC LIMIT ?
                    """, [.integer(Int64(limit))]
            ) { s in
                runs.append(
                    SyncRun(
                        id: s.int(0), startedAt: s.text(1) ?? "", finishedAt: s.text(2) ?? "", durationMilliseconds: s.int(3),
                        outcome: s.text(4) ?? "", exitStatus: Int(s.int(5)), message: s.text(6),
                        counts: MergeCounts(statement: s, from: 8), sources: []))
                sourceLists.append(s.text(7) ?? "[]")
            }
            for n in runs.indices {
                try connection.forEachRow(
                    sql: """
                        SELECT source, outcome, exit_status, bytes, duration_ms, message, \(MergeCounts.columnList)
                        FROM sync_run_sources WHERE run_id = ? ORDER BY position
                        """, [.integer(runs[n].id)]
                ) { s in
                    runs[n].sources.append(
                        SyncRunSource(
                            source: s.text(0) ?? "", outcome: s.text(1), exitStatus: Int(s.int(2)), bytes: s.int(3),
                            durationMilliseconds: s.int(4), counts: MergeCounts(statement: s, from: 6), message: s.text(5)))
                }
                if runs[n].sources.isEmpty {
                    // No detail rows (a busy run): the sources it was asked for, from its JSON list.
                    try connection.forEachRow(sql: "SELECT value FROM json_each(?) ORDER BY key", [.text(sourceLists[n])]) { s in
                        runs[n].sources.append(
                            SyncRunSource(
                                source: s.text(0) ?? "", outcome: nil, exitStatus: runs[n].exitStatus, bytes: 0,
                                durationMilliseconds: 0, counts: MergeCounts(), message: nil))
                    }
                }
            }
            return runs
        }
    }
}
