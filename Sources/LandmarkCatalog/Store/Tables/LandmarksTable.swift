/// Every statement on `landmarks` (the column map is ``LandmarkColumn``): the reads of `featured`,
/// `landmark(id:)`, snapshots and the import's pre-image, and the statements the merge, the import and
/// the hub's push run.
///
/// Feature code asks for what it needs here, by intent, and never holds the connection;
/// `TableHomeTests` fails on `landmarks` SQL anywhere else.
package struct LandmarksTable {
    let db: Connection

    /// The featured landmarks in id order (the carousel's pages), each row passed to `body` (selecting
    /// ``LandmarkColumn/selectList``).
    ///
    /// Served from the partial index `landmarks_featured` (no table scan, no sort).
    func forEachFeatured(_ body: (Statement) throws -> Void) throws {
        try db.forEachRow(sql: Self.featuredSQL, [], body)
    }

    static let featuredSQL = "SELECT \(LandmarkColumn.selectList) FROM landmarks WHERE is_featured = 1 AND deleted = 0 ORDER BY id"

    /// Every live landmark in id order (tombstones left out), from the primary key: no sort.
    func allLive() throws -> [Landmark] {
        var result: [Landmark] = []
        try db.forEachRow(sql: "SELECT \(LandmarkColumn.selectList) FROM landmarks WHERE deleted = 0 ORDER BY id") {
            result.append(Landmark(row: $0))
        }
        return result
    }

    /// The ids of the featured landmarks, in page order.
    func featuredIDs() throws -> [Int64] {
        var ids: [Int64] = []
        try db.forEachRow(sql: "SELECT id FROM landmarks WHERE is_featured = 1 AND deleted = 0 ORDER BY id") { ids.append($0.int(0)) }
        return ids
    }

    /// Live landmark `id`, or nil (absent or a tombstone).
    func live(id: Int64) throws -> Landmark? {
        try db.firstRow(sql: "SELECT \(LandmarkColumn.selectList) FROM landmarks WHERE id = ? AND deleted = 0", [.integer(id)]) {
            Landmark(row: $0)
        }
    }

    /// How many live landmarks are stored.
    func liveCount() throws -> Int { Int(try db.scalarInt(sql: "SELECT count(*) FROM landmarks WHERE deleted = 0") ?? 0) }

    /// The largest change sequence number of a landmark row (0 when none), from the `seq` index.
    ///
    /// The rows (tombstones included) whose change sequence is after `after`, in that order, at most
    /// `limit`, each passed to `body` (selecting ``LandmarkColumn/selectList``): the device protocol's reads
    /// (docs/protocol.md §4), served from the `landmarks_seq` index.
    func forEachChanged(after: Int64, limit: Int, _ body: (Statement) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT \(LandmarkColumn.selectList) FROM landmarks WHERE seq > ? ORDER BY seq LIMIT ?",
            [.integer(after), .integer(Int64(limit))], body)
    }

    /// Whether any row changed in `after + 1 ... through` (one index probe): wakes landmark long-polls.
    func anyChanged(after: Int64, through: Int64) throws -> Bool {
        let n = try db.scalarInt(
            sql: "SELECT count(*) FROM (SELECT 1 FROM landmarks WHERE seq > ? AND seq <= ? LIMIT 1)",
            [.integer(after), .integer(through)])
        return (n ?? 0) > 0
    }

    func maxSeq() throws -> Int64 { try db.scalarInt(sql: "SELECT max(seq) FROM landmarks") ?? 0 }

    /// A statement on `db` (another connection's, the import's pre-image) that reads every row from the
    /// id bound at 1 upward, in id order, selecting ``LandmarkColumn/selectList``.
    static func scanFromID(on db: Connection) throws -> Statement {
        try db.makeStatement(sql: "SELECT \(LandmarkColumn.selectList) FROM landmarks WHERE id >= ? ORDER BY id")
    }

    /// The largest landmark id stored, tombstones included; nil when there is none.
    func maxID() throws -> Int64? { try db.scalarInt(sql: "SELECT max(id) FROM landmarks") }

    /// Live landmarks and tombstones.
    func counts() throws -> (live: Int, tombstones: Int) { try DeletedCounts.read(db, "landmarks") }

    /// The stored name of landmark `id` (live or not), for messages.
    func name(id: Int64) throws -> String? { try db.scalarText(sql: "SELECT name FROM landmarks WHERE id = ?", [.integer(id)]) }

    /// The kept unknown keys of live landmark `id` (a JSON object text), or nil.
    func liveExtra(id: Int64) throws -> String? {
        try db.scalarText(sql: "SELECT extra FROM landmarks WHERE id = ? AND deleted = 0", [.integer(id)])
    }

    /// The wall time (ms since the epoch) of the newest stamp among the rows, tombstones included; 0 when
    /// none: what a collection's clock is capped at (docs/erasure.md §4).
    func newestWallMilliseconds() throws -> Int64 { try db.scalarInt(sql: "SELECT max(updated_ms) FROM landmarks") ?? 0 }

    /// Removes the tombstones stamped before `horizonMilliseconds` (collection, docs/erasure.md §4), and
    /// their hashes from the kept digest; returns how many.
    func collectTombstones(before horizonMilliseconds: Int64) throws -> Int {
        let removed = try tombstoneSums(before: horizonMilliseconds)
        try db.execute(sql: "DELETE FROM landmarks WHERE deleted = 1 AND updated_ms < ?", [.integer(horizonMilliseconds)])
        try DigestTotalsTable(db: db).add("landmarks", removed.negated)
        return Int(removed.rows)
    }

    /// The row count and hash sums of the tombstones stamped before `horizonMilliseconds` (those the
    /// digest at that horizon leaves out, docs/erasure.md §5), from the partial index `landmarks_dead`.
    func tombstoneSums(before horizonMilliseconds: Int64) throws -> LaneSums {
        try db.firstRow(
            sql: "SELECT \(RowHashColumns.sumList) FROM landmarks WHERE deleted = 1 AND updated_ms < ?", [.integer(horizonMilliseconds)]
        ) { RowHashColumns.readSums($0) } ?? LaneSums()
    }

    /// Removes landmark `id`'s row when it is still stamped `stamp` (a row a peer refused as expired,
    /// unchanged since it was pushed, docs/erasure.md §7); returns whether it was removed.
    func forget(id: Int64, ifStamp stamp: HLCStamp) throws -> Bool {
        let found = try db.firstRow(
            sql: "SELECT h0, h1, h2, h3 FROM landmarks WHERE id = ? AND updated_ms = ? AND counter = ? AND node = ?",
            [.integer(id), .integer(stamp.wallMilliseconds), .integer(stamp.counter), .text(stamp.node)]
        ) { RowHashColumns.read($0, at: 0) }
        guard let found else { return false }
        try db.execute(sql: "DELETE FROM landmarks WHERE id = ?", [.integer(id)])
        var delta = LaneSums()
        delta.subtract(found)
        try DigestTotalsTable(db: db).add("landmarks", delta)
        return true
    }

    /// How many tombstones are stored: read from the partial index `landmarks_tombstones`, so it costs the
    /// tombstones, not the table (an import asks before and after).
    func tombstoneCount() throws -> Int { Int(try db.scalarInt(sql: "SELECT count(*) FROM landmarks WHERE deleted = 1") ?? 0) }

    /// Each live landmark's id, passed to `body`.
    func forEachLiveID(_ body: (Int64) throws -> Void) throws {
        try db.forEachRow(sql: "SELECT id FROM landmarks WHERE deleted = 0") { try body($0.int(0)) }
    }

    /// Every row, tombstones included, in id order — or only those whose change sequence number is in
    /// `changes` — each passed to `body` (selecting ``LandmarkColumn/selectList``).
    func forEachRow(changes: ClosedRange<Int64>? = nil, _ body: (Statement) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT \(LandmarkColumn.selectList) FROM landmarks\(changes == nil ? "" : " WHERE seq BETWEEN ?1 AND ?2") ORDER BY id",
            changes.map { [.integer($0.lowerBound), .integer($0.upperBound)] } ?? [], body)
    }

    /// Runs `body` with the merge's two statements (docs/merge-rules.md §2): a point read of one id
    /// (bind the id at 1; it selects ``LandmarkColumn/selectList``, then the stored row hash, read with
    /// ``storedHash(_:)``) and an unguarded upsert of every column
    /// (bound by ``LandmarkColumn``). https://sqlite.org/lang_upsert.html
    func withMergeStatements<R>(_ body: (_ select: Statement, _ upsert: Statement) throws -> R) throws -> R {
        try db.withStatement(sql: "SELECT \(LandmarkColumn.selectList), h0, h1, h2, h3 FROM landmarks WHERE id = ?") { select in
            try db.withStatement(sql: Self.mergeUpsertSQL) { upsert in try body(select, upsert) }
        }
    }

    /// The stored row hash of the merge's point read (after its ``LandmarkColumn/selectList``).
    static func storedHash(_ select: Statement) -> RowHash { RowHashColumns.read(select, at: LandmarkColumn.allCases.count) }

    static let mergeUpsertSQL = """
        \(RowHashColumns.insertAllSQL(LandmarkColumn.self, hashAt: mergeHashParameter))
        ON CONFLICT (id) DO UPDATE SET \(LandmarkColumn.allCases.dropFirst().map { "\($0.sqlName) = excluded.\($0.sqlName)" }.joined(separator: ", ")), \(RowHashColumns.setExcluded)
        """

    /// The first of the merge upsert's four row-hash parameters (after every column's): bind them with
    /// ``RowHashColumns/bind(_:to:at:)``.
    static let mergeHashParameter = Int32(LandmarkColumn.allCases.count + 1)

    /// The parameter of the import upsert's presence mask (after every column's).
    static let presentParameter = Int32(LandmarkColumn.allCases.count + 1)

    /// The first of the import upsert's four row-hash parameters (after the mask).
    ///
    /// The hash of the row as inserted. An update keeps the stored hash; the writer calls ``rehash(id:)`` after it.
    static let importHashParameter = Int32(LandmarkColumn.allCases.count + 2)

    /// The import's upsert: absent keys (bit clear in the mask at ``presentParameter``) keep the stored
    /// value (or the default, over a tombstone); the `WHERE` skips rows whose content would not change, so
    /// they are never rewritten. https://sqlite.org/lang_upsert.html
    static let importUpsertSQL: String = {
        let mask = "?\(presentParameter)"
        let keep = LandmarkColumn.optionalContent.map { c in
            "\(c.sqlName) = CASE WHEN \(mask) & \(c.bit) THEN excluded.\(c.sqlName) WHEN landmarks.deleted THEN \(c.clearedSQL) ELSE landmarks.\(c.sqlName) END"
        }
        let always: [LandmarkColumn] = LandmarkColumn.allCases.filter { $0 != .id && !LandmarkColumn.optionalContent.contains($0) }
        let differs =
            always.filter(\.isContent).map { "landmarks.\($0.sqlName) IS NOT excluded.\($0.sqlName)" }
            + LandmarkColumn.optionalContent.map { "(\(mask) & \($0.bit) AND landmarks.\($0.sqlName) IS NOT excluded.\($0.sqlName))" }
        return """
            \(RowHashColumns.insertAllSQL(LandmarkColumn.self, hashAt: importHashParameter))
            ON CONFLICT (id) DO UPDATE SET
                \((always.map { "\($0.sqlName) = excluded.\($0.sqlName)" } + keep).joined(separator: ",\n    "))
            WHERE landmarks.deleted = 1 OR \(differs.joined(separator: "\n   OR "))
            """
    }()

    /// Runs `body` with the import's upsert (``importUpsertSQL``).
    func withImportUpsert<R>(_ body: (Statement) throws -> R) throws -> R {
        try db.withStatement(sql: Self.importUpsertSQL) { try body($0) }
    }

    /// What one run of the import upsert did.
    enum ImportWrite { case inserted, updated, unchanged }

    /// Runs the bound import upsert for landmark `id`: inserted (a new row, or a tombstone brought back
    /// counts as updated here; the import corrects that from the tombstone count), updated, or unchanged
    /// (the `WHERE` found nothing to change).
    func runImportUpsert(_ upsert: Statement, id: Int64) throws -> ImportWrite {
        // An insert sets last_insert_rowid to `id`; an update leaves it: set it to anything else first.
        db.setLastInsertRowID(id &+ 1)
        try upsert.run()
        guard db.changes > 0 else { return .unchanged }
        return db.lastInsertRowID == id ? .inserted : .updated
    }

    /// Runs `body` with the tombstone statement: bind the stamp at 1–3 (wall ms, counter, node), the
    /// change sequence number at 4, the id at 5.
    func withTombstone<R>(_ body: (Statement) throws -> R) throws -> R {
        try db.withStatement(sql: "UPDATE landmarks SET deleted = 1, updated_ms = ?1, counter = ?2, node = ?3, seq = ?4 WHERE id = ?5") {
            try body($0)
        }
    }

    /// The rows with change sequence numbers in `since + 1 ... through`, selecting
    /// ``LandmarkColumn/selectList`` (the hub's push).
    ///
    /// From 0, the table is scanned without the index.
    package func changes(since: Int64, through: Int64) throws -> Statement {
        let statement = try db.makeStatement(sql: ChangeRange.sql(LandmarkColumn.selectList, "landmarks", since: since))
        try statement.bind([.integer(since), .integer(through)])
        return statement
    }
}

extension LandmarksTable {
    /// Stores the hash of landmark `id`'s row as it now is, and moves the kept totals from the hash it
    /// had (after a write that could not know it: an import's update, a tombstone); nothing when there is
    /// no such row.
    func rehash(id: Int64) throws {
        let found = try db.firstRow(sql: "SELECT \(LandmarkColumn.selectList), h0, h1, h2, h3 FROM landmarks WHERE id = ?", [.integer(id)]) {
            (old: RowHashColumns.read($0, at: LandmarkColumn.allCases.count), new: RowHash(landmark: LandmarkRow(statement: $0)))
        }
        guard let found, found.old != found.new else { return }
        try db.execute(
            sql: "UPDATE landmarks SET h0 = ?1, h1 = ?2, h2 = ?3, h3 = ?4 WHERE id = ?5", found.new.values.map(SQLValue.integer) + [.integer(id)])
        var delta = LaneSums()
        delta.add(found.new)
        delta.subtract(found.old)
        try DigestTotalsTable(db: db).add("landmarks", delta)
    }

    /// Hashes every row (the kept digest's backfill), 10,000 rows per step.
    /// - Returns: the totals of the hashes.
    func rehashAll() throws -> LaneSums {
        var after = Int64.min
        var sums = LaneSums()
        while true {
            var step: [(Int64, RowHash)] = []
            try db.forEachRow(
                sql: "SELECT \(LandmarkColumn.selectList) FROM landmarks WHERE id > ? ORDER BY id LIMIT 10000", [.integer(after)]
            ) { s in step.append((s.int(LandmarkColumn.id), RowHash(landmark: LandmarkRow(statement: s)))) }
            guard let last = step.last else { return sums }
            for (id, hash) in step {
                try db.execute(
                    sql: "UPDATE landmarks SET h0 = ?1, h1 = ?2, h2 = ?3, h3 = ?4 WHERE id = ?5",
                    hash.values.map(SQLValue.integer) + [.integer(id)])
                sums.add(hash)
            }
            after = last.0
        }
    }

    /// The row count and hash-lane sums of the ids in `range` that count in the digest at `horizon`
    /// (tombstones stamped below it do not; docs/repair.md §2), from the primary key.
    package func laneSums(_ range: KeyRange<Int64>, horizon: Int64) throws -> LaneSums {
        try db.firstRow(
            sql: "SELECT \(RowHashColumns.sumList) FROM landmarks WHERE \(range.countingSQL("id"))",
            range.arguments(SQLValue.integer, horizon: horizon)
        ) { RowHashColumns.readSums($0) } ?? LaneSums()
    }

    /// Each id in `range` with its stored row hash, in id order, passed to `body`: the rows that count in the digest at `horizon`.
    package func forEachHash(_ range: KeyRange<Int64>, horizon: Int64, _ body: (Int64, RowHash) throws -> Void) throws {
        try db.forEachRow(
            sql: "SELECT id, h0, h1, h2, h3 FROM landmarks WHERE \(range.countingSQL("id")) ORDER BY id",
            range.arguments(SQLValue.integer, horizon: horizon)
        ) { s in try body(s.int(0), RowHashColumns.read(s, at: 1)) }
    }

    /// Each row (tombstones included) with an id in `ids`, selecting ``LandmarkColumn/selectList``.
    package func forEachRow(ids: [Int64], _ body: (Statement) throws -> Void) throws {
        try db.withStatement(sql: "SELECT \(LandmarkColumn.selectList) FROM landmarks WHERE id = ?") { s in
            for id in ids {
                try s.bind(id, at: 1)
                if try s.step() { try body(s) }
                s.rewind()
            }
        }
    }

    /// Every row's hash recomputed from its content, summed over the rows `counts` keeps (the
    /// digest's horizon rule, given by its caller), with the number of rows whose stored hash differs from it
    /// (`catalog status --verify-digest`).
    package func recomputedSums(counts: (_ deleted: Bool, _ stamp: HLCStamp) -> Bool) throws -> (sums: LaneSums, stale: Int) {
        var sums = LaneSums()
        var stale = 0
        try db.forEachRow(sql: "SELECT \(LandmarkColumn.selectList), h0, h1, h2, h3 FROM landmarks") { s in
            let hash = RowHash(landmark: LandmarkRow(statement: s))
            if hash != RowHashColumns.read(s, at: LandmarkColumn.allCases.count) { stale += 1 }
            let stamp = HLCStamp(
                wallMilliseconds: s.int(LandmarkColumn.updatedMs), counter: s.int(LandmarkColumn.counter), node: s.text(LandmarkColumn.node) ?? "")
            if counts(s.bool(LandmarkColumn.deleted), stamp) { sums.add(hash) }
        }
        return (sums, stale)
    }
}

/// Live rows and tombstones of a data table (both have a `deleted` flag).
enum DeletedCounts {
    static func read(_ db: Connection, _ table: String) throws -> (live: Int, tombstones: Int) {
        var counts = (live: 0, tombstones: 0)
        try db.forEachRow(sql: "SELECT deleted, count(*) FROM \(table) GROUP BY deleted") { s in
            if s.int(0) == 0 { counts.live = Int(s.int(1)) } else { counts.tombstones = Int(s.int(1)) }
        }
        return counts
    }
}

/// The range read of both tables: rows changed after `?1` up to `?2`.
///
/// Reading everything (`since` 0) reads the table in key order instead of through the `seq` index.
enum ChangeRange {
    static func sql(_ columns: String, _ table: String, since: Int64) -> String {
        since == 0
            ? "SELECT \(columns) FROM \(table) NOT INDEXED WHERE seq > ?1 AND seq <= ?2"
            : "SELECT \(columns) FROM \(table) WHERE seq > ?1 AND seq <= ?2"
    }
}

extension CatalogStore {
    /// The statements on `landmarks` on this store's connection.
    package var landmarkTable: LandmarksTable { LandmarksTable(db: connection) }
}
