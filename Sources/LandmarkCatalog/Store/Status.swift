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
        /// exit status, message.
        ///
        /// A run still going has outcome `running`, no finish time and no exit status yet.
        public var lastRun: (started: String, finished: String?, outcome: String, status: Int?, message: String?)?
    }

    /// Counts, node id, schema version, quarantine and the last sync per source.
    public func status() throws -> Status {
        try read {
            var sources = try sourceTable.all()
            let inUse = try sourcesInUse(lastEndedRun: try lastEndedRunID())
            let remotes = try remoteNamesBySourceKey()
            for n in sources.indices {
                sources[n].inUse = inUse.contains(sources[n].source)
                sources[n].remote = remotes[sources[n].source]
            }
            let lastRun = try runLedger.run(id: try lastRunID(includingRunning: true) ?? 0).map { r in
                let running = r.outcome == RunOutcome.running.rawValue
                return (r.startedAt, running ? nil : r.finishedAt, r.outcome, running ? nil : r.exitStatus, r.message)
            }
            let landmarks = try landmarkTable.counts()
            let positions = try positionTable.counts()
            return Status(
                node: try currentNode(),
                schemaVersion: try schemaVersion(),
                landmarks: landmarks.live, landmarkTombstones: landmarks.tombstones,
                positions: positions.live, positionTombstones: positions.tombstones,
                quarantined: try quarantineTable.count(),
                changeSequence: try lastChangeSequence(),
                sources: sources, lastRun: lastRun)
        }
    }
}
