import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// The real `landmarkData.json` variants in `../shared/fixtures/landmarks` (see its SOURCES.md).
///
/// They are not ours, so they are read in place when present (CI has them) and the suite is skipped
/// otherwise.
@Suite("Interop: shared landmark fixtures", .enabled(if: Support.hasSharedLandmarks, "../shared/fixtures/landmarks not found: skipped"))
struct LandmarkFixturesInteropTests {
    struct Expectation: Sendable, CustomTestStringConvertible {
        var file: String
        var records: Int
        var featured: [Int64]
        var favorites: Int
        /// Accepted only leniently (a trailing comma): --strict must fail.
        var quirky: Bool
        var testDescription: String { file }
    }

    static let expectations: [Expectation] = [
        .init(file: "landmarkData.apple-2019-06.no-featured-fields.legacy-ids.json", records: 12, featured: [1001], favorites: 0, quirky: true),
        .init(file: "landmarkData.apple-2019.no-featured-fields.json", records: 12, featured: [1001], favorites: 0, quirky: true),
        .init(file: "landmarkData.apple-2019.favorite-only.json", records: 12, featured: [1001], favorites: 3, quirky: true),
        .init(
            file: "landmarkData.apple-2019.featured4.trailing-comma.json", records: 12, featured: [1001, 1004, 1007, 1012], favorites: 3, quirky: true
        ),
        .init(file: "landmarkData.apple-2019.featured3.trailing-comma.json", records: 12, featured: [1001, 1004, 1007], favorites: 3, quirky: true),
        .init(file: "landmarkData.apple-2021.with-description.json", records: 12, featured: [1001, 1004, 1007], favorites: 3, quirky: false),
        .init(file: "landmarkData.user.duplicate-name.json", records: 13, featured: [1001, 1004, 1007, 6969], favorites: 4, quirky: false),
        .init(file: "landmarkData.user.korean-crlf-extra-fields.json", records: 8, featured: Array(1001...1008), favorites: 5, quirky: true),
        .init(
            file: "landmarkData.user.region-instead-of-state.json", records: 12, featured: [1001, 1004, 1008, 1010, 1011, 1012], favorites: 5,
            quirky: true),
        .init(
            file: "landmarkData.user.isFavourite-spelling.trailing-comma.json", records: 12, featured: [1001, 1004, 1007, 1012], favorites: 3,
            quirky: true),
        .init(file: "landmarkData.user.extra-url-field.legacy-ids.json", records: 12, featured: [1001], favorites: 1, quirky: true),
    ]

    @Test("every file but the duplicate-id one imports all its records", arguments: expectations)
    func imports(_ e: Expectation) throws {
        let db = Support.temporaryDatabase()
        let result = runCLI(["import", "--json", Support.shared(e.file)], db: db)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""inserted":\#(e.records),"#), "\(result.stdout)")
        let store = try CatalogStore.open(path: db)
        #expect(try LandmarkReader(store).landmarkCounts().live == e.records)
        #expect(try LandmarkReader(store).featuredIDs() == e.featured)
        #expect(try store.connection.scalarInt(sql: "SELECT count(*) FROM landmarks WHERE is_favorite = 1") == Int64(e.favorites))
        // featured --json is valid JSON with the same ids.
        let json = runCLI(["featured", "--json"], db: db).stdout
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(objects.compactMap { ($0["id"] as? NSNumber)?.int64Value } == (try LandmarkReader(store).featuredIDs()))
    }

    @Test("files with quirks fail with --strict (65) and write nothing", arguments: expectations.filter(\.quirky))
    func strict(_ e: Expectation) throws {
        let db = Support.temporaryDatabase()
        let result = runCLI(["import", "--strict", Support.shared(e.file)], db: db)
        #expect(result.status == 65, "\(result.stderr)")
        #expect(try dumpLandmarks(db).isEmpty)
    }

    @Test("a strict-clean file imports with --strict too")
    func strictClean() throws {
        let result = runCLI(["import", "--strict", Support.shared("landmarkData.apple-2021.with-description.json")], db: Support.temporaryDatabase())
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "")
    }

    @Test("the Korean file keeps its extra keys and 17-digit coordinates exactly")
    func koreanExtras() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.shared("landmarkData.user.korean-crlf-extra-fields.json")], db: db).status == 0)
        let original =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: Support.shared("landmarkData.user.korean-crlf-extra-fields.json")))) as! [[String: Any]]
        let served = try JSONSerialization.jsonObject(with: Data(runCLI(["featured", "--json"], db: db).stdout.utf8)) as! [[String: Any]]
        #expect(served.count == original.count)
        for record in original {
            let id = (record["id"] as! NSNumber).int64Value
            let out = try #require(served.first { ($0["id"] as! NSNumber).int64Value == id })
            #expect(out["address"] as? String == record["address"] as? String)
            #expect(out["primeColorHexStr"] as? String == record["primeColorHexStr"] as? String)
            let a = record["coordinates"] as! [String: Any]
            let b = out["coordinates"] as! [String: Any]
            #expect((a["latitude"] as! NSNumber).doubleValue == (b["latitude"] as! NSNumber).doubleValue)
            #expect((a["longitude"] as! NSNumber).doubleValue == (b["longitude"] as! NSNumber).doubleValue)
        }
    }

    @Test("the duplicate-id file fails with 65 naming both records, and writes nothing")
    func duplicateID() throws {
        let db = Support.temporaryDatabase()
        let result = runCLI(["import", Support.shared("landmarkData.user.duplicate-id.json")], db: db)
        #expect(result.status == 65)
        #expect(
            result.stderr.contains("duplicate id 1001: record 0 (\"Stanage Edge\") and record 1 (\"Turtle Rock\") both use it"), "\(result.stderr)")
        #expect(try dumpLandmarks(db).isEmpty)
    }

    @Test("featured files decode with Apple's Landmark")
    func appleDecodes() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.shared("landmarkData.apple-2021.with-description.json")], db: db).status == 0)
        let landmarks = try JSONDecoder().decode([AppleLandmark].self, from: Data(runCLI(["featured", "--json"], db: db).stdout.utf8))
        #expect(landmarks.map(\.id) == [1001, 1004, 1007])
        #expect(landmarks.map(\.name) == ["Turtle Rock", "St. Mary Lake", "Charley Rivers"])
    }

    @Test("positions over Apple's files: page 2 is 1007; featured4 keeps it there; without 1007 it is clamped")
    func positionsOverAppleFiles() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.shared("landmarkData.apple-2021.with-description.json")], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "u-1", "--page", "2"], db: db).status == 0)
        #expect(runCLI(["position", "get", "--user", "u-1"], db: db).stdout == "u-1: page 2 of 3 (landmark 1007)\n")
        #expect(runCLI(["position", "set", "--user", "u-1", "--page", "3"], db: db).status == 64)
        #expect(runCLI(["import", Support.shared("landmarkData.apple-2019.featured4.trailing-comma.json")], db: db).status == 0)
        #expect(runCLI(["position", "get", "--user", "u-1"], db: db).stdout == "u-1: page 2 of 4 (landmark 1007)\n")
        // The same data with only 1001 and 1002 featured: 1007 left the carousel, page 2 is clamped to 1.
        let dir = Support.temporaryDirectory()
        var records =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: Support.shared("landmarkData.apple-2021.with-description.json")))) as! [[String: Any]]
        for i in records.indices { records[i]["isFeatured"] = [1001, 1002].contains((records[i]["id"] as! NSNumber).intValue) }
        let file = dir.appending(path: "no-1007.json")
        try JSONSerialization.data(withJSONObject: records).write(to: file)
        #expect(runCLI(["import", file.path], db: db).status == 0)
        #expect(runCLI(["position", "get", "--user", "u-1"], db: db).stdout == "u-1: page 1 of 2 (landmark 1002)\n")
    }

    @Test("every fixture file is covered by a case")
    func allFilesCovered() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Support.sharedLandmarks.path).filter { $0.hasSuffix(".json") }
        let covered = Set(Self.expectations.map(\.file) + ["landmarkData.user.duplicate-id.json"])
        #expect(Set(files) == covered)
    }
}
