import Foundation
import LandmarkCatalog

/// What a rebuild of a hub's kept digest did (`catalog gc --hub URL --rebuild-digest`).
package struct HubDigestRebuildSummary: Sendable, Equatable {
    /// The rows of `landmarks` the new totals sum.
    package var landmarks: Int
    /// The rows of `positions` the new totals sum.
    package var positions: Int
    /// Rows whose stored lanes were not their hash's and were recomputed.
    package var relaned: Int
}

/// Rebuilds a PostgreSQL hub's kept digest from its rows (docs/hub.md §9 and §11).
///
/// The statement triggers keep `hub_digest_totals` through every write, but not through a data-only
/// restore that also restores the totals (the restored rows' COPY moves them, then the dumped totals are
/// added), nor a totals table emptied or written by hand. The rebuild runs the hub's
/// `catalog_rebuild_digest_totals()` (hub migration 9) in one transaction: under the push lock, the lanes
/// of rows whose stored lanes are stale are recomputed, then the totals are replaced by the sums of the rows.
package struct HubDigestRebuild {
    private let conninfo: String
    /// The hub's display name (no password).
    package let name: String
    private let limits: HubLimits

    /// - Parameters:
    ///   - hub: the hub's URL (`postgresql://…`) or a saved remote's name.
    ///   - remotes: the saved remotes `hub` may name.
    ///   - timeoutSeconds: the deadline of connecting and of each short statement, in s.
    ///   - bulkSeconds: the deadline of the rebuild (it hashes every row), in s.
    /// - Throws: `CatalogError` 64 when `hub` is not a PostgreSQL hub.
    package init(hub: String, remotes: [Remote], timeoutSeconds: Double = 30, bulkSeconds: Double = 600) throws {
        (conninfo, name, limits) = try HubMaintenance.target(hub: hub, remotes: remotes, timeoutSeconds: timeoutSeconds, bulkSeconds: bulkSeconds)
    }

    /// Rebuilds the hub's kept digest totals from its rows.
    ///
    /// One PostgreSQL transaction that holds the push lock. Migrates the hub's schema first when it is
    /// behind this binary.
    /// - Returns: the rows summed per table and the rows whose lanes were recomputed.
    /// - Throws: `CatalogError` as a hub connection: 69 unreachable or timed out (a push holding the lock
    ///   past the bulk deadline included), 77 a role that may not run the rebuild (it is granted to the
    ///   hub's owner only), 76 another schema; 64 a hub database that does not exist.
    package func rebuild() throws -> HubDigestRebuildSummary {
        let hub = try HubConnection(conninfo: conninfo, name: name, limits: limits, missingDatabaseIsMistake: true)
        defer { hub.pg.close() }
        let pg = hub.pg
        return try HubConnection.mapping(name) {
            try pg.transaction {
                try pg.execute(sql: "SELECT set_config('statement_timeout', $1, true)", [.text(String(PGConnection.milliseconds(limits.bulk)))])
                let r = try pg.execute(sql: HubSQL.rebuildTotals, timeout: limits.bulk)
                return HubDigestRebuildSummary(
                    landmarks: Int(try r.int64(0, 0) ?? 0), positions: Int(try r.int64(0, 1) ?? 0), relaned: Int(try r.int64(0, 2) ?? 0))
            }
        }
    }
}

extension HubSQL {
    /// Rebuilds the kept digest totals from the rows under the push lock (hub migration 9): the rows
    /// summed per table and the rows whose lanes were recomputed.
    static let rebuildTotals = "SELECT landmark_rows, position_rows, relaned_rows FROM catalog_rebuild_digest_totals()"
}
