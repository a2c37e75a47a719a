import Foundation

/// The columns of one table, named once, in select-list order (GRDB's `Columns` idea without its
/// generics): `rawValue` is the column's index in ``selectList`` and `rawValue + 1` its parameter
/// number in generated statements, so rows are read and bound by name, never by a number typed by hand.
package protocol TableColumn: RawRepresentable, CaseIterable, Hashable, Sendable where RawValue == Int32, AllCases == [Self] {
    /// The table's name.
    static var tableName: String { get }
    /// The column's SQL name; by default the case's name in snake case (``snakeCased(_:)``).
    var sqlName: String { get }
}

extension TableColumn {
    /// The case's name in snake case: `lastSuccessAt` → `last_success_at`, `rowJSON` → `row_json`.
    package var sqlName: String { Self.snakeCased(String(describing: self)) }

    /// `camelCase` as `snake_case`: a word starts at an upper-case letter after a lower-case letter or a
    /// digit, or at the last capital of a run followed by a lower-case letter (`JSONValue` → `json_value`);
    /// a run of capitals is one word (`userID` → `user_id`).
    package static func snakeCased(_ name: String) -> String {
        let chars = Array(name)
        var out = ""
        for (i, c) in chars.enumerated() {
            if c.isUppercase, i > 0 {
                let previous = chars[i - 1]
                let nextIsLower = i + 1 < chars.count && chars[i + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) { out += "_" }
            }
            out += c.lowercased()
        }
        return out
    }

    /// Every column, comma-separated, in declaration order: `SELECT \(selectList) FROM …` reads
    /// column `c` at index `c.rawValue`.
    ///
    /// Made once per column type: building it (`String(describing:)` and snake-casing every case) was a
    /// measurable part of every `catalog serve` read, whose SQL interpolates it.
    package static var selectList: String {
        SelectLists.shared.list(for: Self.self) { allCases.map(\.sqlName).joined(separator: ", ") }
    }

    /// The parameter number `?N` that generated statements use for this column.
    package var parameter: Int32 { rawValue + 1 }

    /// `?N` for this column.
    package var placeholder: String { "?\(parameter)" }

    /// `INSERT INTO table (every column) VALUES (?1, ?2, …)`: the start of an upsert.
    package static var insertAllSQL: String {
        "INSERT INTO \(tableName) (\(selectList)) VALUES (\(allCases.map(\.placeholder).joined(separator: ", ")))"
    }
}

extension Statement {
    /// Column `c` of the current row (the statement selects `C.selectList`).
    @inline(__always) package func int<C: TableColumn>(_ c: C) -> Int64 { int(Int(c.rawValue)) }
    @inline(__always) package func double<C: TableColumn>(_ c: C) -> Double { double(Int(c.rawValue)) }
    @inline(__always) package func bool<C: TableColumn>(_ c: C) -> Bool { int(Int(c.rawValue)) != 0 }
    package func text<C: TableColumn>(_ c: C) -> String? { text(Int(c.rawValue)) }
    @inline(__always) package func textBytes<C: TableColumn>(_ c: C) -> UnsafeBufferPointer<UInt8>? { textBytes(Int(c.rawValue)) }
    package func isNull<C: TableColumn>(_ c: C) -> Bool { isNull(Int(c.rawValue)) }
    package func optionalInt<C: TableColumn>(_ c: C) -> Int64? { optionalInt(Int(c.rawValue)) }

    /// Binds to column `c`'s parameter.
    @inline(__always) package func bind<C: TableColumn>(_ value: Int64, to c: C) throws { try bind(value, at: c.parameter) }
    @inline(__always) package func bind<C: TableColumn>(_ value: Double, to c: C) throws { try bind(value, at: c.parameter) }
    @inline(__always) package func bind<C: TableColumn>(_ value: Bool, to c: C) throws { try bind(Int64(value ? 1 : 0), at: c.parameter) }
    @inline(__always) package func bind<C: TableColumn>(_ value: String?, to c: C) throws { try bind(value, at: c.parameter) }
    @inline(__always) package func bindNull<C: TableColumn>(to c: C) throws { try bind(.null, at: c.parameter) }
    @inline(__always) package func bindStatic<C: TableColumn>(_ bytes: UnsafeBufferPointer<UInt8>?, to c: C) throws {
        if let bytes { try bindStatic(bytes, at: c.parameter) } else { try bind(.null, at: c.parameter) }
    }
}

/// ``TableColumn/selectList`` by column type, made on first use.
private final class SelectLists: @unchecked Sendable {
    // Safe: `lists` is only touched under `lock`.
    static let shared = SelectLists()
    private let lock = NSLock()
    private var lists: [ObjectIdentifier: String] = [:]

    func list(for type: Any.Type, make: () -> String) -> String {
        let key = ObjectIdentifier(type)
        if let list = lock.withLock({ lists[key] }) { return list }
        let list = make()
        lock.withLock { lists[key] = list }
        return list
    }
}
