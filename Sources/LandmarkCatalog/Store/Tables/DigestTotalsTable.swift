/// `digest_totals`, the kept state digest (docs/repair.md §1): per data table, the row count and the sums
/// of the rows' hash lanes, moved by each writer of `landmarks` and `positions` in its own transaction.
///
/// Every statement that touches it.
package struct DigestTotalsTable {
    let db: Connection

    /// Whether the table exists (a database migrated by a test's own, shorter list may not have it).
    func exists() throws -> Bool {
        try db.scalarInt(sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'digest_totals'") == 1
    }

    /// The kept sums of `table` (`landmarks` or `positions`); nil when the table has none yet.
    package func totals(_ table: String) throws -> LaneSums? {
        try db.firstRow(sql: "SELECT rows, s0, s1, s2, s3 FROM digest_totals WHERE table_name = ?", [.text(table)]) { s in
            LaneSums(rows: s.int(0), sums: [s.int(1), s.int(2), s.int(3), s.int(4)])
        }
    }

    /// The kept sums of every stored row — landmarks, positions and erasure records, tombstones included —
    /// or nil when the database keeps none yet (no table, or rows still to be hashed).
    package func keptSums() throws -> LaneSums? {
        guard try exists(), try pendingBackfill().isEmpty else { return nil }
        // One row each for landmarks, positions and erasures (migration 0013).
        return try db.firstRow(sql: "SELECT count(*), sum(rows), sum(s0), sum(s1), sum(s2), sum(s3) FROM digest_totals") { s in
            s.int(0) == 3 ? LaneSums(rows: s.int(1), sums: [s.int(2), s.int(3), s.int(4), s.int(5)]) : nil
        } ?? nil
    }

    /// The tables whose rows stored before the kept digest still need their hashes.
    func pendingBackfill() throws -> [String] {
        var tables: [String] = []
        try db.forEachRow(sql: "SELECT table_name FROM digest_totals WHERE backfilled = 0 ORDER BY table_name") { tables.append($0.text(0) ?? "") }
        return tables
    }

    /// Marks `table`'s rows as hashed, with `sums` their totals.
    func markBackfilled(_ table: String, sums: LaneSums) throws {
        try db.execute(
            sql: "UPDATE digest_totals SET backfilled = 1, rows = ?1, s0 = ?2, s1 = ?3, s2 = ?4, s3 = ?5 WHERE table_name = ?6",
            [.integer(sums.rows)] + sums.sums.map(SQLValue.integer) + [.text(table)])
    }

    /// Moves `table`'s totals by `delta`: rows written minus rows replaced or deleted.
    ///
    /// Nothing for no change. A database without the table (a test's shorter migration list) keeps nothing.
    package func add(_ table: String, _ delta: LaneSums) throws {
        guard delta != LaneSums(), try exists() else { return }
        try db.execute(
            sql: "UPDATE digest_totals SET rows = rows + ?1, s0 = s0 + ?2, s1 = s1 + ?3, s2 = s2 + ?4, s3 = s3 + ?5 WHERE table_name = ?6",
            [.integer(delta.rows)] + delta.sums.map(SQLValue.integer) + [.text(table)])
    }
}

extension CatalogStore {
    /// `digest_totals`' statements on this store's connection.
    package var digestTotals: DigestTotalsTable { DigestTotalsTable(db: connection) }
}

/// Hashes the rows stored before the kept digest existed, once, when the store opens a database for
/// writing (docs/repair.md §1): SQL cannot compute the hash, so the migration that added the columns
/// leaves it to this.
enum RowHashBackfill {
    /// Hashes every row of each table still marked pending, 10,000 rows per step, in one transaction.
    static func runIfPending(_ db: Connection) throws {
        let totals = DigestTotalsTable(db: db)
        guard try totals.exists(), !(try totals.pendingBackfill().isEmpty) else { return }
        try db.writeTransaction {
            for table in try totals.pendingBackfill() {
                var sums = LaneSums()
                if table == "landmarks" {
                    sums = try LandmarksTable(db: db).rehashAll()
                } else if table == "positions" {
                    sums = try PositionsTable(db: db).rehashAll()
                } else if table == "erasures" {
                    sums = try ErasuresTable(db: db).sums(before: Int64.max)
                }
                try totals.markBackfilled(table, sums: sums)
            }
        }
    }
}

/// The row-hash columns `h0`…`h3` of `landmarks` and `positions` (docs/repair.md §1), as the two tables'
/// modules write and read them.
enum RowHashColumns {
    /// `h0 = excluded.h0, …`: an upsert's update of the hash.
    static let setExcluded = "h0 = excluded.h0, h1 = excluded.h1, h2 = excluded.h2, h3 = excluded.h3"

    /// `count(*)` and each lane's sum (0 for no rows), in that order.
    static let sumList = "count(*), coalesce(sum(h0), 0), coalesce(sum(h1), 0), coalesce(sum(h2), 0), coalesce(sum(h3), 0)"

    /// `INSERT INTO table (every column, h0…h3) VALUES (?1, …, ?hashAt…?hashAt+3)`.
    static func insertAllSQL<C: TableColumn>(_: C.Type, hashAt first: Int32) -> String {
        "INSERT INTO \(C.tableName) (\(C.selectList), h0, h1, h2, h3) VALUES (\(C.allCases.map(\.placeholder).joined(separator: ", ")), ?\(first), ?\(first + 1), ?\(first + 2), ?\(first + 3))"
    }

    /// Binds `hash`'s four lanes at parameters `first` … `first + 3`.
    static func bind(_ hash: RowHash, to statement: Statement, at first: Int32) throws {
        for i in 0..<4 { try statement.bind(hash.value(i), at: first + Int32(i)) }
    }

    /// The hash read from columns `first` … `first + 3`.
    static func read(_ s: Statement, at first: Int) -> RowHash {
        RowHash(
            UInt32(truncatingIfNeeded: s.int(first)), UInt32(truncatingIfNeeded: s.int(first + 1)),
            UInt32(truncatingIfNeeded: s.int(first + 2)), UInt32(truncatingIfNeeded: s.int(first + 3)))
    }

    /// The sums a ``sumList`` selects.
    static func readSums(_ s: Statement) -> LaneSums { LaneSums(rows: s.int(0), sums: [s.int(1), s.int(2), s.int(3), s.int(4)]) }
}

extension KeyRange {
    /// `column >= ?1 AND column < ?2`, or `column >= ?1` without an upper bound.
    func sql(_ column: String) -> String { upper == nil ? "\(column) >= ?1" : "\(column) >= ?1 AND \(column) < ?2" }

    /// ``sql(_:)`` and `(deleted = 0 OR updated_ms >= ?3)`: the rows of the range that count in the digest
    /// at a horizon (docs/erasure.md §5), bound by ``arguments(_:horizon:)``.
    func countingSQL(_ column: String) -> String { "\(sql(column)) AND (deleted = 0 OR updated_ms >= ?3)" }

    /// The bounds (NULL for no upper bound) and `horizon`, as the arguments of ``countingSQL(_:)``.
    func arguments(_ value: (Key) -> SQLValue, horizon: Int64) -> [SQLValue] { [value(lower), upper.map(value) ?? .null, .integer(horizon)] }

    /// The bounds as the arguments of ``sql(_:)``.
    func arguments(_ value: (Key) -> SQLValue) -> [SQLValue] { [value(lower)] + (upper.map { [value($0)] } ?? []) }
}
