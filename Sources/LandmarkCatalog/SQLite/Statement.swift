internal import CSQLite

/// A value bound to or read from SQLite.
package enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A prepared statement: bind, step, read columns.
///
/// Finalized when released.
package final class Statement {
    let handle: OpaquePointer
    /// The SQL text it was prepared from.
    let sql: String
    private unowned let connection: Connection

    init(connection: Connection, sql: String) throws {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK else { throw connection.lastError(sql: sql) }
        guard let stmt else {
            throw SQLiteError(code: .misuse, message: "empty statement", sql: sql)
        }
        self.handle = stmt
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and clears its bindings.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds values to parameters 1…n.
    /// - Throws: `SQLiteError` if the count does not match or a bind fails.
    package func bind(_ values: [SQLValue]) throws {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw SQLiteError(code: .misuse, message: "\(values.count) arguments for \(expected) parameters", sql: sql)
        }
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Binds one value to parameter `index` (1-based).
    @inline(__always)
    func bind(_ value: SQLValue, at index: Int32) throws {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(handle, index)
        case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
        case .real(let v): rc = sqlite3_bind_double(handle, index, v)
        case .text(var v):
            rc = Self.bindText(handle, index, &v)
        case .blob(let v):
            rc = v.withUnsafeBytes { buffer in
                sqlite3_bind_blob(handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), csqlite_transient())
            }
        }
        guard rc == SQLITE_OK else { throw connection.lastError(sql: sql) }
    }

    @inline(__always) func bind(_ value: Int64, at index: Int32) throws {
        guard sqlite3_bind_int64(handle, index, value) == SQLITE_OK else { throw connection.lastError(sql: sql) }
    }
    @inline(__always) func bind(_ value: Double, at index: Int32) throws {
        guard sqlite3_bind_double(handle, index, value) == SQLITE_OK else { throw connection.lastError(sql: sql) }
    }
    @inline(__always) func bind(_ value: String?, at index: Int32) throws {
        guard var value else {
            guard sqlite3_bind_null(handle, index) == SQLITE_OK else { throw connection.lastError(sql: sql) }
            return
        }
        let rc = Self.bindText(handle, index, &value)
        guard rc == SQLITE_OK else { throw connection.lastError(sql: sql) }
    }

    /// Binds UTF-8 text; SQLite copies it (`SQLITE_TRANSIENT`).
    @inline(__always)
    static func bindText(_ handle: OpaquePointer, _ index: Int32, _ value: inout String) -> Int32 {
        value.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                // An empty string still needs a non-NULL pointer, or SQLite binds NULL.
                guard let base = chars.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, nil) }
                return sqlite3_bind_text(handle, index, base, Int32(chars.count), csqlite_transient())
            }
        }
    }

    /// Binds UTF-8 bytes as text without copying (`SQLITE_STATIC`): `bytes` must stay valid and unchanged
    /// until the statement is stepped and reset.
    @inline(__always)
    func bindStatic(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int32) throws {
        let rc = bytes.withMemoryRebound(to: CChar.self) { chars -> Int32 in
            guard let base = chars.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, nil) }
            return sqlite3_bind_text(handle, index, base, Int32(chars.count), nil)
        }
        guard rc == SQLITE_OK else { throw connection.lastError(sql: sql) }
    }

    /// Steps once.
    ///
    /// Returns true when a row is available, false when done.
    /// - Throws: `SQLiteError` with the extended code, SQLite's message and this statement's SQL.
    @discardableResult
    package func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.lastError(sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Runs to completion, discarding rows, then resets (bindings are kept, so a loop rebinds only what changes).
    func run() throws {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Resets the statement, keeping its bindings.
    func rewind() { sqlite3_reset(handle) }

    /// Columns in a result row; the accessors below take 0-based column indexes and read the current row.
    var columnCount: Int { Int(sqlite3_column_count(handle)) }
    func columnName(_ i: Int) -> String { String(cString: sqlite3_column_name(handle, Int32(i))) }
    func isNull(_ i: Int) -> Bool { sqlite3_column_type(handle, Int32(i)) == SQLITE_NULL }
    @inline(__always) package func int(_ i: Int) -> Int64 { sqlite3_column_int64(handle, Int32(i)) }
    package func optionalInt(_ i: Int) -> Int64? { isNull(i) ? nil : int(i) }
    @inline(__always) func double(_ i: Int) -> Double { sqlite3_column_double(handle, Int32(i)) }
    func optionalDouble(_ i: Int) -> Double? { isNull(i) ? nil : double(i) }
    /// Column `i` as text, or nil when NULL.
    package func text(_ i: Int) -> String? {
        guard let p = sqlite3_column_text(handle, Int32(i)) else { return nil }
        let n = Int(sqlite3_column_bytes(handle, Int32(i)))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }
    /// Column `i` as UTF-8 bytes without copying, valid until the next step or reset; nil when NULL.
    @inline(__always)
    package func textBytes(_ i: Int) -> UnsafeBufferPointer<UInt8>? {
        guard let p = sqlite3_column_text(handle, Int32(i)) else { return nil }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, Int32(i))))
    }

    /// Column `i` as a value of its storage class.
    func value(_ i: Int) -> SQLValue {
        switch sqlite3_column_type(handle, Int32(i)) {
        case SQLITE_INTEGER: return .integer(int(i))
        case SQLITE_FLOAT: return .real(double(i))
        case SQLITE_TEXT: return .text(text(i) ?? "")
        case SQLITE_BLOB:
            let n = Int(sqlite3_column_bytes(handle, Int32(i)))
            guard n > 0, let p = sqlite3_column_blob(handle, Int32(i)) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: p, count: n)))
        default: return .null
        }
    }
}

@available(*, unavailable)
extension Statement: Sendable {}
