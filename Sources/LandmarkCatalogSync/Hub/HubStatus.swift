import Foundation
import LandmarkCatalog

/// One hub as `catalog status` shows it: this node's cursors for it and the hub's own state digest,
/// beside this node's (docs/hub.md §11).
public struct HubStatus: Sendable {
    /// The hub's display name (never a password).
    public var source: String
    /// The hub's identity, as this node last saw it.
    public var hubID: String?
    /// When this node last pushed to it and pulled from it (UTC, RFC 3339).
    public var lastPushAt: String?
    public var lastPullAt: String?
    /// The local change sequence number pushed through, and the hub sequence number pulled through.
    public var pushThrough: Int64?
    public var pullThrough: Int64?
    /// The hub's state digest at ``horizonMilliseconds`` (from the totals the hub keeps, docs/repair.md §1), when
    /// the hub could be read.
    public var hubDigest: StateDigest?
    /// This node's state digest at ``horizonMilliseconds``: the one to compare with ``hubDigest``.
    public var digest: StateDigest?
    /// The horizon both digests are computed at: the greater of this node's and the hub's collection
    /// horizons (ms since the epoch, UTC; docs/erasure.md §5), so they agree whichever side collected.
    public var horizonMilliseconds: Int64 = 0
    /// Why the hub's digest is missing (unreachable, no password available, …).
    public var error: CatalogError?
}

extension HubConnection {
    /// The hub's state digest (``StateDigest``) at the horizon `horizonMilliseconds`, computed inside
    /// PostgreSQL from one snapshot (``HubSQL/digest``): equal to an edge's digest at the same horizon when
    /// both hold the same rows with the same stamps, tombstones and erasure records below it left out.
    /// - Throws: `PGError`; `CatalogError` (70) for an answer that is not three numbers.
    ///
    /// Inside an open transaction it joins it (a check that reads the kept digest from the same snapshot).
    func digest(horizonMilliseconds: Int64 = 0) throws -> StateDigest {
        if pg.isInTransaction { return try recomputedDigest(horizonMilliseconds: horizonMilliseconds) }
        return try pg.transaction {
            try pg.execute(sql: HubSQL.pullIsolation)
            return try recomputedDigest(horizonMilliseconds: horizonMilliseconds)
        }
    }

    /// ``digest(horizonMilliseconds:)`` in the open transaction.
    private func recomputedDigest(horizonMilliseconds: Int64) throws -> StateDigest {
        let result = try pg.execute(sql: HubSQL.digest, [.integer(horizonMilliseconds)], timeout: limits.bulk)
        guard let rows = try result.int64(0, 0), let high = result.text(0, 1).flatMap({ UInt64($0) }),
            let low = result.text(0, 2).flatMap({ UInt64($0) })
        else {
            throw CatalogError(.software, "the hub's digest query answered \(result.text(0, 1) ?? "NULL"), \(name)")
        }
        return StateDigest(rows: rows, high: high, low: low)
    }
}

extension HubStatus {
    /// Every hub `store`'s database has synced with: its cursors, and the hub's digest read now (connecting
    /// with `timeoutSeconds` for the connection and each statement, without migrating anything) beside
    /// this node's, both at the greater of the two collection horizons.
    ///
    /// The connection string is the saved remote's whose display name is the source's (so a password
    /// kept in a remote's URL still works), else the source's name itself when it holds no password
    /// (then `~/.pgpass` / `PGPASSFILE` supplies one).
    /// - Parameters:
    ///   - store: the local database (its hub sources' cursors and its saved remotes).
    ///   - timeoutSeconds: the deadline of connecting to each hub and of each statement, in s.
    /// - Returns: one entry per hub source, by name; a hub that cannot be read has `error` set.
    /// - Throws: `CatalogError` for the local database only.
    public static func all(in store: CatalogStore, timeoutSeconds: Double = 5) throws -> [HubStatus] {
        let saved = try RemoteBook(store).remotes()
        var statuses: [HubStatus] = []
        try store.read {
            for (source, cursor) in try store.sourceTable.cursors(kind: HubSourceKind().name) {
                statuses.append(
                    HubStatus(
                        source: source, hubID: cursor?["hub"], lastPushAt: cursor?["pushedAt"],
                        lastPullAt: cursor?["pulledAt"], pushThrough: cursor?["pushThrough"].flatMap { Int64($0) },
                        pullThrough: cursor?["pullThrough"].flatMap { Int64($0) }))
            }
        }
        let own = try Collector(store).horizon()
        let seconds = max(timeoutSeconds, 0.001)
        let limits = HubLimits(
            connectSeconds: max(1, Int(seconds.rounded(.up))), statement: .milliseconds(Int64(seconds * 1000)),
            bulk: .seconds(600))
        for index in statuses.indices {
            let name = statuses[index].source
            let conninfo = saved.first { redactedURL($0.url) == name }?.url ?? (name.contains("***") ? nil : name)
            guard let conninfo else {
                statuses[index].error = CatalogError(
                    .unavailable, "the hub's password is not stored here, \(name)",
                    hint: "save it in ~/.pgpass (or the file PGPASSFILE names) and sync with a URL without it")
                continue
            }
            do {
                let hub = try HubConnection(conninfo: conninfo, name: name, limits: limits, migrate: false)
                let horizon = max(own, try HubConnection.mapping(name) { try hub.horizon() })
                statuses[index].horizonMilliseconds = horizon
                // The kept digest (docs/repair.md §1): no pass over the hub's rows.
                statuses[index].hubDigest = try HubConnection.mapping(name) {
                    try hub.requireKeptDigest()
                    return try hub.keptDigest(horizonMilliseconds: horizon)
                }
                statuses[index].digest = try StateDigest(of: store, horizonMilliseconds: horizon)
            } catch let error as CatalogError {
                statuses[index].error = error
            }
        }
        return statuses
    }
}

/// A hub's schema, as `catalog migrate --hub` made it.
public struct HubSchemaReport: Sendable {
    /// The hub's display name (no password).
    public var name: String
    /// The highest hub migration applied.
    public var version: Int
    /// The hub's random identity.
    public var hubID: String
}

extension HubSchemaReport {
    /// Creates or migrates the schema of the hub at `conninfo` — and nothing else: no push, no pull,
    /// nothing recorded in `hub_edges`, no local database needed — so the owner of the hub's database can
    /// set it up before granting the edges' role only what it uses (docs/hub.md §4).
    /// - Parameters:
    ///   - conninfo: a libpq URI or keyword string (a password from it, `~/.pgpass` or `PGPASSFILE`).
    ///   - timeoutSeconds: the deadline of connecting and of each statement, in s.
    /// - Returns: the hub's name, schema version and identity.
    /// - Throws: `CatalogError` as a sync with a hub does: 64 a connection string with a mistake; 69
    ///   unreachable, timed out or login refused; 73 a role that may not create the tables; 76 a hub newer
    ///   than this binary, a changed migration or a foreign database.
    public static func migrate(conninfo: String, timeoutSeconds: Double = 30) throws -> HubSchemaReport {
        let name = HubSourceKind.locator(conninfo).description
        let seconds = max(timeoutSeconds, 0.001)
        let statement = Duration.milliseconds(Int64((seconds * 1000).rounded(.up)))
        let hub = try HubConnection(
            conninfo: conninfo, name: name,
            limits: HubLimits(connectSeconds: max(1, Int(seconds.rounded(.up))), statement: statement, bulk: statement))
        let version = try HubConnection.mapping(name) {
            try hub.pg.execute(sql: "SELECT max(version) FROM hub_schema_migrations").int64(0, 0) ?? 0
        }
        return HubSchemaReport(name: name, version: Int(version), hubID: hub.hubID)
    }
}
