/// The columns of `user_erasures` (docs/erasure.md §2), in select-list order.
package enum ErasureColumn: Int32, TableColumn {
    case userHash, updatedMs, counter, node, seq

    package static let tableName = "user_erasures"
}

/// The statements on `user_erasures`, the erasure records (one per erased user, keyed by the user id's
/// hash): the merge's point read and upsert, the change range for logs and the hub, and collection.
///
/// Feature code asks for what it needs here, by intent, and never holds the connection.
package struct ErasuresTable {
    let db: Connection

    /// The largest change sequence number of an erasure record (0 when none).
    func maxSeq() throws -> Int64 { try db.scalarInt(sql: "SELECT max(seq) FROM user_erasures") ?? 0 }

    /// How many erasure records are stored.
    func count() throws -> Int { Int(try db.scalarInt(sql: "SELECT count(*) FROM user_erasures") ?? 0) }

    /// The wall time (ms since the epoch) of the newest erasure record stamped by `node`, 0 when none.
    ///
    /// This node's own erasures are stamped by its clock as its rows are: part of what a collection's clock
    /// is capped at (docs/erasure.md §4). Merged erasures do not count: no drift check bounds them.
    func newestWallMilliseconds(node: String) throws -> Int64 {
        try db.scalarInt(sql: "SELECT max(updated_ms) FROM user_erasures WHERE node = ?", [.text(node)]) ?? 0
    }

    /// The change sequence number of the erasure record of the user whose hash is `userHash`, or 0.
    func seq(userHash: String) throws -> Int64 {
        try db.scalarInt(sql: "SELECT seq FROM user_erasures WHERE user_hash = ?", [.text(userHash)]) ?? 0
    }

    /// The stored erasure stamp of the user whose hash is `userHash`, or nil.
    func stamp(userHash: String) throws -> HLCStamp? {
        try db.firstRow(sql: "SELECT \(ErasureColumn.selectList) FROM user_erasures WHERE user_hash = ?", [.text(userHash)]) {
            Self.record($0).stamp
        }
    }

    /// Stores `record` with change sequence number `seq`, replacing the user's stored record, and moves
    /// the kept digest by the two records' hashes (docs/repair.md §1).
    func upsert(_ record: ErasureRecord, seq: Int64) throws {
        var delta = LaneSums()
        delta.add(RowHash(erasure: record))
        if let old = try stamp(userHash: record.userHash) { delta.subtract(RowHash(erasure: ErasureRecord(userHash: record.userHash, stamp: old))) }
        try db.execute(
            sql: """
                \(ErasureColumn.insertAllSQL)
                ON CONFLICT (user_hash) DO UPDATE SET updated_ms = excluded.updated_ms, counter = excluded.counter,
                    node = excluded.node, seq = excluded.seq
                """,
            [
                .text(record.userHash), .integer(record.stamp.wallMilliseconds), .integer(record.stamp.counter),
                .text(record.stamp.node), .integer(seq),
            ])
        try DigestTotalsTable(db: db).add("erasures", delta)
    }

    /// Every record in hash order — or only those whose change sequence number is in `changes` — each
    /// passed to `body` with its change sequence number.
    package func forEachRecord(changes: ClosedRange<Int64>? = nil, _ body: (ErasureRecord, Int64) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT \(ErasureColumn.selectList) FROM user_erasures\(changes == nil ? "" : " WHERE seq BETWEEN ?1 AND ?2") ORDER BY user_hash",
            changes.map { [.integer($0.lowerBound), .integer($0.upperBound)] } ?? []
        ) { s in try body(Self.record(s), s.int(ErasureColumn.seq)) }
    }

    /// Removes the records stamped before `horizonMilliseconds` (collection), and their hashes from the
    /// kept digest; returns how many.
    func collect(before horizonMilliseconds: Int64) throws -> Int {
        let removed = try sums(before: horizonMilliseconds)
        try db.execute(sql: "DELETE FROM user_erasures WHERE updated_ms < ?", [.integer(horizonMilliseconds)])
        let count = db.changes
        try DigestTotalsTable(db: db).add("erasures", removed.negated)
        return count
    }

    /// The hash sums of the records stamped before `horizonMilliseconds` (those the digest at that
    /// horizon leaves out, docs/erasure.md §5), hashed from the records: they carry no hash columns.
    func sums(before horizonMilliseconds: Int64) throws -> LaneSums {
        var sums = LaneSums()
        try db.forEachRow(sql: "SELECT \(ErasureColumn.selectList) FROM user_erasures WHERE updated_ms < ?", [.integer(horizonMilliseconds)]) {
            sums.add(RowHash(erasure: Self.record($0)))
        }
        return sums
    }

    /// Each record with a user hash in `range` stamped at or after `horizon` (those that count in the
    /// digest at it), in hash order, with its hash (docs/repair.md §2).
    package func forEachHash(_ range: KeyRange<String>, horizon: Int64, _ body: (String, RowHash) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT \(ErasureColumn.selectList) FROM user_erasures WHERE \(range.sql("user_hash")) AND updated_ms >= ?3 ORDER BY user_hash",
            range.arguments(SQLValue.text, horizon: horizon)
        ) { s in
            let record = Self.record(s)
            try body(record.userHash, RowHash(erasure: record))
        }
    }

    /// The stored records of the users whose hashes are `userHashes`.
    package func records(userHashes: [String]) throws -> [ErasureRecord] {
        var records: [ErasureRecord] = []
        try db.withStatement(sql: "SELECT \(ErasureColumn.selectList) FROM user_erasures WHERE user_hash = ?") { s in
            for hash in userHashes {
                try s.bind(hash, at: 1)
                if try s.step() { records.append(Self.record(s)) }
                s.rewind()
            }
        }
        return records
    }

    static func record(_ s: Statement) -> ErasureRecord {
        ErasureRecord(
            userHash: s.text(ErasureColumn.userHash) ?? "",
            stamp: HLCStamp(
                wallMilliseconds: s.int(ErasureColumn.updatedMs), counter: s.int(ErasureColumn.counter),
                node: s.text(ErasureColumn.node) ?? ""))
    }
}

extension CatalogStore {
    /// The statements on `user_erasures` on this store's connection.
    package var erasureTable: ErasuresTable { ErasuresTable(db: connection) }
}
