import Foundation

/// One numbered migration: `Migrations/NNNN_description.sql`.
public struct Migration: Sendable, Equatable {
    /// The number in the file name (`0001` → 1).
    public var version: Int
    /// The words of the file name (`create_landmarks`).
    public var description: String
    /// The file name, e.g., `0001_create_landmarks.sql`.
    public var fileName: String
    /// The SQL, exactly the file's text.
    public var sql: String

    /// A 64-bit FNV-1a hash of the SQL's UTF-8 bytes, as 16 hex digits.
    ///
    /// It detects an applied migration that was edited afterwards (an accident); it is not meant to resist
    /// tampering. FNV-1a: http://www.isthe.com/chongo/tech/comp/fnv/
    public var checksum: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Parses a migration from its file name and text.
    /// - Throws: `MigrationError.badFileName` when the name is not `NNNN_description.sql`
    ///   (four digits, then lowercase letters, digits and underscores). A bad name is never skipped silently.
    public init(fileName: String, sql: String) throws {
        let parts = fileName.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, parts[0].count == 4, parts[0].allSatisfy(\.isASCII), let version = Int(parts[0]),
            version > 0, parts[1].hasSuffix(".sql")
        else {
            throw MigrationError.badFileName(fileName, reason: "expected NNNN_description.sql")
        }
        let words = parts[1].dropLast(4)
        guard !words.isEmpty, words.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
            throw MigrationError.badFileName(fileName, reason: "the description must be lowercase words joined by '_'")
        }
        self.version = version
        self.description = String(words)
        self.fileName = fileName
        self.sql = sql
    }

    /// The migrations compiled into this binary from `Migrations/*.sql`, in version order.
    /// - Throws: `MigrationError` for a bad file name or a repeated version.
    public static func embedded() throws -> [Migration] {
        try ordered(embeddedMigrationFiles.map { try Migration(fileName: $0.name, sql: $0.sql) })
    }

    /// Parses the files of one set of migrations (`name`, `sql`), in version order.
    /// - Throws: `MigrationError` for a bad file name or a repeated version.
    package static func parse(_ files: [(name: String, sql: String)]) throws -> [Migration] {
        try ordered(files.map { try Migration(fileName: $0.name, sql: $0.sql) })
    }

    /// Sorts by version, refusing repeated versions.
    package static func ordered(_ migrations: [Migration]) throws -> [Migration] {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.version == b.version {
            throw MigrationError.duplicateVersion(a.version, a.fileName, b.fileName)
        }
        return sorted
    }
}

/// The state of one migration in a database, for `catalog migrate --status`.
public struct MigrationStatus: Sendable, Equatable {
    /// Where a migration stands.
    public enum State: String, Sendable {
        /// Applied, with the checksum this binary has.
        case applied
        /// Known to this binary, not applied yet.
        case pending
        /// Applied, but the file changed since (a refusal on open).
        case changed
        /// Applied by a newer binary: this one does not know it (a refusal on open).
        case unknown
    }
    public var version: Int
    public var description: String
    /// The checksum in the ledger when applied (for `pending`, this binary's).
    public var checksum: String
    /// When it was applied (UTC, RFC 3339), or nil when pending.
    public var appliedAt: String?
    public var state: State = .applied

    public init(version: Int, description: String, checksum: String, appliedAt: String?, state: State = .applied) {
        self.version = version
        self.description = description
        self.checksum = checksum
        self.appliedAt = appliedAt
        self.state = state
    }
}

/// Applies numbered migrations in order, each with its ledger row in one transaction.
///
/// Modelled on sqlx's migrator and GRDB's `DatabaseMigrator`: a changed applied migration, an applied
/// version this binary does not know (a newer database) or a badly named file is an error, never skipped.
package struct Migrator {
    package var migrations: [Migration]

    package init(migrations: [Migration]) throws {
        self.migrations = try Migration.ordered(migrations)
    }

    static let ledgerSQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version     INTEGER PRIMARY KEY NOT NULL,
            description TEXT NOT NULL,
            checksum    TEXT NOT NULL,
            applied_at  TEXT NOT NULL
        ) STRICT
        """

    /// Creates the ledger table when it is missing (a read first, so an existing database takes no write lock).
    /// - Throws: `CatalogError` (73) for a database that has tables but no ledger: some other
    ///   application's SQLite file, which is never migrated into a catalog.
    /// `catalog_user_hash(text)`: the SHA-256 of the text's UTF-8 bytes in lowercase hex, as
    /// `ErasureRule.userHash` computes it, for migrations that replace stored user ids by their hashes.
    static let userHashFunction = "catalog_user_hash"

    func ensureLedger(_ db: Connection) throws {
        if try !Self.hasLedger(db) {
            try Self.refuseForeign(db)
            try db.execute(sql: Self.ledgerSQL)
        }
    }

    static func hasLedger(_ db: Connection) throws -> Bool {
        try db.scalarInt(sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") != 0
    }

    /// Refuses a database that has objects but no `schema_migrations` ledger: another application's file,
    /// which must be left byte-for-byte as it is (pass this as `Connection`'s `acceptDatabase`).
    /// - Throws: `MigrationError.foreignDatabase`.
    ///
    /// Both counts come from one statement, so from one read snapshot: counted by two, a process opening a
    /// new database while another migrates it could see no ledger, then the other's tables, and refuse a
    /// catalog as foreign (the concurrent first run).
    static func refuseForeign(_ db: Connection) throws {
        // One statement, so the ledger and the other objects are seen in one snapshot.
        let foreign = try db.scalarInt(
            sql: """
                SELECT coalesce(sum(type = 'table' AND name = 'schema_migrations'), 0) = 0 AND coalesce(sum(name NOT LIKE 'sqlite_%'), 0) > 0
                FROM sqlite_master
                """)
        guard foreign == 1 else { return }
        throw MigrationError.foreignDatabase
    }

    /// The ledger rows, checked against this binary's migrations.
    /// - Throws: `MigrationError` for a newer database or a changed migration.
    func applied(_ db: Connection) throws -> [Int: (checksum: String, appliedAt: String)] {
        var rows: [Int: (checksum: String, appliedAt: String)] = [:]
        guard try Self.hasLedger(db) else { return rows }
        for (version, row) in try Self.ledgerRows(db) { rows[version] = (row.checksum, row.appliedAt) }
        switch MigrationLedger.refusal(
            rows.mapValues { MigrationLedger.Row(checksum: $0.checksum, appliedAt: $0.appliedAt) },
            migrations: migrations)
        {
        case .unknownVersion(let version, let known)?: throw MigrationError.newerDatabase(version: version, known: known)
        case .changed(let fileName, let applied, let binary)?: throw MigrationError.changed(fileName: fileName, applied: applied, binary: binary)
        case nil: return rows
        }
    }

    /// The migrations this binary knows that the database has not applied, read without writing.
    /// - Throws: `MigrationError` for a newer database or a changed migration.
    func pending(_ db: Connection) throws -> [Migration] {
        let current = try applied(db)
        return migrations.filter { current[$0.version] == nil }
    }

    /// Applies every pending migration.
    ///
    /// Idempotent.
    /// - Parameters:
    ///   - db: the connection to the database to migrate.
    ///   - now: the applied time to record.
    /// - Returns: the versions applied by this call.
    /// - Throws: `MigrationError` for ledger conflicts and failing SQL (naming the statement), `SQLiteError`
    ///   for the ledger itself (a busy database).
    @discardableResult
    func migrate(_ db: Connection, now: Date = Date()) throws -> [Int] {
        try ensureLedger(db)
        // The one SQL function migrations may call: the user-id hash (docs/erasure.md §2), which SQLite lacks.
        try db.defineFunction(Self.userHashFunction) { SHA256.hex(SHA256.hash(Array($0.utf8))) }
        // Up to date: return without taking the write lock, so opening never waits on another writer.
        let current = try applied(db)
        if migrations.allSatisfy({ current[$0.version] != nil }) { return [] }
        var appliedNow: [Int] = []
        for migration in migrations {
            // Re-read inside each transaction: another process may be migrating the same file.
            let done = try db.writeTransaction { () throws -> Bool in
                if try applied(db)[migration.version] != nil { return true }
                do {
                    try db.executeScript(sql: migration.sql)
                } catch let error as SQLiteError {
                    throw MigrationError.failed(fileName: migration.fileName, error: error)
                }
                try db.execute(
                    sql: MigrationColumn.insertAllSQL,
                    [
                        .integer(Int64(migration.version)), .text(migration.description), .text(migration.checksum),
                        .text(Timestamp.format(milliseconds: Int64(now.timeIntervalSince1970 * 1000))),
                    ])
                return false
            }
            if !done { appliedNow.append(migration.version) }
        }
        return appliedNow
    }

    /// Every migration this binary knows, and every one the ledger has, with its state — read without
    /// refusing anything, so a changed or newer database can still be inspected.
    func status(_ db: Connection) throws -> [MigrationStatus] {
        var ledger: [Int: MigrationLedger.Row] = [:]
        if try Self.hasLedger(db) {
            ledger = try Self.ledgerRows(db)
        } else {
            try Self.refuseForeign(db)
        }
        return MigrationLedger.statuses(ledger, migrations: migrations)
    }
}

/// The ledger `schema_migrations`' columns, in select-list order.
package enum MigrationColumn: Int32, TableColumn {
    case version, description, checksum, appliedAt

    package static let tableName = "schema_migrations"
}

extension Migrator {
    /// The ledger's rows by version (the caller checks that the ledger exists).
    static func ledgerRows(_ db: Connection) throws -> [Int: MigrationLedger.Row] {
        var rows: [Int: MigrationLedger.Row] = [:]
        try db.forEachRow(sql: "SELECT \(MigrationColumn.selectList) FROM schema_migrations ORDER BY version") { s in
            rows[Int(s.int(MigrationColumn.version))] = MigrationLedger.Row(
                description: s.text(MigrationColumn.description), checksum: s.text(MigrationColumn.checksum) ?? "",
                appliedAt: s.text(MigrationColumn.appliedAt) ?? "")
        }
        return rows
    }
}
