import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// Apple's `Landmark` from the SwiftUI tutorial ("Handling user input" onwards), minus its SwiftUI and
/// CoreLocation computed properties: the stored properties and Codable shape exactly.
struct AppleLandmark: Hashable, Codable, Identifiable {
    var id: Int
    var name: String
    var park: String
    var state: String
    var description: String
    var isFavorite: Bool
    var isFeatured: Bool

    var category: Category
    enum Category: String, CaseIterable, Codable {
        case lakes = "Lakes"
        case rivers = "Rivers"
        case mountains = "Mountains"
    }

    private var imageName: String
    private var coordinates: Coordinates
    var latitude: Double { coordinates.latitude }

    struct Coordinates: Hashable, Codable {
        var latitude: Double
        var longitude: Double
    }
}

@Suite("Featured")
struct FeaturedTests {
    static let appleShaped = """
        [
          {"name": "Mirror Lake", "category": "Lakes", "city": "Yosemite Valley", "state": "California", "id": 7,
           "isFeatured": true, "isFavorite": false, "park": "Yosemite National Park",
           "coordinates": {"longitude": -119.5540, "latitude": 37.7466}, "description": "A seasonal lake.", "imageName": "mirrorlake"},
          {"name": "Snake River Overlook", "category": "Rivers", "city": "Moran", "state": "Wyoming", "id": 3,
           "isFeatured": true, "isFavorite": true,
           "coordinates": {"longitude": -110.6329, "latitude": 43.8113}, "imageName": "snakeriver"},
          {"name": "Longs Peak", "category": "Mountains", "city": "Estes Park", "state": "Colorado", "id": 5,
           "isFeatured": false, "isFavorite": false, "park": "Rocky Mountain National Park",
           "coordinates": {"longitude": -105.6156, "latitude": 40.2549}, "description": "A fourteener.", "imageName": "longspeak"}
        ]
        """

    @Test("featured --json decodes with Apple's Landmark, in id order, missing strings as \"\"")
    func decodesWithApplesLandmark() throws {
        let dir = Support.temporaryDirectory()
        let file = dir.appending(path: "apple.json")
        try Self.appleShaped.write(to: file, atomically: true, encoding: .utf8)
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", file.path], db: db).status == 0)
        let result = runCLI(["featured", "--json"], db: db)
        #expect(result.status == 0)
        let landmarks = try JSONDecoder().decode([AppleLandmark].self, from: Data(result.stdout.utf8))
        #expect(landmarks.map(\.id) == [3, 7])
        #expect(landmarks[0].park == "")
        #expect(landmarks[0].description == "")
        #expect(landmarks[0].category == .rivers)
        #expect(landmarks[0].isFavorite)
        #expect(landmarks[1].latitude == 37.7466)
        // Keys sorted, compact, one line.
        #expect(
            result.stdout.hasPrefix(
                #"[{"category":"Rivers","city":"Moran","coordinates":{"latitude":43.8113,"longitude":-110.6329},"description":"","id":3,"#))
    }

    @Test("featured prints an aligned table for people")
    func table() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let result = runCLI(["featured"], db: db)
        #expect(
            result.stdout == """
                PAGE  ID    NAME          CATEGORY   PARK                        STATE
                0     1001  Half Dome     Mountains  Yosemite National Park      California
                1     1003  Grand Canyon  Canyons    Grand Canyon National Park  Arizona

                """)
    }

    @Test(
        "reading commands refuse a missing database (66) instead of creating an empty one",
        arguments: [
            ["featured"], ["positions"], ["position", "get", "--user", "u"], ["export"], ["status"], ["remote", "list"],
            ["position", "set", "--user", "u", "--page", "0"],
            // Regression (a user test): a typo'd --db made a new database holding one tombstone.
            ["position", "clear", "--user", "u"],
            ["log"], ["quarantine", "list"], ["quarantine", "drop", "--all"], ["conflicts"], ["publish", "/tmp/never-created-log"],
        ])
    func missingDatabase(_ arguments: [String]) {
        let db = Support.temporaryDatabase()
        let result = runCLI(arguments, db: db)
        #expect(result.status == 66)
        #expect(result.stderr.hasPrefix("catalog: error: no catalog database, \(db)"))
        #expect(!FileManager.default.fileExists(atPath: db))
    }

    @Test("the featured query is served by the partial index (EXPLAIN QUERY PLAN)")
    func usesIndex() throws {
        let store = try CatalogStore.open(path: ":memory:")
        let s = try store.connection.makeStatement(sql: "EXPLAIN QUERY PLAN " + LandmarksTable.featuredSQL)
        var details: [String] = []
        while try s.step() { details.append(s.text(3) ?? "") }
        #expect(details == ["SCAN landmarks USING INDEX landmarks_featured"])
    }

    @Test("an empty catalog prints an empty JSON array")
    func emptyCatalog() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["init"], db: db).status == 0)
        let result = runCLI(["featured", "--json"], db: db)
        #expect(result.status == 0)
        #expect(result.stdout == "[]\n")
    }
}
