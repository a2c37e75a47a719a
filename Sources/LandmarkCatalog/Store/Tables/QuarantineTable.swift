/// The quarantine (`sync_quarantine`): rows stamped further ahead of this machine's clock than the drift
/// allowance, held back (docs/merge-rules.md §6). The row type, the column map and every statement that
/// touches the table.

/// A row held back because its stamp was further ahead of this machine's clock than the drift
/// allowance (docs/merge-rules.md §6), as `catalog quarantine list` shows it.
///
/// Rows are named by ``id``, the quarantine table's row id: stable while the row is held, never reused
/// (SQLite `INTEGER PRIMARY KEY` with the largest id + 1; https://sqlite.org/autoinc.html), printed by
/// `sync` when the row is held.
public struct QuarantinedRow: Sendable, Equatable {
    /// The quarantine row id, used by `quarantine release ROW` and `quarantine drop ROW`.
    public var id: Int64
    /// When it was first received (UTC, RFC 3339).
    public var receivedAt: String
    /// The source it came from (never a password).
    public var source: String
    /// `landmark` or `position`.
    public var kind: String
    /// The landmark id or the user id.
    public var key: String
    /// The row's stamp.
    public var stamp: HLCStamp
    /// The whole row as a snapshot row (docs/snapshot-format.md §3), JSON text.
    public var rowJSON: String
    /// Why it was held back.
    public var reason: String
}

/// `sync_quarantine`'s columns, in select-list order.
package enum QuarantineColumn: Int32, TableColumn {
    case id, receivedAt, source, kind, rowKey, updatedMs, counter, node, rowJSON, reason, deleted, tieContent

    package static let tableName = "sync_quarantine"
}

extension QuarantinedRow {
    /// Decodes a row selected with ``QuarantineColumn/selectList``.
    init(row s: Statement) {
        self.init(
            id: s.int(QuarantineColumn.id), receivedAt: s.text(QuarantineColumn.receivedAt) ?? "", source: s.text(QuarantineColumn.source) ?? "",
            kind: s.text(QuarantineColumn.kind) ?? "", key: s.text(QuarantineColumn.rowKey) ?? "",
            stamp: HLCStamp(
                wallMilliseconds: s.int(QuarantineColumn.updatedMs), counter: s.int(QuarantineColumn.counter),
                node: s.text(QuarantineColumn.node) ?? ""),
            rowJSON: s.text(QuarantineColumn.rowJSON) ?? "", reason: s.text(QuarantineColumn.reason) ?? "")
    }
}

/// A held row's identity: its kind, key and stamp (a row delivered again is kept once).
package struct QuarantineIdentity {
    var kind: String
    var key: String
    var stamp: HLCStamp

    var values: [SQLValue] { [.text(kind), .text(key), .integer(stamp.wallMilliseconds), .integer(stamp.counter), .text(stamp.node)] }
}

/// What the quarantine holds of one row, for the tie rule (docs/merge-rules.md §3).
package struct QuarantinedContent {
    var id: Int64
    var deleted: Bool
    /// The row's content in the tie rule's byte order.
    var tieContent: [UInt8]
}

/// `sync_quarantine`'s statements on one connection; call inside the store's `read` or `write`.
package struct QuarantineTable {
    let db: Connection

    /// The held rows, oldest first; `limit` nil for all.
    func rows(limit: Int? = nil) throws -> [QuarantinedRow] {
        try select("ORDER BY id LIMIT ?", [.integer(Int64(limit ?? -1))])
    }

    /// The held rows stamped at or before `wall` (ms since the epoch), oldest first.
    func rows(stampedAtOrBefore wall: Int64) throws -> [QuarantinedRow] {
        try select("WHERE updated_ms <= ? ORDER BY id", [.integer(wall)])
    }

    /// The held row `id`, or nil.
    func row(id: Int64) throws -> QuarantinedRow? {
        try select("WHERE id = ?", [.integer(id)]).first
    }

    private func select(_ tail: String, _ values: [SQLValue]) throws -> [QuarantinedRow] {
        var rows: [QuarantinedRow] = []
        try db.forEachRow(sql: "SELECT \(QuarantineColumn.selectList) FROM sync_quarantine \(tail)", values) { rows.append(QuarantinedRow(row: $0)) }
        return rows
    }

    /// The keys (kind, key) of a source's held rows stamped at or before `wall`, at most `limit`.
    package func keys(source: String, stampedAtOrBefore wall: Int64, limit: Int) throws -> [(kind: String, key: String)] {
        var keys: [(String, String)] = []
        try db.forEachRow(
            sql: "SELECT DISTINCT kind, row_key FROM sync_quarantine WHERE source = ? AND updated_ms <= ? LIMIT ?",
            [.text(source), .integer(wall), .integer(Int64(limit))]
        ) { s in keys.append((s.text(0) ?? "", s.text(1) ?? "")) }
        return keys
    }

    /// What is held under `identity`, or nil.
    func held(_ identity: QuarantineIdentity) throws -> QuarantinedContent? {
        try db.firstRow(
            sql: """
                SELECT \(QuarantineColumn.selectList) FROM sync_quarantine WHERE kind = ? AND row_key = ? AND updated_ms = ? AND counter = ? AND node = ?
                """, identity.values
        ) { s in
            let bytes: [UInt8] = if case .blob(let b) = s.value(Int(QuarantineColumn.tieContent.rawValue)) { b } else { [] }
            return QuarantinedContent(id: s.int(QuarantineColumn.id), deleted: s.bool(QuarantineColumn.deleted), tieContent: bytes)
        }
    }

    /// Holds a row; returns its id.
    ///
    /// `at` is the time received (ms since the epoch).
    func insert(
        _ identity: QuarantineIdentity, source: String, at now: Int64, rowJSON: String, reason: String, deleted: Bool, tieContent: [UInt8]
    ) throws -> Int64 {
        try db.execute(
            sql: """
                INSERT INTO sync_quarantine (received_at, source, kind, row_key, updated_ms, counter, node, row_json, reason, deleted, tie_content)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            [.text(Timestamp.format(milliseconds: now)), .text(source)] + identity.values
                + [.text(rowJSON), .text(reason), .integer(deleted ? 1 : 0), .blob(tieContent)])
        return db.lastInsertRowID
    }

    /// Keeps the `limit` greatest stamps held for `kind` and `key` and removes the others; returns how many
    /// it removed.
    ///
    /// Of one key only the greatest stamp can win once applied (docs/merge-rules.md §1), so older held rows
    /// of that key say nothing a newer one does not: the bound stops one writer (a device whose clock runs a
    /// year ahead, a token posting row after row) from filling the disk (docs/limits.md). Uses the
    /// `UNIQUE (kind, row_key, …)` index.
    func prune(kind: String, key: String, keeping limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM sync_quarantine WHERE kind = ?1 AND row_key = ?2 AND id NOT IN (
                    SELECT id FROM sync_quarantine WHERE kind = ?1 AND row_key = ?2
                    ORDER BY updated_ms DESC, counter DESC, node DESC LIMIT ?3)
                """, [.text(kind), .text(key), .integer(Int64(limit))])
        return db.changes
    }

    /// Replaces held row `id` with another delivery of its key and stamp.
    func replace(id: Int64, source: String, at now: Int64, rowJSON: String, reason: String, deleted: Bool, tieContent: [UInt8]) throws {
        try db.execute(
            sql: """
                UPDATE sync_quarantine SET received_at = ?, source = ?, row_json = ?, reason = ?, deleted = ?, tie_content = ? WHERE id = ?
                """,
            [
                .text(Timestamp.format(milliseconds: now)), .text(source), .text(rowJSON), .text(reason), .integer(deleted ? 1 : 0),
                .blob(tieContent), .integer(id),
            ])
    }

    /// Removes held row `id`; returns whether there was one.
    func delete(id: Int64) throws -> Bool {
        try db.execute(sql: "DELETE FROM sync_quarantine WHERE id = ?", [.integer(id)])
        return db.changes == 1
    }

    /// Removes every held row; returns how many there were.
    func deleteAll() throws -> Int {
        try db.execute(sql: "DELETE FROM sync_quarantine")
        return db.changes
    }

    /// How many rows are held.
    func count() throws -> Int { Int(try db.scalarInt(sql: "SELECT count(*) FROM sync_quarantine") ?? 0) }

    /// `user`'s quarantined position rows, newest first, at most `limit`.
    func positions(user: String, limit: Int) throws -> [QuarantinedRow] {
        var rows: [QuarantinedRow] = []
        try db.forEachRow(
            sql: "SELECT \(QuarantineColumn.selectList) FROM sync_quarantine WHERE kind = 'position' AND row_key = ? ORDER BY id DESC LIMIT ?",
            [.text(user), .integer(Int64(limit))]
        ) { rows.append(QuarantinedRow(row: $0)) }
        return rows
    }

    /// How many position rows of `user` the quarantine holds.
    func positionCount(user: String) throws -> Int {
        Int(try db.scalarInt(sql: "SELECT count(*) FROM sync_quarantine WHERE kind = 'position' AND row_key = ?", [.text(user)]) ?? 0)
    }

    /// The users of the held position rows, each once, that `wanted` keeps (an erasure merged from a
    /// source names its user by hash only: docs/erasure.md §2).
    func positionUsers(matching wanted: (String) -> Bool) throws -> [String] {
        var users: [String] = []
        try db.forEachRow(sql: "SELECT DISTINCT row_key FROM sync_quarantine WHERE kind = 'position'") { s in
            if let user = s.text(0), wanted(user) { users.append(user) }
        }
        return users
    }

    /// Removes every held row of `user`'s position, and any held row whose text names the user (an
    /// erasure, docs/erasure.md §3); returns how many.
    func forget(user: String) throws -> Int {
        try db.execute(
            sql: "DELETE FROM sync_quarantine WHERE (kind = 'position' AND row_key = ?1) OR instr(row_json, ?1) > 0 OR instr(reason, ?1) > 0",
            [.text(user)])
        return db.changes
    }
}

extension CatalogStore {
    /// `sync_quarantine`'s statements on this store's connection.
    package var quarantineTable: QuarantineTable { QuarantineTable(db: connection) }
}
