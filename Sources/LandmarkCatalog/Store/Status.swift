extension CatalogStore {
    /// What `catalog status` shows.
    public struct Status: Sendable {
        /// This database's node id.
        public var node: String
        /// The highest applied migration.
        public var schemaVersion: Int
        /// Live landmarks, and tombstones.
        public var landmarks: Int
        public var landmarkTombstones: Int
        /// Live positions, and tombstones.
        public var positions: Int
        public var positionTombstones: Int
        /// Rows kept in quarantine (stamped beyond the drift allowance), over all runs.
        public var quarantined: Int
        /// The change sequence's high-water mark.
        public var changeSequence: Int64
        /// Per source: the last good sync time (UTC), the last outcome, the last attempt and its error.
        public var sources: [SourceStatus]
        /// The last run (not one that found the lock held, docs/operations.md): start and finish times (UTC), outcome,
        /// exit status, message. A run still going has outcome `running`, no finish time and no exit status yet.
        public var lastRun: (started: String, finished: String?, outcome: String, status: Int?, message: String?)?
    }

    /// One source as `status` shows it.
    public struct SourceStatus: Sendable {
        public var source: String
        public var kind: String?
        public var lastSuccess: String?
        public var outcome: String?
        public var lastAttempt: String?
        public var lastStatus: Int?
        public var lastError: String?
        /// The saved remote whose source this is, if one is.
        public var remote: String?
        /// Whether the last sync run that ended had it, or a saved remote names it; a source synced
        /// once (a typo, a one-off file) or a removed remote is kept here but not in use.
        public var inUse = true
    }

    /// Counts, node id, schema version, quarantine and the last sync per source.
    public func status() throws -> Status {
        try read {
            func count(_ sql: String) throws -> Int { Int(try connection.scalarInt(sql: sql) ?? 0) }
            var sources: [SourceStatus] = []
            try connection.forEachRow(
                sql: """
                    SELECT source, kind, last_success_at, last_outcome, last_attempt_at, last_status, last_error FROM sync_sources ORDER BY source
                    """
            ) { s in
                sources.append(
                    SourceStatus(
                        source: s.text(0) ?? "", kind: s.text(1), lastSuccess: s.text(2), outcome: s.text(3),
                        lastAttempt: s.text(4), lastStatus: s.optionalInt(5).map(Int.init), lastError: s.text(6)))
            }
            let inUse = try sourcesInUse(lastEndedRun: try lastEndedRunID())
            let remotes = try remoteNamesBySourceKey()
            for n in sources.indices {
                sources[n].inUse = inUse.contains(sources[n].source)
                sources[n].remote = remotes[sources[n].source]
            }
            let lastRun = try connection.firstRow(
                sql: """
                    SELECT started_at, finished_at, outcome, exit_status, message FROM sync_runs WHERE id = ?
                    """, [.integer(try lastRunID(includingRunning: true) ?? 0)]
            ) { r in
                let running = r.text(2) == "running"
                return (r.text(0) ?? "", running ? nil : r.text(1), r.text(2) ?? "", running ? nil : Int(r.int(3)), r.text(4))
            }
            return Status(
                node: try currentNode(),
                schemaVersion: try count("SELECT max(version) FROM schema_migrations"),
                landmarks: try count("SELECT count(*) FROM landmarks WHERE deleted = 0"),
                landmarkTombstones: try count("SELECT count(*) FROM landmarks WHERE deleted = 1"),
                positions: try count("SELECT count(*) FROM positions WHERE deleted = 0"),
                positionTombstones: try count("SELECT count(*) FROM positions WHERE deleted = 1"),
                quarantined: try count("SELECT count(*) FROM sync_quarantine"),
                changeSequence: try lastChangeSequence(),
                sources: sources, lastRun: lastRun)
        }
    }
}
