internal import CSQLite
import Foundation

/// One SQLite connection, set up for this tool: WAL journal, `busy_timeout` 5000 ms, foreign keys on,
/// `synchronous = NORMAL`, defensive mode.
///
/// Not thread-safe and deliberately not `Sendable`: one connection belongs to one task. Statements are
/// prepared once per SQL text and cached (GRDB's `StatementCache` is the model); callers reach them only
/// through ``withStatement(sql:_:_:)`` and the row helpers, which always reset the statement, so no call
/// site can leave a read open (an open read keeps the WAL from being checkpointed).
package final class Connection {
    let handle: OpaquePointer
    private var cache: [String: Statement] = [:]
    /// The path given at open (`:memory:` for an in-memory database).
    let path: String

    /// How a connection opens its file.
    enum Mode: Equatable {
        /// Read and write, creating the file if needed; switches a new database to WAL and 16 KiB pages.
        case readWrite
        /// Read only (the file must exist). SQLite still needs to create `-shm` beside a WAL database.
        case readOnly
        /// Read only, with SQLite's `immutable=1` URI parameter: no locks and no `-shm`, for a database on
        /// read-only media that nobody can be writing (https://sqlite.org/wal.html#readonly).
        case immutable
    }

    /// Opens (creating if needed) the database at `path` and configures it.
    ///
    /// - Parameters:
    ///   - path: a file path, or `":memory:"`.
    ///   - mode: read-write (the default), read-only, or immutable.
    ///   - busyTimeoutMilliseconds: how long a statement waits for another connection's lock, in ms.
    ///   - acceptDatabase: called right after open, before anything is changed (the journal mode, say),
    ///     to refuse a file the caller must not touch; it throws to refuse.
    /// - Throws: `SQLiteError` when the file cannot be opened or is not a database
    ///   (`SQLITE_NOTADB`, found by reading `sqlite_master` right after open), or when WAL cannot be enabled.
    init(
        path: String, mode: Mode = .readWrite, busyTimeoutMilliseconds: Int32 = 5000,
        acceptDatabase: (Connection) throws -> Void = { _ in }
    ) throws {
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        var name = path
        switch mode {
        case .readWrite: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        case .immutable:
            flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
            name = "file:" + Self.uriEscaped(path) + "?immutable=1"
        }
        let rc = sqlite3_open_v2(name, &db, flags, nil)
        guard let db else {
            throw SQLiteError(code: .init(rawValue: rc), message: "cannot open database: out of memory")
        }
        guard rc == SQLITE_OK else {
            let error = SQLiteError(
                code: .init(rawValue: sqlite3_extended_errcode(db)),
                message: String(cString: sqlite3_errmsg(db)))
            sqlite3_close_v2(db)
            throw error
        }
        self.handle = db
        self.path = path
        // Every stored property is set from here on, so a throw runs `deinit`, which finalizes the
        // statements and closes the handle (closing it here as well would close it twice).
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        _ = csqlite_db_config_defensive(db, 1)
        // Fails with SQLITE_NOTADB now rather than at the first real query.
        try execute(sql: "SELECT count(*) FROM sqlite_master")
        try acceptDatabase(self)
        if mode == .readWrite {
            // 16 KiB pages for a new database (ignored for an existing one): rows of ~1 KiB, and a
            // quarter of the page I/O of 4 KiB pages when millions are written. Must precede WAL.
            // https://sqlite.org/pragma.html#pragma_page_size
            try execute(sql: "PRAGMA page_size = 16384")
            let mode = try scalarText(sql: "PRAGMA journal_mode = WAL")
            if mode?.lowercased() != "wal" && path != ":memory:" {
                throw SQLiteError(
                    code: .error, message: "journal_mode is \(mode ?? "unknown"), expected wal",
                    sql: "PRAGMA journal_mode = WAL")
            }
        }
        try execute(sql: "PRAGMA foreign_keys = ON")
        if mode == .readWrite { try execute(sql: "PRAGMA synchronous = NORMAL") }
    }

    /// Percent-escapes what an SQLite URI filename cannot hold literally (https://sqlite.org/uri.html).
    static func uriEscaped(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7F...:
                out += "%" + String(format: "%02X", byte)
            default:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return out
    }

    deinit {
        cache.removeAll()  // finalizes every statement before the handle closes
        sqlite3_close_v2(handle)
    }

    /// Defines the deterministic SQL function `name(text)` on this connection, computed by `body`: NULL
    /// for a NULL or non-text argument or a nil result (https://sqlite.org/c3ref/create_function.html).
    /// - Throws: ``SQLiteError`` when SQLite refuses the definition.
    func defineFunction(_ name: String, _ body: @escaping (String) -> String?) throws {
        let box = Unmanaged.passRetained(TextFunction(body)).toOpaque()
        let rc = sqlite3_create_function_v2(
            handle, name, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box,
            { context, count, values in
                guard let context, let user = sqlite3_user_data(context) else { return }
                let function = Unmanaged<TextFunction>.fromOpaque(user).takeUnretainedValue()
                guard count == 1, let value = values?[0], sqlite3_value_type(value) == SQLITE_TEXT, let text = sqlite3_value_text(value),
                    var result = function.body(String(cString: text))
                else { return sqlite3_result_null(context) }
                if result.isEmpty { return sqlite3_result_text(context, "", 0, nil) }
                result.withUTF8 { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { sqlite3_result_text(context, $0.baseAddress, Int32($0.count), csqlite_transient()) }
                }
            }, nil, nil, { user in user.map { Unmanaged<TextFunction>.fromOpaque($0).release() } })
        guard rc == SQLITE_OK else { throw lastError(sql: nil) }
    }

    /// The first 32 KiB region of this connection's wal-index (its `-shm` file,
    /// https://sqlite.org/walformat.html) as SQLite itself maps it for this process (the VFS's `xShmMap`,
    /// never extending the file), or nil: no WAL, nothing mapped yet, a VFS without shared memory.
    ///
    /// Valid while this connection is open. No descriptor of the file is opened here: closing one would drop
    /// every POSIX lock this process holds on it, SQLite's included.
    func walIndexRegion() -> UnsafeRawPointer? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK, let file,
            let methods = file.pointee.pMethods, methods.pointee.iVersion >= 2, let map = methods.pointee.xShmMap
        else { return nil }
        var region: UnsafeMutableRawPointer?
        guard map(file, 0, 32_768, 0, &region) == SQLITE_OK, let region else { return nil }
        return UnsafeRawPointer(region)
    }

    /// The cached prepared statement for `sql`, prepared on first use, reset.
    private func cachedStatement(sql: String) throws -> Statement {
        if let statement = cache[sql] {
            statement.reset()
            return statement
        }
        let statement = try Statement(connection: self, sql: sql)
        cache[sql] = statement
        return statement
    }

    /// Runs `body` with the cached statement for `sql`, bound to `arguments` (none: `body` binds), and
    /// resets it afterwards on every path, so a read never stays open.
    ///
    /// A statement that failed is evicted from the cache.
    /// - Throws: `SQLiteError` naming the SQL when it does not compile or a step fails; whatever `body` throws.
    func withStatement<T>(sql: String, _ arguments: [SQLValue] = [], _ body: (Statement) throws -> T) throws -> T {
        let statement = try cachedStatement(sql: sql)
        defer { statement.reset() }
        do {
            if !arguments.isEmpty { try statement.bind(arguments) }
            return try body(statement)
        } catch let error as SQLiteError {
            cache[sql] = nil
            throw error
        }
    }

    /// Calls `body` with each row of `sql`, then resets the statement.
    package func forEachRow(sql: String, _ arguments: [SQLValue] = [], _ body: (Statement) throws -> Void) throws {
        try withStatement(sql: sql, arguments) { s in
            while try s.step() { try body(s) }
        }
    }

    /// `map` of the first row of `sql`, or nil when there is none.
    func firstRow<T>(sql: String, _ arguments: [SQLValue] = [], _ map: (Statement) throws -> T) throws -> T? {
        try withStatement(sql: sql, arguments) { s in try s.step() ? map(s) : nil }
    }

    /// Prepares a statement that is not cached (finalized when released): for long scans that run
    /// beside cached statements of the same SQL.
    package func makeStatement(sql: String) throws -> Statement {
        try Statement(connection: self, sql: sql)
    }

    /// Runs one statement with the given arguments, discarding rows.
    func execute(sql: String, _ arguments: [SQLValue] = []) throws {
        try withStatement(sql: sql, arguments) { s in while try s.step() {} }
    }

    /// Runs a script of several statements one by one, so an error names the failing statement.
    ///
    /// Used for migrations. Statements are not cached.
    func executeScript(sql script: String) throws {
        var remaining = Array(script.utf8CString)
        try remaining.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var cursor: UnsafePointer<CChar>? = UnsafePointer(base)
            while let start = cursor, start.pointee != 0 {
                var stmt: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let rc = sqlite3_prepare_v2(handle, start, -1, &stmt, &tail)
                let text =
                    tail.map { String(decoding: UnsafeRawBufferPointer(start: start, count: $0 - start), as: UTF8.self) }
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
    func scalarText(sql: String, _ arguments: [SQLValue] = []) throws -> String? {
        try firstRow(sql: sql, arguments) { $0.text(0) } ?? nil
    }

    /// The first column of the first row, as an integer (nil for no row or NULL).
    func scalarInt(sql: String, _ arguments: [SQLValue] = []) throws -> Int64? {
        try firstRow(sql: sql, arguments) { $0.optionalInt(0) } ?? nil
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction; `body` decides whether it commits or rolls back.
    ///
    /// `IMMEDIATE` takes the write lock at once so the busy timeout applies; a deferred transaction
    /// that upgrades later fails with `SQLITE_BUSY` without waiting (see GRDB's `inTransaction`).
    /// - Returns: the value `body` returned with its decision.
    /// - Throws: the first error, from `body` or from `BEGIN` / `COMMIT`; the transaction is rolled back.
    func transaction<T>(_ body: () throws -> TransactionOutcome<T>) throws -> T {
        try execute(sql: "BEGIN IMMEDIATE")
        do {
            switch try body() {
            case .commit(let value):
                try execute(sql: "COMMIT")
                return value
            case .rollback(let value):
                try execute(sql: "ROLLBACK")
                return value
            }
        } catch {
            if sqlite3_get_autocommit(handle) == 0 {
                try? execute(sql: "ROLLBACK")  // the first error is the one worth reporting
            }
            throw error
        }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction, committed when it returns, rolled back when it throws.
    func writeTransaction<T>(_ body: () throws -> T) throws -> T {
        try transaction { .commit(try body()) }
    }

    /// Runs `body` in a deferred read transaction, so every read sees one snapshot.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute(sql: "BEGIN DEFERRED")
        defer { if sqlite3_get_autocommit(handle) == 0 { try? execute(sql: "ROLLBACK") } }
        return try body()
    }

    /// Sets how long a statement waits for another connection's lock, in ms.
    func setBusyTimeout(milliseconds: Int32) { sqlite3_busy_timeout(handle, milliseconds) }

    /// Whether a transaction is open.
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The rowid of the last inserted row (`sqlite3_last_insert_rowid`); an upsert that updates leaves it.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Sets what `lastInsertRowID` reports until the next insert.
    func setLastInsertRowID(_ value: Int64) { sqlite3_set_last_insert_rowid(handle, value) }

    /// Rows changed by the last INSERT / UPDATE / DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    func lastError(sql: String?) -> SQLiteError {
        SQLiteError(
            code: .init(rawValue: sqlite3_extended_errcode(handle)),
            message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}

/// What a transaction's body decided: keep its writes or undo them (a dry run), with its result.
enum TransactionOutcome<T> {
    case commit(T)
    case rollback(T)
}

@available(*, unavailable)
extension Connection: Sendable {}

/// A SQL function's body, kept alive by SQLite until the connection closes (``Connection/defineFunction(_:_:)``).
private final class TextFunction {
    let body: (String) -> String?
    init(_ body: @escaping (String) -> String?) { self.body = body }
}
