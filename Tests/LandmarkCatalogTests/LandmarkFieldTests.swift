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
        case .int: return 1000 + Int(column.rawValue)
        case .double: return Double(column.rawValue) + 0.25
        case .coordinate: return column == .latitude ? 12.5 : -45.25
        case .extra, .stamp: return nil
        }
    }

    /// The property of `field` in ``Landmark``, nil for a stamp.
    static func keyPath(_ field: LandmarkColumn.Field) -> AnyKeyPath? {
        switch field {
        case .id(let p): return p
        case .requiredText(let p): return p
        case .text(let p), .extra(let p): return p
        case .bool(let p): return p
        case .int(let p): return p
        case .optionalInt(let p): return p
        case .double(let p), .coordinate(let p, _): return p
        case .optionalDouble(let p): return p
        case .stamp: return nil
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
        // A JSON number, not a string holding it (the values are never 0 or 1, a boolean's).
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
            case .int(let p): value = "\(landmark[keyPath: p])"
            case .optionalInt(let p): value = landmark[keyPath: p].map { "\($0)" }
            case .double(let p), .coordinate(let p, _): value = "\(landmark[keyPath: p])"
            case .optionalDouble(let p): value = landmark[keyPath: p].map { "\($0)" }
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

        // A snapshot file carries every field to another database, which prints it the same way.
        let snapshot = directory.appending(path: "snapshot.json").path
        let exported = try runProcess(Support.catalogBinary, ["--db", db, "export", "--output", snapshot])
        #expect(exported.status == 0, "\(exported.stderr)")
        let rows = (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(filePath: snapshot))) as? [String: Any])?["landmarks"]
        Self.expectEveryKey((rows as? [[String: Any]])?.first, "export")
        let other = directory.appending(path: "other.sqlite").path
        let synced = try runProcess(Support.catalogBinary, ["--db", other, "sync", snapshot])
        #expect(synced.status == 0, "\(synced.stderr)")
        Self.expectEveryProperty(try LandmarkReader(CatalogStore.open(path: other, access: .read)).landmark(id: 7), "sync from a snapshot")
        let featuredThere = try runProcess(Support.catalogBinary, ["--db", other, "featured", "--json"])
        Self.expectEveryKey(
            (try JSONSerialization.jsonObject(with: Data(featuredThere.stdout.utf8)) as? [[String: Any]])?.first, "featured --json after sync")
    }

    @Test("a key absent from an import record keeps the stored value, and null clears it, for every optional column")
    func absentKeepsNullClears() throws {
        let directory = Support.temporaryDirectory()
        let db = directory.appending(path: "catalog.sqlite").path
        func importRecord(_ record: [String: Any]) throws {
            let file = directory.appending(path: "landmarkData.json")
            try JSONSerialization.data(withJSONObject: [record]).write(to: file)
            let result = try runProcess(Support.catalogBinary, ["--db", db, "import", file.path])
            #expect(result.status == 0, "\(result.stderr)")
        }
        func stored() throws -> Landmark? { try LandmarkReader(CatalogStore.open(path: db, access: .read)).landmark(id: 7) }
        let full = Self.record()
        try importRecord(full)
        let required = full.filter { ["id", "name", "coordinates"].contains($0.key) }
        try importRecord(required)
        Self.expectEveryProperty(try stored(), "after a record without the optional keys")

        var nulls = required
        for column in LandmarkColumn.optionalContent { if let key = column.jsonKey { nulls[key] = NSNull() } }
        try importRecord(nulls)
        let cleared = try #require(try stored())
        for column in LandmarkColumn.optionalContent {
            let value: Any?
            switch column.field {
            case .text(let p), .extra(let p): value = cleared[keyPath: p]
            case .bool(let p): value = cleared[keyPath: p] ? true : nil
            case .optionalInt(let p): value = cleared[keyPath: p]
            case .optionalDouble(let p): value = cleared[keyPath: p]
            // A non-optional number refuses null; its value is checked by the first import.
            case .int, .double: continue
            case .id, .requiredText, .coordinate, .stamp: value = "not an optional column"
            }
            #expect(value == nil || column == .extra, "\(column) is \(value.map { "\($0)" } ?? "nil") after null")
        }
    }

    @Test("every stored property of Landmark has its row in the table of fields")
    func everyPropertyInTheTable() {
        let properties = Mirror(reflecting: Landmark(id: 1, name: "One", latitude: 0, longitude: 0)).children.compactMap(\.label)
        let inTable = LandmarkColumn.contentColumns.compactMap {
            Self.keyPath($0.field).map { "\($0)".replacingOccurrences(of: "\\Landmark.", with: "") }
        }
        #expect(properties.sorted() == inTable.sorted(), "Landmark's stored properties and the table of fields differ")
        #expect(Set(properties).count == properties.count && !properties.isEmpty)
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
            case .int(let p): other[keyPath: p] += 1
            case .optionalInt(let p): other[keyPath: p] = (other[keyPath: p] ?? 0) + 1
            case .double(let p), .coordinate(let p, _): other[keyPath: p] += 0.5
            case .optionalDouble(let p): other[keyPath: p] = (other[keyPath: p] ?? 0) + 0.5
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
            guard let path = Self.keyPath(column.field) else {
                Issue.record("content column \(column) has no property")
                continue
            }
            let property = column == .extra ? "extraJSON" : String(describing: column)
            #expect("\(path)" == "\\Landmark.\(property)", "\(column) maps to \(path)")
        }
        for column in LandmarkColumn.allCases where !column.isContent {
            #expect([.updatedMs, .counter, .node, .deleted, .seq].contains(column), "\(column) has no property of Landmark")
        }
        #expect(LandmarkColumn.allCases.count <= 32, "RawLandmark's presence and flag masks are 32 bits")
        #expect(LandmarkColumn.textColumns.count < TextRanges.capacity, "TextRanges needs a slot per text column and one for the node")
        #expect(LandmarkColumn.numberColumns.count <= NumberSlots.capacity, "NumberSlots needs a slot per number column")
    }

    @Test("scripts/new-field-trial's three edits still apply (in a copy; the full trial builds it)", arguments: ["int", "double"])
    func trialEditsApply(kind: String) throws {
        let copy = Support.temporaryDirectory().appending(path: "copy").path
        let script = Support.root.appending(path: "scripts/new-field-trial").path
        let result = try runProcess(URL(filePath: "/bin/bash"), [script, "--kind", kind, "--apply-only", copy])
        #expect(result.status == 0, "\(result.stderr)")
        let type = kind == "int" ? "Int?" : "Double?"
        let row = kind == "int" ? "optionalInt" : "optionalDouble"
        // By name, wherever its folder is.
        func text(_ name: String) throws -> String {
            let sources = FileManager.default.enumerator(atPath: "\(copy)/Sources")?.compactMap { $0 as? String } ?? []
            let path = try #require(sources.first { $0.hasSuffix("/\(name)") })
            return try String(contentsOfFile: "\(copy)/Sources/\(path)", encoding: .utf8)
        }
        let column = try text("LandmarkColumn.swift")
        #expect(column.contains("\n    case elevation\n") && column.contains("case .elevation: return .\(row)(\\.elevation)"))
        #expect(try text("Landmark.swift").contains("public var elevation: \(type)\n"))
        let migrations = try FileManager.default.contentsOfDirectory(atPath: "\(copy)/Migrations").filter { $0.hasSuffix("_trial_elevation.sql") }
        #expect(migrations.count == 1)
    }
}
