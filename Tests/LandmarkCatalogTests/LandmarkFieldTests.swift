import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// The landmark's fields are listed once, in `LandmarkColumn`'s table of fields (docs/architecture.md
/// §5.5): every path a landmark takes walks that table, so a field added with a migration, a case and a
/// property reaches every path.
///
/// These tests build their input and their expectations from the column list and check the outputs by
/// JSON key, not through `Landmark`'s own code: a path that lists the fields by hand (and so misses a
/// new one) fails here. `scripts/new-field-trial` adds a field for real and runs this suite.
@Suite("Landmark fields: one table drives every path")
struct LandmarkFieldTests {
    /// A value for every content column, distinct per column, as the JSON value an import reads.
    static func jsonValue(_ column: LandmarkColumn) -> Any? {
        switch column.kind {
        case .id: return 7
        case .text(let required): return required ? "Name of seven" : "\(column.jsonKey ?? "?") of seven"
        case .bool: return true
        case .coordinate: return column == .latitude ? 12.5 : -45.25
        case .extra, .stamp: return nil
        }
    }

    /// One import record holding every content column with the value of ``jsonValue(_:)``, plus a kept
    /// unknown key.
    static func record() -> [String: Any] {
        var object: [String: Any] = ["url": "https://example.com/seven"]
        var coordinates: [String: Any] = [:]
        for column in LandmarkColumn.contentColumns {
            guard let key = column.jsonKey, let value = jsonValue(column) else { continue }
            if case .coordinate = column.kind { coordinates[key] = value } else { object[key] = value }
        }
        object["coordinates"] = coordinates
        return object
    }

    /// Whether a value `JSONSerialization` read is `expected` (a `String`, `Bool`, `Int` or `Double`).
    static func same(_ found: Any?, _ expected: Any) -> Bool {
        switch expected {
        case let s as String: return found as? String == s
        case let b as Bool: return found as? Bool == b
        case let i as Int: return (found as? NSNumber)?.int64Value == Int64(i)
        case let d as Double: return (found as? NSNumber)?.doubleValue == d
        default: return false
        }
    }

    /// Checks that `object` (a JSON object as `JSONSerialization` reads it) holds every column's value.
    static func expectEveryKey(_ object: [String: Any]?, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let object else {
            Issue.record("\(what): not a JSON object", sourceLocation: sourceLocation)
            return
        }
        let coordinates = object["coordinates"] as? [String: Any]
        for column in LandmarkColumn.contentColumns {
            guard let key = column.jsonKey, let expected = jsonValue(column) else { continue }
            let found: Any?
            if case .coordinate = column.kind { found = coordinates?[key] } else { found = object[key] }
            #expect(same(found, expected), "\(what): \(key) is \(found.map { "\($0)" } ?? "absent"), not \(expected)", sourceLocation: sourceLocation)
        }
        #expect(object["url"] as? String == "https://example.com/seven", "\(what): the kept key", sourceLocation: sourceLocation)
    }

    /// Checks `landmark`'s property of every column (through the table's key path) against ``jsonValue(_:)``.
    static func expectEveryProperty(_ landmark: Landmark?, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let landmark else {
            Issue.record("\(what): no landmark", sourceLocation: sourceLocation)
            return
        }
        for column in LandmarkColumn.contentColumns {
            let value: String?
            switch column.field {
            case .id(let p): value = "\(landmark[keyPath: p])"
            case .requiredText(let p): value = landmark[keyPath: p]
            case .text(let p): value = landmark[keyPath: p]
            case .bool(let p): value = "\(landmark[keyPath: p])"
            case .coordinate(let p, _): value = "\(landmark[keyPath: p])"
            case .extra(let p):
                #expect(landmark[keyPath: p]?.contains("https://example.com/seven") == true, "\(what): extra", sourceLocation: sourceLocation)
                continue
            case .stamp: continue
            }
            #expect(value == jsonValue(column).map { "\($0)" }, "\(what): \(column) is \(value ?? "nil")", sourceLocation: sourceLocation)
        }
    }

    @Test("every LandmarkColumn round-trips through import, the store, featured --json, JSONDecoder and JSONEncoder")
    func roundTrip() throws {
        let directory = Support.temporaryDirectory()
        let file = directory.appending(path: "landmarkData.json")
        try JSONSerialization.data(withJSONObject: [Self.record()]).write(to: file)
        let db = directory.appending(path: "catalog.sqlite").path
        let imported = try runProcess(Support.catalogBinary, ["--db", db, "import", file.path])
        #expect(imported.status == 0, "\(imported.stderr)")

        let store = try CatalogStore.open(path: db, access: .read)
        let stored = try LandmarkReader(store).landmark(id: 7)
        Self.expectEveryProperty(stored, "the store's row decoder")

        let featured = try runProcess(Support.catalogBinary, ["--db", db, "featured", "--json"])
        #expect(featured.status == 0, "\(featured.stderr)")
        let printed = try JSONSerialization.jsonObject(with: Data(featured.stdout.utf8)) as? [[String: Any]]
        #expect(printed?.count == 1)
        Self.expectEveryKey(printed?.first, "featured --json")

        let decoded = try JSONDecoder().decode([Landmark].self, from: Data(featured.stdout.utf8))
        Self.expectEveryProperty(decoded.first, "JSONDecoder")
        #expect(decoded.first == stored)
        #expect(decoded.first.map { Set([$0, stored!]).count } == 1, "equal landmarks hash alike")

        let encoded = try JSONEncoder().encode(decoded)
        Self.expectEveryKey((try JSONSerialization.jsonObject(with: encoded) as? [[String: Any]])?.first, "JSONEncoder")
    }

    @Test("== and hash see every field: changing any one column's property makes the landmarks differ")
    func equalityCoversEveryField() {
        let base = Landmark(id: 1, name: "One", category: "c", latitude: 1, longitude: 2, extraJSON: #"{"a":1}"#)
        for column in LandmarkColumn.contentColumns {
            var other = base
            switch column.field {
            case .id(let p): other[keyPath: p] += 1
            case .requiredText(let p): other[keyPath: p] += "!"
            case .text(let p): other[keyPath: p] = (other[keyPath: p] ?? "") + "!"
            case .bool(let p): other[keyPath: p].toggle()
            case .coordinate(let p, _): other[keyPath: p] += 0.5
            case .extra(let p): other[keyPath: p] = #"{"a":2}"#
            case .stamp: continue
            }
            #expect(other != base, "== ignores \(column)")
            #expect(other.hashValue != base.hashValue, "hash ignores \(column)")
        }
        // Kept keys in another order are the same landmark.
        var reordered = base
        reordered.extraJSON = #"{"b":2,"a":1}"#
        var sorted = base
        sorted.extraJSON = #"{"a":1,"b":2}"#
        #expect(reordered == sorted && reordered.hashValue == sorted.hashValue)
    }

    @Test("the table of fields: each content case names the property of its own name; the masks have room")
    func tableOfFields() {
        for column in LandmarkColumn.contentColumns {
            let path: AnyKeyPath
            switch column.field {
            case .id(let p): path = p
            case .requiredText(let p): path = p
            case .text(let p): path = p
            case .bool(let p): path = p
            case .coordinate(let p, _): path = p
            case .extra(let p): path = p
            case .stamp: continue
            }
            let property = column == .extra ? "extraJSON" : String(describing: column)
            #expect("\(path)" == "\\Landmark.\(property)", "\(column) maps to \(path)")
        }
        for column in LandmarkColumn.allCases where column.kind == .stamp {
            #expect([.updatedMs, .counter, .node, .deleted, .seq].contains(column), "\(column) has no property of Landmark")
        }
        #expect(LandmarkColumn.allCases.count <= 32, "RawLandmark's presence and flag masks are 32 bits")
        #expect(LandmarkColumn.textColumns.count < TextRanges.capacity, "TextRanges needs a slot per text column and one for the node")
    }
}
