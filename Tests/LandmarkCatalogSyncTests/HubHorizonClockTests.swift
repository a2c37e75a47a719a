import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// What `gc --hub` measures its horizon from (docs/erasure.md §7): the newest row stamp the hub holds, never
/// an erasure record's stamp, which no drift check bounds.
@Suite(
    "The hub's collection clock", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"),
    .enabled(if: FakeClock.available, "faketime is not installed (scripts/setup)"), .serialized)
struct HubHorizonClockTests {
    static let day: Int64 = 86_400_000
    static var now: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("erasures stamped far ahead do not let a collector whose clock is 400 days ahead move the hub's horizon past new rows")
    func erasuresAheadDoNotMoveTheHorizon() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name) = try HubSupport.makeHub(server)
        let node = try box.seededDatabase("a.sqlite")
        #expect(try box.run(["position", "set", "--user", "bob", "--page", "2"], db: node).status == 0)
        #expect(try box.run(["sync", "--quiet", uri], db: node).status == 0)
        // A machine whose clock is 400 days ahead erases a user and pushes the erasure to the hub.
        let ahead = FakeClock.environment(daysAhead: 400)
        let faked = try #require(try FakeClock.probe(box, ahead), "catalog under libfaketime did not run")
        try #require(faked > Self.now + 399 * Self.day, "libfaketime did not move the clock")
        let gcbox = try box.seededDatabase("gcbox.sqlite")
        #expect(try box.run(["sync", "--quiet", uri], db: gcbox, environment: ahead).status == 0)
        #expect(try box.run(["user", "erase", "someone-who-asked"], db: gcbox, environment: ahead).status == 0)
        #expect(try box.run(["sync", "--quiet", uri], db: gcbox, environment: ahead).status == 0)
        // And an erasure stamped 2100-01-01, as a user token may send its own user's through a serve.
        try HubSupport.connect(server, name).execute(
            sql: "INSERT INTO hub_erasures VALUES ($1, 4102444800000, 0, 'x', nextval('hub_change_seq'))",
            [.text(ErasureRule.userHash("mallory"))])
        let erasedAhead = try HubSupport.scalar(
            server, name, "SELECT count(*) FROM hub_erasures WHERE updated_ms > $1", [.integer(Self.now + Self.day)])
        try #require(erasedAhead == "2", "the erasures ahead did not reach the hub")
        // The collector's clock is 400 days ahead too: the horizon stays 30 days before the newest row.
        let gc = try box.run(["gc", "--hub", uri, "--json"], db: box.path("none.sqlite"), environment: ahead)
        try #require(gc.status == 0, "\(gc)")
        let horizon = try #require(
            try HubSupport.scalar(server, name, "SELECT value FROM hub_meta WHERE key = 'gc_horizon_ms'").flatMap { Int64($0) })
        #expect(abs(horizon - (Self.now - 30 * Self.day)) < 300_000, "horizon \(Timestamp.format(milliseconds: horizon))")
        // A new user written now with a correct clock is taken, not refused as expired.
        #expect(try box.run(["position", "set", "--user", "newuser", "--page", "1"], db: node).status == 0)
        let pushed = try box.run(["sync", "--json", uri], db: node)
        #expect(pushed.status == 0, "\(pushed)")
        let sources = try #require(try Self.json(pushed.stdout)["sources"] as? [[String: Any]])
        let push = try #require(sources.first?["pushed"] as? [String: Any], "\(pushed.stdout)")
        #expect(push["expired"] as? Int == 0, "\(push)")
        #expect(try HubSupport.scalar(server, name, "SELECT page FROM positions WHERE user_id = 'newuser'") == "1")
    }
}
