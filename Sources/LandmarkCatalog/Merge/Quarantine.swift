import Foundation

extension CatalogStore {
    /// A row held in the quarantine: stamped too far ahead of this machine's clock when it arrived.
    public struct QuarantinedRow: Sendable, Equatable {
        /// The quarantine's row id (what `quarantine release` and `drop` name).
        public var id: Int64
        public var receivedAt: String
        public var source: String
        /// `landmark` or `position`.
        public var kind: String
        /// The landmark id or user id.
        public var key: String
        public var stamp: HLCStamp
        /// The row as a snapshot row (SPEC §6).
        public var rowJSON: String
        public var reason: String
    }

    /// The quarantined rows, oldest first.
    public func quarantinedRows() throws -> [QuarantinedRow] {
        try read {
            var rows: [QuarantinedRow] = []
            try connection.forEachRow(sql: """
                SELECT id, received_at, source, kind, row_key, updated_ms, counter, node, row_json, reason FROM sync_quarantine ORDER BY id
                """) { s in
                rows.append(QuarantinedRow(id: s.int(0), receivedAt: s.text(1) ?? "", source: s.text(2) ?? "", kind: s.text(3) ?? "",
                                           key: s.text(4) ?? "", stamp: HLCStamp(wallMilliseconds: s.int(5), counter: s.int(6), node: s.text(7) ?? ""),
                                           rowJSON: s.text(8) ?? "", reason: s.text(9) ?? ""))
            }
            return rows
        }
    }

    /// Applies quarantined rows through the merge rule, in one transaction, and removes them from the
    /// quarantine: the rows whose stamps are now within `maxDriftMilliseconds` of this machine's clock,
    /// and, forced, the rows named in `force` whatever their stamps (the clock then moves past them).
    ///
    /// - Returns: what merging them did.
    /// - Throws: `CatalogError` for database failures (nothing is released then).
    @discardableResult
    public func releaseQuarantine(maxDriftMilliseconds: Int64, force: [Int64] = [],
                                  diagnostics: @escaping (Diagnostic) -> Void = { _ in }) throws -> MergeCounts {
        try write {
            let limit = wallClock.nowMilliseconds() + maxDriftMilliseconds
            var ids: [Int64] = [], landmarks: [String] = [], positions: [String] = []
            try connection.forEachRow(sql: "SELECT id, kind, row_json, updated_ms FROM sync_quarantine ORDER BY kind, row_key") { s in
                let id = s.int(0)
                guard s.int(3) <= limit || force.contains(id) else { return }
                ids.append(id)
                if s.text(1) == "landmark" { landmarks.append(s.text(2) ?? "") } else { positions.append(s.text(2) ?? "") }
            }
            guard !ids.isEmpty else { return MergeCounts() }
            // The rows were checked when they arrived; merging them again goes through the one rule.
            let document = "{\"format\":\"\(SnapshotFormat.name)\",\"version\":\(SnapshotFormat.version),\"landmarks\":[\(landmarks.joined(separator: ","))],\"positions\":[\(positions.joined(separator: ","))]}"
            var merger = try RowMerger(store: self, source: "quarantine", quarantineAfter: force.isEmpty ? limit : Int64.max,
                                       diagnostics: diagnostics)
            for id in ids { try connection.execute(sql: "DELETE FROM sync_quarantine WHERE id = ?", [.integer(id)]) }
            try BytesSnapshotFeed(bytes: Array(document.utf8), name: "quarantine").merge(into: &merger)
            if merger.maxSeen.wall > 0 || merger.maxSeen.counter > 0 {
                try observeRemoteStamp(wall: merger.maxSeen.wall, counter: merger.maxSeen.counter)
            }
            return merger.counts
        }
    }
}

/// A snapshot held in memory (released quarantine rows, a hub's rows), merged like a file.
struct BytesSnapshotFeed: ChangeFeed {
    let bytes: [UInt8]
    let name: String

    func merge(into merger: inout RowMerger) throws {
        let decoder = SnapshotDecoder(source: name)
        let bytes = self.bytes
        let reading = ReadingThread { queue in
            decoder.run(reader: JSONPullReader(bytes: bytes, options: .init(allowTrailingCommas: false, maxDepth: 64)), queue: queue)
        }
        defer { reading.finish() }
        while true {
            let batch = reading.queue.take()
            try merger.apply(batch)
            if batch.isLast {
                if let failure = batch.failure { throw failure }
                if let failure = merger.failure() { throw failure }
                return
            }
        }
    }
}
