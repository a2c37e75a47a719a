import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// The hub's kept digest and `catalog repair postgres://…` (docs/repair.md) on a real PostgreSQL hub.
@Suite("Repair against a PostgreSQL hub", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"), .serialized)
struct HubRepairTests {
    static var now: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// A hub and an edge holding the same rows.
    ///
    /// The hub holds `users` positions written on the hub (`hub-user-0000`…), pulled by a seeded edge whose
    /// landmarks it pushed. Returns (uri, name, edge database).
    static func pair(_ box: Sandbox, _ server: PostgresServer, users: Int) throws -> (uri: String, name: String, edge: String) {
        let (uri, name) = try HubSupport.makeHub(server)
        let edge = try box.seededDatabase("edge.sqlite")
        let first = try box.run(["sync", uri], db: edge)
        try #require(first.status == 0, "\(first)")
        // Written by hand, without the lanes: the hub's row triggers fill them in.
        try HubSupport.connect(server, name).execute(
            sql: """
                INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted, seq)
                SELECT 'hub-user-' || lpad(g::text, 4, '0'), g % 5, NULL, $1::bigint - g * 1000, 0, 'n-hub', false, nextval('hub_change_seq')
                FROM generate_series(0, $2::int - 1) g
                """, [.integer(Self.now - 60_000), .integer(Int64(users))])
        let second = try box.run(["sync", uri], db: edge)
        try #require(second.status == 0, "\(second)")
        return (uri, name, edge)
    }

    /// The hub's kept digest, its recomputation and its stale rows, at its own horizon.
    static func check(_ uri: String) throws -> HubDigestCheck { try HubDigestCheck.run(conninfo: uri) }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    /// Makes the edge and the hub differ by a changed row either side, a row missing either side, a
    /// tombstone either side and an erasure on the edge.
    static func diverge(_ edge: String, _ server: PostgresServer, _ name: String) throws {
        let pg = try HubSupport.connect(server, name)
        let later = Self.now - 1_000
        try pg.execute(
            sql: "UPDATE positions SET page = 4, updated_ms = $1, seq = nextval('hub_change_seq') WHERE user_id = 'hub-user-0010'", [.integer(later)])
        try pg.execute(
            sql: "UPDATE positions SET deleted = true, updated_ms = $1, seq = nextval('hub_change_seq') WHERE user_id = 'hub-user-0020'",
            [.integer(later)])
        try pg.execute(
            sql:
                "INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted, seq) VALUES ('hub-only', 2, NULL, $1, 0, 'n-hub', false, nextval('hub_change_seq'))",
            [.integer(later)])
        let store = try CatalogStore.open(path: edge)
        for (user, deleted) in [("edge-only", false), ("hub-user-0030", false), ("hub-user-0040", true)] {
            try store.write {
                try Positions(store).writeLocalPosition(user: user, page: 5, landmark: nil, stamp: try store.issueLocalStamp(), deleted: deleted)
            }
        }
        let erasure =
            #"{"counter":0,"node":"n-erase","updatedAt":"\#(Timestamp.format(milliseconds: later))","userHash":"\#(ErasureRule.userHash("hub-user-0050"))"}"#
        let text = #"{"format":"landmark-catalog-snapshot","version":1,"landmarks":[],"positions":[],"erasures":[\#(erasure)]}"#
        _ = try RepairMerge.apply(Array(text.utf8), to: store, source: "test", dryRun: false, maxDriftSeconds: 300, grant: .all)
    }

    @Test(
        "a node and a hub differing by changed, missing and tombstoned rows either side and an erasure: a dry run changes neither, a repair makes both digests equal and each equal to its recomputation"
    )
    func repairsBothWays() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, edge) = try Self.pair(box, server, users: 600)
        #expect(try HubSupport.hubPositions(server, name) == HubSupport.edgePositions(edge))
        try Self.diverge(edge, server, name)
        let hubBefore = try HubSupport.hubPositions(server, name)
        let edgeBefore = try HubSupport.edgePositions(edge)
        let keptBefore = try Self.check(uri)
        #expect(keptBefore.equal, "\(keptBefore)")

        let dry = try Self.json(try box.run(["repair", uri, "--dry-run", "--json"], db: edge).stdout)
        #expect(dry["dryRun"] as? Bool == true)
        // Sent: the edge's changed, new and tombstoned rows and the erasure; received: the hub's three rows
        // and the rows the edge changed (a changed row goes both ways).
        #expect((dry["rowsSent"] as? Int ?? 0) >= 4, "\(dry)")
        #expect((dry["rowsReceived"] as? Int ?? 0) >= 3, "\(dry)")
        #expect(try HubSupport.hubPositions(server, name) == hubBefore)
        #expect(try HubSupport.edgePositions(edge) == edgeBefore)
        #expect(try Self.check(uri).kept == keptBefore.kept)

        let node = try CatalogStore.open(path: edge).nodeID()
        let bookkeeping = "SELECT push_through FROM hub_edges WHERE node = $1"
        let pushThrough = try HubSupport.scalar(server, name, bookkeeping, [.text(node)])
        let run = try box.run(["repair", uri, "--json"], db: edge)
        try #require(run.status == 0, "\(run)")
        let report = try Self.json(run.stdout)
        #expect(report["digest"] as? String == report["sourceDigest"] as? String, "\(report)")
        // The rows the hub took were pushed on the node's behalf: its sync bookkeeping stays as it was.
        #expect(pushThrough != nil)
        #expect(try HubSupport.scalar(server, name, bookkeeping, [.text(node)]) == pushThrough)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_history WHERE node = $1", [.text(node)]) != "0")
        #expect((report["roundTrips"] as? Int ?? 99) <= 5, "\(report)")
        let after = try Self.check(uri)
        #expect(after.equal, "\(after)")
        let store = try CatalogStore.open(path: edge)
        let local = try StateDigest.verify(store)
        #expect(local.kept == local.recomputed && local.staleRows == 0)
        #expect(local.recomputed == after.recomputed, "\(local) \(after)")
        #expect(try HubSupport.hubPositions(server, name) == HubSupport.edgePositions(edge))
        let hubRows = try HubSupport.hubPositions(server, name)
        #expect(hubRows.contains { $0.hasPrefix("edge-only|5|") } && hubRows.contains { $0.hasPrefix("hub-user-0030|5|") })
        #expect(hubRows.contains { $0.hasPrefix("hub-user-0040|") && $0.hasSuffix("|t") })
        #expect(!hubRows.contains { $0.hasPrefix("hub-user-0050|") })
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_erasures") == "1")
        #expect(try HubSupport.edgePositions(edge).contains { $0.hasPrefix("hub-only|2|") })

        // Nothing left: one round trip, nothing moved.
        let again = try Self.json(try box.run(["repair", uri, "--json"], db: edge).stdout)
        #expect(again["roundTrips"] as? Int == 1 && again["rowsSent"] as? Int == 0 && again["rowsReceived"] as? Int == 0, "\(again)")
        // status reads the hub's kept digest: equal to this node's.
        let status = try box.run(["status", "--json"], db: edge)
        #expect(status.status == 0, "\(status)")
        #expect(status.stdout.contains(after.kept.hex), "\(status.stdout)")
        // status --verify-digest checks the hub too.
        let verify = try box.run(["status", "--verify-digest", "--json"], db: edge)
        #expect(verify.status == 0, "\(verify)")
        let hubs = try #require(try Self.json(verify.stdout)["hubs"] as? [[String: Any]])
        #expect(hubs.count == 1 && hubs[0]["equal"] as? Bool == true && hubs[0]["kept"] as? String == after.kept.hex, "\(hubs)")
    }

    @Test(
        "random overlapping histories on a node and on a hub (pushed by another node), erasures included: after repair the digests are equal, each equals its recomputation, and the positions are the same",
        arguments: 0..<3)
    func randomHistories(_ iteration: Int) throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name) = try HubSupport.makeHub(server)
        var rng = SplitMix64(seed: 0xB0B &+ UInt64(iteration) &* 7_919)
        let users = [40, 300, 900][iteration]
        let pool = (0..<(users * 2)).map { _ in RepairTests.randomRow(&rng, users: users, landmarks: 80) }
        let (a, b) = (box.path("a.sqlite"), box.path("b.sqlite"))
        for path in [a, b] {
            let store = try CatalogStore.open(path: path)
            try RepairTests.merge(pool.filter { _ in Int.random(in: 0..<3, using: &rng) != 0 }.shuffled(using: &rng), into: store)
            let erased = (0..<2).map { _ in (user: "user-\(Int.random(in: 0..<users, using: &rng))", at: testNow - 300_000, node: "n-erase") }
            try RepairTests.mergeErasures(erased, into: store)
        }
        let pushed = try box.run(["sync", uri], db: b)
        try #require(pushed.status == 0, "\(pushed)")
        let run = try box.run(["repair", uri, "--json"], db: a)
        try #require(run.status == 0, "\(run)")
        let report = try Self.json(run.stdout)
        #expect((report["rowsSent"] as? Int ?? 0) > 0 && (report["rowsReceived"] as? Int ?? 0) > 0, "iteration \(iteration): \(report)")
        #expect(report["digest"] as? String == report["sourceDigest"] as? String, "iteration \(iteration): \(report)")
        let hub = try Self.check(uri)
        #expect(hub.equal, "iteration \(iteration): \(hub)")
        let local = try StateDigest.verify(try CatalogStore.open(path: a))
        #expect(local.kept == local.recomputed && local.staleRows == 0, "iteration \(iteration)")
        #expect(local.recomputed == hub.recomputed, "iteration \(iteration)")
        #expect(try HubSupport.hubPositions(server, name) == HubSupport.edgePositions(a), "iteration \(iteration)")
    }

    @Test("the hub's parts of a range are cut where its rows are: ntile in one statement, each part's sums those of its range")
    func partsMatchRanges() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, _, _) = try Self.pair(box, server, users: 500)
        let hub = try HubConnection(conninfo: uri, name: "hub", limits: HubLimits(options: SyncOptions()))
        let rows = HubRepairRows(hub: hub, table: .positions, horizon: 0)
        for (lower, upper) in [([UInt8](), [UInt8]?.none), (Array("hub-user-01".utf8), Array("hub-user-04".utf8))] {
            let parts = try #require(try rows.parts(lower, upper, count: 16))
            #expect(parts.count == 16)
            var total = LaneSums()
            var bound = lower
            for (i, part) in parts.enumerated() {
                let next = i + 1 < parts.count ? rows.separator(part.last, parts[i + 1].first) : upper
                #expect(try rows.sums(bound, next) == part.sums, "part \(i)")
                total.add(part.sums)
                if let next { bound = next }
            }
            #expect(total == (try rows.sums(lower, upper)))
        }
    }

    @Test("the hub's kept digest equals its recomputation after pushes, erasures, hand-written rows and gc --hub")
    func keptDigestFollowsWrites() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, edge) = try Self.pair(box, server, users: 50)
        var check = try Self.check(uri)
        #expect(check.equal, "after the first push and hand-written rows: \(check)")
        // Pushes that replace rows (updates) and add tombstones.
        let store = try CatalogStore.open(path: edge)
        for (user, deleted) in [("hub-user-0001", false), ("hub-user-0002", true), ("new-user", false)] {
            try store.write {
                try Positions(store).writeLocalPosition(user: user, page: 3, landmark: nil, stamp: try store.issueLocalStamp(), deleted: deleted)
            }
        }
        #expect(try box.run(["sync", uri], db: edge).status == 0)
        check = try Self.check(uri)
        #expect(check.equal, "after a push of updates and a tombstone: \(check)")
        // An erasure pushed: the hub deletes the user's row.
        let erase = try box.run(["user", "erase", "hub-user-0003"], db: edge)
        #expect(erase.status == 0, "\(erase)")
        #expect(try box.run(["sync", uri], db: edge).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = 'hub-user-0003'") == "0")
        check = try Self.check(uri)
        #expect(check.equal, "after an erasure: \(check)")
        // An old tombstone and erasure record collected by gc --hub.
        let pg = try HubSupport.connect(server, name)
        let old = Self.now - 40 * 86_400_000
        try pg.execute(
            sql:
                "INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted, seq) VALUES ('old-tomb', 0, NULL, $1, 0, 'n-hub', true, nextval('hub_change_seq'))",
            [.integer(old)])
        check = try Self.check(uri)
        #expect(check.equal, "with a tombstone below the next horizon: \(check)")
        let gc = try box.run(["gc", "--hub", uri], db: box.path("none.sqlite"))
        #expect(gc.status == 0, "\(gc)")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = 'old-tomb'") == "0")
        check = try Self.check(uri)
        #expect(check.horizonMilliseconds > 0)
        #expect(check.equal, "after gc --hub: \(check)")
        // An UPDATE by hand that leaves the lanes: the row trigger recomputes them.
        try pg.execute(sql: "UPDATE positions SET page = 1 WHERE user_id = 'hub-user-0004'")
        check = try Self.check(uri)
        #expect(check.equal, "after an update by hand: \(check)")
    }

    /// The first source of a `sync --json` answer.
    static func firstSource(_ stdout: String) throws -> [String: Any] {
        try #require((try Self.json(stdout)["sources"] as? [[String: Any]])?.first, "\(stdout)")
    }

    @Test(
        "a hub restored from a backup, then pushed to by another edge: sync --repair warns forgot, re-reads nothing, repairs the difference both ways and goes on incrementally"
    )
    func syncRepairsARestoredHub() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, a) = try Self.pair(box, server, users: 400)
        let b = box.path("b.sqlite")
        #expect(try box.run(["sync", uri], db: b).status == 0)
        // The backup: a copy of the hub's database (CREATE DATABASE … TEMPLATE copies the sequence too).
        let copy = "b_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20).lowercased()
        try HubSupport.admin(server).executeScript(sql: "CREATE DATABASE \(copy) TEMPLATE \(name)")
        #expect(try box.run(["position", "set", "--user", "ann", "--page", "1"], db: a).status == 0)
        #expect(try box.run(["sync", uri], db: a).status == 0)
        try HubSupport.admin(server).executeScript(sql: "DROP DATABASE \(name) WITH (FORCE)")
        try HubSupport.admin(server).executeScript(sql: "CREATE DATABASE \(name) TEMPLATE \(copy)")
        for user in ["bob", "cy"] {
            #expect(try box.run(["position", "set", "--user", user, "--page", "2"], db: b).status == 0)
        }
        #expect(try box.run(["sync", uri], db: b).status == 0)

        let found = try box.run(["sync", "--json", "--repair", uri], db: a)
        #expect(found.status == 0, "\(found)")
        #expect(found.stderr.contains("repairing instead of pushing and pulling everything"), "\(found.stderr)")
        #expect(!found.stderr.contains("hub-reset"), "\(found.stderr)")
        let source = try Self.firstSource(found.stdout)
        // Nothing re-read and nothing pushed again: A changed nothing since its last push.
        #expect(source["pushed"] is NSNull && source["bytes"] as? Int == 0, "\(source)")
        let repair = try #require(source["repair"] as? [String: Any], "\(found.stdout)")
        #expect(repair["rowsSent"] as? Int == 1, "ann's row, which the restore lost: \(repair)")
        #expect(repair["rowsApplied"] as? Int == 2, "bob's and cy's rows: \(repair)")
        #expect((repair["roundTrips"] as? Int ?? 99) <= 4, "\(repair)")
        #expect(try HubSupport.hubPositions(server, name) == HubSupport.edgePositions(a))

        // A goes on from where the hub stood: the next sync pulls only what the repair pushed (its echo),
        // and a repair of equal copies takes one round trip.
        let next = try box.run(["sync", "--json", "--repair", uri], db: a)
        #expect(next.status == 0 && next.stderr.isEmpty, "\(next)")
        #expect((try Self.json(next.stdout)["positionsSeen"] as? Int ?? 999) <= 1, "\(next.stdout)")
        #expect((try Self.firstSource(next.stdout)["repair"] as? [String: Any])?["roundTrips"] as? Int == 1, "\(next.stdout)")
        #expect(try box.run(["sync", uri], db: b).status == 0)
        #expect(try HubSupport.edgePositions(b) == HubSupport.edgePositions(a))
        let status = try box.run(["status", "--verify-digest", "--json"], db: a)
        #expect(status.status == 0, "\(status)")
        try HubSupport.admin(server).executeScript(sql: "DROP DATABASE \(copy)")
    }

    @Test("a role that may only read the hub repairs one way: the hub's rows come here, the node's stay, one warning; sync --repair stays pull-only")
    func readOnlyRoleRepairsOneWay() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, edge) = try Self.pair(box, server, users: 50)
        let role = "ro_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try HubSupport.admin(server).executeScript(sql: "CREATE ROLE \(role) LOGIN PASSWORD 'Read-Only-7d2f'")
        try HubSupport.connect(server, name).executeScript(
            sql: """
                GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(role);
                GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO \(role);
                """)
        let readOnly = server.uri(database: name, user: role, password: "Read-Only-7d2f")
        try Self.diverge(edge, server, name)
        let hubBefore = try HubSupport.hubPositions(server, name)
        let run = try box.run(["repair", readOnly, "--json"], db: edge)
        #expect(run.status == 0, "\(run)")
        #expect(run.stderr.contains("may only read the hub"), "\(run.stderr)")
        let report = try Self.json(run.stdout)
        #expect(report["equal"] as? Bool == false && (report["rowsApplied"] as? Int ?? 0) >= 2, "\(report)")
        #expect(try HubSupport.hubPositions(server, name) == hubBefore, "the hub took nothing")
        #expect(try HubSupport.edgePositions(edge).contains { $0.hasPrefix("hub-only|") })
        let synced = try box.run(["sync", "--repair", readOnly], db: edge)
        #expect(synced.status == 0, "\(synced)")
        #expect(!(synced.stderr + synced.stdout + run.stderr + run.stdout).contains("Read-Only-7d2f"))
        #expect(try HubSupport.hubPositions(server, name) == hubBefore)
    }
}
