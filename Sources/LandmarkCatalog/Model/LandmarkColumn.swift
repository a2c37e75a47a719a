/// The `landmarks` table, named once: the select list, the upserts, the JSON keys of every landmark
/// shape (Apple's `landmarkData.json`, snapshot rows, canonical content), the import decoder's key
/// table and every field of ``Landmark`` (its row decoder, `==`, `hash`, `Codable`) are all generated
/// from this enum and its table of fields, ``field``.
///
/// **A new landmark field** (docs/architecture.md §5.5) is three edits, and nothing else:
/// 1. a migration, `Migrations/NNNN_name.sql`: `ALTER TABLE landmarks ADD COLUMN name TEXT` (the column's
///    SQL name is the case's name in snake case);
/// 2. one case here, with its row in ``field`` (the switch is exhaustive: the compiler asks for it);
/// 3. one property of ``Landmark`` (optional, or with a default, so `Landmark.init` keeps its shape).
///
/// Text and boolean fields need nothing more: the import, the store, `featured --json`, snapshots, the
/// merge's content comparison and `JSONDecoder` / `JSONEncoder` all walk this table
/// (`LandmarkFieldTests` round-trips every case; `scripts/new-field-trial` does the three edits for real).
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
    enum Field {
        /// The record's key, `Int64`.
        case id(WritableKeyPath<Landmark, Int64>)
        /// A required string, never empty (`name`).
        case requiredText(WritableKeyPath<Landmark, String>)
        /// A string that may be null.
        case text(WritableKeyPath<Landmark, String?>)
        case bool(WritableKeyPath<Landmark, Bool>)
        /// Degrees, a finite double within ±limit, inside the `coordinates` object.
        case coordinate(WritableKeyPath<Landmark, Double>, limit: Double)
        /// The kept unknown keys (``Landmark/extraJSON``).
        case extra(WritableKeyPath<Landmark, String?>)
        /// A stamp or bookkeeping column, not part of a landmark's content (no property of ``Landmark``).
        case stamp
    }

    /// The table of fields: each column's property in ``Landmark`` (or `.stamp`).
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
        case .updatedMs, .counter, .node, .deleted, .seq: return .stamp
        }
    }

    /// This column's row in the table of fields.
    var field: Field { Self.fields[Int(rawValue)] }

    // Key path literals of a struct's stored properties are immutable and thread-safe to share.
    nonisolated(unsafe) private static let fields: [Field] = allCases.map(makeField)

    /// The content columns (every column with a property in ``Landmark``), in declaration order.
    static let contentColumns: [LandmarkColumn] = allCases.filter { $0.kind != .stamp }

    /// What a column holds, which decides how it is read, written and compared (from ``field``).
    enum Kind: Equatable {
        case id
        /// A string; `name` is required and never empty, the others may be null.
        case text(required: Bool)
        case bool
        /// Degrees, a finite double within ±limit, inside the `coordinates` object.
        case coordinate(limit: Double)
        case extra
        /// A stamp or bookkeeping column, not part of a landmark's content.
        case stamp
    }

    var kind: Kind { Self.kinds[Int(rawValue)] }

    private static let kinds: [Kind] = allCases.map { c in
        switch c.field {
        case .id: return .id
        case .requiredText: return .text(required: true)
        case .text: return .text(required: false)
        case .bool: return .bool
        case .coordinate(_, let limit): return .coordinate(limit: limit)
        case .extra: return .extra
        case .stamp: return .stamp
        }
    }

    /// The bit of this column in a presence mask (`RawLandmark.present`, the import upsert's mask).
    var bit: UInt32 { 1 << UInt32(rawValue) }

    /// The JSON key (in `landmarkData.json`, or for stamps in snapshot rows); nil for `extra` and `seq`.
    var jsonKey: String? { Self.jsonKeys[Int(rawValue)] }

    private static let jsonKeys: [String?] = allCases.map { c in
        switch c {
        case .extra, .seq: return nil
        case .updatedMs: return "updatedAt"
        default: return String(describing: c)
        }
    }

    /// The text columns, in the order of ``RawLandmark``'s byte ranges (`textSlot`).
    static let textColumns: [LandmarkColumn] = allCases.filter { if case .text = $0.kind { return true } else { return false } }

    /// The boolean columns.
    static let boolColumns: [LandmarkColumn] = allCases.filter { $0.kind == .bool }

    /// The index of a text column in ``textColumns``.
    @inline(__always) var textSlot: Int {
        let slot = Self.textSlots[Int(rawValue)]
        precondition(slot >= 0, "not a text column")
        return slot
    }

    private static let textSlots: [Int] = allCases.map { textColumns.firstIndex(of: $0) ?? -1 }

    /// The optional content columns: a key absent from an import record keeps the stored value of these.
    static let optionalContent: [LandmarkColumn] = allCases.filter {
        switch $0.kind {
        case .text(required: false), .bool, .extra: return true
        default: return false
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
