/// Ties (`sync_conflicts`): both versions of a row met with equal stamps and different content, kept for
/// `catalog conflicts` (docs/merge-rules.md §3). The row type, the column map and every statement that
/// touches the table.

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

/// `sync_conflicts`' columns, in select-list order.
package enum ConflictColumn: Int32, TableColumn {
    case id, detectedAt, source, kind, rowKey, updatedMs, counter, node, winnerJSON, loserJSON, rule

    package static let tableName = "sync_conflicts"
}

extension ConflictRecord {
    /// Decodes a row selected with ``ConflictColumn/selectList``.
    init(row s: Statement) {
        self.init(
            id: s.int(ConflictColumn.id), detectedAt: s.text(ConflictColumn.detectedAt) ?? "", source: s.text(ConflictColumn.source) ?? "",
            kind: s.text(ConflictColumn.kind) ?? "", key: s.text(ConflictColumn.rowKey) ?? "",
            stamp: HLCStamp(
                wallMilliseconds: s.int(ConflictColumn.updatedMs), counter: s.int(ConflictColumn.counter), node: s.text(ConflictColumn.node) ?? ""),
            winnerJSON: s.text(ConflictColumn.winnerJSON) ?? "{}", loserJSON: s.text(ConflictColumn.loserJSON) ?? "{}",
            rule: s.text(ConflictColumn.rule) ?? "")
    }
}

/// `sync_conflicts`' statements on one connection; call inside the store's `read` or `write`.
package struct ConflictsTable {
    let db: Connection

    /// The ties, newest first; `limit` nil for all.
    func all(limit: Int?) throws -> [ConflictRecord] {
        var rows: [ConflictRecord] = []
        try db.forEachRow(
            sql: "SELECT \(ConflictColumn.selectList) FROM sync_conflicts ORDER BY id DESC LIMIT ?", [.integer(Int64(limit ?? -1))]
        ) { rows.append(ConflictRecord(row: $0)) }
        return rows
    }

    /// How many ties are kept.
    func count() throws -> Int { Int(try db.scalarInt(sql: "SELECT count(*) FROM sync_conflicts") ?? 0) }

    /// The users of the recorded position ties, each once, that `wanted` keeps.
    func positionUsers(matching wanted: (String) -> Bool) throws -> [String] {
        var users: [String] = []
        try db.forEachRow(sql: "SELECT DISTINCT row_key FROM sync_conflicts WHERE kind = 'position'") { s in
            if let user = s.text(0), wanted(user) { users.append(user) }
        }
        return users
    }

    /// Removes every recorded tie of `user`'s position, and any whose rows name the user (an erasure,
    /// docs/erasure.md §3); returns how many.
    func forget(user: String) throws -> Int {
        try db.execute(
            sql:
                "DELETE FROM sync_conflicts WHERE (kind = 'position' AND row_key = ?1) OR instr(winner_json, ?1) > 0 OR instr(loser_json, ?1) > 0",
            [.text(user)])
        return db.changes
    }

    /// Records a tie (`id` and `detectedAt` of `record` are ignored; `now` in ms since the epoch).
    /// - Returns: false when the same tie settled the same way was recorded already.
    func insert(_ record: ConflictRecord, at now: Int64) throws -> Bool {
        try db.execute(
            sql: """
                INSERT INTO sync_conflicts (\(ConflictColumn.allCases.dropFirst().map(\.sqlName).joined(separator: ", ")))
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (kind, row_key, updated_ms, counter, node, loser_json) DO NOTHING
                """,
            [
                .text(Timestamp.format(milliseconds: now)), .text(record.source), .text(record.kind), .text(record.key),
                .integer(record.stamp.wallMilliseconds), .integer(record.stamp.counter), .text(record.stamp.node), .text(record.winnerJSON),
                .text(record.loserJSON), .text(record.rule),
            ])
        return db.changes > 0
    }

    /// Removes the ties met before `cutoff` (UTC, RFC 3339: `detected_at` is always written by
    /// `Timestamp.format`, fixed width, so text order is time order), then all but the newest `maxRows`.
    /// - Returns: how many were removed.
    func prune(before cutoff: String, keepingNewest maxRows: Int) throws -> Int {
        try db.execute(sql: "DELETE FROM sync_conflicts WHERE detected_at < ?", [.text(cutoff)])
        var removed = db.changes
        try db.execute(
            sql: "DELETE FROM sync_conflicts WHERE id <= (SELECT id FROM sync_conflicts ORDER BY id DESC LIMIT 1 OFFSET ?)",
            [.integer(Int64(maxRows))])
        removed += db.changes
        return removed
    }
}

extension CatalogStore {
    /// `sync_conflicts`' statements on this store's connection.
    package var conflictTable: ConflictsTable { ConflictsTable(db: connection) }
}
