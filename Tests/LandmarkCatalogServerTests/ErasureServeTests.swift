import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogClient
@testable import LandmarkCatalogSync

/// Erasure through a real serve (docs/erasure.md, docs/protocol.md §6a).
@Suite("Erasure through serve", .serialized)
struct ErasureServeTests {
    @Test("serve: DELETE /v1/users/me erases; a device's older row is refused as erased, a later one is a new user")
    func serveErasesAndRefusesOldRows() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let token = try ServeKeys.issue(box, key: key.privateKey, user: ErasureTraces.user)
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        let url = serve.base + "/v1/positions"
        let old = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        let wrote = try ServeCurl.post(url, token: token, body: ServeRows.body(user: ErasureTraces.user, page: 2, wall: old))
        #expect((wrote.json?["results"] as? [[String: Any]])?.first?["outcome"] as? String == "applied")
        // A user token may erase only itself; a wrong method is 405.
        let foreign = try ServeCurl.run(["-X", "DELETE", "-H", "Authorization: Bearer \(ann)", serve.base + "/v1/users/\(ErasureTraces.user)"])
        #expect(foreign.status == 403 && foreign.errorCode == "insufficient_scope")
        #expect(try ServeCurl.get(serve.base + "/v1/users/me", token: token).status == 405)
        let erased = try ServeCurl.run(["-X", "DELETE", "-H", "Authorization: Bearer \(token)", serve.base + "/v1/users/me"])
        #expect(erased.status == 200, "\(erased)")
        #expect(erased.json?["erased"] as? Bool == true)
        #expect(erased.json?["removedRow"] as? Bool == true)
        // The account's tokens are refused from now on (docs/serve.md §2); the device signs in again.
        #expect(try ServeCurl.get(url, token: token).errorCode == "account_erased")
        let renewed = try ServeKeys.issue(key: key.privateKey, user: ErasureTraces.user, issuedIn: 2)
        #expect(ServeRows.positions(try ServeCurl.get(url, token: renewed)).isEmpty)
        // The offline device comes back with its old row: refused as erased, nothing stored.
        let late = try ServeCurl.post(url, token: renewed, body: ServeRows.body(user: ErasureTraces.user, page: 4, wall: old + 1))
        #expect((late.json?["results"] as? [[String: Any]])?.first?["outcome"] as? String == "erased", "\(late)")
        #expect(ServeRows.positions(try ServeCurl.get(url, token: renewed)).isEmpty)
        #expect(ErasureTraces.traces(db) == [0, 0, 0], "the server's files still hold the id")
        // An edge token erases another user by id; ann's row goes.
        let byEdge = try ServeCurl.run(["-X", "DELETE", "-H", "Authorization: Bearer \(edge)", serve.base + "/v1/users/ann"])
        #expect(byEdge.status == 200, "\(byEdge)")
        #expect(ServeRows.positions(try ServeCurl.get(url, token: ann)).isEmpty)
        // Written after the erasure: a new user, accepted.
        let fresh = try ServeCurl.post(url, token: renewed, body: ServeRows.body(user: ErasureTraces.user, page: 1))
        #expect((fresh.json?["results"] as? [[String: Any]])?.first?["outcome"] as? String == "applied")
        #expect(ServeRows.positions(try ServeCurl.get(url, token: renewed)).first?["page"] as? Int == 1)
        let run = serve.stop()
        #expect(run.status == 0)
        #expect(run.stderr.contains(#""route":"/v1/users""#))
    }

    /// serve collects on its own (docs/erasure.md §4): with the interval made short by a test hook and the
    /// clock 40 days ahead (libfaketime), a month-old tombstone goes and a new one stays, with no vacuum.
    @Test(
        "plain serve collects tombstones past the default 30-day horizon on its own, and keeps newer ones",
        .enabled(if: FakeClock.available, "faketime is not installed (scripts/setup)"))
    func serveCollectsOnItsOwn() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let ahead = FakeClock.environment(daysAhead: 40)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let faked = try #require(try FakeClock.probe(box, ahead), "catalog under libfaketime did not run")
        try #require(abs(faked - now - 40 * 86_400_000) < 3_600_000, "libfaketime did not move catalog's clock")
        // ann's position cleared today (40 days before serve's clock), bob's cleared at serve's time.
        #expect(try box.run(["position", "clear", "--user", "ann"], db: db).status == 0)
        #expect(try box.run(["position", "set", "--user", "bob", "--page", "2"], db: db, environment: ahead).status == 0)
        #expect(try box.run(["position", "clear", "--user", "bob"], db: db, environment: ahead).status == 0)
        let tombstones = "SELECT user_id FROM positions WHERE deleted = 1 ORDER BY user_id"
        #expect(try dumpRows(db, sql: tombstones) == [[.text("ann")], [.text("bob")]])
        let serve = try ServeProcess(
            box, db: db, keys: [key.publicKey], binary: Support.harnessBinary,
            environment: ahead.merging(["CATALOG_TEST_SERVE_GC_MS": "200"]) { $1 })
        let collected = Waits.waitFor(20) { serve.log.contains(#""event":"gc""#) }
        #expect(collected != nil, "serve never collected: \(serve.log.suffix(1000))")
        #expect(serve.log.contains(#""event":"gc","state":"ok""#) && serve.log.contains(#""positionTombstones":1"#), "\(serve.log)")
        #expect(try dumpRows(db, sql: tombstones) == [[.text("bob")]])
        // The horizon is recorded: ann's old row, stamped before it, is refused as expired from now on.
        let horizon = try dumpRows(db, sql: "SELECT value FROM catalog_meta WHERE key = 'gc_horizon_ms'")
        #expect(horizon.count == 1, "\(horizon)")
        #expect(serve.stop().status == 0)
    }
}
