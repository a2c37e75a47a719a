import Foundation
import LandmarkCatalog

/// The token revocations of a PostgreSQL hub (`hub_token_revocations`, docs/serve.md §10): recorded by
/// `catalog token revoke --hub`, read every second by each `serve --hub` of the hub, so every server of a
/// fleet refuses a revoked token within seconds.
///
/// Holds one connection, opened on first use and again after a failure; not `Sendable` (one thread uses it).
package final class HubRevocations {
    private let conninfo: String
    private let name: String
    private let limits: HubLimits
    private var hub: HubConnection?

    /// - Parameters:
    ///   - hub: the hub's URL (`postgresql://…`) or a saved remote's name.
    ///   - remotes: the saved remotes `hub` may name.
    ///   - timeoutSeconds: the deadline of connecting and of each statement.
    /// - Throws: `CatalogError` 64 when `hub` is not a PostgreSQL hub.
    package init(hub: String, remotes: [Remote], timeoutSeconds: Double = 5) throws {
        guard let conninfo = HubSourceKind.conninfo(of: try SourceLocator.parse(hub, remotes: remotes)) else {
            throw CatalogError(.usage, "--hub needs a PostgreSQL hub: a postgresql:// URL or a saved remote of one, got '\(hub)'")
        }
        self.conninfo = conninfo
        name = HubSourceKind.locator(conninfo).description
        let seconds = max(timeoutSeconds, 0.001)
        let statement = Duration.milliseconds(Int64((seconds * 1000).rounded(.up)))
        limits = HubLimits(connectSeconds: max(1, Int(seconds.rounded(.up))), statement: statement, bulk: statement)
    }

    /// Every revocation the hub holds, by kind and subject.
    /// - Throws: `CatalogError` as a hub connection does (69 unreachable, 76 another schema, 77 no GRANT).
    package func all() throws -> [TokenRevocation] {
        try using { hub in
            let result = try hub.pg.execute(
                sql: """
                    SELECT kind, subject, before_s, to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                    FROM hub_token_revocations ORDER BY kind, subject
                    """)
            var rows: [TokenRevocation] = []
            for row in 0..<result.rowCount {
                guard let kind = result.text(row, 0).flatMap(TokenRevocation.Kind.init(rawValue:)) else { continue }
                rows.append(
                    TokenRevocation(
                        kind: kind, subject: result.text(row, 1) ?? "", before: try result.int64(row, 2) ?? 0, revokedAt: result.text(row, 3) ?? ""))
            }
            return rows
        }
    }

    /// Records `revocation` in the hub (replacing one of the same kind and subject), one statement.
    /// - Throws: `CatalogError` as ``all()``.
    package func revoke(_ revocation: TokenRevocation) throws {
        try using { hub in
            _ = try hub.pg.execute(
                sql: """
                    INSERT INTO hub_token_revocations (kind, subject, before_s) VALUES ($1, $2, $3)
                    ON CONFLICT (kind, subject) DO UPDATE SET before_s = excluded.before_s, revoked_at = now()
                    """, [.text(revocation.kind.rawValue), .text(revocation.subject), .integer(revocation.before)])
        }
    }

    /// Removes the hub's revocation of `kind` and `subject`, one statement.
    /// - Returns: whether there was one.
    /// - Throws: `CatalogError` as ``all()``.
    package func lift(kind: TokenRevocation.Kind, subject: String) throws -> Bool {
        try using { hub in
            try hub.pg.execute(
                sql: "DELETE FROM hub_token_revocations WHERE kind = $1 AND subject = $2 RETURNING 1", [.text(kind.rawValue), .text(subject)]
            ).rowCount > 0
        }
    }

    /// Removes the hub's revocations that can refuse no token any more when no token lives longer than
    /// `maxLifetime` s (as ``TokenRevocations/prune(now:maxLifetime:)``), one statement.
    /// - Returns: how many were removed.
    /// - Throws: `CatalogError` as ``all()``.
    package func prune(now: Int64, maxLifetime: Int64) throws -> Int {
        try using { hub in
            try hub.pg.execute(
                sql: """
                    DELETE FROM hub_token_revocations
                    WHERE (kind = 'user' AND before_s <= $1) OR (kind = 'jti' AND revoked_at <= to_timestamp($1))
                    RETURNING 1
                    """, [.integer(now - maxLifetime)]
            ).rowCount
        }
    }

    /// Closes the connection (the next call opens another).
    package func close() {
        hub?.pg.close()
        hub = nil
    }

    private func using<T>(_ body: (HubConnection) throws -> T) throws -> T {
        do {
            let hub = try self.hub ?? HubConnection(conninfo: conninfo, name: name, limits: limits)
            self.hub = hub
            return try HubConnection.mapping(name) { try body(hub) }
        } catch {
            close()
            throw error
        }
    }
}
