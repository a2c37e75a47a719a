import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

@Suite("Repair: the kept digest and range-fingerprint reconciliation")
struct RepairTests {
    /// A random row of a pool: positions of `users` users, landmarks 1…`landmarks`, stamps within 10 minutes
    /// before the tests' "now", from three nodes, a fifth of them tombstones.
    static func randomRow<R: RandomNumberGenerator>(
        _ rng: inout R, users: Int, landmarks: Int, agesMilliseconds: ClosedRange<Int64> = 0...600_000
    ) -> (landmark: String?, position: String?) {
        let at = Timestamp.format(milliseconds: testNow - Int64.random(in: agesMilliseconds, using: &rng))
        let node = "node-\(Int.random(in: 0..<3, using: &rng))"
        let counter = Int.random(in: 0...2, using: &rng)
        let deleted = Int.random(in: 0..<5, using: &rng) == 0
        if Int.random(in: 0..<3, using: &rng) == 0 {
            let id = Int.random(in: 1...landmarks, using: &rng)
            return (
                landmarkRow(id, name: "L\(id)-\(Int.random(in: 0...9, using: &rng))", at: at, counter: counter, node: node, deleted: deleted), nil
            )
        }
        let user = Int.random(in: 0..<users, using: &rng)
        let name = user % 7 == 0 ? "Zoé-\(user)" : "user-\(user)"
        return (nil, positionRow(name, page: Int.random(in: 0...5, using: &rng), at: at, counter: counter, node: node, deleted: deleted))
    }

    /// Merges `rows` into `store` as one snapshot, by the merge rule.
    static func merge(_ rows: [(landmark: String?, position: String?)], into store: CatalogStore) throws {
        // A snapshot holds one row per key: a later row of a key goes in the next snapshot.
        var pending = rows
        while !pending.isEmpty {
            var seen = Set<String>()
            var now: [(landmark: String?, position: String?)] = []
            var later: [(landmark: String?, position: String?)] = []
            for row in pending {
                let key = String((row.landmark ?? row.position ?? "").prefix(while: { $0 != "," }))
                if seen.insert(key).inserted { now.append(row) } else { later.append(row) }
            }
            let text = snapshot(landmarks: now.compactMap(\.landmark), positions: now.compactMap(\.position))
            _ = try RepairMerge.apply(Array(text.utf8), to: store, source: "test", dryRun: false, maxDriftSeconds: 300, grant: .all)
            pending = later
        }
    }

    /// The kept digest equals its recomputation, and no row's stored hash is stale.
    static func expectKeptDigestRight(_ store: CatalogStore, _ comment: Comment) throws {
        let (kept, recomputed, stale) = try StateDigest.verify(store)
        #expect(kept == recomputed, comment)
        #expect(stale == 0, comment)
    }

    @Test(
        "two databases from random overlapping histories (merges, imports, local sets and clears, tombstones): after repair the digests are equal, each equals its recomputation, and the rows are the same",
        arguments: 0..<12)
    func repairConverges(_ iteration: Int) throws {
        var rng = SplitMix64(seed: 0x5EED &+ UInt64(iteration) &* 104_729)
        let dir = Support.temporaryDirectory()
        let clock = ManualClock(testNow)
        let paths = ["a", "b"].map { dir.appending(path: "\($0).sqlite").path }
        let stores = try paths.enumerated().map { i, path in
            let store = try CatalogStore.open(path: path, wallClock: clock)
            try store.setNodeID("local-\(i)")
            return store
        }
        let users = [12, 300, 2_000][iteration % 3]
        let pool = (0..<(users * 2)).map { _ in Self.randomRow(&rng, users: users, landmarks: 80) }
        for store in stores {
            // Each holds a random part of the shared history, delivered in a random order and in pieces.
            let part = pool.filter { _ in Int.random(in: 0..<4, using: &rng) != 0 }.shuffled(using: &rng)
            var start = 0
            while start < part.count {
                let end = min(part.count, start + Int.random(in: 1...400, using: &rng))
                try Self.merge(Array(part[start..<end]), into: store)
                start = end
            }
            // Local writes: an import (updates and inserts) and position sets and clears.
            let file = try randomLandmarkFile(&rng, in: dir, serial: Int.random(in: 0...1_000_000, using: &rng))
            _ = try Importer(store).importLandmarks(from: .file(file))
            for _ in 0..<5 {
                let user = "user-\(Int.random(in: 0..<users, using: &rng))"
                let deleted = Bool.random(using: &rng)
                try store.write {
                    try Positions(store).writeLocalPosition(
                        user: user, page: 1, landmark: nil, stamp: try store.issueLocalStamp(), deleted: deleted)
                }
            }
            try Self.expectKeptDigestRight(store, "before repair, iteration \(iteration)")
        }
        let report = try Repairer(stores[0]).repair(withDatabase: paths[1])
        #expect(report.localDigest == report.peerDigest, "iteration \(iteration)")
        #expect(try StateDigest(of: stores[0]) == StateDigest(of: stores[1]))
        for store in stores { try Self.expectKeptDigestRight(store, "after repair, iteration \(iteration)") }
        #expect(try canonicalDump(stores[0]) == canonicalDump(stores[1]), "iteration \(iteration)")
        // And the other way: nothing left to move, one round trip.
        let back = try Repairer(stores[1]).repair(withDatabase: paths[0])
        #expect(back.roundTrips == 1)
        #expect(back.rowsSent + back.rowsReceived == 0)
    }

    /// Merges erasure records — a user of `randomRow`'s pool (ASCII ids only) and a stamp — into `store`.
    static func mergeErasures(_ records: [(user: String, at: Int64, node: String)], into store: CatalogStore) throws {
        let list = records.map {
            #"{"counter":0,"node":"\#($0.node)","updatedAt":"\#(Timestamp.format(milliseconds: $0.at))","userHash":"\#(ErasureRule.userHash($0.user))"}"#
        }
        let text = #"{"format":"landmark-catalog-snapshot","version":1,"landmarks":[],"positions":[],"erasures":[\#(list.joined(separator: ","))]}"#
        _ = try RepairMerge.apply(Array(text.utf8), to: store, source: "test", dryRun: false, maxDriftSeconds: 300, grant: .all)
    }

    /// Every row that counts in the digest at `horizon`, by table and key, with its hash.
    static func rowsCounting(_ store: CatalogStore, at horizon: Int64) throws -> [String: RowHash] {
        var rows: [String: RowHash] = [:]
        try store.read {
            for table in RepairTable.allCases {
                try RepairRows(store: store, table: table, horizon: horizon).forEach([], nil) { key, hash in
                    rows["\(table.rawValue):\(key)"] = hash
                }
            }
        }
        return rows
    }

    /// One phase of a random history delivered to `store`: a random part of `pool` in random pieces, and
    /// erasures of random users stamped `agesMilliseconds` before the tests' now.
    /// - Returns: the rows of `pool` delivered.
    @discardableResult
    static func deliver<R: RandomNumberGenerator>(
        _ pool: [(landmark: String?, position: String?)], users: Int, agesMilliseconds: ClosedRange<Int64>, to store: CatalogStore,
        _ rng: inout R
    ) throws -> [(landmark: String?, position: String?)] {
        let part = pool.filter { _ in Int.random(in: 0..<3, using: &rng) != 0 }.shuffled(using: &rng)
        var start = 0
        while start < part.count {
            let end = min(part.count, start + Int.random(in: 1...300, using: &rng))
            try Self.merge(Array(part[start..<end]), into: store)
            start = end
        }
        let erased = (0..<Int.random(in: 1...4, using: &rng)).map { _ in
            let user = Int.random(in: 0..<users, using: &rng)
            return (user: "user-\(user % 7 == 0 ? user + 1 : user)", at: testNow - Int64.random(in: agesMilliseconds, using: &rng), node: "node-e")
        }
        try Self.mergeErasures(erased, into: store)
        return part
    }

    @Test(
        "random histories with erasures, then collections at different horizons, then more history: after repair at the greater horizon the digests are equal and each kept digest equals its recomputation",
        arguments: 0..<10)
    func repairAcrossHorizons(_ iteration: Int) throws {
        var rng = SplitMix64(seed: 0xE7A5E &+ UInt64(iteration) &* 7_919)
        let dir = Support.temporaryDirectory()
        let clock = ManualClock(testNow)
        let paths = ["a", "b"].map { dir.appending(path: "\($0).sqlite").path }
        let stores = try paths.enumerated().map { i, path in
            let store = try CatalogStore.open(path: path, wallClock: clock)
            try store.setNodeID("local-\(i)")
            return store
        }
        let users = [20, 400][iteration % 2]
        // The old history, stamped 400–600 s ago, reaches both before either collects (the horizon's promise).
        let old = (0..<(users * 2)).map { _ in Self.randomRow(&rng, users: users, landmarks: 60, agesMilliseconds: 400_000...600_000) }
        var seen: [(landmark: String?, position: String?)] = []
        for store in stores { seen += try Self.deliver(old, users: users, agesMilliseconds: 400_000...600_000, to: store, &rng) }
        _ = try Repairer(stores[0]).repair(withDatabase: paths[1])
        // Each collects at its own horizon, somewhere in the old history or just above it.
        for store in stores {
            let summary = try Collector(store).collect(olderThan: Int64.random(in: 300_000...550_000, using: &rng), vacuum: false)
            #expect(summary.horizonMilliseconds > 0)
            try Self.expectKeptDigestRight(store, "after gc, iteration \(iteration)")
        }
        // The new history, stamped within the last 300 s, with re-deliveries of old rows both have seen
        // (stale or expired; a row older than a horizon that never reached a node is the case the horizon
        // rules out, docs/erasure.md §4).
        let new = (0..<users).map { _ in Self.randomRow(&rng, users: users, landmarks: 60, agesMilliseconds: 0...290_000) }
        for store in stores {
            try Self.deliver(new + seen.shuffled(using: &rng).prefix(users / 2), users: users, agesMilliseconds: 0...290_000, to: store, &rng)
            try Self.expectKeptDigestRight(store, "before repair, iteration \(iteration)")
        }
        let horizons = try stores.map { s in try s.read { try s.metaTable.collectionHorizon() } }
        let report = try Repairer(stores[0]).repair(withDatabase: paths[1])
        let h = horizons.max() ?? 0
        #expect(report.horizonMilliseconds == h, "iteration \(iteration)")
        #expect(report.localDigest == report.peerDigest, "iteration \(iteration)")
        for store in stores {
            try Self.expectKeptDigestRight(store, "after repair, iteration \(iteration)")
            let recomputed = try store.read { try StateDigest.recomputed(store, horizonMilliseconds: h).digest }
            #expect(try StateDigest(of: store, horizonMilliseconds: h) == recomputed, "iteration \(iteration)")
        }
        #expect(try Self.rowsCounting(stores[0], at: h) == Self.rowsCounting(stores[1], at: h), "iteration \(iteration)")
        // And the other way, from the side with the other horizon: nothing left to move.
        let back = try Repairer(stores[1]).repair(withDatabase: paths[0])
        #expect(back.rowsSent + back.rowsReceived == 0, "iteration \(iteration)")
        #expect(back.localDigest == back.peerDigest, "iteration \(iteration)")
    }

    /// Two equal databases of `users` positions (`b` a copy of `a`).
    static func equalPair(users: Int) throws -> (a: CatalogStore, b: CatalogStore, bPath: String) {
        let dir = Support.temporaryDirectory()
        let clock = ManualClock(testNow)
        let a = try CatalogStore.open(path: dir.appending(path: "a.sqlite").path, wallClock: clock)
        let rows = (0..<users).map { u in
            (
                landmark: String?.none,
                position: Optional(positionRow(UUID().uuidString.lowercased(), page: u % 9, at: "2026-11-29T10:00:00.000Z", node: "n-a"))
            )
        }
        try Self.merge(rows, into: a)
        let bPath = dir.appending(path: "b.sqlite").path
        try a.connection.execute(sql: "VACUUM INTO ?", [.text(bPath)])
        let b = try CatalogStore.open(path: bPath, wallClock: clock)
        return (a, b, bPath)
    }

    @Test("equal copies: one round trip, at most 64 bytes each way")
    func equalCopies() throws {
        let (a, _, bPath) = try Self.equalPair(users: 5_000)
        let report = try Repairer(a).repair(withDatabase: bPath)
        #expect(report.roundTrips == 1)
        #expect(report.bytesSent <= 64)
        #expect(report.bytesReceived <= 64)
        #expect(report.rowsSent == 0 && report.rowsReceived == 0)
    }

    @Test(
        "1 and 100 differing rows among 10,000 (changed, missing on either side, tombstoned): found in at most 4 round trips and 800 bytes per differing row",
        arguments: [1, 100])
    func differingRows(_ differing: Int) throws {
        let (a, b, bPath) = try Self.equalPair(users: 10_000)
        var users: [String] = []
        try b.read { try b.positionTable.forEachRow { users.append($0.text(PositionColumn.userID) ?? "") } }
        var onB: [(landmark: String?, position: String?)] = []
        var onA: [(landmark: String?, position: String?)] = []
        for (k, user) in users.shuffled().prefix(differing).enumerated() {
            switch k % 4 {
            case 0: onB.append((nil, positionRow(user, page: 7, at: "2026-11-29T11:00:00.000Z", node: "n-b")))
            case 1: onB.append((nil, positionRow(user, page: 0, at: "2026-11-29T11:00:00.000Z", node: "n-b", deleted: true)))
            case 2: onA.append((nil, positionRow(user, page: 3, at: "2026-11-29T11:00:00.000Z", node: "n-a")))
            default: onA.append((nil, positionRow("new-\(k)", page: 1, at: "2026-11-29T11:00:00.000Z", node: "n-a")))
            }
        }
        if !onA.isEmpty { try Self.merge(onA, into: a) }
        if !onB.isEmpty { try Self.merge(onB, into: b) }
        let report = try Repairer(a).repair(withDatabase: bPath)
        #expect(report.localDigest == report.peerDigest)
        #expect(report.roundTrips <= 4)
        let perRow = Double(report.bytesSent + report.bytesReceived) / Double(differing)
        #expect(perRow <= 800, "\(perRow) bytes per differing row")
        #expect(report.rowsReceived >= onB.count && report.rowsSent >= onA.count)
    }

    @Test("the message codec: what is encoded decodes to the same message; a truncated one is refused")
    func codec() throws {
        var m = RepairMessage(key: Reconciler.makeKey())
        m.items[0] = [
            RepairItem(lower: [], upper: [0x80], payload: .fingerprint([1, 2, 3, 4, 5, 6, 7, 8])),
            RepairItem(lower: [0x80], upper: [0x90], payload: .ids([1, 0xFFFF_FFFF])),
            RepairItem(lower: [0x90], upper: [0x90, 0x01], payload: .fingerprint([9, 8, 7, 6])),
            RepairItem(lower: [0x90, 0x01], upper: Array(repeating: 0x90, count: 20), payload: .fingerprint([1, 8, 7, 6])),
            RepairItem(
                lower: Array(repeating: 0x90, count: 20), upper: Array(repeating: 0x90, count: 12) + [0x91], payload: .fingerprint([3, 8, 7, 6])),
            RepairItem(lower: Array(repeating: 0x90, count: 12) + [0x91], upper: nil, payload: .fingerprint([2, 8, 7, 6])),
        ]
        m.items[1] = [RepairItem(lower: Array("bob".utf8), upper: Array("c".utf8), payload: .want([42]))]
        m.rows = Array("{}".utf8)
        let bytes = m.encoded()
        #expect(try RepairMessage(decoding: bytes) == m)
        #expect(throws: RepairMessageError.self) { try RepairMessage(decoding: Array(bytes.dropLast(3))) }
    }

    /// Regression: 300 copies of one whole-table `ids` item (924 bytes) made a serve build an 852 MB answer
    /// over 85 s; 2,000 whole-table fingerprints held its workers for 42 s.
    @Test("ranges repeated, overlapping, out of key order or empty are refused: one message costs at most one pass over each table")
    func overlappingRangesRefused() throws {
        let whole = RepairItem(lower: [], upper: nil, payload: .ids([]))
        let cases: [[RepairItem]] = [
            [whole, whole],
            [RepairItem(lower: [], upper: Array("m".utf8), payload: .ids([])), RepairItem(lower: Array("c".utf8), upper: nil, payload: .ids([]))],
            [RepairItem(lower: Array("m".utf8), upper: Array("m".utf8), payload: .ids([]))],
            [RepairItem(lower: Array("m".utf8), upper: Array("c".utf8), payload: .fingerprint([1, 2, 3, 4]))],
        ]
        for items in cases {
            var m = RepairMessage(key: Reconciler.makeKey())
            m.items[1] = items
            #expect(throws: RepairMessageError.self, "\(items)") { try RepairMessage(decoding: m.encoded()) }
        }
    }

    /// A peer whose every answer asks about another range, as a lying or broken one would.
    final class RestlessPeer: RepairPeer {
        func exchange(_ message: [UInt8]) throws -> [UInt8] {
            var m = RepairMessage()
            m.items[1] = [
                RepairItem(lower: Array("user-1".utf8), upper: Array("user-2".utf8), payload: .fingerprint((0..<4).map { _ in .random(in: 0...255) }))
            ]
            return m.encoded()
        }
        func digest(horizonMilliseconds: Int64) throws -> StateDigest { StateDigest() }
    }

    /// Regression: against a peer whose fingerprints never matched, `catalog repair` made 43,000 round
    /// trips in 30 s and never stopped.
    @Test("a peer whose answers never settle: the repair gives up after its bound of round trips with 65")
    func restlessPeerBounded() throws {
        let store = try CatalogStore.open(path: Support.temporaryDatabase())
        try Self.merge([(nil, positionRow("user-1a", page: 1, at: Timestamp.format(milliseconds: testNow)))], into: store)
        let error = try #require(throws: CatalogError.self) {
            try Repair.run(store: store, peer: RestlessPeer(), source: "restless", dryRun: false)
        }
        #expect(error.exitStatus == 65 && error.message.contains("did not settle within 32 round trips"), "\(error)")
    }

    @Test(
        "a row the other side quarantines leaves the copies apart: the repair says so in one warning and equal:false; a saved remote's name is a SOURCE; sync --repair's line says what the repair moved"
    )
    func copiesLeftApartAreNamed() throws {
        let box = try Sandbox()
        let ahead = Timestamp.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 2 * 3_600_000)
        let future = try box.write(snapshot(positions: [positionRow("zed", page: 2, at: ahead)]), to: "future.json")
        let x = box.path("x.sqlite")
        let y = box.path("y.sqlite")
        #expect(try box.run(["sync", future, "--max-drift", "1d"], db: x).status == 0)
        let now = Timestamp.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000) - 1000)
        #expect(try box.run(["sync", try box.write(snapshot(positions: [positionRow("ann", page: 1, at: now)]), to: "ann.json")], db: y).status == 0)
        #expect(try box.run(["remote", "add", "other", x], db: y).status == 0)
        let run = try box.run(["repair", "other", "--json"], db: y)
        #expect(run.status == 0, "\(run)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
        #expect(report["equal"] as? Bool == false && report["dryRun"] as? Bool == false, "\(report)")
        #expect(report["rowsSent"] as? Int == 1 && report["rowsApplied"] as? Int == 0, "ann went over, zed was held here: \(report)")
        #expect(run.stderr.components(separatedBy: "digests-apart").count == 2 || run.stderr.contains("still differ"), "\(run.stderr)")
        #expect(try box.run(["quarantine", "list", "--json"], db: y).stdout.contains("zed"))
        // The text line counts in words, and marks digests left apart (zed is held here too).
        let z = box.path("z.sqlite")
        #expect(try box.run(["sync", try box.write(snapshot(positions: [positionRow("bob", page: 3, at: now)]), to: "bob.json")], db: z).status == 0)
        let text = try box.run(["repair", x], db: z)
        #expect(text.status == 0 && text.stderr.contains("still differ"), "\(text)")
        #expect(text.stdout.contains("sent 1 row to the source, received 2 (1 applied here)") && text.stdout.contains("(apart)"), "\(text.stdout)")
        // Without --repair another database is not read as a snapshot: 64, and the hint says how.
        let plain = try box.run(["sync", x], db: box.path("v.sqlite"))
        #expect(plain.status == 64 && plain.stderr.contains("sync --repair"), "\(plain)")
        // A repairing sync's line adds what its repair moved.
        let w = box.path("w.sqlite")
        let synced = try box.run(["sync", "--repair", "--max-drift", "1d", x], db: w)
        #expect(synced.status == 0 && synced.stdout.contains("; repaired: 0 rows sent, 3 applied here"), "\(synced)")
    }

    @Test("status --verify-digest: equal after writes; a row hash changed behind the store's back exits 70")
    func verifyDigestCommand() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path], db: db).status == 0)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "1"], db: db).status == 0)
        let ok = runCLI(["status", "--verify-digest", "--json"], db: db)
        #expect(ok.status == 0)
        #expect(ok.stdout.contains(#""equal":true"#))
        try Connection(path: db).execute(sql: "UPDATE landmarks SET name = 'tampered' WHERE id = (SELECT min(id) FROM landmarks)")
        let bad = runCLI(["status", "--verify-digest"], db: db)
        #expect(bad.status == 70)
        #expect(bad.stderr.contains("differs from its recomputation"))
    }

    @Test(
        "status --verify-digest after user erase and gc: the kept digest equals the recomputation; below the horizon the kept sums are the digest plus the collectable rows"
    )
    func verifyDigestAfterEraseAndGC() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path], db: db).status == 0)
        for (user, page) in [("ann", 1), ("bob", 2), ("eve", 3)] {
            #expect(runCLI(["position", "set", "--user", user, "--page", "\(page)"], db: db).status == 0)
        }
        #expect(runCLI(["position", "clear", "--user", "bob"], db: db).status == 0)
        #expect(runCLI(["user", "erase", "eve"], db: db).status == 0)
        let afterErase = runCLI(["status", "--verify-digest", "--json"], db: db)
        #expect(afterErase.status == 0 && afterErase.stdout.contains(#""equal":true"#), "\(afterErase.stdout)\(afterErase.stderr)")
        do {
            // Kept sums minus what lies below a horizon is the digest recomputed at it, at every horizon.
            let store = try CatalogStore.open(path: db)
            let kept = try #require(try store.read { try store.digestTotals.keptSums() })
            #expect(try StateDigest(of: store, horizonMilliseconds: Int64.min) == StateDigest(kept))
            for h in [Int64.min, 0, Int64.max] {
                let recomputed = try store.read { try StateDigest.recomputed(store, horizonMilliseconds: h).digest }
                #expect(try StateDigest(of: store, horizonMilliseconds: h) == recomputed, "horizon \(h)")
            }
            // Bob's tombstone and eve's erasure record are what the digest at the far future leaves out.
            #expect(try StateDigest(of: store, horizonMilliseconds: Int64.max).rows == kept.rows - 2)
        }
        #expect(runCLI(["gc", "--horizon", "0s"], db: db).status == 0)
        let afterGC = runCLI(["status", "--verify-digest", "--json"], db: db)
        #expect(afterGC.status == 0 && afterGC.stdout.contains(#""equal":true"#), "\(afterGC.stdout)\(afterGC.stderr)")
        let store = try CatalogStore.open(path: db)
        let kept = try #require(try store.read { try store.digestTotals.keptSums() })
        // After the node's own gc nothing is below its horizon: the kept sums are the digest.
        #expect(try StateDigest(of: store) == StateDigest(kept))
        #expect(try store.read { try store.erasureTable.count() } == 0)
    }

    @Test("a database written before the kept digest is hashed once when next opened for writing: the digest is the one it had")
    func backfill() throws {
        let path = Support.temporaryDatabase()
        let old = try CatalogStore.open(path: path, wallClock: ManualClock(testNow))
        try Self.merge(
            [
                (landmarkRow(1, name: "Lake", at: "2026-11-29T10:00:00.000Z"), nil),
                (landmarkRow(2, name: "Gone", at: "2026-11-29T10:00:00.000Z", deleted: true), nil),
                (nil, positionRow("ann", page: 1, at: "2026-11-29T10:00:00.000Z")),
                (nil, positionRow("Zoé", page: 2, at: "2026-11-29T10:00:00.000Z", deleted: true)),
            ], into: old)
        let digestBefore = try StateDigest(of: old)
        #expect(digestBefore.rows == 4)
        // What migration 0013 leaves in a database that held rows: no hashes, totals pending.
        try old.connection.executeScript(
            sql: """
                UPDATE landmarks SET h0 = 0, h1 = 0, h2 = 0, h3 = 0;
                UPDATE positions SET h0 = 0, h1 = 0, h2 = 0, h3 = 0;
                UPDATE digest_totals SET backfilled = 0, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                """)
        #expect(try StateDigest(of: old) == digestBefore)  // recomputed while pending
        let store = try CatalogStore.open(path: path, wallClock: ManualClock(testNow))
        #expect(try store.read { try store.digestTotals.pendingBackfill() }.isEmpty)
        #expect(try StateDigest(of: store) == digestBefore)
        try Self.expectKeptDigestRight(store, "after the backfill")
    }
}
