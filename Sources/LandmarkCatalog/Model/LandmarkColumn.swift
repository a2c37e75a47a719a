/// The `landmarks` table, named once: the select list, the upserts, the JSON keys of every landmark
/// shape (Apple's `landmarkData.json`, snapshot rows, canonical content), the import decoder's key
/// table and every field of ``Landmark`` (its row decoder, `==`, `hash`, `Codable`) are all generated
/// from this enum and its table of fields, ``field``.
///
/// **A new landmark field** (docs/architecture.md §5.5) is three edits, and nothing else:
/// 1. a migration, `Migrations/NNNN_name.sql`: `ALTER TABLE landmarks ADD COLUMN name TEXT` (`INTEGER` for
///    an `Int?`, `REAL` for a `Double?`; the column's SQL name is the case's name in snake case);
/// 2. one case here, with its row in ``field`` (the switch is exhaustive: the compiler asks for it);
/// 3. one property of ``Landmark`` (optional, or with a default, so `Landmark.init` keeps its shape).
///
/// Text, boolean and number fields (`Int`, `Double`, optional or not) need nothing more: the import, the
/// store, `featured --json`, snapshots, the merge's content comparison and `JSONDecoder` / `JSONEncoder`
/// all walk this table (`LandmarkFieldTests` round-trips every case and compares ``Landmark``'s stored
/// properties with the table; `scripts/new-field-trial` does the three edits for real).
/// A new case may go anywhere in the list: every statement names its columns, the raw value is only
/// the column's index in the generated select list, and the JSON keys are written sorted. Keep `id` and
/// `name` first by convention.
package enum LandmarkColumn: Int32, TableColumn {
    case id, name, category, city, state, park, description, imageName, isFeatured, isFavorite, latitude, longitude
    /// Unknown keys kept from the input, as a compact JSON object text (NULL when none).
    case extra
    /// The last-writer-wins stamp (docs/merge-rules.md §1): ms since 1970-01-01 UTC, logical counter, node.
    case updatedMs, counter, node
    /// 1 for a tombstone.
    case deleted
    /// The local change sequence number of the row's last change (docs/merge-rules.md §7).
    case seq

    package static let tableName = "landmarks"

    package var sqlName: String { Self.sqlNames[Int(rawValue)] }

    /// Built once: these are read whenever a landmark statement is made.
    private static let sqlNames: [String] = allCases.map { snakeCased(String(describing: $0)) }

    /// Where a column lives in a ``Landmark``, which also says what it holds and so how it is read,
    /// written and compared.
    ///
    /// Every switch over a field, a ``Kind`` or a column lists its cases without `default:`, so a new
    /// case here makes the compiler name every site that must handle it.
    enum Field {
        /// The record's key, `Int64`.
        case id(WritableKeyPath<Landmark, Int64>)
        /// A required string, never empty (`name`).
        case requiredText(WritableKeyPath<Landmark, String>)
        /// A string that may be null.
        case text(WritableKeyPath<Landmark, String?>)
        /// A boolean (SQL `INTEGER NOT NULL DEFAULT 0`); `null` in a record reads as false.
        case bool(WritableKeyPath<Landmark, Bool>)
        /// A 64-bit integer (SQL `INTEGER NOT NULL DEFAULT 0`); a record's value must be a JSON integer.
        case int(WritableKeyPath<Landmark, Int>)
        /// A 64-bit integer that may be null (SQL `INTEGER`).
        case optionalInt(WritableKeyPath<Landmark, Int?>)
        /// A finite double (SQL `REAL NOT NULL DEFAULT 0`); a record's value must be a JSON number.
        case double(WritableKeyPath<Landmark, Double>)
        /// A finite double that may be null (SQL `REAL`).
        case optionalDouble(WritableKeyPath<Landmark, Double?>)
        /// Degrees, a finite double within ±limit, inside the `coordinates` object.
        case coordinate(WritableKeyPath<Landmark, Double>, limit: Double)
        /// The kept unknown keys (``Landmark/extraJSON``).
        case extra(WritableKeyPath<Landmark, String?>)
        /// A stamp or bookkeeping column, not part of a landmark's content (no property of ``Landmark``).
        case stamp(Stamp)
    }

    /// The columns that are not a landmark's content: the last-writer-wins stamp, the tombstone flag
    /// and the change sequence number.
    enum Stamp: Equatable {
        /// `updatedAt` in a snapshot row, ms since 1970-01-01 UTC.
        case updatedMs
        case counter
        case node
        case deleted
        /// Local only: never in a snapshot row.
        case seq
    }

    /// The table of fields: each column's property in ``Landmark`` (or its `.stamp` role).
    ///
    /// A new field's row goes here.
    private static func makeField(_ column: LandmarkColumn) -> Field {
        switch column {
        case .id: return .id(\.id)
        case .name: return .requiredText(\.name)
        case .category: return .text(\.category)
        case .city: return .text(\.city)
        case .state: return .text(\.state)
        case .park: return .text(\.park)
        case .description: return .text(\.description)
        case .imageName: return .text(\.imageName)
        case .isFeatured: return .bool(\.isFeatured)
        case .isFavorite: return .bool(\.isFavorite)
        case .latitude: return .coordinate(\.latitude, limit: 90)
        case .longitude: return .coordinate(\.longitude, limit: 180)
        case .extra: return .extra(\.extraJSON)
        case .updatedMs: return .stamp(.updatedMs)
        case .counter: return .stamp(.counter)
        case .node: return .stamp(.node)
        case .deleted: return .stamp(.deleted)
        case .seq: return .stamp(.seq)
        }
    }

    /// This column's row in the table of fields.
    var field: Field { Self.fields[Int(rawValue)] }

    // Key path literals of a struct's stored properties are immutable and thread-safe to share.
    nonisolated(unsafe) private static let fields: [Field] = allCases.map(makeField)

    /// The content columns (every column with a property in ``Landmark``), in declaration order.
    static let contentColumns: [LandmarkColumn] = allCases.filter(\.isContent)

    /// What a column holds, which decides how it is read, written and compared (from ``field``).
    enum Kind: Equatable {
        case id
        /// A string; `name` is required and never empty, the others may be null.
        case text(required: Bool)
        case bool
        /// A 64-bit integer, null allowed when `optional`.
        case int(optional: Bool)
        /// A finite double, null allowed when `optional`.
        case double(optional: Bool)
        /// Degrees, a finite double within ±limit, inside the `coordinates` object.
        case coordinate(limit: Double)
        case extra
        /// A stamp or bookkeeping column, not part of a landmark's content.
        case stamp(Stamp)
    }

    var kind: Kind { Self.kinds[Int(rawValue)] }

    private static let kinds: [Kind] = allCases.map { c in
        switch c.field {
        case .id: return .id
        case .requiredText: return .text(required: true)
        case .text: return .text(required: false)
        case .bool: return .bool
        case .int: return .int(optional: false)
        case .optionalInt: return .int(optional: true)
        case .double: return .double(optional: false)
        case .optionalDouble: return .double(optional: true)
        case .coordinate(_, let limit): return .coordinate(limit: limit)
        case .extra: return .extra
        case .stamp(let role): return .stamp(role)
        }
    }

    /// Whether the column is part of a landmark's content (a property of ``Landmark``), not a stamp.
    var isContent: Bool {
        switch kind {
        case .id, .text, .bool, .int, .double, .coordinate, .extra: return true
        case .stamp: return false
        }
    }

    /// The bit of this column in a presence mask (`RawLandmark.present`, the import upsert's mask).
    var bit: UInt32 { 1 << UInt32(rawValue) }

    /// The JSON key (in `landmarkData.json`, or for stamps in snapshot rows); nil for `extra` and `seq`.
    var jsonKey: String? { Self.jsonKeys[Int(rawValue)] }

    private static let jsonKeys: [String?] = allCases.map { c in
        switch c.kind {
        case .extra, .stamp(.seq): return nil
        case .stamp(.updatedMs): return "updatedAt"
        case .id, .text, .bool, .int, .double, .coordinate, .stamp(.counter), .stamp(.node), .stamp(.deleted):
            return String(describing: c)
        }
    }

    /// The text columns, in the order of ``RawLandmark``'s byte ranges (`textSlot`).
    static let textColumns: [LandmarkColumn] = allCases.filter { if case .text = $0.kind { return true } else { return false } }

    /// The index of a text column in ``textColumns``.
    @inline(__always) var textSlot: Int {
        let slot = Self.textSlots[Int(rawValue)]
        precondition(slot >= 0, "not a text column")
        return slot
    }

    private static let textSlots: [Int] = allCases.map { textColumns.firstIndex(of: $0) ?? -1 }

    /// The number columns (coordinates, integers, doubles), in the order of ``RawLandmark``'s number
    /// slots (`numberSlot`).
    static let numberColumns: [LandmarkColumn] = allCases.filter {
        switch $0.kind {
        case .int, .double, .coordinate: return true
        case .id, .text, .bool, .extra, .stamp: return false
        }
    }

    /// The index of a number column in ``numberColumns``.
    @inline(__always) var numberSlot: Int {
        let slot = Self.numberSlots[Int(rawValue)]
        precondition(slot >= 0, "not a number column")
        return slot
    }

    private static let numberSlots: [Int] = allCases.map { numberColumns.firstIndex(of: $0) ?? -1 }

    /// The number columns that may be null: a snapshot row without their key holds null.
    static let nullableNumbers: [LandmarkColumn] = allCases.filter {
        switch $0.kind {
        case .int(let nullable), .double(let nullable): return nullable
        case .id, .text, .bool, .coordinate, .extra, .stamp: return false
        }
    }

    /// The content columns an import record may leave out: a key absent from a record keeps the stored
    /// value of these (docs/cli.md §2); `id`, `name` and the coordinates are required.
    static let optionalContent: [LandmarkColumn] = allCases.filter {
        switch $0.kind {
        case .text(let required): return !required
        case .bool, .int, .double, .extra: return true
        case .id, .coordinate, .stamp: return false
        }
    }

    /// The value an optional content column takes when a record without its key brings a tombstone
    /// back (the column's SQL default, docs/cli.md §2), as SQL.
    var clearedSQL: String {
        switch kind {
        case .bool, .int(optional: false), .double(optional: false): return "0"
        case .text, .int(optional: true), .double(optional: true), .extra: return "NULL"
        case .id, .coordinate, .stamp: preconditionFailure("\(self) is never left out of an import record")
        }
    }

    /// The keys written in a snapshot row for the stamp, which an import must refuse as unknown keys:
    /// kept, they would be written twice in one snapshot object (`"counter":99,"counter":0`).
    static let reservedKeys: Set<String> = ["updatedAt", "counter", "node", "deleted"]
}

/// The `positions` table, named once.
package enum PositionColumn: Int32, TableColumn {
    case userID, page, landmarkID, updatedMs, counter, node, deleted, seq

    package static let tableName = "positions"

    package var sqlName: String { Self.sqlNames[Int(rawValue)] }

    /// Built once: these are read whenever a position statement is made.
    private static let sqlNames: [String] = allCases.map { snakeCased(String(describing: $0)) }
}
