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
}

extension CatalogMonitor {
    /// Counts, node id, schema version, quarantine and the last sync per source.
    public func status() throws -> CatalogStore.Status {
        try store.read {
            var sources = try store.sourceTable.all()
            let inUse = try sourcesInUse(lastEndedRun: try lastEndedRunID())
            let remotes = try RemoteBook(store).remoteNamesBySourceKey()
            for n in sources.indices {
                sources[n].inUse = inUse.contains(sources[n].source)
                sources[n].remote = remotes[sources[n].source]
            }
            let lastRun = try store.runLedger.run(id: try lastRunID(includingRunning: true) ?? 0).map { r in
                let running = r.outcome == RunOutcome.running.rawValue
                return (r.startedAt, running ? nil : r.finishedAt, r.outcome, running ? nil : r.exitStatus, r.message)
            }
            let landmarks = try store.landmarkTable.counts()
            let positions = try store.positionTable.counts()
            return CatalogStore.Status(
                node: try store.currentNode(),
                schemaVersion: try store.schemaVersion(),
                landmarks: landmarks.live, landmarkTombstones: landmarks.tombstones,
                positions: positions.live, positionTombstones: positions.tombstones,
                quarantined: try store.quarantineTable.count(),
                changeSequence: try store.lastChangeSequence(),
                sources: sources, lastRun: lastRun)
        }
    }

    /// The run ledger, newest first, with per-source detail (`catalog log`).
    /// - Parameter limit: at most this many runs.
    /// - Returns: the runs, each with its sources.
    /// - Throws: `CatalogError` when the database cannot be read.
    public func syncRuns(limit: Int) throws -> [SyncRun] {
        try store.read { try store.runLedger.runs(limit: limit) }
    }
}
