/// The statements on `positions` (per-user carousel positions; the column map is ``PositionColumn``):
/// local writes, the merge's statements, the hub's change range, reads by user and counts.
///
/// Feature code asks for what it needs here, by intent, and never holds the connection.
package struct PositionsTable {
    let db: Connection

    /// The largest change sequence number of a position row (0 when none), from the `seq` index.
    func maxSeq() throws -> Int64 { try db.scalarInt(sql: "SELECT max(seq) FROM positions") ?? 0 }

    /// How many rows (tombstones included) of users other than `user` changed in `after + 1 ... through`.
    func changedCount(after: Int64, through: Int64, otherThan user: String) throws -> Int {
        Int(
            try db.scalarInt(
                sql: "SELECT count(*) FROM positions WHERE seq > ? AND seq <= ? AND user_id <> ?",
                [.integer(after), .integer(through), .text(user)]) ?? 0)
    }

    /// Live positions and tombstones.
    func counts() throws -> (live: Int, tombstones: Int) { try DeletedCounts.read(db, "positions") }

    /// Writes a local position row (a set or a tombstone) with change sequence number `seq`.
    ///
    /// A tombstone keeps the stored page and landmark.
    func writeLocal(user: String, page: Int64, landmark: Int64?, stamp: HLCStamp, deleted: Bool, seq: Int64) throws {
        let existed = try db.scalarInt(sql: "SELECT count(*) FROM positions WHERE user_id = ?", [.text(user)]) == 1
        try db.execute(
            sql: """
                \(PositionColumn.insertAllSQL)
                ON CONFLICT (user_id) DO UPDATE SET
                    page = CASE WHEN excluded.deleted THEN positions.page ELSE excluded.page END,
                    landmark_id = CASE WHEN excluded.deleted THEN positions.landmark_id ELSE excluded.landmark_id END,
                    updated_ms = excluded.updated_ms, counter = excluded.counter, node = excluded.node,
                    deleted = excluded.deleted, seq = excluded.seq
                """,
            [
                .text(user), .integer(page), landmark.map(SQLValue.integer) ?? .null, .integer(stamp.wallMilliseconds),
                .integer(stamp.counter), .text(stamp.node), .integer(deleted ? 1 : 0), .integer(seq),
            ])
        try rehash(user: user, isNew: !existed)
    }

    /// Stores the hash of `user`'s row as it now is and moves the kept totals from the hash it had (none
    /// when `isNew`); nothing when there is no such row.
    func rehash(user: String, isNew: Bool) throws {
        let found = try db.firstRow(sql: "SELECT \(PositionColumn.selectList), h0, h1, h2, h3 FROM positions WHERE user_id = ?", [.text(user)]) {
            (old: RowHashColumns.read($0, at: PositionColumn.allCases.count), new: RowHash(position: PositionRecord(row: $0)))
        }
        guard let found else { return }
        try db.execute(
            sql: "UPDATE positions SET h0 = ?1, h1 = ?2, h2 = ?3, h3 = ?4 WHERE user_id = ?5", found.new.values.map(SQLValue.integer) + [.text(user)])
        var delta = LaneSums()
        delta.add(found.new)
        if !isNew { delta.subtract(found.old) }
        try DigestTotalsTable(db: db).add("positions", delta)
    }

    /// Removes `user`'s row outright, with no tombstone.
    ///
    /// This copy forgets the user (a device signing out, docs/swift-library.md); nothing is sent anywhere,
    /// and the servers keep their own rows.
    func forget(user: String) throws {
        _ = try delete(user: user, when: "", [])
    }

    /// Deletes `user`'s row when it matches `condition` (SQL appended to `user_id = ?`, with `arguments`
    /// bound after the user) and subtracts its hash from the kept digest (docs/repair.md §1), in the
    /// caller's transaction; returns whether a row was deleted.
    private func delete(user: String, when condition: String, _ arguments: [SQLValue]) throws -> Bool {
        let found = try db.firstRow(sql: "SELECT h0, h1, h2, h3 FROM positions WHERE user_id = ?\(condition)", [.text(user)] + arguments) {
            RowHashColumns.read($0, at: 0)
        }
        guard let found else { return false }
        try db.execute(sql: "DELETE FROM positions WHERE user_id = ?", [.text(user)])
        var delta = LaneSums()
        delta.subtract(found)
        try DigestTotalsTable(db: db).add("positions", delta)
        return true
    }

    /// Removes `user`'s row when it is stamped at or before `erasure` (an erasure applied,
    /// docs/erasure.md §1; the row-value comparison is the order key's, https://sqlite.org/rowvalue.html).
    /// - Returns: whether a row was removed.
    func erase(user: String, stampedAtOrBefore erasure: HLCStamp) throws -> Bool {
        try delete(
            user: user, when: " AND (updated_ms, counter, node) <= (?, ?, ?)",
            [.integer(erasure.wallMilliseconds), .integer(erasure.counter), .text(erasure.node)])
    }

    /// The wall time (ms since the epoch) of the newest stamp among the rows, tombstones included; 0 when
    /// none: what a collection's clock is capped at (docs/erasure.md §4).
    func newestWallMilliseconds() throws -> Int64 { try db.scalarInt(sql: "SELECT max(updated_ms) FROM positions") ?? 0 }

    /// Removes the tombstones stamped before `horizonMilliseconds` (collection, docs/erasure.md §4), and
    /// their hashes from the kept digest; returns how many.
    func collectTombstones(before horizonMilliseconds: Int64) throws -> Int {
        let removed = try tombstoneSums(before: horizonMilliseconds)
        try db.execute(sql: "DELETE FROM positions WHERE deleted = 1 AND updated_ms < ?", [.integer(horizonMilliseconds)])
        try DigestTotalsTable(db: db).add("positions", removed.negated)
        return Int(removed.rows)
    }

    /// The row count and hash sums of the tombstones stamped before `horizonMilliseconds` (those the
    /// digest at that horizon leaves out, docs/erasure.md §5), from the partial index `positions_dead`.
    func tombstoneSums(before horizonMilliseconds: Int64) throws -> LaneSums {
        try db.firstRow(
            sql: "SELECT \(RowHashColumns.sumList) FROM positions WHERE deleted = 1 AND updated_ms < ?", [.integer(horizonMilliseconds)]
        ) { RowHashColumns.readSums($0) } ?? LaneSums()
    }

    /// The stamps of every user's row, keyed by user, for rows whose user's hash is asked by `wanted`
    /// (an erasure merged by hash finds its user's row here).
    func users(matching wanted: (String) -> Bool) throws -> [String] {
        var users: [String] = []
        try db.forEachRow(sql: "SELECT user_id FROM positions") { s in
            if let user = s.text(0), wanted(user) { users.append(user) }
        }
        return users
    }

    /// Removes `user`'s row when its change sequence number is still `seq` (a row the server refused as
    /// erased, unchanged since it was sent); returns whether it was removed.
    func forget(user: String, ifSeq seq: Int64) throws -> Bool {
        try delete(user: user, when: " AND seq = ?", [.integer(seq)])
    }

    /// Removes `user`'s row when it is still stamped `stamp` (a row a peer refused as expired, unchanged
    /// since it was pushed, docs/erasure.md §7); returns whether it was removed.
    func forget(user: String, ifStamp stamp: HLCStamp) throws -> Bool {
        try delete(
            user: user, when: " AND updated_ms = ? AND counter = ? AND node = ?",
            [.integer(stamp.wallMilliseconds), .integer(stamp.counter), .text(stamp.node)])
    }

    /// The live position of `user`, decoded by `decode` from a row selecting ``PositionColumn/selectList``.
    func live<R>(user: String, _ decode: (Statement) -> R) throws -> R? {
        try db.firstRow(sql: "SELECT \(PositionColumn.selectList) FROM positions WHERE user_id = ? AND deleted = 0", [.text(user)], decode)
    }

    /// Every live position in user-id order (byte order), each row passed to `body`.
    func forEachLive(_ body: (Statement) throws -> Void) throws {
        try db.forEachRow(sql: "SELECT \(PositionColumn.selectList) FROM positions WHERE deleted = 0 ORDER BY user_id", [], body)
    }

    /// Every row, tombstones included, in user-id order — or only those whose change sequence number is
    /// in `changes` — each passed to `body` (selecting ``PositionColumn/selectList``).
    func forEachRow(changes: ClosedRange<Int64>? = nil, _ body: (Statement) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT \(PositionColumn.selectList) FROM positions\(changes == nil ? "" : " WHERE seq BETWEEN ?1 AND ?2") ORDER BY user_id",
            changes.map { [.integer($0.lowerBound), .integer($0.upperBound)] } ?? [], body)
    }

    /// The row count and hash-lane sums of the users in `range` that count in the digest at `horizon`
    /// (tombstones stamped below it do not; docs/repair.md §2), from the primary key.
    package func laneSums(_ range: KeyRange<String>, horizon: Int64) throws -> LaneSums {
        try db.firstRow(
            sql: "SELECT \(RowHashColumns.sumList) FROM positions WHERE \(range.countingSQL("user_id"))",
            range.arguments(SQLValue.text, horizon: horizon)
        ) { RowHashColumns.readSums($0) } ?? LaneSums()
    }

    /// Each user in `range` with its stored row hash, in user-id order, passed to `body`: the rows that count in the digest at `horizon`.
    package func forEachHash(_ range: KeyRange<String>, horizon: Int64, _ body: (String, RowHash) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT user_id, h0, h1, h2, h3 FROM positions WHERE \(range.countingSQL("user_id")) ORDER BY user_id",
            range.arguments(SQLValue.text, horizon: horizon)
        ) { s in try body(s.text(0) ?? "", RowHashColumns.read(s, at: 1)) }
    }

    /// Each row (tombstones included) of a user in `users`.
    package func rows(users: [String]) throws -> [PositionRecord] {
        var rows: [PositionRecord] = []
        try db.withStatement(sql: "SELECT \(PositionColumn.selectList) FROM positions WHERE user_id = ?") { s in
            for user in users {
                try s.bind(user, at: 1)
                if try s.step() { rows.append(PositionRecord(row: s)) }
                s.rewind()
            }
        }
        return rows
    }

    /// Every row's hash recomputed from its content, summed over the rows `counts` keeps (the
    /// digest's horizon rule, given by its caller), with the number of rows whose stored hash differs from it
    /// (`catalog status --verify-digest`).
    package func recomputedSums(counts: (_ deleted: Bool, _ stamp: HLCStamp) -> Bool) throws -> (sums: LaneSums, stale: Int) {
        var sums = LaneSums()
        var stale = 0
        try db.forEachRow(sql: "SELECT \(PositionColumn.selectList), h0, h1, h2, h3 FROM positions") { s in
            let record = PositionRecord(row: s)
            let hash = RowHash(position: record)
            if hash != RowHashColumns.read(s, at: PositionColumn.allCases.count) { stale += 1 }
            if counts(record.deleted, record.stamp) { sums.add(hash) }
        }
        return (sums, stale)
    }

    /// Hashes every row (the kept digest's backfill), 10,000 rows per step.
    /// - Returns: the totals of the hashes.
    func rehashAll() throws -> LaneSums {
        var after = ""
        var first = true
        var sums = LaneSums()
        while true {
            var step: [(String, RowHash)] = []
            try db.forEachRow(
                sql: "SELECT \(PositionColumn.selectList) FROM positions WHERE user_id > ? OR ? ORDER BY user_id LIMIT 10000",
                [.text(after), .integer(first ? 1 : 0)]
            ) { s in
                let record = PositionRecord(row: s)
                step.append((record.user, RowHash(position: record)))
            }
            guard let last = step.last else { return sums }
            for (user, hash) in step {
                try db.execute(
                    sql: "UPDATE positions SET h0 = ?1, h1 = ?2, h2 = ?3, h3 = ?4 WHERE user_id = ?5",
                    hash.values.map(SQLValue.integer) + [.text(user)])
                sums.add(hash)
            }
            after = last.0
            first = false
        }
    }

    /// `user`'s row when its change sequence number is after `after` (a device's pull with a user token,
    /// docs/protocol.md §4), passed to `body` (selecting ``PositionColumn/selectList``).
    func forEachChanged(user: String, after: Int64, _ body: (Statement) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT \(PositionColumn.selectList) FROM positions WHERE user_id = ? AND seq > ?", [.text(user), .integer(after)], body)
    }

    /// The rows changed after `after`, in change-sequence order, at most `limit`, each passed to `body`
    /// (selecting ``PositionColumn/selectList``).
    func forEachChanged(after: Int64, limit: Int, _ body: (Statement) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT \(PositionColumn.selectList) FROM positions WHERE seq > ? ORDER BY seq LIMIT ?",
            [.integer(after), .integer(Int64(limit))], body)
    }

    /// The rows with change sequence numbers in `after + 1 ... through`, in no particular order, each passed
    /// to `body` (selecting ``PositionColumn/selectList``): what woke a long-poll (docs/serve.md §4).
    func forEachChanged(after: Int64, through: Int64, _ body: (Statement) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT \(PositionColumn.selectList) FROM positions WHERE seq > ? AND seq <= ?", [.integer(after), .integer(through)], body)
    }

    /// `user`'s row, tombstone included, with its change sequence number; nil when none is stored (the
    /// device outbox's read, docs/protocol.md §6).
    func row(user: String) throws -> (record: PositionRecord, seq: Int64)? {
        try db.firstRow(sql: "SELECT \(PositionColumn.selectList) FROM positions WHERE user_id = ?", [.text(user)]) { s in
            (PositionRecord(row: s), s.int(PositionColumn.seq))
        }
    }

    /// Whether a tombstone is stored for `user`.
    func hasTombstone(user: String) throws -> Bool {
        try db.scalarInt(sql: "SELECT count(*) FROM positions WHERE user_id = ? AND deleted = 1", [.text(user)]) == 1
    }

    /// Runs `body` with the merge's two statements (docs/merge-rules.md §2): a point read of one user
    /// (bind the user id at 1; it selects ``PositionColumn/selectList``) and an unguarded upsert of every
    /// column (bound by ``PositionColumn``). https://sqlite.org/lang_upsert.html
    func withMergeStatements<R>(_ body: (_ select: Statement, _ upsert: Statement) throws -> R) throws -> R {
        try db.withStatement(sql: "SELECT \(PositionColumn.selectList), h0, h1, h2, h3 FROM positions WHERE user_id = ?") { select in
            try db.withStatement(
                sql: """
                    \(RowHashColumns.insertAllSQL(PositionColumn.self, hashAt: Self.mergeHashParameter))
                    ON CONFLICT (user_id) DO UPDATE SET \(PositionColumn.allCases.dropFirst().map { "\($0.sqlName) = excluded.\($0.sqlName)" }.joined(separator: ", ")), \(RowHashColumns.setExcluded)
                    """
            ) { upsert in try body(select, upsert) }
        }
    }

    /// The stored row hash of the merge's point read (after its ``PositionColumn/selectList``).
    static func storedHash(_ select: Statement) -> RowHash { RowHashColumns.read(select, at: PositionColumn.allCases.count) }

    /// The first of the merge upsert's four row-hash parameters (after every column's).
    static let mergeHashParameter = Int32(PositionColumn.allCases.count + 1)

    /// The rows with change sequence numbers in `since + 1 ... through`, selecting
    /// ``PositionColumn/selectList`` (the hub's push).
    package func changes(since: Int64, through: Int64) throws -> Statement {
        let statement = try db.makeStatement(sql: ChangeRange.sql(PositionColumn.selectList, "positions", since: since))
        try statement.bind([.integer(since), .integer(through)])
        return statement
    }
}

extension CatalogStore {
    /// The statements on `positions` on this store's connection.
    package var positionTable: PositionsTable { PositionsTable(db: connection) }
}
