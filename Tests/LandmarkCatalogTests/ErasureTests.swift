import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogClient
@testable import LandmarkCatalogSync

/// Erasure of a user and collection of tombstones (docs/erasure.md): the built binary, a real serve, the
/// client against it, and a property test over three databases with a test clock.
@Suite("Erasure and collection", .serialized)
struct ErasureTests {

    @Test("user erase: the row, its quarantine and the ledger go, and no byte of the id is left in the db, -wal or -shm")
    func eraseLeavesNoTrace() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        // History to leave garbage behind: set, set again, clear, set; a quarantined row; a ledger message.
        for args in [["set", "--page", "1"], ["set", "--page", "2"], ["clear"], ["set", "--page", "3"]] {
            let r = try box.run(["position", args[0], "--user", ErasureTraces.user] + args.dropFirst(), db: db)
            try #require(r.status == 0, "\(r)")
        }
        let ahead = try box.write(
            #"{"format":"landmark-catalog-snapshot","version":1,"positions":[{"user":"\#(ErasureTraces.user)","page":1,"updatedAt":"2099-01-01T00:00:00Z","node":"n-far"}]}"#,
            to: "ahead.json")
        #expect(try box.run(["sync", ahead], db: db).status == 0)
        let broken = try box.write(
            #"{"format":"landmark-catalog-snapshot","version":1,"positions":[{"user":"\#(ErasureTraces.user)"}]}"#, to: "broken.json")
        #expect(try box.run(["sync", broken], db: db).status == 65)
        let before = try box.run(["export", "--output", box.path("before.json")], db: db)
        try #require(before.status == 0)
        // Another process holds the database open (idle), so the WAL and shared-memory files stay to be looked at.
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        reader.arguments = [
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM positions').fetchall(); print('open', flush=True); sys.stdin.read()",
            db,
        ]
        let input = Pipe()
        let output = Pipe()
        reader.standardInput = input
        reader.standardOutput = output
        try reader.run()
        defer {
            try? input.fileHandleForWriting.close()
            reader.waitUntilExit()
        }
        _ = output.fileHandleForReading.availableData  // "open": the reader has read
        #expect(ErasureTraces.traces(db).reduce(0, +) > 0, "the id is in the files before the erasure")
        let erased = try box.run(["user", "erase", ErasureTraces.user, "--json"], db: db)
        #expect(erased.status == 0, "\(erased)")
        #expect(erased.stdout.contains(#""removedRow":true"#))
        #expect(FileManager.default.fileExists(atPath: db + "-wal"))
        #expect(ErasureTraces.traces(db) == [0, 0, 0], "the id's bytes are left in db, -wal, -shm")
        // The erasure travels: the old snapshot's row is refused as erased; a new write is a new user.
        let again = try box.run(["sync", box.path("before.json"), "--json"], db: db)
        #expect(again.status == 0)
        #expect(again.stdout.contains(#""erased":1"#), "\(again.stdout)")
        #expect(ErasureTraces.traces(db) == [0, 0, 0])
        let export = try box.run(["export"], db: db)
        #expect(export.stdout.contains(#""userHash":"\#(ErasureRule.userHash(ErasureTraces.user))""#))
        #expect(!export.stdout.contains(ErasureTraces.user))
        #expect(try box.run(["position", "set", "--user", ErasureTraces.user, "--page", "0"], db: db).status == 0)
        #expect(try box.run(["position", "get", "--user", ErasureTraces.user], db: db).status == 0)
        // A bad id is a usage error; a missing database is 66.
        #expect(try box.run(["user", "erase", ""], db: db).status == 64)
        #expect(try box.run(["user", "erase", "x"], db: box.path("none.sqlite")).status == 66)
    }

    @Test("gc: tombstones and erasures older than the horizon go; an older row for a key with no row is refused as expired")
    func collection() throws {
        let dir = Support.temporaryDirectory()
        let clock = ManualClock(testNow)
        let store = try CatalogStore.open(path: dir.appending(path: "a.sqlite").path, wallClock: clock)
        try store.setNodeID("node-a")
        _ = try Importer(store).importLandmarks(from: .file(Support.root.appending(path: "Seeds/landmarkData.json").path))
        try Positions(store).setPosition(user: "ann", to: .page(1))
        try Positions(store).setPosition(user: ErasureTraces.user, to: .page(2))
        let old = dir.appending(path: "old.json").path
        try SnapshotExporter(store).exportSnapshot(toFile: old)
        clock.advance(1000)
        try Positions(store).clearPosition(user: "ann")
        try UserErasure(store).eraseUser(ErasureTraces.user)
        // Inside the horizon: nothing is collected.
        clock.advance(29 * 86_400_000)
        #expect(try Collector(store).collect().removed == 0)
        // 400 days on the wall clock, but no stamp made or seen since: a clock far ahead looks the same, so
        // nothing is collected and the horizon does not move into the future.
        clock.advance(371 * 86_400_000)
        #expect(try Collector(store).collect().removed == 0)
        #expect(try Collector(store).horizon() < testNow)
        // The node's rows moved on with it (a server takes writes all along): collected, and the old rows
        // of a device offline all along stay out. A stamp issued but never stored would not count: the
        // collection clock is capped at the newest stamp the rows hold (docs/erasure.md §4).
        try Positions(store).setPosition(user: "later", to: .page(1))
        let collected = try Collector(store).collect()
        #expect(collected.positionTombstones == 1 && collected.erasures == 1)
        #expect(try Collector(store).horizon() == testNow + 400 * 86_400_000 + 1000 - 30 * 86_400_000)
        try store.write { try store.positionTable.forget(user: "later") }  // the rest compares as before
        let report = try SyncRunner(store: store).sync(sources: [old])
        #expect(report.counts.expired == 2, "\(report.counts)")
        #expect(try Positions(store).positions().isEmpty)
        // A node that never collected holds the tombstone and the erasure; at the collector's horizon the
        // two digests agree.
        let other = try CatalogStore.open(path: dir.appending(path: "b.sqlite").path, wallClock: clock)
        try other.setNodeID("node-b")
        let before = dir.appending(path: "before-gc.json").path
        let fresh = try CatalogStore.open(path: dir.appending(path: "c.sqlite").path, wallClock: ManualClock(testNow + 2000))
        try fresh.setNodeID("node-c")
        _ = try SyncRunner(store: fresh).sync(sources: [old])
        try Positions(fresh).clearPosition(user: "ann")
        try UserErasure(fresh).eraseUser(ErasureTraces.user)
        try SnapshotExporter(fresh).exportSnapshot(toFile: before)
        _ = try SyncRunner(store: other).sync(sources: [before])
        _ = try SyncRunner(store: store).sync(sources: [before])
        let horizon = try Collector(store).horizon()
        #expect(try StateDigest(of: other, horizonMilliseconds: horizon) == StateDigest(of: store))
        #expect(try StateDigest(of: other) != StateDigest(of: store), "below the horizon the two hold different rows")
    }

    @Test("Catalog.eraseUser: the row goes, the erasure is kept by hash, a later write is a new user's")
    func catalogEraseUser() async throws {
        let catalog = try Catalog(path: Support.temporaryDatabase())
        try await catalog.importLandmarks(from: .file(Support.root.appending(path: "Seeds/landmarkData.json").path))
        try await catalog.setPosition(user: ErasureTraces.user, to: .page(2))
        let summary = try await catalog.eraseUser(ErasureTraces.user)
        #expect(summary.removedRow)
        #expect(try await catalog.position(user: ErasureTraces.user) == nil)
        #expect(try await catalog.read { try UserErasure($0).isErased(ErasureTraces.user) })
        let snapshot = String(decoding: try await catalog.exportSnapshot(), as: UTF8.self)
        #expect(snapshot.contains(ErasureRule.userHash(ErasureTraces.user)) && !snapshot.contains(ErasureTraces.user))
        try await catalog.setPosition(user: ErasureTraces.user, to: .page(1))
        #expect(try await catalog.position(user: ErasureTraces.user)?.currentPage == 1)
    }

    @Test("erasing again reports the record already held; erasing by hash removes the same rows as by id")
    func eraseAgainAndByHash() async throws {
        let catalog = try Catalog(path: Support.temporaryDatabase())
        try await catalog.importLandmarks(from: .file(Support.root.appending(path: "Seeds/landmarkData.json").path))
        try await catalog.setPosition(user: ErasureTraces.user, to: .page(2))
        try await catalog.setPosition(user: "other", to: .page(1))
        let first = try await catalog.eraseUser(ErasureTraces.user)
        #expect(first.previouslyErased == nil)
        let second = try await catalog.eraseUser(ErasureTraces.user)
        #expect(second.previouslyErased == first.stamp && !second.removedRow)
        let hash = ErasureRule.userHash("other")
        #expect(try await catalog.read { try UserErasure($0).erasureStamp(hash: hash) } == nil)
        let byHash = try await catalog.write { try UserErasure($0).eraseUser(hash: hash) }
        #expect(byHash.removedRow && byHash.previouslyErased == nil)
        #expect(try await catalog.position(user: "other") == nil)
        #expect(try await catalog.read { try UserErasure($0).erasureStamp(hash: hash) } == byHash.stamp)
        await #expect(throws: CatalogError.self) {
            try await catalog.write { try UserErasure($0).eraseUser(hash: hash.uppercased()) }
        }
    }

    @Test("an erasure stamped beyond the drift allowance is applied (not dropped), and the clock does not jump")
    func erasureFromAClockAhead() throws {
        let dir = Support.temporaryDirectory()
        let ahead = try CatalogStore.open(path: dir.appending(path: "a.sqlite").path, wallClock: ManualClock(testNow + 3_600_000))
        try ahead.setNodeID("node-ahead")
        let here = try CatalogStore.open(path: dir.appending(path: "b.sqlite").path, wallClock: ManualClock(testNow))
        try here.setNodeID("node-here")
        _ = try Importer(here).importLandmarks(from: .file(Support.root.appending(path: "Seeds/landmarkData.json").path))
        try Positions(here).setPosition(user: ErasureTraces.user, to: .page(2))
        try UserErasure(ahead).eraseUser(ErasureTraces.user)
        let snapshot = dir.appending(path: "erasure.json").path
        try SnapshotExporter(ahead).exportSnapshot(toFile: snapshot)
        let report = try SyncRunner(store: here).sync(sources: [snapshot])
        // It was dropped as "quarantined" and the source's cursor moved past it: the user stayed for good.
        #expect(report.counts.erasuresApplied == 1 && report.counts.quarantined == 0, "\(report.counts)")
        #expect(try Positions(here).position(user: ErasureTraces.user) == nil)
        #expect(try UserErasure(here).isErased(ErasureTraces.user))
        // This node's clock did not take the stamp from an hour ahead.
        #expect(try here.read { try here.metaTable.clock().wall } < testNow + 300_000)
    }

    @Test("a merged erasure removes the user's held rows on a node that holds no row of the user")
    func mergedErasureClearsQuarantine() throws {
        let dir = Support.temporaryDirectory()
        let here = try CatalogStore.open(path: dir.appending(path: "c.sqlite").path, wallClock: ManualClock(testNow))
        try here.setNodeID("node-c")
        let future = try writeTemporary(snapshot(positions: [positionRow(ErasureTraces.user, page: 0, at: "2099-01-01T00:00:00Z")]))
        #expect(try SyncRunner(store: here).sync(sources: [future]).counts.quarantined == 1)
        let eraser = try CatalogStore.open(path: dir.appending(path: "a.sqlite").path, wallClock: ManualClock(testNow))
        try eraser.setNodeID("node-a")
        try UserErasure(eraser).eraseUser(ErasureTraces.user)
        let erasure = dir.appending(path: "erasure.json").path
        try SnapshotExporter(eraser).exportSnapshot(toFile: erasure)
        #expect(try SyncRunner(store: here).sync(sources: [erasure]).counts.erasuresApplied == 1)
        // The held row was left when only the users with a row were looked for.
        #expect(try here.read { try here.quarantineTable.count() } == 0)
        #expect(ErasureTraces.traces(here.path) == [0, 0, 0])
    }

    @Test("DELETE /v1/users/ID names the id as the HTTP layer decoded it, never decoded twice")
    func erasurePathDecodedOnce() {
        // libmicrohttpd hands over `/v1/users/p%2541` as `/v1/users/p%41`: the user `p%41`, not `pA`.
        #expect(DeviceRoute.erasureTarget(path: "/v1/users/p%41") == "p%41")
        #expect(DeviceRoute.erasureTarget(path: "/v1/users/me") == "me")
        #expect(DeviceRoute.erasureTarget(path: "/v1/users/a/b") == nil)
        #expect(DeviceRoute.erasureTarget(path: "/v1/users/") == nil)
    }

    @Test("catalog gc --horizon 0s: every tombstone collected, the file vacuumed")
    func gcCommand() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        #expect(try box.run(["position", "clear", "--user", "ann"], db: db).status == 0)
        let gc = try box.run(["gc", "--horizon", "0s", "--json"], db: db)
        #expect(gc.status == 0, "\(gc)")
        #expect(gc.stdout.contains(#""positionTombstones":1"#), "\(gc.stdout)")
        #expect(try box.run(["gc", "--horizon", "-1s"], db: db).status == 64)
        // A horizon too large for a 64-bit count of ms was a trap (132); now a usage error.
        for huge in ["99999999999999999d", "9223372036854775807", "106751991167300d"] {
            let r = try box.run(["gc", "--horizon", huge], db: db)
            #expect(r.status == 64 && r.stderr.contains("10,000 years"), "\(huge): \(r)")
        }
        #expect(try box.run(["gc"], db: box.path("none.sqlite")).status == 66)
        let status = try box.run(["status"], db: db)
        #expect(status.stdout.contains("positions:   0 live, 0 tombstones"), "\(status.stdout)")
    }
}

/// Random interleavings of writes, clears, erasures and collections on three databases, delivered by
/// snapshot files in random orders with stale re-deliveries: the digests agree at the common horizon and
/// no erased or collected row comes back (docs/erasure.md §5).
@Suite("Erasure: convergence property")
struct ErasureConvergenceTests {
    static let users = ["ann", "bob", "Zoé", "李", "eve"]
    /// The horizon every node collects with: 60 s of test clock.
    static let horizon: Int64 = 60_000

    @Test("writes, clears, erasures and collections in random orders: equal digests, nothing deleted returns", arguments: 0..<20)
    func converges(_ iteration: Int) throws {
        let seed = UInt64(0xE4A5E) &+ UInt64(iteration) &* 7919
        var rng = SplitMix64(seed: seed)
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var clocks: [ManualClock] = []
        var stores: [CatalogStore] = []
        for i in 0..<3 {
            let clock = ManualClock(testNow + Int64.random(in: -5_000...5_000, using: &rng))
            let store = try CatalogStore.open(path: dir.appending(path: "s\(i).sqlite").path, wallClock: clock)
            try store.setNodeID("node-\(i)")
            _ = try Importer(store).importLandmarks(from: .file(Support.root.appending(path: "Seeds/landmarkData.json").path))
            clocks.append(clock)
            stores.append(store)
        }
        var snapshots: [String] = []
        var serial = 0
        // Every erasure and clear made: (user, stamp).
        var erasures: [(String, HLCStamp)] = []
        var clears: [(String, HLCStamp)] = []
        func snapshot(_ i: Int) throws -> String {
            serial += 1
            let path = dir.appending(path: "snap-\(serial).json").path
            try SnapshotExporter(stores[i]).exportSnapshot(toFile: path)
            snapshots.append(path)
            return path
        }
        /// Every node's state to every node: done at least once per half horizon, so each deletion reaches
        /// every node before any node may collect it (the horizon's contract).
        func exchange() throws {
            let finals = try (0..<3).map(snapshot)
            for store in stores {
                for source in finals.shuffled(using: &rng) { _ = try SyncRunner(store: store).sync(sources: [source]) }
            }
        }
        var sinceExchange: Int64 = 0
        for _ in 0..<60 {
            let i = Int.random(in: 0..<3, using: &rng)
            let store = stores[i]
            let step = Int64.random(in: 0...4_000, using: &rng)
            for clock in clocks { clock.advance(step) }
            sinceExchange += step
            if sinceExchange >= Self.horizon / 2 {
                try exchange()
                sinceExchange = 0
            }
            let user = Self.users.randomElement(using: &rng)!
            switch Int.random(in: 0..<12, using: &rng) {
            case 0...3:
                try Positions(store).setPosition(user: user, to: .page(Int.random(in: 0..<4, using: &rng)))
            case 4:
                try Positions(store).clearPosition(user: user)
                if let row = try store.read({ try store.positionTable.row(user: user) }) { clears.append((user, row.record.stamp)) }
            case 5:
                erasures.append((user, try UserErasure(store).eraseUser(user).stamp))
            case 6:
                try Collector(store).collect(olderThan: Self.horizon, vacuum: Bool.random(using: &rng))
            case 7, 8:
                _ = try snapshot(i)
            default:
                // Any past snapshot, however old (a device or node that was away), possibly repeated.
                guard !snapshots.isEmpty else { continue }
                let picks = (0..<Int.random(in: 1...3, using: &rng)).map { _ in snapshots.randomElement(using: &rng)! }
                _ = try SyncRunner(store: store).sync(sources: picks)
            }
        }
        try exchange()
        // Time passes beyond the horizon and every node collects; then every old snapshot comes back (a
        // device or node away all along) in a random order to a random node: nothing deleted may return.
        for clock in clocks { clock.advance(Self.horizon + Int64.random(in: 1...10_000, using: &rng)) }
        for store in stores { try Collector(store).collect(olderThan: Self.horizon, vacuum: false) }
        for source in snapshots.shuffled(using: &rng) {
            _ = try SyncRunner(store: stores[Int.random(in: 0..<3, using: &rng)]).sync(sources: [source])
        }
        try exchange()
        let horizon = try stores.map { try Collector($0).horizon() }.max() ?? 0
        let digests = try stores.map { try StateDigest(of: $0, horizonMilliseconds: horizon) }
        #expect(digests[0] == digests[1], "stores 0 and 1 differ; replay with seed \(seed)")
        #expect(digests[1] == digests[2], "stores 1 and 2 differ; replay with seed \(seed)")
        for (n, store) in stores.enumerated() {
            let rows = try store.read { () throws -> [PositionRecord] in
                var rows: [PositionRecord] = []
                try store.positionTable.forEachRow { rows.append(PositionRecord(row: $0)) }
                return rows
            }
            for row in rows {
                for (user, stamp) in erasures where user == row.user {
                    #expect(stamp < row.stamp, "store \(n): \(user)'s row \(row.stamp) came back over the erasure \(stamp); seed \(seed)")
                }
                for (user, stamp) in clears where user == row.user && !row.deleted {
                    #expect(stamp < row.stamp, "store \(n): \(user)'s live row \(row.stamp) came back over the clear \(stamp); seed \(seed)")
                }
            }
        }
    }
}
