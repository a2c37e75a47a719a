import Foundation

/// The catalog's repository: every read and write the CLI needs, named by intent, each write one
/// `BEGIN IMMEDIATE` transaction. Owns one SQLite connection; not `Sendable`.
///
/// ```swift
/// let store = try CatalogStore.open(path: "/var/lib/catalog.sqlite")
/// let summary = try store.importLandmarks(from: .file("landmarkData.json"))
/// let pages = try store.featuredLandmarks()
/// ```
public final class CatalogStore {
    /// The underlying connection (for tests and tools; the CLI never writes SQL).
    public let connection: Connection
    /// The database file path.
    public let path: String
    /// The wall clock stamps are drawn from (injected in tests).
    public let wallClock: any WallClock

    init(connection: Connection, path: String, wallClock: any WallClock) {
        self.connection = connection
        self.path = path
        self.wallClock = wallClock
    }

    /// Opens the database at `path`, creating it and its parent directories as needed, and applies every
    /// pending migration compiled into this binary.
    ///
    /// - Parameters:
    ///   - path: a file path, or `":memory:"`.
    ///   - wallClock: where the hybrid logical clock reads physical time.
    /// - Throws: `CatalogError` — 73 when the directory or file cannot be created or is not a catalog
    ///   database, 73 when the database is newer than this binary or a migration changed, 75 when busy.
    public static func open(path: String, wallClock: any WallClock = SystemClock(),
                            migrations: [Migration]? = nil) throws -> CatalogStore {
        guard !path.isEmpty else {
            throw CatalogError(.usage, "the database path is empty", hint: "pass a file path with --db or CATALOG_DB")
        }
        if path != ":memory:" {
            let directory = Self.directory(of: path)
            if !directory.isEmpty {
                do {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                } catch {
                    throw CatalogError(.cantCreate, "cannot create the database directory \(directory): \(error.localizedDescription)")
                }
            }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                throw CatalogError(.cantCreate, "the database path is a directory, \(path)", hint: "pass a file path with --db")
            }
        }
        do {
            let connection = try Connection(path: path, acceptDatabase: Migrator.refuseForeign)
            // A 32 MiB page cache (the default is 2 MiB): imports and merges of millions of rows revisit
            // B-tree pages; memory stays well under 100 MB. https://sqlite.org/pragma.html#pragma_cache_size
            try connection.execute(sql: "PRAGMA cache_size = -32768")
            let migrator = try Migrator(migrations: migrations ?? Migration.embedded())
            try migrator.migrate(connection)
            return CatalogStore(connection: connection, path: path, wallClock: wallClock)
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        }
    }

    /// The directory part of a path ("" when it has none): `a/b/c.sqlite` → `a/b`, `/c.sqlite` → `/`.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The default database path (SPEC §2): `$CATALOG_DB`, else `$XDG_DATA_HOME/landmark-catalog/catalog.sqlite`,
    /// else `~/.local/share/landmark-catalog/catalog.sqlite`. Never the working directory.
    /// - Parameter environment: the process environment.
    public static func defaultPath(environment: [String: String]) -> String {
        if let db = environment["CATALOG_DB"], !db.isEmpty { return db }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return xdg + "/landmark-catalog/catalog.sqlite"
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/share/landmark-catalog/catalog.sqlite"
    }

    /// Runs `body` in one write transaction, mapping SQLite failures to `CatalogError`.
    func write<T>(_ body: () throws -> T) throws -> T {
        do {
            return try connection.writeTransaction(body)
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        }
    }

    /// Runs `body` in one read transaction, mapping SQLite failures to `CatalogError`.
    func read<T>(_ body: () throws -> T) throws -> T {
        do {
            return try connection.readTransaction(body)
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        }
    }

    // MARK: - Node identity

    /// This database's node id: the last tie-breaker of every last-writer-wins stamp it writes.
    public func nodeID() throws -> String {
        try read { try connection.scalarText(sql: "SELECT value FROM catalog_meta WHERE key = 'node'") ?? "" }
    }

    /// Sets this database's node id (`catalog init --node ID`).
    /// - Parameter node: 1–64 characters of `A–Z a–z 0–9 . _ -`.
    /// - Throws: `CatalogError.usage` for an invalid id.
    public func setNodeID(_ node: String) throws {
        guard Self.isValidNodeID(node) else {
            throw CatalogError(.usage, "invalid node id '\(node)': use 1–64 characters of A–Z a–z 0–9 . _ -")
        }
        try write {
            try connection.execute(sql: "UPDATE catalog_meta SET value = ? WHERE key = 'node'", [.text(node)])
        }
    }

    static func isValidNodeID(_ node: String) -> Bool {
        !node.isEmpty && node.utf8.count <= 64
            && node.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 46 || $0 == 95 || $0 == 45 }
    }

    /// Issues a fresh HLC stamp for a local write. Call inside a write transaction.
    func localStamp() throws -> HLCStamp {
        let node = try connection.scalarText(sql: "SELECT value FROM catalog_meta WHERE key = 'node'") ?? ""
        return try HybridLogicalClock(db: connection, wall: wallClock).send(node: node)
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
            throw CatalogError(.noInput, "no catalog database, \(path)", hint: "create it with 'catalog init'")
        }
        do {
            return try migrationStatus(connection: Connection(path: path, acceptDatabase: Migrator.refuseForeign), path: path)
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        }
    }

    static func migrationStatus(connection: Connection, path: String) throws -> [MigrationStatus] {
        do {
            return try Migrator(migrations: Migration.embedded()).status(connection)
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        }
    }

    // MARK: - Featured

    static let landmarkColumns = """
        id, name, category, city, state, park, description, image_name, is_featured, is_favorite, latitude, longitude, extra
        """

    @inline(__always)
    static func landmark(from s: Statement) -> Landmark {
        Landmark(id: s.int(0), name: s.text(1) ?? "", category: s.text(2), city: s.text(3), state: s.text(4),
                 park: s.text(5), description: s.text(6), imageName: s.text(7), isFeatured: s.int(8) != 0,
                 isFavorite: s.int(9) != 0, latitude: s.double(10), longitude: s.double(11), extraJSON: s.text(12))
    }

    /// The featured landmarks in `id` order: the carousel's pages, page 0 first. Served from the partial
    /// index `landmarks_featured` (no table scan, no sort).
    public func featuredLandmarks() throws -> [Landmark] {
        var result: [Landmark] = []
        try forEachFeaturedLandmark { result.append($0) }
        return result
    }

    /// Calls `body` with each featured landmark in `id` order, without holding them all in memory.
    public func forEachFeaturedLandmark(_ body: (Landmark) throws -> Void) throws {
        try read {
            let s = try connection.cachedStatement(sql: Self.featuredSQL)
            defer { s.reset() }
            while try s.step() { try body(Self.landmark(from: s)) }
        }
    }

    static let featuredSQL = "SELECT \(landmarkColumns) FROM landmarks WHERE is_featured = 1 AND deleted = 0 ORDER BY id"

    /// The ids of the featured landmarks, in page order.
    public func featuredIDs() throws -> [Int64] {
        try read { try featuredIDsInTransaction() }
    }

    /// One live landmark by id, or nil (absent or a tombstone).
    public func landmark(id: Int64) throws -> Landmark? {
        try read {
            let s = try connection.cachedStatement(sql: "SELECT \(Self.landmarkColumns) FROM landmarks WHERE id = ? AND deleted = 0")
            defer { s.reset() }
            try s.bind(id, at: 1)
            return try s.step() ? Self.landmark(from: s) : nil
        }
    }

    /// Counts of live and tombstoned landmarks.
    public func landmarkCounts() throws -> (live: Int, tombstones: Int) {
        try read {
            let live = try connection.scalarInt(sql: "SELECT count(*) FROM landmarks WHERE deleted = 0") ?? 0
            let dead = try connection.scalarInt(sql: "SELECT count(*) FROM landmarks WHERE deleted = 1") ?? 0
            return (Int(live), Int(dead))
        }
    }
}

@available(*, unavailable)
extension CatalogStore: Sendable {}
