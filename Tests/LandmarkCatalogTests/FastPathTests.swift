import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// The byte-level writers (featured --json, export) must give exactly the text of the general path.
@Suite("Fast paths agree with the general path")
struct FastPathTests {
    static let tricky = """
        [{"id": 1, "name": "Quote \\" and \\\\ and \\n newline", "category": null, "city": "Zürich", "state": "東京",
          "park": "", "description": "emoji 🏔️ and tab\\t", "imageName": null, "isFeatured": true, "isFavorite": true,
          "coordinates": {"latitude": -0.0, "longitude": 1e-7}},
         {"id": -5, "name": "Plain", "isFeatured": true, "coordinates": {"latitude": 89.999999, "longitude": -179.5}},
         {"id": 7, "name": "Extra", "isFeatured": true, "url": "https://example.org", "coordinates": {"latitude": 1, "longitude": 2}}]
        """

    func store() throws -> CatalogStore {
        let db = Support.temporaryDatabase()
        let file = try writeTemporary(Self.tricky, name: "tricky.json")
        let store = try CatalogStore.open(path: db)
        _ = try Importer(store).importLandmarks(from: .file(file))
        return store
    }

    @Test("featured --json from column bytes equals Landmark.writeJSON")
    func featured() throws {
        let store = try store()
        var fast = JSONWriter()
        #expect(try LandmarkReader(store).writeFeaturedJSON(to: &fast) { _ in } == 3)
        var general = JSONWriter()
        for (i, l) in try LandmarkReader(store).featuredLandmarks().enumerated() {
            if i > 0 { general.byte(0x2C) }
            l.writeJSON(to: &general)
        }
        #expect(String(decoding: fast.bytes, as: UTF8.self) == String(decoding: general.bytes, as: UTF8.self))
    }

    @Test("export rows from column bytes equal Landmark.writeJSON with the stamp keys")
    func export() throws {
        let store = try store()
        let s = try store.connection.makeStatement(sql: "SELECT \(LandmarkColumn.selectList) FROM landmarks ORDER BY id")
        var rows = 0
        while try s.step() {
            rows += 1
            var fast = JSONWriter()
            LandmarkJSON.write(LandmarkRow(statement: s), shape: .snapshot, to: &fast)
            var general = JSONWriter()
            Landmark(row: s).writeJSON(
                to: &general, shape: .snapshot,
                stamp: HLCStamp(
                    wallMilliseconds: s.int(LandmarkColumn.updatedMs), counter: s.int(LandmarkColumn.counter),
                    node: s.text(LandmarkColumn.node) ?? ""),
                deleted: s.bool(LandmarkColumn.deleted))
            #expect(String(decoding: fast.bytes, as: UTF8.self) == String(decoding: general.bytes, as: UTF8.self))
        }
        #expect(rows == 3)
    }
}
