import Foundation
import LandmarkCatalog

/// Collects a PostgreSQL hub's tombstones and erasure records older than a horizon (`catalog gc --hub`,
/// docs/erasure.md §7), as ``Collector`` does a node's database.
///
/// The hub keeps the horizon it was collected up to in `hub_meta` (hub migration 5), never moved back;
/// from then on its upserts refuse, as expired, a pushed row stamped before it for a key the hub has no
/// row for (``ErasureRule``), so a node away longer than the horizon cannot bring a collected deletion's
/// row back through the hub. Run by one node on a timer: the hub is shared, and one collector keeps one
/// horizon.
package struct HubCollector {
    private let conninfo: String
    /// The hub's display name (no password).
    package let name: String
    private let limits: HubLimits

    /// - Parameters:
    ///   - hub: the hub's URL (`postgresql://…`) or a saved remote's name.
    ///   - remotes: the saved remotes `hub` may name.
    ///   - timeoutSeconds: the deadline of connecting and of each short statement, in s; the deletions may
    ///     take up to `bulkSeconds`.
    ///   - bulkSeconds: the deadline of the collecting transaction's statements, in s.
    /// - Throws: `CatalogError` 64 when `hub` is not a PostgreSQL hub.
    package init(hub: String, remotes: [Remote], timeoutSeconds: Double = 30, bulkSeconds: Double = 600) throws {
        (conninfo, name, limits) = try HubMaintenance.target(hub: hub, remotes: remotes, timeoutSeconds: timeoutSeconds, bulkSeconds: bulkSeconds)
    }

    /// Removes, in one PostgreSQL transaction, the hub's tombstones (`landmarks`, `positions`) and
    /// `hub_erasures` rows stamped before the horizon, and records the horizon in `hub_meta`.
    ///
    /// The horizon is `age` before the collector's clock: `now`, but never later than the newest stamp the
    /// hub holds, and never below the hub's stored horizon
    /// (``ErasureRule/collectionHorizon(stored:nowMilliseconds:newestMilliseconds:age:)``, as a node's
    /// `catalog gc`). The transaction holds the hub's push lock, so no push writes between the deletions and
    /// the new horizon. Migrates the hub's schema first when it is behind this binary.
    /// - Parameters:
    ///   - age: the horizon's age in ms (not negative).
    ///   - nowMilliseconds: the wall clock, ms since the epoch (UTC).
    /// - Returns: what was removed (`bytesBefore`/`bytesAfter` stay 0: PostgreSQL reclaims space by its vacuum).
    /// - Throws: `CatalogError`: 64 a negative age or a hub database that does not exist; as a hub connection (69 unreachable or timed out, 73/77 a
    ///   role without the rights, 76 another schema); 69 when a push held the lock past the timeout.
    package func collect(olderThan age: Int64, nowMilliseconds: Int64) throws -> CollectionSummary {
        guard age >= 0 else { throw CatalogError(.usage, "the horizon must not be negative") }
        let hub = try HubConnection(conninfo: conninfo, name: name, limits: limits, missingDatabaseIsMistake: true)
        defer { hub.pg.close() }
        let pg = hub.pg
        return try HubConnection.mapping(name) {
            try pg.transaction {
                try pg.execute(sql: "SELECT set_config('statement_timeout', $1, true)", [.text(String(PGConnection.milliseconds(limits.bulk)))])
                try lockPushes(pg)
                let clock = try pg.execute(sql: HubSQL.collectionClock)
                let horizon = ErasureRule.collectionHorizon(
                    stored: try clock.int64(0, 0) ?? 0, nowMilliseconds: nowMilliseconds, newestMilliseconds: try clock.int64(0, 1) ?? 0,
                    age: age)
                let at: [PGValue?] = [.integer(horizon)]
                var summary = CollectionSummary(horizonMilliseconds: horizon)
                summary.landmarkTombstones = try pg.execute(sql: HubSQL.collectLandmarks, at, timeout: limits.bulk).affectedRows
                summary.positionTombstones = try pg.execute(sql: HubSQL.collectPositions, at, timeout: limits.bulk).affectedRows
                summary.erasures = try pg.execute(sql: HubSQL.collectErasures, at, timeout: limits.bulk).affectedRows
                try pg.execute(sql: HubSQL.setHorizon, at)
                return summary
            }
        }
    }

    /// Takes the push lock for the transaction, waiting at most the statement timeout.
    private func lockPushes(_ pg: PGConnection) throws {
        do {
            try pg.advisoryTransactionLock(HubSQL.pushLockKey, timeout: limits.statement)
        } catch let error as PGError where error.kind == .timedOut || error.sqlState == .queryCanceled || error.sqlState == .lockNotAvailable {
            throw CatalogError(
                .unavailable, "an edge's push held the hub's push lock for more than \(PGConnection.describe(limits.statement)), \(name)",
                hint: "the hub is busy; run gc --hub again")
        }
    }
}

extension HubConnection {
    /// The hub's collection horizon (ms since the epoch, UTC), 0 when never collected or when the hub's
    /// schema predates `hub_meta` (hub migration 5).
    /// - Throws: `PGError`.
    func horizon() throws -> Int64 {
        guard try HubMigrator.tableExists("hub_meta", pg) else { return 0 }
        return try pg.execute(sql: "SELECT \(HubSQL.horizon)").int64(0, 0) ?? 0
    }
}

/// What the operator's hub commands (`gc --hub`, `gc --hub --rebuild-digest`) share.
enum HubMaintenance {
    /// The hub a maintenance command names, and its deadlines.
    /// - Parameters:
    ///   - hub: the hub's URL (`postgresql://…`) or a saved remote's name.
    ///   - remotes: the saved remotes `hub` may name.
    ///   - timeoutSeconds: the deadline of connecting and of each short statement, in s.
    ///   - bulkSeconds: the deadline of the long statements, in s (at least `timeoutSeconds`).
    /// - Returns: the connection string, the display name (no password) and the limits.
    /// - Throws: `CatalogError` 64 when `hub` is not a PostgreSQL hub.
    static func target(
        hub: String, remotes: [Remote], timeoutSeconds: Double, bulkSeconds: Double
    ) throws -> (conninfo: String, name: String, limits: HubLimits) {
        guard let conninfo = HubSourceKind.conninfo(of: try SourceLocator.parse(hub, remotes: remotes)) else {
            throw CatalogError(.usage, "--hub needs a PostgreSQL hub: a postgresql:// URL or a saved remote of one, got '\(hub)'")
        }
        let seconds = max(timeoutSeconds, 0.001)
        let limits = HubLimits(
            connectSeconds: max(1, Int(seconds.rounded(.up))), statement: .milliseconds(Int64((seconds * 1000).rounded(.up))),
            bulk: .milliseconds(Int64((max(bulkSeconds, seconds) * 1000).rounded(.up))))
        return (conninfo, HubSourceKind.locator(conninfo).description, limits)
    }
}
