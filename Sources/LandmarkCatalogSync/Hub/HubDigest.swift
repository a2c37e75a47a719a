import Foundation
import LandmarkCatalog

extension HubSQL {
    // MARK: Kept digest and repair ranges (hub migration 8)

    /// What a repair reads of `table` on the hub: the `FROM` clause, the key column, the four lanes as
    /// `l0`…`l3`, and the condition of the rows that count at the horizon `$1` with a key at or above
    /// `$2` (and below `$3` when `upper`).
    ///
    /// Landmarks and positions read their stored lanes; erasure records, few and without lane columns, are
    /// hashed as they are read (``erasureHash(_:)``). User ids and user hashes are `COLLATE "C"` columns,
    /// so their order and range tests are byte order, SQLite's `BINARY` (docs/repair.md §2).
    static func repairRange(_ table: RepairTable, upper: Bool) -> (from: String, key: String, lanes: String, where: String) {
        let (from, key, lanes, counts): (String, String, String, String)
        switch table {
        case .landmarks:
            (from, key, lanes, counts) = ("landmarks", "id", "h0 AS l0, h1 AS l1, h2 AS l2, h3 AS l3", countsInDigest(deleted: "deleted"))
        case .positions:
            (from, key, lanes, counts) = ("positions", "user_id", "h0 AS l0, h1 AS l1, h2 AS l2, h3 AS l3", countsInDigest(deleted: "deleted"))
        case .erasures:
            (from, key, counts) = (
                "(SELECT e.*, \(erasureHash("e")) AS h FROM hub_erasures e OFFSET 0) AS e", "user_hash", countsInDigest(deleted: "true")
            )
            lanes = "catalog_hash_lane(h, 0) AS l0, catalog_hash_lane(h, 1) AS l1, catalog_hash_lane(h, 2) AS l2, catalog_hash_lane(h, 3) AS l3"
        }
        return (from, key, lanes, "\(key) >= $2\(upper ? " AND \(key) < $3" : "") AND \(counts)")
    }

    /// The count and lane sums of `table`'s rows in a range (``repairRange(_:upper:)``): one index range
    /// read of the key.
    static func rangeSums(_ table: RepairTable, upper: Bool) -> String {
        let r = repairRange(table, upper: upper)
        return """
            SELECT count(*), coalesce(sum(l0), 0)::bigint, coalesce(sum(l1), 0)::bigint, coalesce(sum(l2), 0)::bigint,
                   coalesce(sum(l3), 0)::bigint
            FROM (SELECT \(r.lanes) FROM \(r.from) WHERE \(r.where)) AS r
            """
    }

    /// Each row of `table` in a range, in key order: its key and its four lanes.
    static func rangeRows(_ table: RepairTable, upper: Bool) -> String {
        let r = repairRange(table, upper: upper)
        return "SELECT \(r.key), \(r.lanes) FROM \(r.from) WHERE \(r.where) ORDER BY \(r.key)"
    }

    /// A range of `table` cut into parts of about equal row counts in ONE statement.
    ///
    /// `ntile($4)` (`$3` without an upper bound) over the key order: per part, in order, its count, lane sums, first and last key. The rows stay on the hub.
    static func rangeParts(_ table: RepairTable, upper: Bool) -> String {
        let r = repairRange(table, upper: upper)
        return """
            SELECT count(*), sum(l0)::bigint, sum(l1)::bigint, sum(l2)::bigint, sum(l3)::bigint, min(k), max(k)
            FROM (SELECT \(r.key) AS k, \(r.lanes), ntile($\(upper ? 4 : 3)) OVER (ORDER BY \(r.key)) AS part FROM \(r.from) WHERE \(r.where)) AS r
            GROUP BY part ORDER BY part
            """
    }

    /// The kept count and lane sums of `landmarks` or `positions` at the horizon `$1`: the totals
    /// every write appends (at most 65 rows, ``foldTotals``), minus the tombstones stamped before the horizon (read from the partial index
    /// `landmarks_dead` / `positions_dead`, which carries their lanes).
    static func keptSums(_ table: RepairTable) -> String {
        let name = table == .landmarks ? "landmarks" : "positions"
        return """
            SELECT (t.rows - d.n)::bigint, (t.s0 - d.s0)::bigint, (t.s1 - d.s1)::bigint, (t.s2 - d.s2)::bigint, (t.s3 - d.s3)::bigint
            FROM (SELECT coalesce(sum(rows), 0) AS rows, coalesce(sum(s0), 0) AS s0, coalesce(sum(s1), 0) AS s1,
                         coalesce(sum(s2), 0) AS s2, coalesce(sum(s3), 0) AS s3
                  FROM hub_digest_totals WHERE tbl = '\(name)') AS t,
                 (SELECT count(*) AS n, coalesce(sum(h0), 0) AS s0, coalesce(sum(h1), 0) AS s1, coalesce(sum(h2), 0) AS s2,
                         coalesce(sum(h3), 0) AS s3
                  FROM \(name) WHERE deleted AND \(collected)) AS d
            """
    }

    /// Folds the kept totals' rows into one per table when they are more than 64 (hub migration 8).
    static let foldTotals = "SELECT catalog_fold_digest_totals()"

    /// Rows of `landmarks` and `positions` whose stored lanes are not those of their recomputed hash (a
    /// write path that stored stale lanes): one pass over both tables.
    static let staleLanes = """
        SELECT (SELECT count(*) FROM (SELECT l.h0, l.h1, l.h2, l.h3, \(landmarkHash("l")) AS h FROM landmarks l OFFSET 0) AS l
                WHERE (l.h0, l.h1, l.h2, l.h3) <> (\(lanes)))
             + (SELECT count(*) FROM (SELECT p.h0, p.h1, p.h2, p.h3, \(positionHash("p")) AS h FROM positions p OFFSET 0) AS p
                WHERE (p.h0, p.h1, p.h2, p.h3) <> (\(lanes)))
        """
}

/// The hub's digest kept and recomputed: what `catalog status --verify-digest` shows for a hub.
public struct HubDigestCheck: Sendable {
    /// The hub's display name (no password).
    public var name: String
    /// The horizon both are taken at (ms since the epoch, UTC).
    public var horizonMilliseconds: Int64
    /// The digest from the hub's kept totals (docs/repair.md §1).
    public var kept: StateDigest
    /// The digest recomputed by hashing every row in PostgreSQL.
    public var recomputed: StateDigest
    /// Rows whose stored lanes differ from their recomputed hash.
    public var staleRows: Int64
    /// Whether the kept digest is the recomputed one and no row's lanes are stale.
    public var equal: Bool { kept == recomputed && staleRows == 0 }
}

extension HubDigestCheck {
    /// Reads the hub's kept digest and recomputes it, at the hub's own collection horizon, from one
    /// snapshot of the hub.
    /// - Parameters:
    ///   - conninfo: a libpq URI or keyword string (a password from it, `~/.pgpass` or `PGPASSFILE`).
    ///   - timeoutSeconds: the deadline of connecting and of each statement, in s (the recomputation gets
    ///     10 minutes).
    /// - Returns: both digests and the count of rows with stale lanes.
    /// - Throws: `CatalogError` — 69 unreachable; 76 a hub newer than this binary; 69 a hub without the kept
    ///   digest (not yet migrated: sync with it once).
    public static func run(conninfo: String, timeoutSeconds: Double = 30) throws -> HubDigestCheck {
        let name = HubSourceKind.locator(conninfo).description
        let seconds = max(timeoutSeconds, 0.001)
        let limits = HubLimits(
            connectSeconds: max(1, Int(seconds.rounded(.up))), statement: .milliseconds(Int64(seconds * 1000)), bulk: .seconds(600))
        let hub = try HubConnection(conninfo: conninfo, name: name, limits: limits, migrate: false)
        return try HubConnection.mapping(name) {
            try hub.requireKeptDigest()
            let horizon = try hub.horizon()
            return try hub.pg.transaction {
                try hub.pg.execute(sql: HubSQL.pullIsolation)
                let kept = try hub.keptDigest(horizonMilliseconds: horizon)
                let recomputed = try hub.digest(horizonMilliseconds: horizon)
                let stale = try hub.pg.execute(sql: HubSQL.staleLanes, timeout: limits.bulk).int64(0, 0) ?? 0
                return HubDigestCheck(name: name, horizonMilliseconds: horizon, kept: kept, recomputed: recomputed, staleRows: stale)
            }
        }
    }
}

extension HubConnection {
    /// Refuses a hub without the kept digest (hub migration 8 not applied: only a sync migrates).
    /// - Throws: `CatalogError` 69.
    func requireKeptDigest() throws {
        guard try HubMigrator.tableExists("hub_digest_totals", pg) else {
            throw CatalogError(
                .unavailable, "the hub keeps no digest yet (its schema is older than this catalog), \(name)",
                hint: "run 'catalog sync' with the hub once: it migrates the hub's schema")
        }
    }

    /// The hub's state digest at `horizonMilliseconds` from its kept totals (docs/repair.md §1).
    ///
    /// The totals of `landmarks` and `positions` minus their tombstones stamped before the horizon, plus the
    /// erasure records stamped at or after it (few: hashed as they are read). No pass over the rows.
    /// - Throws: `PGError`; `CatalogError` (70) for an answer that is not numbers.
    func keptDigest(horizonMilliseconds: Int64) throws -> StateDigest {
        var sums = LaneSums()
        for table in RepairTable.allCases { sums.add(try keptSums(table, horizonMilliseconds: horizonMilliseconds)) }
        let lanes = sums.lanes64
        return StateDigest(rows: sums.rows, high: lanes.high, low: lanes.low)
    }

    /// A whole table's count and lane sums at `horizonMilliseconds`: kept for `landmarks` and
    /// `positions`, summed for erasure records.
    func keptSums(_ table: RepairTable, horizonMilliseconds: Int64) throws -> LaneSums {
        let sql = table == .erasures ? HubSQL.rangeSums(.erasures, upper: false) : HubSQL.keptSums(table)
        let args: [PGValue?] = table == .erasures ? [.integer(horizonMilliseconds), .text("")] : [.integer(horizonMilliseconds)]
        let result = try pg.execute(sql: sql, args, timeout: limits.bulk)
        guard result.rowCount == 1 else { throw CatalogError(.software, "the hub keeps no digest totals for \(table), \(name)") }
        return try Self.sums(result, row: 0)
    }

    /// Columns 0…4 of `row`: a count and four lane sums.
    static func sums(_ result: PGResult, row: Int) throws -> LaneSums {
        LaneSums(rows: try result.int64(row, 0) ?? 0, sums: try (1...4).map { try result.int64(row, $0) ?? 0 })
    }
}

extension HubDigestCheck {
    /// Checks every hub `store`'s database has synced with, found as ``HubStatus/all(in:timeoutSeconds:)``
    /// finds them (the saved remote's connection string, else the source's name when it holds no password).
    /// - Returns: per hub, by name, its check or why it could not be read.
    /// - Throws: `CatalogError` for the local database only.
    public static func all(in store: CatalogStore, timeoutSeconds: Double = 30) throws -> [(
        name: String, check: Result<HubDigestCheck, CatalogError>
    )] {
        let saved = try RemoteBook(store).remotes()
        let names = try store.read { try store.sourceTable.cursors(kind: HubSourceKind().name).map(\.0) }
        return names.map { name in
            guard let conninfo = saved.first(where: { redactedURL($0.url) == name })?.url ?? (name.contains("***") ? nil : name) else {
                return (name, .failure(CatalogError(.unavailable, "the hub's password is not stored here, \(name)")))
            }
            do {
                return (name, .success(try run(conninfo: conninfo, timeoutSeconds: timeoutSeconds)))
            } catch let error as CatalogError {
                return (name, .failure(error))
            } catch {
                return (name, .failure(CatalogError(.software, "\(error), \(name)")))
            }
        }
    }
}
