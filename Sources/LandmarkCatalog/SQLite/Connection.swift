internal import CSQLite
import Foundation

/// One SQLite connection, set up for this tool: WAL journal, `busy_timeout` 5000 ms, foreign keys on,
/// `synchronous = NORMAL`, defensive mode.
///
/// Not thread-safe and deliberately not `Sendable`: one connection belongs to one task.
/// Statements are prepared once per SQL text and cached (GRDB's `StatementCache` is the model).
public final class Connection {
    let handle: OpaquePointer
    private var cache: [String: Statement] = [:]
    /// The path given at open (`:memory:` for an in-memory database).
    public let path: String

    /// Opens (creating if needed) the database at `path` and configures it.
    ///
    /// - Parameters:
    ///   - path: a file path, or `":memory:"`.
    ///   - readOnly: open without write access (the file must exist).
    ///   - busyTimeoutMilliseconds: how long a statement waits for another connection's lock, in ms.
    /// - Throws: `SQLiteError` when the file cannot be opened or is not a database
    ///   (`SQLITE_NOTADB`, found by reading `sqlite_master` right after open), or when WAL cannot be enabled.
    ///   - acceptDatabase: called right after open, before anything is changed (the journal mode, say),
    ///     to refuse a file the caller must not touch; it throws to refuse.
    public init(path: String, readOnly: Bool = false, busyTimeoutMilliseconds: Int32 = 5000,
                acceptDatabase: (Connection) throws -> Void = { _ in }) throws {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE))
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard let db else {
            throw SQLiteError(code: .init(rawValue: rc), message: "cannot open database: out of memory")
        }
        guard rc == SQLITE_OK else {
            let error = SQLiteError(code: .init(rawValue: sqlite3_extended_errcode(db)),
                                    message: String(cString: sqlite3_errmsg(db)))
            sqlite3_close_v2(db)
            throw error
        }
        self.handle = db
        self.path = path
        do {
            sqlite3_extended_result_codes(db, 1)
            sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
            _ = csqlite_db_config_defensive(db, 1)
            // Fails with SQLITE_NOTADB now rather than at the first real query.
            try execute(sql: "SELECT count(*) FROM sqlite_master")
            try acceptDatabase(self)
            if !readOnly {
                // 16 KiB pages for a new database (ignored for an existing one): rows of ~1 KiB, and a
                // quarter of the page I/O of 4 KiB pages when millions are written. Must precede WAL.
                // https://sqlite.org/pragma.html#pragma_page_size
                try execute(sql: "PRAGMA page_size = 16384")
                let mode = try scalarText(sql: "PRAGMA journal_mode = WAL")
                if mode?.lowercased() != "wal" && path != ":memory:" {
                    throw SQLiteError(code: .error, message: "journal_mode is \(mode ?? "unknown"), expected wal",
                                      sql: "PRAGMA journal_mode = WAL")
                }
            }
            try execute(sql: "PRAGMA foreign_keys = ON")
            try execute(sql: "PRAGMA synchronous = NORMAL")
        } catch {
            // Every stored property is set, so throwing runs `deinit`, which finalizes the statements and
            // closes the handle; closing it here as well would close it twice.
            throw error
        }
    }

    deinit {
        cache.removeAll()  // finalizes every statement before the handle closes
        sqlite3_close_v2(handle)
    }

    /// Returns the cached prepared statement for `sql`, preparing it on first use.
    /// - Throws: `SQLiteError` naming the SQL when it does not compile, or when it is blank.
    public func cachedStatement(sql: String) throws -> Statement {
        if let statement = cache[sql] {
            statement.reset()
            return statement
        }
        let statement = try Statement(connection: self, sql: sql)
        cache[sql] = statement
        return statement
    }

    /// Prepares a statement that is not cached (finalized when released).
    public func makeStatement(sql: String) throws -> Statement {
        try Statement(connection: self, sql: sql)
    }

    /// Runs one statement with the given arguments, discarding rows.
    public func execute(sql: String, _ arguments: [SQLValue] = []) throws {
        let statement = try cachedStatement(sql: sql)
        do {
            try statement.bind(arguments)
            while try statement.step() {}
        } catch {
            cache[sql] = nil  // evicted after a failure
            throw error
        }
    }

    /// Runs a script of several statements one by one, so an error names the failing statement.
    /// Used for migrations. Statements are not cached.
    public func executeScript(sql script: String) throws {
        var remaining = Array(script.utf8CString)
        try remaining.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafePointer<CChar>? = UnsafePointer(buffer.baseAddress!)
            while let start = cursor, start.pointee != 0 {
                var stmt: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let rc = sqlite3_prepare_v2(handle, start, -1, &stmt, &tail)
                let text = tail.map { String(decoding: UnsafeRawBufferPointer(start: start, count: $0 - start), as: UTF8.self) }
                    ?? String(cString: start)
                guard rc == SQLITE_OK else {
                    throw lastError(sql: text)
                }
                cursor = tail
                guard let stmt else { continue }  // whitespace or a comment
                defer { sqlite3_finalize(stmt) }
                var step = sqlite3_step(stmt)
                while step == SQLITE_ROW { step = sqlite3_step(stmt) }
                guard step == SQLITE_DONE else { throw lastError(sql: text) }
            }
        }
    }

    /// The first column of the first row, as text (nil for no row or NULL).
    public func scalarText(sql: String, _ arguments: [SQLValue] = []) throws -> String? {
        let statement = try cachedStatement(sql: sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        return try statement.step() ? statement.text(0) : nil
    }

    /// The first column of the first row, as an integer (nil for no row or NULL).
    public func scalarInt(sql: String, _ arguments: [SQLValue] = []) throws -> Int64? {
        let statement = try cachedStatement(sql: sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        return try statement.step() ? statement.optionalInt(0) : nil
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: committed when `body` returns, rolled back when it throws.
    ///
    /// `IMMEDIATE` takes the write lock at once so the busy timeout applies; a deferred transaction
    /// that upgrades later fails with `SQLITE_BUSY` without waiting (see GRDB's `inTransaction`).
    /// - Throws: the first error, from `body` or from `BEGIN` / `COMMIT`.
    public func writeTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute(sql: "BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute(sql: "COMMIT")
            return result
        } catch {
            if sqlite3_get_autocommit(handle) == 0 {
                try? execute(sql: "ROLLBACK")  // the first error is the one worth reporting
            }
            throw error
        }
    }

    /// Runs `body` in a deferred read transaction, so every read sees one snapshot.
    public func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute(sql: "BEGIN DEFERRED")
        defer { if sqlite3_get_autocommit(handle) == 0 { try? execute(sql: "ROLLBACK") } }
        return try body()
    }

    /// Whether a transaction is open.
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The rowid of the last inserted row (`sqlite3_last_insert_rowid`); an upsert that updates leaves it.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Sets what `lastInsertRowID` reports until the next insert.
    public func setLastInsertRowID(_ value: Int64) { sqlite3_set_last_insert_rowid(handle, value) }

    /// Rows changed by the last INSERT / UPDATE / DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// Rows changed since the connection opened.
    public var totalChanges: Int { Int(sqlite3_total_changes(handle)) }

    func lastError(sql: String?) -> SQLiteError {
        SQLiteError(code: .init(rawValue: sqlite3_extended_errcode(handle)),
                    message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}

@available(*, unavailable)
extension Connection: Sendable {}
