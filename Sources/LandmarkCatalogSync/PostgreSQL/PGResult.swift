internal import CLibPQ
import LandmarkCatalog

/// A value sent as a statement parameter (`$1`, `$2`, …) in PostgreSQL's text format; `nil` in the
/// parameter array is SQL NULL.
///
/// Every parameter is sent untyped (OID 0), so the server infers its type from where it stands, exactly
/// as for a quoted literal: `.integer(5)` serves an `int4` function argument and an `int8` column alike,
/// `.text` a `timestamptz` or `jsonb` one. Where the context says nothing (`SELECT $1`, a variadic
/// function) the value is `text`; cast with `$1::int8` there. The cases only choose the text form.
/// Text cannot hold a NUL byte in PostgreSQL; one is refused before anything is sent.
enum PGValue: Sendable, Hashable {
    case text(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case bytea([UInt8])

    /// The text form the server parses: `Infinity` / `NaN` for non-finite reals, `t` / `f`, `\x…` hex bytea.
    var textForm: String {
        switch self {
        case .text(let s): return s
        case .integer(let v): return String(v)
        case .real(let v):
            if v.isNaN { return "NaN" }
            if v.isInfinite { return v < 0 ? "-Infinity" : "Infinity" }
            return "\(v)"  // the shortest text that reads back as the same Double
        case .boolean(let v): return v ? "t" : "f"
        case .bytea(let bytes):
            let digits = Array("0123456789abcdef".utf8)
            var out: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
            out.reserveCapacity(2 + bytes.count * 2)
            for byte in bytes {
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0xF)])
            }
            return String(decoding: out, as: UTF8.self)
        }
    }
}

extension PGValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral
{
    init(stringLiteral value: String) { self = .text(value) }
    init(integerLiteral value: Int64) { self = .integer(value) }
    init(floatLiteral value: Double) { self = .real(value) }
    init(booleanLiteral value: Bool) { self = .boolean(value) }
}

/// The result of one statement (`PGresult`): rows of text-format values, or a command's status.
///
/// Cleared (`PQclear`) when released; it does not depend on the connection staying open.
///
/// Accessors take 0-based row and column indexes; an index out of range is a bug and traps.
/// libpq "Retrieving Query Result Information": https://www.postgresql.org/docs/15/libpq-exec.html#LIBPQ-EXEC-SELECT-INFO.
final class PGResult {
    let handle: OpaquePointer

    /// Takes ownership of `handle`, a `PGresult` from `PQgetResult`.
    init(owning handle: OpaquePointer) { self.handle = handle }
    deinit { PQclear(handle) }

    /// Number of rows (`PQntuples`).
    var rowCount: Int { Int(PQntuples(handle)) }
    /// Number of columns (`PQnfields`).
    var columnCount: Int { Int(PQnfields(handle)) }
    /// Column names in order (`PQfname`).
    var columnNames: [String] { (0..<columnCount).map(columnName) }
    /// The name of column `column`.
    func columnName(_ column: Int) -> String {
        checkColumn(column)
        return String(cString: PQfname(handle, Int32(column)))
    }
    /// The index of the column named `name` (case-sensitive, as the server spelled it), or nil.
    func columnIndex(_ name: String) -> Int? {
        let index = Int(PQfnumber(handle, "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""))
        return index >= 0 ? index : nil
    }
    /// The command tag (`PQcmdStatus`): `INSERT 0 3`, `COPY 100000`, `COMMIT`, `ROLLBACK`.
    var commandStatus: String { String(cString: PQcmdStatus(handle)) }
    /// Rows affected by INSERT / UPDATE / DELETE / MERGE / COPY / FETCH (`PQcmdTuples`); 0 for others.
    var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    /// Whether the value at (`row`, `column`) is SQL NULL.
    func isNull(_ row: Int, _ column: Int) -> Bool {
        checkCell(row, column)
        return PQgetisnull(handle, Int32(row), Int32(column)) != 0
    }

    /// The value's text-format UTF-8 bytes without copying, valid while this result lives; nil for NULL.
    func bytes(_ row: Int, _ column: Int) -> UnsafeBufferPointer<UInt8>? {
        guard !isNull(row, column), let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        let count = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return UnsafeBufferPointer(start: UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self), count: count)
    }

    /// The bytes of row `row`'s values in text format (`PQgetlength` summed; 0 for NULLs): what the
    /// row cost to receive, near enough (the wire adds 4 bytes a value).
    func rowLength(_ row: Int) -> Int {
        precondition(row >= 0 && row < rowCount, "row \(row) out of 0..<\(rowCount)")
        var total = 0
        for column in 0..<Int32(columnCount) { total += Int(PQgetlength(handle, Int32(row), column)) }
        return total
    }

    /// The value as text (its text format: `t` for true, `\x…` for bytea); nil for NULL.
    func text(_ row: Int, _ column: Int) -> String? {
        bytes(row, column).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The value as a 64-bit integer; nil for NULL.
    /// - Throws: `PGError` (`.client`) when the text is not a decimal integer in range (a `numeric`
    ///   with a fraction, say).
    func int64(_ row: Int, _ column: Int) throws -> Int64? {
        guard let text = text(row, column) else { return nil }
        guard let value = Int64(text) else {
            throw PGError(kind: .client, message: "column \(columnName(column)) holds \(text.prefix(40)), not a 64-bit integer")
        }
        return value
    }

    /// The value as a boolean (`t` / `f`); nil for NULL.
    /// - Throws: `PGError` (`.client`) for any other text.
    func bool(_ row: Int, _ column: Int) throws -> Bool? {
        switch text(row, column) {
        case nil: return nil
        case "t": return true
        case "f": return false
        case let other?: throw PGError(kind: .client, message: "column \(columnName(column)) holds \(other.prefix(40)), not a boolean")
        }
    }

    private func checkColumn(_ column: Int) {
        precondition(column >= 0 && column < columnCount, "column \(column) out of 0..<\(columnCount)")
    }
    private func checkCell(_ row: Int, _ column: Int) {
        precondition(row >= 0 && row < rowCount, "row \(row) out of 0..<\(rowCount)")
        checkColumn(column)
    }
}

@available(*, unavailable)
extension PGResult: Sendable {}

/// One row of a streamed result (`PGConnection.forEachRow`): a view into its batch's `PGResult`.
///
/// Keeping a row keeps its whole batch in memory.
struct PGRow {
    /// The batch holding this row.
    let result: PGResult
    /// The row's index in `result`.
    let index: Int

    var columnCount: Int { result.columnCount }
    func isNull(_ column: Int) -> Bool { result.isNull(index, column) }
    func text(_ column: Int) -> String? { result.text(index, column) }
    func bytes(_ column: Int) -> UnsafeBufferPointer<UInt8>? { result.bytes(index, column) }
    func int64(_ column: Int) throws -> Int64? { try result.int64(index, column) }
    func bool(_ column: Int) throws -> Bool? { try result.bool(index, column) }
}

@available(*, unavailable)
extension PGRow: Sendable {}
