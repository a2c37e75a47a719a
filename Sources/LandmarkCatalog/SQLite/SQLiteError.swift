internal import CSQLite
import Foundation

/// An error reported by SQLite, with the extended result code, SQLite's message and the SQL that failed.
///
/// The code is an open struct, not a closed enum, so codes SQLite adds later still fit
/// (https://sqlite.org/rescode.html). Bound values are never printed.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An SQLite result code, primary (`SQLITE_BUSY` = 5) or extended (`SQLITE_CONSTRAINT_UNIQUE` = 2067).
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// The primary code: the low 8 bits of an extended code.
        public var primary: Code { Code(rawValue: rawValue & 0xFF) }

        public static let error = Code(rawValue: SQLITE_ERROR)
        public static let busy = Code(rawValue: SQLITE_BUSY)
        public static let locked = Code(rawValue: SQLITE_LOCKED)
        public static let readOnly = Code(rawValue: SQLITE_READONLY)
        public static let ioError = Code(rawValue: SQLITE_IOERR)
        public static let corrupt = Code(rawValue: SQLITE_CORRUPT)
        public static let full = Code(rawValue: SQLITE_FULL)
        public static let cantOpen = Code(rawValue: SQLITE_CANTOPEN)
        public static let constraint = Code(rawValue: SQLITE_CONSTRAINT)
        public static let notADatabase = Code(rawValue: SQLITE_NOTADB)
        public static let misuse = Code(rawValue: SQLITE_MISUSE)
        public static let tooBig = Code(rawValue: SQLITE_TOOBIG)
    }

    /// The extended result code.
    public var code: Code
    /// SQLite's own message (`sqlite3_errmsg`).
    public var message: String
    /// The SQL being run when the error happened, if any.
    public var sql: String?

    public init(code: Code, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// `SQLite error 19: NOT NULL constraint failed: landmarks.name — while executing `INSERT …``
    /// (the SQL on one line, at most 160 characters).
    public var description: String {
        var text = "SQLite error \(code.rawValue): \(message)"
        if let sql {
            let oneLine = sql.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
            text += " — while executing `\(oneLine.count > 160 ? oneLine.prefix(160) + "…" : oneLine)`"
        }
        return text
    }
}

extension String {
    package func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
