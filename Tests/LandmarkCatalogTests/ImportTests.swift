import CatalogCLI
import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

@Suite("Import")
struct ImportTests {
    @Test("a valid file imports every record; featured ids in order")
    func importsValidFile() throws {
        let db = Support.temporaryDatabase()
        let result = runCLI(["import", Support.fixture("valid.json")], db: db)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "5 records: 5 inserted, 0 updated, 0 unchanged, 0 pruned, 0 warnings\n")
        #expect(result.stderr == "")
        #expect(try featuredIDs(db) == [1001, 1003])
        let delicate = try #require(try LandmarkReader(CatalogStore.open(path: db)).landmark(id: 1005))
        #expect(delicate.name == "Delicate Arch")
        #expect(delicate.state == "Utah")
    }

    @Test("re-importing the same file changes nothing and says so")
    func reimportIsIdempotent() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let before = try dumpLandmarks(db)
        let clockBefore = try Connection(path: db).scalarInt(sql: "SELECT counter + wall_ms FROM hlc_clock")
        let again = runCLI(["import", "--json", Support.fixture("valid.json")], db: db)
        #expect(again.status == 0)
        #expect(
            again.stdout
                == #"{"dryRun":false,"file":"\#(Support.fixture("valid.json"))","inserted":0,"pruned":0,"records":5,"unchanged":5,"updated":0,"warnings":0}"#
                + "\n")
        #expect(try dumpLandmarks(db) == before)
        // Not even the clock moved: an unchanged import writes nothing at all.
        #expect(try Connection(path: db).scalarInt(sql: "SELECT counter + wall_ms FROM hlc_clock") == clockBefore)
    }

    @Test("one changed field is exactly one update, with a newer stamp")
    func oneChangeIsOneUpdate() throws {
        let db = Support.temporaryDatabase()
        let clock = ManualClock(1_800_000_000_000)
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db, clock: clock).status == 0)
        clock.advance(1000)
        let result = runCLI(["import", Support.fixture("valid-one-change.json")], db: db, clock: clock)
        #expect(result.stdout == "5 records: 0 inserted, 1 updated, 4 unchanged, 0 pruned, 0 warnings\n")
        let c = try Connection(path: db)
        #expect(try c.scalarText(sql: "SELECT city FROM landmarks WHERE id = 1005") == "Moab (Arches)")
        #expect(try c.scalarInt(sql: "SELECT updated_ms FROM landmarks WHERE id = 1005") == 1_800_000_001_000)
        #expect(try c.scalarInt(sql: "SELECT updated_ms FROM landmarks WHERE id = 1001") == 1_800_000_000_000)
    }

    @Test("absent keys keep stored values; null clears them")
    func absentKeepsNullClears() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let dir = Support.temporaryDirectory()
        let partial = dir.appending(path: "partial.json")
        try #"[{"id": 1001, "name": "Half Dome", "coordinates": {"latitude": 37.7459, "longitude": -119.5332}, "park": null}]"#
            .write(to: partial, atomically: true, encoding: .utf8)
        let result = runCLI(["import", partial.path], db: db)
        #expect(result.stdout.hasPrefix("1 record: 0 inserted, 1 updated"), "\(result.stdout) \(result.stderr)")
        let halfDome = try #require(try LandmarkReader(CatalogStore.open(path: db)).landmark(id: 1001))
        #expect(halfDome.park == nil)
        #expect(halfDome.state == "California")
        #expect(halfDome.isFeatured)
    }

    @Test("--prune tombstones missing rows; --dry-run writes nothing")
    func pruneAndDryRun() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let dir = Support.temporaryDirectory()
        let two = dir.appending(path: "two.json")
        let records = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Support.fixture("valid.json")))) as! [Any]
        try JSONSerialization.data(withJSONObject: Array(records.prefix(2))).write(to: two)
        let before = try dumpLandmarks(db)
        let dry = runCLI(["import", "--prune", "--dry-run", two.path], db: db)
        #expect(dry.stdout == "dry run, nothing written: 2 records: 0 inserted, 0 updated, 2 unchanged, 3 pruned, 0 warnings\n")
        #expect(try dumpLandmarks(db) == before)
        let real = runCLI(["import", "--prune", two.path], db: db)
        #expect(real.stdout == "2 records: 0 inserted, 0 updated, 2 unchanged, 3 pruned, 0 warnings\n")
        #expect(try LandmarkReader(CatalogStore.open(path: db)).landmarkCounts() == (live: 2, tombstones: 3))
        #expect(try featuredIDs(db) == [1001])
        // A pruned landmark comes back when a file names it again.
        let back = runCLI(["import", Support.fixture("valid.json")], db: db)
        #expect(back.stdout == "5 records: 3 inserted, 0 updated, 2 unchanged, 0 pruned, 0 warnings\n")
    }

    @Test("standard input is read with -")
    func readsStandardInput() throws {
        let db = Support.temporaryDatabase()
        let fd = open(Support.fixture("valid.json"), O_RDONLY)
        defer { close(fd) }
        let result = runCLI(["import", "-"], db: db, stdinFD: fd)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try featuredIDs(db) == [1001, 1003])
    }

    struct Quirk: Sendable, CustomTestStringConvertible {
        var file: String
        var warning: String
        var featured: [Int64]
        var testDescription: String { file }
    }

    @Test(
        "Apple's quirks import with a warning naming line and column, and fail with --strict",
        arguments: [
            Quirk(file: "trailing-comma.json", warning: "trailing-comma.json:48:", featured: [1001, 1003]),
            Quirk(file: "isfavourite.json", warning: "'isFavourite' is read as 'isFavorite'", featured: [1001, 1003]),
            Quirk(file: "legacy-no-featured.json", warning: "category \"Featured\" is read as featured", featured: [1002]),
            Quirk(file: "unknown-keys-crlf.json", warning: "unknown key 'url' is kept", featured: [1001, 1003]),
        ])
    func quirks(_ quirk: Quirk) throws {
        let db = Support.temporaryDatabase()
        let lenient = runCLI(["import", Support.fixture(quirk.file)], db: db)
        #expect(lenient.status == 0, "\(lenient.stderr)")
        #expect(lenient.stderr.contains("catalog: warning: "))
        #expect(lenient.stderr.contains(quirk.warning), "\(lenient.stderr)")
        #expect(try featuredIDs(db) == quirk.featured)

        let strictDB = Support.temporaryDatabase()
        let strict = runCLI(["import", "--strict", Support.fixture(quirk.file)], db: strictDB)
        #expect(strict.status == 65)
        #expect(strict.stderr.contains("catalog: error: "))
        // Regression (a user test): "error: unknown key 'url' is kept as it is … (--strict)" said both.
        #expect(
            quirk.file == "trailing-comma.json"  // a syntax error under --strict, from the JSON reader
                || strict.stderr.contains("catalog: error: refused by --strict (without it, a warning: "), "\(strict.stderr)")
        #expect(strict.stderr.contains("nothing was imported"))
        #expect(try dumpLandmarks(strictDB).isEmpty)
    }

    @Test("the British spelling isFavourite is stored as isFavorite")
    func favouriteSpelling() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("isfavourite.json")], db: db).status == 0)
        let c = try Connection(path: db)
        #expect(try c.scalarInt(sql: "SELECT count(*) FROM landmarks WHERE is_favorite = 1") == 2)
        #expect(try c.scalarInt(sql: "SELECT count(*) FROM landmarks WHERE extra LIKE '%isFavourite%'") == 0)
    }

    @Test("unknown keys are kept and written back by featured --json; CRLF and Hangul are fine")
    func unknownKeysKept() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("unknown-keys-crlf.json")], db: db).status == 0)
        let c = try Connection(path: db)
        #expect(try c.scalarText(sql: "SELECT extra FROM landmarks WHERE id = 1001") == #"{"url":"https://example.org/half-dome"}"#)
        #expect(try c.scalarText(sql: "SELECT extra FROM landmarks WHERE id = 1003") == #"{"tags":["rim","viewpoint"]}"#)
        #expect(try c.scalarText(sql: "SELECT name FROM landmarks WHERE id = 1002") == "올드 페이스풀 (Old Faithful)")
        let json = runCLI(["featured", "--json"], db: db).stdout
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(objects.count == 2)
        #expect(objects[0]["url"] as? String == "https://example.org/half-dome")
        #expect(objects[1]["tags"] as? [String] == ["rim", "viewpoint"])
    }

    struct BadInput: Sendable, CustomTestStringConvertible {
        var file: String
        var status: Int32
        var mentions: [String]
        var testDescription: String { file }
    }

    @Test(
        "bad input: its exit status, a message naming where, and nothing written",
        arguments: [
            BadInput(file: "truncated.json", status: 65, mentions: ["truncated.json:"]),
            BadInput(file: "string-id.json", status: 65, mentions: ["string-id.json:", "record 2", "field id", "the string \"1003\""]),
            BadInput(
                file: "latitude-91.json", status: 65, mentions: ["latitude 91 is outside −90…90", "record 1 (id 1002)", "field coordinates.latitude"]),
            BadInput(file: "nan.json", status: 65, mentions: ["nan.json:13:19", "expected a value, found 'N'"]),
            BadInput(file: "empty-name.json", status: 65, mentions: ["name must not be empty", "record 3 (id 1004)", "field name"]),
            BadInput(file: "invalid-utf8.json", status: 65, mentions: ["invalid-utf8.json:", "UTF-8"]),
            BadInput(file: "duplicate-id.json", status: 65, mentions: ["duplicate id 1002", "record 1 (\"Old Faithful\")", "record 3 (\"Denali\")"]),
            BadInput(file: "no-such-file.json", status: 66, mentions: ["cannot open", "no-such-file.json", "No such file"]),
            BadInput(file: "", status: 66, mentions: ["is a directory"]),
        ])
    func badInput(_ bad: BadInput) throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid-one-featured.json")], db: db).status == 0)
        let before = try dumpLandmarks(db)
        let result = runCLI(["import", Support.fixture(bad.file)], db: db)
        #expect(result.status == bad.status, "\(result.stderr)")
        #expect(result.stdout == "")
        for text in bad.mentions {
            #expect(result.stderr.contains(text), "missing \(text) in: \(result.stderr)")
        }
        #expect(result.stderr.hasPrefix("catalog: error: "))
        #expect(try dumpLandmarks(db) == before)
    }

    @Test("a hike file (not a landmark array) is refused as a whole")
    func hikeDataRefused() throws {
        let dir = Support.temporaryDirectory()
        let hikes = dir.appending(path: "hikeData.json")
        try #"[{"name": "Lonesome Ridge Trail", "id": 1001, "distance": 4.5, "difficulty": 3, "observations": []}]"#
            .write(to: hikes, atomically: true, encoding: .utf8)
        let db = Support.temporaryDatabase()
        let result = runCLI(["import", hikes.path], db: db)
        #expect(result.status == 65)
        #expect(result.stderr.contains("missing required key 'coordinates'"))
        #expect(try dumpLandmarks(db).isEmpty)
    }

    @Test("UTF-16 input is refused; one BOM is skipped")
    func encodings() throws {
        let dir = Support.temporaryDirectory()
        let text = try String(contentsOfFile: Support.fixture("valid.json"), encoding: .utf8)
        let bom = dir.appending(path: "bom.json")
        try (Data([0xEF, 0xBB, 0xBF]) + Data(text.utf8)).write(to: bom)
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", bom.path], db: db).status == 0)
        let utf16 = dir.appending(path: "utf16.json")
        try text.data(using: .utf16LittleEndian)!.write(to: utf16)
        let result = runCLI(["import", utf16.path], db: Support.temporaryDatabase())
        #expect(result.status == 65)
        #expect(result.stderr.contains("UTF-16"))
    }
}

/// A first import builds the database beside its path with no journal and moves it into place
/// (docs/performance.md §2): nothing at the path until it is complete, nothing left on a failure.
@Suite("Import: a new database built whole, then moved into place")
struct NewDatabaseBuildTests {
    @Test("a first import: the database in WAL mode at its path, no build file left, a re-import writes nothing")
    func firstImport() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appending(path: "new/catalog.sqlite").path
        let r = runCLI(["import", Support.fixture("valid.json")], db: db)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: db + ".building"))
        #expect(try dumpRows(db, sql: "PRAGMA journal_mode") == [[.text("wal")]])
        #expect(try dumpRows(db, sql: "PRAGMA integrity_check") == [[.text("ok")]])
        #expect(try dumpRows(db, sql: "SELECT count(*) FROM landmarks") == [[.integer(5)]])
        let again = runCLI(["import", Support.fixture("valid.json"), "--json"], db: db)
        #expect(again.stdout.contains(#""unchanged":5"#), "\(again.stdout)")
    }

    @Test("an invalid file: 65, nothing at the path and no build file")
    func refused() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appending(path: "catalog.sqlite").path
        let r = runCLI(["import", Support.fixture("latitude-91.json")], db: db)
        #expect(r.status == 65, "\(r.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(left.isEmpty, "\(left)")
    }

    @Test("a build file a killed import left is started again; one another build holds makes it write the usual way")
    func leftoverAndHeld() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appending(path: "catalog.sqlite").path
        try Data("half a database".utf8).write(to: URL(fileURLWithPath: db + ".building"))
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        #expect(!FileManager.default.fileExists(atPath: db + ".building"))
        #expect(try dumpRows(db, sql: "SELECT count(*) FROM landmarks") == [[.integer(5)]])

        let other = dir.appending(path: "other.sqlite").path
        let held = open(other + ".building", O_RDWR | O_CREAT, 0o644)
        defer { close(held) }
        #expect(flock(held, LOCK_EX) == 0)
        #expect(runCLI(["import", Support.fixture("valid.json")], db: other).status == 0)
        #expect(try dumpRows(other, sql: "SELECT count(*) FROM landmarks") == [[.integer(5)]])
    }

    @Test("a first import through a symbolic link (to a file not there yet): written through the link, not 75")
    func throughALink() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let link = dir.appending(path: "link.sqlite").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir.appending(path: "target.sqlite").path)
        let r = runCLI(["import", Support.fixture("valid.json")], db: link)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try dumpRows(dir.appending(path: "target.sqlite").path, sql: "SELECT count(*) FROM landmarks") == [[.integer(5)]])
    }

    @Test("a database that appears at the path during the build is never replaced: Appeared, the build removed")
    func appearedMeanwhile() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appending(path: "catalog.sqlite").path
        #expect(throws: NewDatabaseBuild.Appeared.self) {
            _ = try NewDatabaseBuild.build(path: path, wallClock: ManualClock(testNow)) { store in
                _ = try Importer(store).importLandmarks(from: .file(Support.fixture("valid.json")))
                _ = try CatalogStore.open(path: path)  // another process created it meanwhile
            }
        }
        #expect(!FileManager.default.fileExists(atPath: path + ".building"))
        #expect(try dumpRows(path, sql: "SELECT count(*) FROM landmarks") == [[.integer(0)]])
        let exists = try NewDatabaseBuild.build(path: path, wallClock: ManualClock(testNow)) { _ in 1 }
        #expect(exists == nil)
    }
}
