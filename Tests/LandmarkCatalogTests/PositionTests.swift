import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

@Suite("Positions")
struct PositionTests {
    @Test("a position follows its landmark, is clamped when it leaves, is null when nothing is featured, and comes back")
    func followsLandmark() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "u-1", "--page", "2"], db: db).status == 0)
        let get = runCLI(["position", "get", "--user", "u-1"], db: db)
        #expect(get.stdout == "u-1: page 2 of 3 (landmark 1007)\n")

        // A landmark is added before 1007's page: still on 1007, now page 2 of 4 (1012 sorts after).
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007, 1012])], db: db).status == 0)
        var store = try CatalogStore.open(path: db)
        var p = try #require(try Positions(store).position(user: "u-1"))
        #expect(p.currentPage == 2)
        #expect(p.landmarkID == 1007)
        #expect(p.pageCount == 4)

        // One featured before it: 1007 moves to page 3 and the user with it.
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1002, 1004, 1007])], db: db).status == 0)
        p = try #require(try Positions(store).position(user: "u-1"))
        #expect(p.currentPage == 3)
        #expect(p.landmarkID == 1007)

        // 1007 no longer featured: the stored page (2) clamped into 0..<2.
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004])], db: db).status == 0)
        p = try #require(try Positions(store).position(user: "u-1"))
        #expect(p.currentPage == 1)
        #expect(p.landmarkID == 1004)
        #expect(p.storedLandmarkID == 1007)

        // Nothing featured: no current page.
        #expect(runCLI(["import", try landmarkFile(featured: [])], db: db).status == 0)
        p = try #require(try Positions(store).position(user: "u-1"))
        #expect(p.currentPage == nil)
        #expect(p.landmarkID == nil)
        let json = runCLI(["position", "get", "--user", "u-1", "--json"], db: db).stdout
        #expect(json.contains(#""currentPage":null,"landmarkId":null"#))
        #expect(json.contains(#""pageCount":0"#))

        // 1007 featured again: the user is back on it.
        #expect(runCLI(["import", try landmarkFile(featured: [1003, 1007])], db: db).status == 0)
        store = try CatalogStore.open(path: db)
        p = try #require(try Positions(store).position(user: "u-1"))
        #expect(p.currentPage == 1)
        #expect(p.landmarkID == 1007)
    }

    @Test("imports, including --prune, never delete or rewrite positions")
    func importsLeavePositions() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "a", "--landmark", "1007"], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "b", "--page", "0"], db: db).status == 0)
        let before = try dumpPositions(db)
        #expect(before.count == 2)
        #expect(runCLI(["import", "--prune", try landmarkFile(featured: [1002], ids: 1001...1003)], db: db).status == 0)
        #expect(try dumpPositions(db) == before)
    }

    @Test("set --landmark stores that landmark's page")
    func setByLandmark() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db).status == 0)
        let r = runCLI(["position", "set", "--user", "u", "--landmark", "1004", "--json"], db: db)
        #expect(r.status == 0)
        #expect(r.stdout.contains(#""currentPage":1,"landmarkId":1004"#), "\(r.stdout)")
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        var message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    @Test(
        "out-of-range pages, non-featured landmarks and bad user ids exit 64 and store nothing",
        arguments: [
            Refusal(arguments: ["--user", "u-1", "--page", "3"], message: "page 3 is out of range: the carousel has 3 pages (0…2)"),
            Refusal(arguments: ["--user", "u-1", "--page", "-1"], message: "page -1 is out of range"),
            Refusal(arguments: ["--user", "u-1", "--landmark", "1002"], message: "landmark 1002 is not featured"),
            Refusal(arguments: ["--user", "u-1", "--landmark", "99"], message: "landmark 99 is not featured"),
            Refusal(arguments: ["--user", "", "--page", "0"], message: "user id must not be empty"),
            Refusal(arguments: ["--user", String(repeating: "é", count: 129), "--page", "0"], message: "258 bytes"),
            Refusal(arguments: ["--user", "a\u{7}b", "--page", "0"], message: "control character U+7"),
            Refusal(arguments: ["--user", "u-1", "--page", "two"], message: "--page needs an integer"),
            Refusal(arguments: ["--user", "u-1", "--page", "1", "--landmark", "1004"], message: "exactly one of --page N and --landmark ID"),
            Refusal(arguments: ["--page", "1"], message: "missing --user ID"),
        ])
    func refusals(_ refusal: Refusal) throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "u-1", "--page", "1"], db: db).status == 0)
        let before = try dumpPositions(db)
        let result = runCLI(["position", "set"] + refusal.arguments, db: db)
        #expect(result.status == 64)
        #expect(result.stderr.contains(refusal.message), "\(result.stderr)")
        #expect(try dumpPositions(db) == before)
    }

    @Test("a page on an empty carousel is refused")
    func emptyCarousel() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["position", "set", "--user", "u", "--page", "0"], db: db).status == 66)  // no database at all
        #expect(runCLI(["init"], db: db).status == 0)
        let result = runCLI(["position", "set", "--user", "u", "--page", "0"], db: db)
        #expect(result.status == 64)
        #expect(result.stderr.contains("no landmarks are featured"))
    }

    @Test("a user id in NFD and the same id in NFC address one row")
    func normalisation() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db).status == 0)
        let nfd = "Zoe\u{0301}"
        let nfc = "Zo\u{00E9}"
        #expect(Array(nfd.utf8) != Array(nfc.utf8))
        #expect(runCLI(["position", "set", "--user", nfd, "--page", "1"], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", nfc, "--page", "2"], db: db).status == 0)
        let rows = try dumpPositions(db)
        #expect(rows.count == 1)
        #expect(rows.first?.first == .text(nfc))
        #expect(try Positions(CatalogStore.open(path: db)).position(user: nfd)?.currentPage == 2)
    }

    @Test("clear writes a tombstone: get shows no position, the row is kept for sync")
    func clear() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "u-1", "--page", "2"], db: db).status == 0)
        #expect(runCLI(["position", "clear", "--user", "u-1"], db: db).status == 0)
        #expect(runCLI(["position", "get", "--user", "u-1"], db: db).stdout == "u-1: no position\n")
        #expect(runCLI(["positions", "--json"], db: db).stdout == "[]\n")
        let store = try CatalogStore.open(path: db)
        #expect(try Positions(store).hasTombstone(user: "u-1"))
        #expect(try Positions(store).position(user: "u-1") == nil)
        // A later set brings it back with a newer stamp.
        #expect(runCLI(["position", "set", "--user", "u-1", "--page", "0"], db: db).status == 0)
        #expect(try Positions(store).position(user: "u-1")?.currentPage == 0)
    }

    @Test("featured --user gives {user, currentPage, pageCount, landmarks}")
    func featuredForUser() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "u-1", "--landmark", "1004"], db: db).status == 0)
        let r = runCLI(["featured", "--json", "--user", "u-1"], db: db)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["user", "currentPage", "pageCount", "landmarks"])
        #expect(object["user"] as? String == "u-1")
        #expect((object["currentPage"] as? NSNumber)?.intValue == 1)
        #expect((object["pageCount"] as? NSNumber)?.intValue == 3)
        #expect(((object["landmarks"] as? [[String: Any]]) ?? []).compactMap { ($0["id"] as? NSNumber)?.intValue } == [1001, 1004, 1007])
        let nobody = runCLI(["featured", "--json", "--user", "nobody"], db: db).stdout
        #expect(nobody.hasPrefix(#"{"currentPage":null,"landmarks":["#))
        let table = runCLI(["featured", "--user", "u-1"], db: db).stdout
        #expect(table.contains("\n> 1   1004  Landmark 1004"), "\(table)")
    }

    @Test("positions lists every live position")
    func list() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "b", "--page", "2"], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "a", "--page", "0"], db: db).status == 0)
        let positions = try Positions(CatalogStore.open(path: db)).positions()
        #expect(positions.map(\.user) == ["a", "b"])
        #expect(positions.map(\.currentPage) == [0, 2])
        let table = runCLI(["positions"], db: db).stdout
        #expect(table.hasPrefix("USER  PAGE  OF  LANDMARK"))
    }
}

@Suite("Hybrid logical clock")
struct ClockTests {
    @Test("two writes in the same millisecond get strictly increasing stamps")
    func sameMillisecond() throws {
        let clock = ManualClock(1_800_000_000_000)
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db, clock: clock).status == 0)
        let store = try CatalogStore.open(path: db, wallClock: clock)
        let a = try Positions(store).setPosition(user: "u", to: .page(0)).stamp
        let b = try Positions(store).setPosition(user: "u", to: .page(1)).stamp
        #expect(a < b)
        #expect(b.wallMilliseconds == a.wallMilliseconds)
        #expect(b.counter == a.counter + 1)
    }

    @Test("a wall clock stepping backwards never makes a stamp go backwards")
    func backwards() throws {
        let clock = ManualClock(1_800_000_000_000)
        let store = try CatalogStore.open(path: Support.temporaryDatabase(), wallClock: clock)
        var stamps: [HLCStamp] = []
        for step: Int64 in [5, -60_000, 0, -1, 120_000, -3_600_000, 1] {
            clock.advance(step)
            try store.write { stamps.append(try store.issueLocalStamp()) }
        }
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 }, "\(stamps)")
        #expect(stamps[1].wallMilliseconds == 1_800_000_000_005)  // held at the high-water mark
        #expect(stamps[4].wallMilliseconds == 1_800_000_060_004 || stamps[4].wallMilliseconds > stamps[3].wallMilliseconds)
    }

    @Test("the clock survives a restart: a new process (store) continues after the last stamp")
    func survivesRestart() throws {
        let path = Support.temporaryDatabase()
        let fast = ManualClock(1_900_000_000_000)
        var first: HLCStamp?
        do {
            let store = try CatalogStore.open(path: path, wallClock: fast)
            try store.write { first = try store.issueLocalStamp() }
        }
        // The next run's wall clock is an hour behind; its stamp still orders after.
        let slow = ManualClock(1_900_000_000_000 - 3_600_000)
        let store = try CatalogStore.open(path: path, wallClock: slow)
        var second: HLCStamp?
        try store.write { second = try store.issueLocalStamp() }
        #expect(try #require(first) < #require(second))
        #expect(second?.wallMilliseconds == 1_900_000_000_000)
        #expect(second?.counter == 1)
    }

    @Test("receiving a remote stamp moves the clock past it")
    func receive() throws {
        let clock = ManualClock(1_000)
        let store = try CatalogStore.open(path: ":memory:", wallClock: clock)
        try store.write {
            try store.observeRemoteStamp(wall: 50_000, counter: 7)
            let next = try store.issueLocalStamp()
            #expect(next.wallMilliseconds == 50_000)
            #expect(next.counter == 9)
        }
    }

    @Test(
        "stamps order by instant, then counter, then node",
        arguments: [
            (HLCStamp(wallMilliseconds: 1, counter: 9, node: "z"), HLCStamp(wallMilliseconds: 2, counter: 0, node: "a")),
            (HLCStamp(wallMilliseconds: 2, counter: 0, node: "z"), HLCStamp(wallMilliseconds: 2, counter: 1, node: "a")),
            (HLCStamp(wallMilliseconds: 2, counter: 1, node: "a"), HLCStamp(wallMilliseconds: 2, counter: 1, node: "b")),
        ])
    func ordering(_ pair: (HLCStamp, HLCStamp)) {
        #expect(pair.0 < pair.1)
        #expect(!(pair.1 < pair.0))
    }
}
