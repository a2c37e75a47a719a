import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// The hub's collection (docs/erasure.md §7): `catalog gc --hub`, the hub's horizon, the upserts' expired
/// refusal and digests compared at the greater horizon, on a real PostgreSQL hub.
@Suite("Collection of a PostgreSQL hub", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"), .serialized)
struct HubCollectionTests {
    static let day: Int64 = 86_400_000
    static var now: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// A hub migrated by a first sync of a seeded edge; returns (uri, name, edge database).
    static func hub(_ box: Sandbox, _ server: PostgresServer) throws -> (uri: String, name: String, edge: String) {
        let (uri, name) = try HubSupport.makeHub(server)
        let edge = try box.seededDatabase("edge.sqlite")
        let synced = try box.run(["sync", uri], db: edge)
        try #require(synced.status == 0, "\(synced)")
        return (uri, name, edge)
    }

    /// A snapshot file of positions with the given stamps (ms since the epoch), as an offline device's copy.
    static func snapshot(_ box: Sandbox, _ rows: [(user: String, ms: Int64)]) throws -> String {
        let positions = rows.map {
            #"{"user":"\#($0.user)","page":3,"updatedAt":"\#(Timestamp.format(milliseconds: $0.ms))","node":"n-away"}"#
        }
        return try box.write(
            #"{"format":"landmark-catalog-snapshot","version":1,"positions":[\#(positions.joined(separator: ","))]}"#, to: "away.json")
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("gc --hub removes tombstones and erasure records older than the horizon, keeps newer ones, never moves back")
    func collects() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, _) = try Self.hub(box, server)
        let pg = try HubSupport.connect(server, name)
        let (old, recent) = (Self.now - 40 * Self.day, Self.now - Self.day)
        for (user, ms, deleted) in [("old-tomb", old, true), ("new-tomb", recent, true), ("old-live", old, false)] {
            try pg.execute(
                sql: "INSERT INTO positions VALUES ($1, 0, NULL, $2, 0, 'n-hub', $3, nextval('hub_change_seq'))",
                [.text(user), .integer(ms), .boolean(deleted)])
        }
        for (id, ms) in [(900_001, old), (900_002, recent)] {
            try pg.execute(
                sql: "INSERT INTO landmarks VALUES ($1, '{}', $2, 0, 'n-hub', true, nextval('hub_change_seq'))", [.integer(Int64(id)), .integer(ms)])
        }
        for (hash, ms) in [(String(repeating: "a", count: 64), old), (String(repeating: "b", count: 64), recent)] {
            try pg.execute(sql: "INSERT INTO hub_erasures VALUES ($1, $2, 0, 'n-hub', nextval('hub_change_seq'))", [.text(hash), .integer(ms)])
        }
        // No local database is needed: the hub is collected as given.
        let gc = try box.run(["gc", "--hub", uri, "--json"], db: box.path("none.sqlite"))
        try #require(gc.status == 0, "\(gc)")
        let first = try Self.json(gc.stdout)
        #expect(first["landmarkTombstones"] as? Int == 1 && first["positionTombstones"] as? Int == 1 && first["erasures"] as? Int == 1, "\(first)")
        #expect(
            try HubSupport.scalar(server, name, "SELECT string_agg(user_id, ',' ORDER BY user_id) FROM positions WHERE user_id LIKE '%-%'")
                == "new-tomb,old-live")
        #expect(try HubSupport.scalar(server, name, "SELECT string_agg(id::text, ',') FROM landmarks WHERE deleted") == "900002")
        #expect(try HubSupport.scalar(server, name, "SELECT string_agg(left(user_hash, 1), ',') FROM hub_erasures") == "b")
        let horizon = try #require(
            try HubSupport.scalar(server, name, "SELECT value FROM hub_meta WHERE key = 'gc_horizon_ms'").flatMap { Int64($0) })
        // 30 days before the hub's newest stamp (the edge's seed, written just now).
        #expect(abs(horizon - (Self.now - 30 * Self.day)) < 120_000, "\(horizon)")
        #expect(first["horizon"] as? String == Timestamp.format(milliseconds: horizon))
        // A smaller horizon (60 days) does not move it back, and collects nothing more.
        let again = try Self.json(try box.run(["gc", "--hub", uri, "--horizon", "60d", "--json"], db: box.path("none.sqlite")).stdout)
        #expect(again["horizon"] as? String == Timestamp.format(milliseconds: horizon), "\(again)")
        #expect(again["positionTombstones"] as? Int == 0 && again["erasures"] as? Int == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT value FROM hub_meta WHERE key = 'gc_horizon_ms'") == String(horizon))
        // Bounds as `catalog gc`.
        #expect(try box.run(["gc", "--hub", uri, "--horizon", "-1s"], db: box.path("none.sqlite")).status == 64)
        #expect(try box.run(["gc", "--hub", uri, "--horizon", "4000000d"], db: box.path("none.sqlite")).status == 64)
        #expect(try box.run(["gc", "--hub", "/tmp/not-a-hub"], db: box.path("none.sqlite")).status == 64)
    }

    @Test("gc --hub: the contrib unit's command runs with the URL from its environment file; a wrong name or database says what to fix")
    func unitAndMistakes() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, _, edge) = try Self.hub(box, server)
        // The unit's ExecStart, with ${CATALOG_HUB_URL} as systemd expands it from /etc/catalog/hub-gc.env.
        let unit = try Contrib.unit(Support.root.appending(path: "contrib/systemd/catalog-hub-gc.service"))
        #expect(Contrib.value(unit, "Service", "EnvironmentFile") == ["/etc/catalog/hub-gc.env"])
        let exec = try #require(Contrib.execLines(unit, "ExecStart").first)
        #expect(!exec.contains("--db") && exec.contains("${CATALOG_HUB_URL}"), "the unit reads no synced database: \(exec)")
        let argv = exec.split(separator: " ").dropFirst().map { $0 == "${CATALOG_HUB_URL}" ? uri : String($0) }
        let ran = try box.run(Array(argv), db: box.path("none.sqlite"))
        #expect(ran.status == 0 && ran.stdout.contains("collected the hub"), "\(ran)")
        // A bare word is a saved remote's name: none in this database.
        let unnamed = try box.run(["gc", "--hub", "hub"], db: edge)
        #expect(unnamed.status == 64 && unnamed.stderr.contains("there is no remote named 'hub' in this database"), "\(unnamed)")
        #expect(unnamed.stderr.contains("remote add hub postgresql://"), "\(unnamed)")
        // A database that does not exist (3D000): a mistake to fix, not a hub to wait for.
        let missing = try box.run(["gc", "--hub", server.uri(database: "catalog_hbu")], db: edge)
        #expect(missing.status == 64 && missing.stderr.contains("no such database"), "\(missing)")
        #expect(!missing.stderr.contains("retries") && missing.stderr.contains("check the database name"), "\(missing)")
    }

    @Test("an erasure pushed to the hub is named so in sync's line; token revocations prints REVOKED AT in one format")
    func erasurePushedAndRevocationTimes() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, _, edge) = try Self.hub(box, server)
        #expect(try box.run(["user", "erase", "zed"], db: edge).status == 0)
        let pushed = try box.run(["sync", uri], db: edge)
        #expect(pushed.status == 0 && pushed.stdout.contains("; pushed 1 erasure to the hub"), "\(pushed)")
        let json = try box.run(["sync", uri, "--json"], db: edge)
        #expect(json.stdout.contains(#""pushed":null"#) || json.stdout.contains(#""erasures":0"#), "\(json)")
        #expect(try box.run(["token", "revoke", "--user", "ann"], db: edge).status == 0)
        #expect(try box.run(["token", "revoke", "--user", "bob", "--hub", uri], db: edge).status == 0)
        let listed = try box.run(["token", "revocations", "--hub", uri], db: edge)
        let rows = listed.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(rows.count == 2 && Set(rows.compactMap(\.last)) == ["database", "hub"], "\(listed)")
        for row in rows {
            let revokedAt = String(row[row.count - 2])
            #expect(revokedAt.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(listed)")
        }
    }

    @Test("an old row for a collected key, pushed after gc --hub, is refused as expired, leaves the edge and never comes back")
    func expired() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, edge) = try Self.hub(box, server)
        // A deletion the hub collected: "gone" cleared 40 days ago.
        try HubSupport.connect(server, name).execute(
            sql: "INSERT INTO positions VALUES ('gone', 0, NULL, $1, 0, 'n-hub', true, nextval('hub_change_seq'))",
            [.integer(Self.now - 40 * Self.day)])
        #expect(try box.run(["gc", "--hub", uri], db: edge).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = 'gone'") == "0")
        // A node that was away 45 days holds "gone" from before the deletion, "never-sent" from then, and a
        // recent row: the two old rows are refused as expired, the recent one is taken.
        let away = box.path("away.sqlite")
        let file = try Self.snapshot(
            box, [("gone", Self.now - 45 * Self.day), ("never-sent", Self.now - 45 * Self.day), ("recent", Self.now - Self.day)])
        #expect(try box.run(["sync", file], db: away).status == 0)
        let pushed = try box.run(["sync", uri, "--json"], db: away)
        #expect(pushed.status == 0, "\(pushed)")
        let sources = try #require(try Self.json(pushed.stdout)["sources"] as? [[String: Any]])
        let push = try #require(sources.first?["pushed"] as? [String: Any], "\(pushed.stdout)")
        #expect(push["expired"] as? Int == 2, "\(push)")
        #expect(pushed.stderr.contains("refused 2 of"), "\(pushed.stderr)")
        #expect(
            try HubSupport.scalar(server, name, "SELECT string_agg(user_id, ',' ORDER BY user_id) FROM positions WHERE user_id <> 'ann'") == "recent")
        // Gone from the node too, so it holds what the hub holds; a second sync sends nothing back.
        #expect(try box.run(["position", "get", "--user", "gone"], db: away).stdout.contains("no position"))
        #expect(try box.run(["position", "get", "--user", "never-sent"], db: away).stdout.contains("no position"))
        // The rows it dropped left the kept digest with them.
        let verified = try box.run(["status", "--verify-digest"], db: away)
        #expect(verified.status == 0, "\(verified)")
        let second = try Self.json(try box.run(["sync", uri, "--json"], db: away).stdout)
        #expect((second["sources"] as? [[String: Any]])?.first?["pushed"] is NSNull, "\(second)")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id IN ('gone', 'never-sent')") == "0")
        #expect(try HubSupport.hubStatus(away)["inAgreement"] as? Bool == true)
        // A row of "gone" written after the horizon is a new row, and taken.
        #expect(try box.run(["position", "set", "--user", "gone", "--page", "2"], db: away).status == 0)
        #expect(try box.run(["sync", uri], db: away).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT page FROM positions WHERE user_id = 'gone'") == "2")
    }

    @Test("status reads the same for a node that collected and a hub that did not, and for a hub that collected and a node that did not")
    func statusAcrossHorizons() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, a) = try Self.hub(box, server)
        #expect(try box.run(["position", "set", "--user", "cleared", "--page", "2"], db: a).status == 0)
        #expect(try box.run(["position", "clear", "--user", "cleared"], db: a).status == 0)
        #expect(try box.run(["sync", uri], db: a).status == 0)
        let b = box.path("b.sqlite")
        #expect(try box.run(["sync", uri], db: b).status == 0)
        // The node collects, the hub does not: compared at the node's horizon, the same.
        #expect(try box.run(["gc", "--horizon", "0s"], db: a).status == 0)
        let hub = try HubConnection(conninfo: uri, name: name, limits: HubLimits(options: SyncOptions()))
        // At horizon 0 they differ: the hub still holds the tombstone the node collected.
        #expect(try hub.digest() != StateDigest(of: CatalogStore.open(path: a), horizonMilliseconds: 0))
        let collected = try HubSupport.hubStatus(a)
        #expect(collected["inAgreement"] as? Bool == true, "\(collected)")
        #expect(runCLI(["status"], db: a).stdout.contains("the same as here at horizon"))
        // The hub collects, node B does not: compared at the hub's horizon, the same.
        #expect(try box.run(["gc", "--hub", uri, "--horizon", "0s"], db: b).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE deleted") == "0")
        #expect(try StateDigest(of: CatalogStore.open(path: b)).rows > (try hub.digest().rows))
        let other = try HubSupport.hubStatus(b)
        #expect(other["inAgreement"] as? Bool == true, "\(other)")
        let hubHorizon = try #require(
            try HubSupport.scalar(server, name, "SELECT value FROM hub_meta WHERE key = 'gc_horizon_ms'").flatMap { Int64($0) })
        #expect(other["digestHorizon"] as? String == Timestamp.format(milliseconds: hubHorizon))
        #expect(try HubSupport.hubStatus(a)["inAgreement"] as? Bool == true)
    }

    @Test("gc --hub waits for a push in flight (the push lock): the push's old row meets the tombstone, then gc collects it")
    func waitsForPush() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, _) = try Self.hub(box, server)
        // The hub cleared "late" 35 days ago; an edge pushes its row of "late" from 40 days ago.
        try HubSupport.connect(server, name).execute(
            sql: "INSERT INTO positions VALUES ('late', 0, NULL, $1, 0, 'n-hub', true, nextval('hub_change_seq'))",
            [.integer(Self.now - 35 * Self.day)])
        let edge = box.path("late.sqlite")
        #expect(try box.run(["sync", try Self.snapshot(box, [("late", Self.now - 40 * Self.day)])], db: edge).status == 0)
        let (paused, release, pushed, collected) = (
            DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)
        )
        let errors = Locked<[String]>([])
        Thread.detachNewThread {
            do {
                let store = try CatalogStore.open(path: edge)
                let hooks = HubTestHooks(beforePushCommit: {
                    paused.signal()
                    _ = release.wait(timeout: .now() + 30)
                })
                _ = try HubSource(conninfo: uri, hooks: hooks).fetch(
                    since: nil, context: SyncContext(store: store, options: SyncOptions(), standardInput: 0, diagnostics: { _ in }))
            } catch {
                errors.update { $0.append("push: \(error)") }
                paused.signal()
            }
            pushed.signal()
        }
        try #require(paused.wait(timeout: .now() + 20) == .success, "the push never reached its commit")
        Thread.detachNewThread {
            do {
                _ = try HubCollector(hub: uri, remotes: []).collect(olderThan: 30 * Self.day, nowMilliseconds: Self.now)
            } catch { errors.update { $0.append("gc: \(error)") } }
            collected.signal()
        }
        // gc queues behind the push for the lock (and has not finished).
        let admin = try HubSupport.connect(server, name)
        let waiting = try HubSupport.wait(seconds: 20) {
            try admin.execute(
                sql: """
                    SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """
            ).int64(0, 0) == 1 || collected.wait(timeout: .now()) == .success
        }
        #expect(waiting)
        #expect(try HubSupport.scalar(server, name, "SELECT value FROM hub_meta WHERE key = 'gc_horizon_ms'") == "0", "gc ran during the push")
        release.signal()
        #expect(pushed.wait(timeout: .now() + 30) == .success)
        #expect(collected.wait(timeout: .now() + 30) == .success)
        #expect(errors.current.isEmpty, "\(errors.current)")
        // The old row lost to the tombstone, which gc then collected: no row of "late" on the hub.
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = 'late'") == "0")
    }

    @Test("the hub's SQL refuses, digests and collects as ErasureRule says, case by case")
    func ruleAgreement() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (_, name, _) = try Self.hub(box, server)
        let pg = try HubSupport.connect(server, name)
        let horizon: Int64 = 1_000_000
        let erasure = HLCStamp(wallMilliseconds: 2_000_000, counter: 1, node: "n-e")
        try pg.execute(sql: "UPDATE hub_meta SET value = $1 WHERE key = 'gc_horizon_ms'", [.integer(horizon)])
        for user in ["erased", "erased-gone"] {
            try pg.execute(
                sql: "INSERT INTO hub_erasures VALUES ($1, $2, $3, $4, 1)",
                [.text(ErasureRule.userHash(user)), .integer(erasure.wallMilliseconds), .integer(erasure.counter), .text(erasure.node)])
        }
        try pg.execute(sql: "INSERT INTO positions VALUES ('stored', 0, NULL, 5, 0, 'n-s', true, 1), ('erased', 0, NULL, 5, 0, 'n-s', false, 2)")
        // The staging table lives until the end of this transaction (ON COMMIT DROP).
        try pg.transaction { try stagedCases(pg, horizon: horizon, erasure: erasure) }
        // The digest's and the collection's predicates, at the horizon $1.
        for deleted in [false, true] {
            for wall in [horizon - 1, horizon, horizon + 1] {
                let stamp = HLCStamp(wallMilliseconds: wall, counter: 0, node: "n")
                let counts = try pg.execute(
                    sql:
                        "SELECT \(HubSQL.countsInDigest(deleted: "d")), \(HubSQL.collected) FROM (SELECT $2::boolean AS d, $3::bigint AS updated_ms) x",
                    [.integer(horizon), .boolean(deleted), .integer(wall)])
                #expect(try counts.bool(0, 0) == ErasureRule.countsInDigest(deleted: deleted, stamp: stamp, horizonMilliseconds: horizon))
                #expect(try counts.bool(0, 1) == ErasureRule.collected(stamp, horizonMilliseconds: horizon))
            }
        }
    }

    /// Stages one position per case and compares the SQL's refusal with ``ErasureRule``'s.
    func stagedCases(_ pg: PGConnection, horizon: Int64, erasure: HLCStamp) throws {
        try pg.executeScript(sql: HubSQL.createStaging.components(separatedBy: ";")[1])
        // Stamps below, at and above the horizon and the erasure, for users with a row, with none, and erased
        // (with a row and without).
        let walls: [Int64] = [horizon - 1, horizon, horizon + 1, erasure.wallMilliseconds, erasure.wallMilliseconds + 1]
        var cases: [(user: String, stamp: HLCStamp)] = []
        for user in ["stored", "absent", "erased", "erased-gone"] {
            for wall in walls {
                for (counter, node) in [(Int64(0), "n-a"), (1, "n-e"), (1, "n-z")] {
                    cases.append((user, HLCStamp(wallMilliseconds: wall, counter: counter, node: node)))
                }
            }
        }
        for (i, c) in cases.enumerated() {
            try pg.execute(sql: "DELETE FROM catalog_push_positions")
            try pg.execute(
                sql: "INSERT INTO catalog_push_positions VALUES ($1, 0, NULL, $2, $3, $4, false)",
                [.text(c.user), .integer(c.stamp.wallMilliseconds), .integer(c.stamp.counter), .text(c.stamp.node)])
            let sql = "SELECT \(HubSQL.erased("s")), \(HubSQL.expired("s", table: "positions", key: "user_id")) FROM catalog_push_positions s"
            let result = try pg.execute(sql: sql)
            let (erased, expired) = (try result.bool(0, 0) == true, try result.bool(0, 1) == true)
            let sqlRefusal: ErasureRule.Refusal? = erased ? .erased : expired ? .expired : nil
            let rule = ErasureRule.refusal(
                row: c.stamp, erasure: c.user.hasPrefix("erased") ? erasure : nil, hasStoredRow: ["stored", "erased"].contains(c.user),
                horizonMilliseconds: horizon)
            #expect(sqlRefusal == rule, "case \(i): \(c)")
            // Only rows the SQL counts as expired are read back as expired before the upsert.
            let listed = try pg.execute(sql: HubSQL.expiredRows(kind: "position"), [.integer(Int64.max)]).rowCount
            #expect(listed == (rule == .expired ? 1 : 0), "case \(i): \(c)")
        }
    }
}
