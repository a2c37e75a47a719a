import Foundation

#if os(Linux)
    import Glibc
#endif

/// The catalog's repository: every read and write the CLI needs, named by intent, each write one
/// `BEGIN IMMEDIATE` transaction.
///
/// Owns one SQLite connection; not `Sendable`.
///
/// ```swift
/// let store = try CatalogStore.open(path: "/var/lib/catalog.sqlite")
/// let summary = try store.importLandmarks(from: .file("landmarkData.json"))
/// let pages = try store.featuredLandmarks()
/// ```
public final class CatalogStore {
    /// The connection; only the repository's own methods and the table modules (`Store/`) issue SQL
    /// (`TableHomeTests` fails on a use elsewhere).
    ///
    /// Side connections: ``sideConnection(mode:busyTimeoutMilliseconds:)``.
    let connection: Connection
    /// The database file path.
    public let path: String
    /// The wall clock stamps are drawn from (injected in tests).
    public let wallClock: any WallClock
    /// Whether this store was opened for reading only (``Access/read``).
    public let isReadOnly: Bool

    init(connection: Connection, path: String, wallClock: any WallClock, isReadOnly: Bool = false) {
        self.connection = connection
        self.path = path
        self.wallClock = wallClock
        self.isReadOnly = isReadOnly
    }

    /// What a caller will do with the store.
    public enum Access: Sendable {
        /// Read and write: creates the database and its directories as needed, applies migrations.
        case write
        /// Only read: the database must exist (66 otherwise); opened read-only, so it works on read-only
        /// media and in directories this user cannot write (SQLite's "WAL databases on read-only
        /// media", https://sqlite.org/wal.html#readonly); nothing is created or migrated.
        case read
    }

    /// Opens the database at `path`.
    ///
    /// - Parameters:
    ///   - path: a file path, or `":memory:"`.
    ///   - access: `.write` (the default) creates the file and its directories as needed and applies every
    ///     pending migration compiled into this binary; `.read` only reads (see ``Access/read``).
    ///   - wallClock: where the hybrid logical clock reads physical time.
    ///   - migrations: the migrations to apply (default: those compiled into this binary; tests pass others).
    /// - Returns: the open store.
    /// - Throws: `CatalogError` — 66 when `.read` finds no database; 73 when the directory or file cannot
    ///   be created or read, is not a catalog database, is newer than this binary or has a changed
    ///   migration (and, for `.read`, when it still needs a migration this user cannot apply); 75 when busy.
    public static func open(
        path: String, access: Access = .write, wallClock: any WallClock = SystemClock(),
        migrations: [Migration]? = nil
    ) throws -> CatalogStore {
        guard !path.isEmpty else {
            throw CatalogError(.usage, "the database path is empty", hint: "pass a file path with --db or CATALOG_DB")
        }
        let migrator = try Migrator(migrations: migrations ?? Migration.embedded())
        do {
            switch access {
            case .write:
                try CatalogFiles.prepareDirectory(for: path)
                let connection = try retryingWhileBusy {
                    let connection = try Connection(path: path, acceptDatabase: Migrator.refuseForeign)
                    try configure(connection)
                    try migrator.migrate(connection)
                    try RowHashBackfill.runIfPending(connection)
                    return connection
                }
                return CatalogStore(connection: connection, path: path, wallClock: wallClock)
            case .read:
                return try openReadOnly(path: path, migrator: migrator, wallClock: wallClock)
            }
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        } catch let error as MigrationError {
            throw CatalogError(error, path: path)
        }
    }

    /// Runs `body` again while it fails with `SQLITE_BUSY` / `SQLITE_LOCKED`, for up to 5 s (the busy
    /// timeout).
    ///
    /// Opening a new database switches it to WAL and creates its tables; when several processes open it
    /// at once (cron starting `import` and `sync` together), some of those steps can meet a lock that
    /// SQLite's busy handler does not wait for, so the open as a whole is retried.
    static func retryingWhileBusy<T>(_ body: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(5)
        var delay: UInt32 = 5_000
        while true {
            do {
                return try body()
            } catch let error as SQLiteError where [.busy, .locked].contains(error.code.primary) && Date() < deadline {
                usleep(delay + UInt32.random(in: 0...delay))
                delay = min(delay * 2, 100_000)
            } catch let error as MigrationError {
                if case .failed(_, let inner) = error, [.busy, .locked].contains(inner.code.primary), Date() < deadline {
                    usleep(delay + UInt32.random(in: 0...delay))
                    delay = min(delay * 2, 100_000)
                    continue
                }
                throw error
            }
        }
    }

    /// Sets up a connection: a 32 MiB page cache, and deleted content zeroed.
    ///
    /// The cache (the default is 2 MiB): imports and merges of millions of rows revisit
    /// B-tree pages; memory stays well under 100 MB. https://sqlite.org/pragma.html#pragma_cache_size
    /// Deleted and overwritten content is zeroed (`secure_delete`), so an erased user's bytes do not
    /// linger in free space (docs/erasure.md §3): https://sqlite.org/pragma.html#pragma_secure_delete
    private static func configure(_ connection: Connection) throws {
        try connection.execute(sql: "PRAGMA cache_size = -32768")
        try connection.execute(sql: "PRAGMA secure_delete = ON")
    }

    private static func openReadOnly(path: String, migrator: Migrator, wallClock: any WallClock) throws -> CatalogStore {
        if path == ":memory:" {
            return try open(path: path, access: .write, wallClock: wallClock, migrations: migrator.migrations)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CatalogError(
                .noInput, "no catalog database, \(path)",
                hint: "create it with 'catalog init' or 'catalog import FILE', or check --db / CATALOG_DB", reason: .databaseMissing)
        }
        if isDirectory.boolValue {
            throw CatalogError(.cantCreate, "the database path is a directory, \(path)", hint: "pass a file path with --db")
        }
        let connection = try readOnlyConnection(path)
        try configure(connection)
        let pending = try migrator.pending(connection)
        if !pending.isEmpty {
            // Written by an older binary: migrate once, if this user may.
            if access(path, W_OK) == 0 && access(CatalogFiles.directory(of: path).isEmpty ? "." : CatalogFiles.directory(of: path), W_OK) == 0 {
                return try open(path: path, access: .write, wallClock: wallClock, migrations: migrator.migrations)
            }
            throw CatalogError(
                .cantCreate,
                "the database needs migration \(pending.map { String(format: "%04d", $0.version) }.joined(separator: ", ")) and cannot be written here, \(path)",
                hint: "run 'catalog migrate' once as a user who can write the database")
        }
        return CatalogStore(connection: connection, path: path, wallClock: wallClock, isReadOnly: true)
    }

    /// A read-only connection to the existing database at `path`.
    ///
    /// A WAL database needs `<path>-shm` beside it. On a read-only file system nobody can be writing, so
    /// SQLite may read it as immutable (https://sqlite.org/wal.html#readonly); in a read-only directory
    /// someone else may be writing, so that would not be safe: the error says what is wrong instead.
    /// - Throws: `CatalogError.cantCreate` (73) naming the directory and the fix when `<path>-shm` cannot
    ///   be created; `SQLiteError` for anything else.
    static func readOnlyConnection(_ path: String) throws -> Connection {
        do {
            return try Connection(path: path, mode: .readOnly, acceptDatabase: Migrator.refuseForeign)
        } catch let error as SQLiteError where [.cantOpen, .readOnly].contains(error.code.primary) {
            guard CatalogFiles.isOnReadOnlyFileSystem(path) else {
                throw CatalogError(
                    .cantCreate,
                    "cannot read the database: SQLite needs to create \(path)-shm beside a WAL database and the directory \(CatalogFiles.directory(of: path).isEmpty ? "." : CatalogFiles.directory(of: path)) is not writable by this user (\(error.message)), \(path)",
                    hint: "run as the database's owner, or give this user write access to the directory (the database itself can stay read-only)")
            }
            return try Connection(path: path, mode: .immutable, acceptDatabase: Migrator.refuseForeign)
        }
    }

    /// A connection of its own to this store's database, outside this store's transactions: the import's
    /// pre-image reads the last committed state through one, the state digest's cache is written through
    /// one.
    ///
    /// The only connections opened besides the store's own (and ``DataVersionProbe``'s).
    /// - Throws: `SQLiteError` when it cannot be opened.
    func sideConnection(mode: Connection.Mode, busyTimeoutMilliseconds: Int32 = 5000) throws -> Connection {
        try Connection(path: path, mode: mode, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
    }

    /// Runs `body` in one write transaction that `body` commits or rolls back, mapping SQLite failures
    /// to `CatalogError`.
    func transaction<T>(_ body: () throws -> TransactionOutcome<T>) throws -> T {
        guard !isReadOnly else { preconditionFailure("a write on a store opened for reading") }
        do {
            return try connection.transaction(body)
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        }
    }

    /// Runs `body` in one write transaction, committed when it returns.
    func write<T>(_ body: () throws -> T) throws -> T {
        try transaction { .commit(try body()) }
    }

    /// Runs `body` in one read transaction, mapping SQLite failures to `CatalogError`.
    ///
    /// Inside another transaction `body` joins it (so several reads can share one snapshot, as
    /// `Catalog.read` does).
    package func read<T>(_ body: () throws -> T) throws -> T {
        if connection.isInTransaction { return try body() }
        do {
            return try connection.readTransaction(body)
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        }
    }

    // MARK: - Node identity and clock

    /// This database's node id: the last tie-breaker of every last-writer-wins stamp it writes.
    public func nodeID() throws -> String {
        try read { try currentNode() }
    }

    /// The node id, inside a transaction.
    package func currentNode() throws -> String {
        try metaTable.value("node") ?? ""
    }

    /// Sets this database's node id (`catalog init --node ID`).
    /// - Parameter node: 1–64 characters of `A–Z a–z 0–9 . _ -`.
    /// - Throws: `CatalogError.usage` for an invalid id.
    public func setNodeID(_ node: String) throws {
        _ = try NodeID(validating: node)
        try write {
            try metaTable.set("node", node)
        }
    }

    /// The hybrid logical clock's persisted state.
    func loadClock() throws -> HybridLogicalClock {
        try metaTable.clock()
    }

    /// Persists the clock's state.
    ///
    /// Call inside the write transaction that used it.
    func storeClock(_ clock: HybridLogicalClock) throws {
        try metaTable.setClock(clock)
    }

    /// The stamp a local write would get now, without persisting it (persist with ``storeClock(_:)``).
    func peekLocalStamp() throws -> HLCStamp {
        let next = try loadClock().sent(now: wallClock.nowMilliseconds())
        return HLCStamp(wallMilliseconds: next.wall, counter: next.counter, node: try currentNode())
    }

    /// Issues a fresh stamp for a local write.
    ///
    /// Call inside a write transaction.
    func issueLocalStamp() throws -> HLCStamp {
        let stamp = try peekLocalStamp()
        try storeClock(HybridLogicalClock(wall: stamp.wallMilliseconds, counter: stamp.counter))
        return stamp
    }

    /// Moves the clock past a merged remote stamp, so later local writes order after it (docs/merge-rules.md §5).
    func observeRemoteStamp(wall: Int64, counter: Int64) throws {
        try storeClock(loadClock().received(wall: wall, counter: counter, now: wallClock.nowMilliseconds()))
    }

    // MARK: - Change sequence

    /// The largest change sequence number in use (0 for an empty database): every row change takes
    /// the next one (docs/merge-rules.md §7).
    ///
    /// Read from the two `seq` indexes, so it costs two B-tree descents.
    package func lastChangeSequence() throws -> Int64 {
        max(try landmarkTable.maxSeq(), try positionTable.maxSeq(), try erasureTable.maxSeq(), try metaTable.changeFloor())
    }

    /// The change sequence's high-water mark, for `status` and publishing.
    public func changeSequence() throws -> Int64 {
        try read { try lastChangeSequence() }
    }

    // MARK: - Migrations

    /// Every migration this binary knows, with when it was applied.
    public func migrationStatus() throws -> [MigrationStatus] {
        try Self.migrationStatus(connection: connection, path: path)
    }

    /// The migrations of the database at `path`, read without applying or refusing anything (so a
    /// database with a changed or newer migration can still be listed).
    /// - Throws: `CatalogError` 66 when there is no database there, 73 when it is not a catalog database.
    public static func migrationStatus(path: String) throws -> [MigrationStatus] {
        guard path == ":memory:" || FileManager.default.fileExists(atPath: path) else {
            throw CatalogError(.noInput, "no catalog database, \(path)", hint: "create it with 'catalog init'", reason: .databaseMissing)
        }
        do {
            return try migrationStatus(connection: readOnlyConnection(path), path: path)
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        } catch let error as MigrationError {
            throw CatalogError(error, path: path)
        }
    }

    static func migrationStatus(connection: Connection, path: String) throws -> [MigrationStatus] {
        do {
            return try Migrator(migrations: Migration.embedded()).status(connection)
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        } catch let error as MigrationError {
            throw CatalogError(error, path: path)
        }
    }
}

@available(*, unavailable)
extension CatalogStore: Sendable {}

extension CatalogStore {
    /// Sets how long this store's statements wait for another connection's write lock (SQLite
    /// `busy_timeout`, https://sqlite.org/c3ref/busy_timeout.html), in ms.
    package func setBusyTimeout(milliseconds: Int32) { connection.setBusyTimeout(milliseconds: milliseconds) }

    /// `PRAGMA data_version` on this store's connection: it changes when another connection or process
    /// commits (https://sqlite.org/pragma.html#pragma_data_version).
    ///
    /// Call inside a read.
    package func dataVersion() throws -> Int64 { try connection.scalarInt(sql: "PRAGMA data_version") ?? 0 }

    /// The highest applied migration.
    ///
    /// Call inside a read.
    package func schemaVersion() throws -> Int { Int(try connection.scalarInt(sql: "SELECT max(version) FROM schema_migrations") ?? 0) }

    /// The database file's size in bytes (page count × page size; the WAL not included).
    ///
    /// Call inside a read.
    package func databaseBytes() throws -> Int64 {
        try connection.scalarInt(sql: "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()") ?? 0
    }
}

/// A read-only connection of its own to a catalog database that reports `PRAGMA data_version`
/// (https://sqlite.org/pragma.html#pragma_data_version): the observers' monitor asks it whether another
/// connection or process committed.
package final class DataVersionProbe {
    private let connection: Connection
    /// The wal-index's first region as SQLite maps it (``WALIndexHeader``), or nil.
    private let walIndex: UnsafeRawPointer?

    /// Opens `path` read-only (as ``CatalogStore/readOnlyConnection(_:)`` does).
    /// - Throws: `CatalogError` or `SQLiteError` when it cannot be opened.
    package init(path: String) throws {
        connection = try CatalogStore.readOnlyConnection(path)
        // A first read attaches the connection to the wal-index; only a WAL database has one (asking for it
        // otherwise would create a `-shm`).
        _ = try? connection.scalarInt(sql: "PRAGMA data_version")
        walIndex = (try? connection.scalarText(sql: "PRAGMA journal_mode")) == "wal" ? connection.walIndexRegion() : nil
    }

    /// The data version now, or nil when it cannot be read (the probe should then be opened again).
    package func version() -> Int64? { try? connection.scalarInt(sql: "PRAGMA data_version") }

    /// The wal-index header's first copy now, read from memory (no SQLite call, no system call; safe from any
    /// thread); nil when the database has no wal-index mapped (not WAL, opened immutable).
    package func walIndexHeader() -> WALIndexHeader? { walIndex.map(WALIndexHeader.init(reading:)) }
}
