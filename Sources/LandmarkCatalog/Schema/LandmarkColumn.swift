/// The `landmarks` table, named once: the select list, the upserts, the JSON keys of every landmark
/// shape (Apple's `landmarkData.json`, snapshot rows, canonical content) and the import decoder's key
/// table are all generated from this enum. Adding a field means a migration, a case here and a property
/// of ``Landmark``.
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

    /// What a column holds, which decides how it is read, written and compared.
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

    var kind: Kind {
        switch self {
        case .id: return .id
        case .name: return .text(required: true)
        case .category, .city, .state, .park, .description, .imageName: return .text(required: false)
        case .isFeatured, .isFavorite: return .bool
        case .latitude: return .coordinate(limit: 90)
        case .longitude: return .coordinate(limit: 180)
        case .extra: return .extra
        case .updatedMs, .counter, .node, .deleted, .seq: return .stamp
        }
    }

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
