import Foundation
import LandmarkCatalog

/// Why a hub's schema cannot be used: typed, so callers and tests match cases, not message text.
///
/// Mapped to a ``CatalogError`` in one place, ``CatalogError/init(_:hub:)``.
///
/// Exit status: 76 ("incompatible") for a hub this binary must not touch — newer than the binary, a
/// changed migration, another application's tables — as for a snapshot of a newer version (docs/exit-statuses.md §1: the
/// source is incompatible; upgrade catalog, or point at the right database); 73 when the role may not
/// create the hub's tables; 70 when a migration's SQL fails (a bug in this binary).
enum HubSchemaError: Error, Equatable {
    /// The hub has a migration applied that this binary does not know: it was migrated by a newer catalog.
    case newerHub(version: Int, known: Int)
    /// An applied hub migration's text differs from this binary's (checksums in hex).
    case changed(fileName: String, applied: String, binary: String)
    /// The database holds tables named like the hub's but no hub ledger: another application's.
    case foreign(table: String)
    /// The role may not create the hub's tables (SQLSTATE 42501) while a migration is pending.
    case notPermitted(fileName: String, message: String)
    /// A migration's SQL failed; it was rolled back with its ledger row.
    case failed(fileName: String, message: String)
}

extension CatalogError {
    /// The message, hint and exit status of a hub schema refusal for the hub named `hub` (no password).
    init(_ error: HubSchemaError, hub: String) {
        switch error {
        case .newerHub(let version, let known):
            self.init(
                .incompatible,
                "the hub's schema has migration \(version) applied, which this catalog does not know (it knows hub migrations up to \(known)), \(hub)",
                hint: "the hub was migrated by a newer catalog; upgrade catalog on this machine")
        case .changed(let name, let applied, let binary):
            self.init(
                .incompatible,
                "hub migration \(name) was changed after it was applied (checksum \(applied) on the hub, \(binary) in this binary), \(hub)",
                hint: "this catalog and the one that migrated the hub disagree; use the same release on every edge")
        case .foreign(let table):
            self.init(
                .incompatible, "not a catalog hub: the database has a table \(table) but no hub_schema_migrations ledger, \(hub)",
                hint: "give the hub a database of its own (createdb catalog_hub)")
        case .notPermitted(let name, let message):
            // 77, as every PostgreSQL permission error (SQLSTATE 42501): the role is not permitted.
            self.init(
                .untrusted, "cannot create the hub's tables (migration \(name)): \(message), \(hub)",
                hint: "run 'catalog sync' once as a role that may create tables in the hub database (its owner)")
        case .failed(let name, let message):
            self.init(.software, "hub migration \(name) failed: \(message), \(hub)")
        }
    }
}

/// Creates and migrates a hub's schema with the numbered SQL files of `Migrations/hub/` compiled into
/// this binary, with a ledger (`hub_schema_migrations`: version, description, checksum, applied time) as
/// for the SQLite database (``Migrator``): each migration and its ledger row in one transaction, applied
/// in order; a hub newer than the binary, a changed migration or a foreign database is refused.
///
/// Several edges may meet a new hub at once: every migrating transaction first takes the
/// transaction-scoped advisory lock ``lockKey`` (PostgreSQL "Explicit Locking", Advisory Locks,
/// https://www.postgresql.org/docs/15/explicit-locking.html#ADVISORY-LOCKS), then re-reads the ledger, so
/// each migration runs once and the others wait and find it applied. An up-to-date hub is checked with
/// one read and no lock.
struct HubMigrator {
    /// The advisory lock key of migrations (`lchub_mg` in ASCII).
    static let lockKey: Int64 = 0x6C63_6875_625F_6D67
    /// The ledger table.
    static let ledgerTable = "hub_schema_migrations"
    static let ledgerSQL = """
        CREATE TABLE IF NOT EXISTS hub_schema_migrations (
            version     integer PRIMARY KEY,
            description text NOT NULL,
            checksum    text NOT NULL,
            applied_at  timestamptz NOT NULL DEFAULT now()
        )
        """
    /// Tables whose presence without a ledger means another application's database.
    static let hubTables = ["landmarks", "positions", "hub_identity", "hub_edges", "hub_history"]

    /// The hub migrations, in version order.
    let migrations: [Migration]

    /// - Parameter migrations: the migrations to apply (default: those compiled into this binary).
    /// - Throws: `MigrationError` for a bad file name or a repeated version (a bug in this binary).
    init(migrations: [Migration]? = nil) throws {
        self.migrations = try Migration.ordered(migrations ?? Self.embedded())
    }

    /// The hub migrations compiled into this binary from `Migrations/hub/*.sql`, in version order.
    /// - Throws: `MigrationError` for a bad file name or a repeated version.
    static func embedded() throws -> [Migration] { try Migration.parse(embeddedHubMigrationFiles) }

    /// The newest hub schema version this binary knows.
    var latestVersion: Int { migrations.last?.version ?? 0 }

    /// The ledger's rows (version → checksum, applied time as text), or nil when there is no ledger.
    /// - Throws: `PGError`.
    func ledger(_ connection: PGConnection) throws -> [Int: (checksum: String, appliedAt: String)]? {
        guard try Self.tableExists(Self.ledgerTable, connection) else { return nil }
        var rows: [Int: (checksum: String, appliedAt: String)] = [:]
        let result = try connection.execute(sql: "SELECT version, checksum, applied_at FROM hub_schema_migrations ORDER BY version")
        for row in 0..<result.rowCount {
            rows[Int(try result.int64(row, 0) ?? 0)] = (result.text(row, 1) ?? "", result.text(row, 2) ?? "")
        }
        return rows
    }

    /// Refuses a ledger holding a version this binary does not know, or a changed checksum.
    /// - Throws: `HubSchemaError.newerHub`, `.changed`.
    func check(_ rows: [Int: (checksum: String, appliedAt: String)]) throws {
        switch MigrationLedger.refusal(
            rows.mapValues { MigrationLedger.Row(checksum: $0.checksum, appliedAt: $0.appliedAt) },
            migrations: migrations)
        {
        case .unknownVersion(let version, _)?: throw HubSchemaError.newerHub(version: version, known: latestVersion)
        case .changed(let fileName, let applied, let binary)?: throw HubSchemaError.changed(fileName: fileName, applied: applied, binary: binary)
        case nil: break
        }
    }

    /// Applies every pending hub migration, each in its own transaction under the advisory lock.
    ///
    /// Idempotent; an up-to-date hub costs two reads and takes no lock. A foreign database (hub tables,
    /// no ledger) is refused under the lock, before anything is written.
    /// - Returns: the versions this call applied.
    /// - Throws: `HubSchemaError` (refusals, failing SQL), `PGError` (the hub unreachable, a deadline).
    @discardableResult
    func migrate(_ connection: PGConnection) throws -> [Int] {
        // The unlocked fast path only answers "up to date". A database without a ledger is judged
        // foreign only under the lock: between reading "no ledger" and looking for the hub's tables,
        // another migrator may commit migration 1 (ledger and tables together), which would read as
        // tables without a ledger.
        if let rows = try ledger(connection) {
            try check(rows)
            if migrations.allSatisfy({ rows[$0.version] != nil }) { return [] }
        }
        var applied: [Int] = []
        for migration in migrations {
            let done = try connection.transaction { () throws -> Bool in
                try connection.advisoryTransactionLock(Self.lockKey)
                // Re-read under the lock: another edge may have migrated meanwhile.
                let rows = try ledger(connection) ?? [:]
                try check(rows)
                if rows[migration.version] != nil { return true }
                if rows.isEmpty { try refuseForeign(connection) }
                do {
                    try connection.executeScript(sql: Self.ledgerSQL)
                    try connection.executeScript(sql: migration.sql)
                    try connection.execute(
                        sql: "INSERT INTO hub_schema_migrations (version, description, checksum) VALUES ($1, $2, $3)",
                        [.integer(Int64(migration.version)), .text(migration.description), .text(migration.checksum)])
                } catch let error as PGError where error.kind == .server && !error.isUnavailable {
                    if error.sqlState == SQLState("42501") {
                        throw HubSchemaError.notPermitted(fileName: migration.fileName, message: error.description)
                    }
                    throw HubSchemaError.failed(fileName: migration.fileName, message: error.description)
                }
                return false
            }
            if !done { applied.append(migration.version) }
        }
        return applied
    }

    /// Refuses a database without a hub ledger that holds a table of the hub's names.
    /// - Throws: `HubSchemaError.foreign`.
    func refuseForeign(_ connection: PGConnection) throws {
        for table in Self.hubTables where try Self.tableExists(table, connection) {
            throw HubSchemaError.foreign(table: table)
        }
    }

    /// Whether a table named `name` exists in the schemas of the search path, read from `pg_class` with
    /// the statement's own snapshot.
    ///
    /// Not `to_regclass`: it answers from the backend's catalog cache, which is not refreshed by taking
    /// an advisory lock, so a migrator that waited for another one would still see "no such table" and
    /// run the migration a second time.
    static func tableExists(_ name: String, _ connection: PGConnection) throws -> Bool {
        try connection.execute(
            sql: """
                SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                               WHERE c.relname = $1 AND c.relkind IN ('r', 'p') AND n.nspname = ANY (current_schemas(false)))
                """, [.text(name)]
        ).bool(0, 0) == true
    }

    /// Every hub migration this binary knows and every one the ledger has, with its state, read
    /// without refusing anything (for tests and diagnostics).
    /// - Throws: `PGError`.
    func status(_ connection: PGConnection) throws -> [MigrationStatus] {
        let rows = try ledger(connection) ?? [:]
        return MigrationLedger.statuses(
            rows.mapValues { MigrationLedger.Row(checksum: $0.checksum, appliedAt: $0.appliedAt) },
            migrations: migrations)
    }
}
