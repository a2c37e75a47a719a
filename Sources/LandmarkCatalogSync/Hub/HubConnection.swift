import Foundation
import LandmarkCatalog

/// Limits of one conversation with a hub, from `catalog sync`'s options.
struct HubLimits: Equatable {
    /// The deadline of opening the connection (every host, TLS, authentication), in whole seconds ≥ 1.
    var connectSeconds: Int
    /// The deadline of each ordinary statement, client-side and as `statement_timeout`; also how long a
    /// push waits for the push lock another edge holds.
    var statement: Duration
    /// The deadline of each bulk statement (the upserts of a push): `--deadline`.
    var bulk: Duration

    /// `--timeout` (default 30 s) bounds connecting and every ordinary statement, so a hung hub is 69
    /// in bounded time; `--deadline` (default 600 s) bounds each bulk statement of a large push.
    init(options: SyncOptions) {
        let timeout = max(options.timeoutSeconds, 0.001)
        connectSeconds = max(1, Int(timeout.rounded(.up)))
        statement = .milliseconds(Int64((timeout * 1000).rounded(.up)))
        bulk = max(statement, .milliseconds(Int64((options.deadlineSeconds * 1000).rounded(.up))))
    }

    init(connectSeconds: Int, statement: Duration, bulk: Duration) {
        self.connectSeconds = connectSeconds
        self.statement = statement
        self.bulk = bulk
    }
}

/// Test-only hooks of the hub's push (never set by the CLI).
struct HubTestHooks: @unchecked Sendable {
    // Safe: set once by a test before the sync starts and only read after; the closure runs on the
    // syncing thread. Unchecked only because a stored closure is not Sendable.
    /// Called inside the push transaction after its rows took their hub sequence numbers, just before
    /// `COMMIT`: a test holds the transaction open here.
    var beforePushCommit: (() -> Void)?
    /// Plants the commit-order bug: the push takes its sequence numbers without the advisory lock.
    var skipPushLock = false

    init(beforePushCommit: (() -> Void)? = nil, skipPushLock: Bool = false) {
        self.beforePushCommit = beforePushCommit
        self.skipPushLock = skipPushLock
    }
}

/// One connection to a PostgreSQL hub, open, its schema migrated, its identity read.
///
/// Owns its `PGConnection` (closed when released); not `Sendable`, like it.
final class HubConnection {
    let pg: PGConnection
    /// The hub's display name (the connection string without its password).
    let name: String
    /// The connection string it was opened with (a follower reuses the connection only for the same one).
    let conninfo: String
    /// The hub's random identity (`hub_identity.hub_id`): another value means another hub.
    private(set) var hubID = ""
    /// The hub change sequence's last issued number (0 when none was issued yet): a cursor beyond it
    /// means the hub was restored from an older backup.
    private(set) var lastSequence: Int64 = 0
    /// Whether the hub keeps a history (hub migration 2; a dry run does not migrate an older hub).
    private(set) var hasHistory = false
    let limits: HubLimits

    /// Opens, migrates and identifies the hub at `conninfo`.
    /// - Parameters:
    ///   - conninfo: a libpq URI or keyword/value string (libpq "Connection Strings",
    ///     https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING); passwords come from it,
    ///     `PGPASSFILE` / `~/.pgpass` or `PGPASSWORD`, and are never shown.
    ///   - name: the display name used in messages.
    ///   - limits: the timeouts and sizes of this conversation, from `catalog sync`'s options.
    ///   - migrate: apply pending hub migrations (false: only check, for `status`).
    ///   - cancellation: a follower's stop, which ends the connection's waits within 100 ms.
    ///   - missingDatabaseIsMistake: a database that does not exist (SQLSTATE 3D000) is 64, a name to fix,
    ///     for a one-off command; else 69, for a serve that waits for its hub to be created.
    /// - Throws: `CatalogError` — 69 unreachable, timed out, login refused or stopped; 76 a hub newer than
    ///   this binary, a changed migration or a foreign database; 77 a role that may not create the tables;
    ///   70 otherwise.
    init(
        conninfo: String, name: String, limits: HubLimits, migrate: Bool = true, cancellation: TransferCancellation? = nil,
        missingDatabaseIsMistake: Bool = false
    ) throws {
        self.name = name
        self.limits = limits
        self.conninfo = conninfo
        let pg = try Self.mapping(name) {
            do {
                return try PGConnection(
                    conninfo: conninfo, connectTimeoutSeconds: limits.connectSeconds, commandTimeout: limits.statement,
                    cancellation: cancellation)
            } catch let error as PGError where missingDatabaseIsMistake && error.sqlState == .invalidCatalogName {
                let mapped = CatalogError(error)
                throw CatalogError(.usage, mapped.message, hint: mapped.hint.map { $0 + "; retrying will not help" })
            }
        }
        self.pg = pg
        let migrator = try Self.mapping(name) { try HubMigrator() }
        try Self.mapping(name) {
            if migrate {
                try migrator.migrate(pg)
            } else {
                guard let rows = try migrator.ledger(pg), rows[1] != nil else {
                    throw CatalogError(.unavailable, "the hub has no catalog schema yet (no sync has run against it), \(name)")
                }
                try migrator.check(rows)
            }
        }
        try Self.mapping(name) { try identify() }
    }

    /// Reads the hub's identity, its sequence's last number and whether it keeps a history: at open,
    /// and again at each poll of a connection a follower keeps (the hub may have moved on, or been
    /// dropped and created again, since).
    /// - Throws: `PGError`; `CatalogError` 65 when the hub has no identity row.
    func identify() throws {
        hasHistory = try HubMigrator.tableExists("hub_history", pg)
        let identity = try pg.execute(sql: "SELECT hub_id FROM hub_identity")
        guard identity.rowCount == 1, let id = identity.text(0, 0) else {
            throw CatalogError(.dataInvalid, "the hub has no identity row (hub_identity is empty), \(name)")
        }
        let sequence = try pg.execute(sql: "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM hub_change_seq")
        (hubID, lastSequence) = (id, try sequence.int64(0, 0) ?? 0)
    }

    /// The hub's clock: ms since 1970-01-01 UTC (`clock_timestamp()`).
    /// - Throws: `PGError`.
    func hubNowMilliseconds() throws -> Int64 {
        try pg.execute(sql: "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint").int64(0, 0) ?? 0
    }

    /// Runs `body`, turning the hub layer's errors into `CatalogError`s that name the hub: `PGError`
    /// through `CatalogError(_:)` (69 / 70), schema refusals through `CatalogError(_:hub:)`.
    static func mapping<T>(_ name: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PGError {
            var mapped = CatalogError(error)
            // Named once: by libpq's resolved target when the error has one, else by the hub's name.
            if error.target == nil && !mapped.message.contains(name) { mapped.message += " (hub \(name))" }
            throw mapped
        } catch let error as HubSchemaError {
            throw CatalogError(error, hub: name)
        } catch let error as MigrationError {
            throw CatalogError(error, path: name)
        }
    }
}

@available(*, unavailable)
extension HubConnection: Sendable {}
