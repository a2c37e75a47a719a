import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// What a node's `catalog gc` measures its horizon from (docs/erasure.md §4): the wall clock, capped at the
/// newest stamp its rows hold, not at its hybrid logical clock, which a merge moves to the wall clock.
@Suite("The node's collection clock", .enabled(if: FakeClock.available, "faketime is not installed (scripts/setup)"), .serialized)
struct CollectionClockTests {
    static let day: Int64 = 86_400_000
    static var now: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("a node 400 days ahead that only merged a snapshot keeps a tombstone seconds old and takes a new user's row after gc")
    func mergeDoesNotMoveTheCollectionClock() throws {
        let box = try Sandbox()
        let ahead = FakeClock.environment(daysAhead: 400)
        let faked = try #require(try FakeClock.probe(box, ahead), "catalog under libfaketime did not run")
        try #require(faked > Self.now + 399 * Self.day, "libfaketime did not move the clock")
        // A source with a correct clock: bob set, then cleared seconds ago (a tombstone).
        let src = try box.seededDatabase("src.sqlite")
        #expect(try box.run(["position", "set", "--user", "bob", "--page", "2"], db: src).status == 0)
        #expect(try box.run(["position", "clear", "--user", "bob"], db: src).status == 0)
        let snap = box.path("snap.json")
        #expect(try box.run(["export", "--output", snap], db: src).status == 0)
        // The node whose clock is 400 days ahead merges it, and collects.
        let node = box.path("n.sqlite")
        let merged = try box.run(["sync", "--quiet", snap], db: node, environment: ahead)
        try #require(merged.status == 0, "\(merged)")
        let gc = try box.run(["gc", "--json"], db: node, environment: ahead)
        try #require(gc.status == 0, "\(gc)")
        let summary = try Self.json(gc.stdout)
        #expect(summary["positionTombstones"] as? Int == 0, "\(summary)")
        let horizon = try #require((summary["horizon"] as? String).flatMap { Timestamp.parse($0) }, "\(summary)")
        #expect(abs(horizon - (Self.now - 30 * Self.day)) < 300_000, "horizon \(summary["horizon"] ?? "")")
        // The tombstone is kept: it is seconds old.
        #expect(try dumpRows(node, sql: "SELECT deleted FROM positions WHERE user_id = 'bob'").first?.first == .integer(1))
        // A new user written at the source now is merged, not refused as expired.
        #expect(try box.run(["position", "set", "--user", "newbie", "--page", "1"], db: src).status == 0)
        let snap2 = box.path("snap2.json")
        #expect(try box.run(["export", "--output", snap2], db: src).status == 0)
        let second = try Self.json(try box.run(["sync", "--json", snap2], db: node, environment: ahead).stdout)
        #expect(second["expired"] as? Int == 0, "\(second)")
        #expect(try box.run(["position", "get", "--user", "newbie"], db: node).status == 0)
    }
}
