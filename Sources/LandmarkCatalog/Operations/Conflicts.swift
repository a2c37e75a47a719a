/// A tie settled by the fixed rule (docs/merge-rules.md §3): two versions of one row with equal stamps and different
/// content, both kept here with the rule that chose between them.
public struct ConflictRecord: Sendable, Equatable {
    /// The conflicts table's row id.
    public var id: Int64
    /// When the tie was met (UTC, RFC 3339).
    public var detectedAt: String
    /// The source whose row met the stored one (never a password).
    public var source: String
    /// `landmark` or `position`.
    public var kind: String
    /// The landmark id or the user id.
    public var key: String
    /// The stamp both versions carry.
    public var stamp: HLCStamp
    /// The version kept, as a snapshot row (docs/snapshot-format.md §3), JSON text.
    public var winnerJSON: String
    /// The version discarded, as a snapshot row, JSON text.
    public var loserJSON: String
    /// The rule applied, in words.
    public var rule: String
}

/// How long ties are kept for `catalog conflicts`: pruned at the end of every sync run to those met in
/// the last ``maxAgeMilliseconds``, and of those at most the newest ``maxRows``. A tie pruned and met
/// again (its loser delivered again) is recorded, and reported, once more.
public enum ConflictRetention {
    /// 30 days, in ms.
    public static let maxAgeMilliseconds: Int64 = 30 * 86_400_000
    /// The newest 10,000 ties.
    public static let maxRows = 10_000
}

extension CatalogStore {
    /// The recorded ties, newest first.
    /// - Parameter limit: at most this many; nil for all that are kept (see ``ConflictRetention``).
    public func conflicts(limit: Int? = nil) throws -> [ConflictRecord] {
        try read {
            var rows: [ConflictRecord] = []
            try connection.forEachRow(
                sql: """
                    SELECT id, detected_at, source, kind, row_key, updated_ms, counter, node, winner_json, loser_json, rule
                    FROM sync_conflicts ORDER BY id DESC LIMIT ?
                    """, [.integer(Int64(limit ?? -1))]
            ) { s in
                rows.append(
                    ConflictRecord(
                        id: s.int(0), detectedAt: s.text(1) ?? "", source: s.text(2) ?? "", kind: s.text(3) ?? "",
                        key: s.text(4) ?? "", stamp: HLCStamp(wallMilliseconds: s.int(5), counter: s.int(6), node: s.text(7) ?? ""),
                        winnerJSON: s.text(8) ?? "{}", loserJSON: s.text(9) ?? "{}", rule: s.text(10) ?? ""))
            }
            return rows
        }
    }

    /// How many ties are kept (see ``ConflictRetention``).
    public func conflictCount() throws -> Int {
        try read { Int(try connection.scalarInt(sql: "SELECT count(*) FROM sync_conflicts") ?? 0) }
    }

    /// Prunes the recorded ties to those met within `maxAgeMilliseconds` of now and, of those, the newest
    /// `maxRows` (by row id, the order they were recorded in).
    /// - Returns: how many were removed.
    /// - Throws: `CatalogError` when the database cannot be written.
    @discardableResult
    public func pruneConflicts(
        maxAgeMilliseconds: Int64 = ConflictRetention.maxAgeMilliseconds,
        maxRows: Int = ConflictRetention.maxRows
    ) throws -> Int {
        try write {
            // detected_at is always written by Timestamp.format (UTC, fixed width), so text order is time order.
            let cutoff = Timestamp.format(milliseconds: wallClock.nowMilliseconds() - maxAgeMilliseconds)
            try connection.execute(sql: "DELETE FROM sync_conflicts WHERE detected_at < ?", [.text(cutoff)])
            var removed = connection.changes
            try connection.execute(
                sql: """
                    DELETE FROM sync_conflicts WHERE id <= (SELECT id FROM sync_conflicts ORDER BY id DESC LIMIT 1 OFFSET ?)
                    """, [.integer(Int64(maxRows))])
            removed += connection.changes
            return removed
        }
    }
}
