import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// Snapshot logs (docs/log-format.md): publishing, reading from a cursor, generations, tampering, failures.
@Suite("Snapshot logs")
struct LogTests {

    @Test("publish writes a base, then one delta per change set with sizes and hashes; nothing changed writes nothing")
    func publishing() throws {
        let dir = Support.temporaryDirectory()
        let log = dir.appending(path: "log")
        let a = try LogFixtures.store(dir, "a")
        let first = try LogPublisher(a).publishLog(to: log.path)
        #expect(first.changed && first.newGeneration)
        #expect(first.manifest.through == 0)
        // Nothing changed: nothing written, the manifest keeps its bytes and its modification time.
        let before = (try Data(contentsOf: log.appending(path: "manifest.json")), try LogFixtures.mtime(log.appending(path: "manifest.json")))
        usleep(20_000)
        let again = try LogPublisher(a).publishLog(to: log.path)
        #expect(!again.changed && again.written.isEmpty)
        #expect(try Data(contentsOf: log.appending(path: "manifest.json")) == before.0)
        let after = try LogFixtures.mtime(log.appending(path: "manifest.json"))
        #expect(after.tv_sec == before.1.tv_sec && after.tv_nsec == before.1.tv_nsec)

        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        let one = try LogPublisher(a).publishLog(to: log.path)
        #expect(one.changed)
        #expect(try Positions(a).setPosition(user: "ann", to: .page(0)).pageCount > 0)
        let two = try LogPublisher(a).publishLog(to: log.path)
        let m = try LogFixtures.manifest(log)
        #expect(m == two.manifest)
        // A change set of 5 imported rows exceeds the empty base: that publish started a new generation.
        #expect(one.newGeneration)
        #expect(!two.newGeneration)
        #expect(m.base.through == 5 && m.through == 6 && m.deltas.count == 1)
        #expect(m.deltas[0].from == 5 && m.deltas[0].through == 6)
        for file in [m.base] + m.deltas {
            let url = log.appending(path: file.name)
            #expect(try Data(contentsOf: url).count == Int(file.bytes))
            #expect(try LogFixtures.sha256(url) == file.sha256)
        }
        // The delta holds the one changed row, and is a v1 snapshot any reader can merge.
        let delta = try String(contentsOf: log.appending(path: m.deltas[0].name), encoding: .utf8)
        #expect(delta.hasPrefix(#"{"format":"landmark-catalog-snapshot","version":1,"node":"node-a","#))
        #expect(delta.contains(#""user":"ann""#) && !delta.contains("Half Dome"))
    }

    @Test("a consumer fetches the manifest and only the new delta; a second run is not modified")
    func onlyNewDeltas() throws {
        let dir = Support.temporaryDirectory()
        let log = dir.appending(path: "log")
        let a = try LogFixtures.store(dir, "a")
        let b = try LogFixtures.store(dir, "b")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        _ = try LogPublisher(a).publishLog(to: log.path)
        let initial = try SyncRunner(store: b).sync(sources: [log.path])
        #expect(initial.exitStatus == 0 && initial.counts.landmarksApplied == 5)
        try Positions(a).setPosition(user: "ann", to: .page(1))
        let published = try LogPublisher(a).publishLog(to: log.path)
        let m = published.manifest
        let next = try SyncRunner(store: b).sync(sources: [log.path])
        #expect(next.counts.seen == 1 && next.counts.positionsApplied == 1)
        let manifestBytes = try Data(contentsOf: log.appending(path: "manifest.json")).count
        #expect(next.sources[0].bytes == Int64(manifestBytes) + m.deltas.last!.bytes)
        let idle = try SyncRunner(store: b).sync(sources: [log.path])
        #expect(idle.sources[0].outcome == .notModified)
        #expect(idle.counts.seen == 0)
        #expect(try StateDigest(of: a) == StateDigest(of: b))
    }

    @Test(
        "when the deltas outgrow the base a new generation starts; a consumer on the old one fetches the new base; retired files go after the grace period"
    )
    func generations() throws {
        let dir = Support.temporaryDirectory()
        let log = dir.appending(path: "log")
        let clock = ManualClock(testNow)
        let a = try LogFixtures.store(dir, "a", clock: clock)
        let b = try LogFixtures.store(dir, "b")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        let g1 = try LogPublisher(a).publishLog(to: log.path).manifest
        _ = try SyncRunner(store: b).sync(sources: [log.path])
        var rolled: LogManifest?
        for page in 0..<60 {
            clock.advance(1_000)
            try Positions(a).setPosition(user: "u\(page)", to: .page(page % 2))
            let r = try LogPublisher(a).publishLog(to: log.path)
            if r.newGeneration {
                rolled = r.manifest
                break
            }
        }
        let g2 = try #require(rolled, "the deltas never outgrew the base")
        #expect(g2.generation != g1.generation && g2.deltas.isEmpty)
        // The old generation's files stay for the grace period, so a reader of the old manifest can finish.
        #expect(FileManager.default.fileExists(atPath: log.appending(path: g1.base.name).path))
        let caughtUp = try SyncRunner(store: b).sync(sources: [log.path])
        #expect(caughtUp.exitStatus == 0)
        #expect(caughtUp.sources[0].bytes >= g2.base.bytes)
        #expect(try StateDigest(of: a) == StateDigest(of: b))
        clock.advance(3_601_000)
        let cleaned = try LogPublisher(a).publishLog(to: log.path)
        #expect(!cleaned.changed)
        #expect(cleaned.removed.contains(g1.base.name))
        #expect(!FileManager.default.fileExists(atPath: log.appending(path: g1.base.name).path))
        #expect(FileManager.default.fileExists(atPath: log.appending(path: g2.base.name).path))
    }

    @Test("past --max-deltas the deltas are merged into one, and a consumer mid-chain still converges")
    func compaction() throws {
        let dir = Support.temporaryDirectory()
        let log = dir.appending(path: "log")
        let a = try LogFixtures.store(dir, "a")
        let b = try LogFixtures.store(dir, "b")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        var options = PublishOptions()
        options.maxDeltas = 3
        _ = try LogPublisher(a).publishLog(to: log.path, options: options)
        for i in 0..<3 {
            try Positions(a).setPosition(user: "u\(i)", to: .page(0))
            _ = try LogPublisher(a).publishLog(to: log.path, options: options)
        }
        _ = try SyncRunner(store: b).sync(sources: [log.path])
        try Positions(a).setPosition(user: "u9", to: .page(1))
        let merged = try LogPublisher(a).publishLog(to: log.path, options: options).manifest
        #expect(merged.deltas.count == 1)
        #expect(merged.deltas[0].from == merged.base.through)
        let r = try SyncRunner(store: b).sync(sources: [log.path])
        #expect(r.exitStatus == 0 && r.counts.positionsApplied == 1)
        #expect(try StateDigest(of: a) == StateDigest(of: b))
    }

    @Test("a tampered delta (one byte changed) is 65 for that source, nothing from it merged; the other sources merge")
    func tampered() throws {
        let dir = Support.temporaryDirectory()
        let log = dir.appending(path: "log")
        let a = try LogFixtures.store(dir, "a")
        let b = try LogFixtures.store(dir, "b")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        _ = try LogPublisher(a).publishLog(to: log.path)
        _ = try SyncRunner(store: b).sync(sources: [log.path])
        try Positions(a).setPosition(user: "ann", to: .page(1))
        let m = try LogPublisher(a).publishLog(to: log.path).manifest
        let deltaURL = log.appending(path: m.deltas.last!.name)
        var bytes = Array(try Data(contentsOf: deltaURL))
        let i = try #require(bytes.firstIndex(of: UInt8(ascii: "1")))
        bytes[i] = UInt8(ascii: "2")  // same size, different content
        try Data(bytes).write(to: deltaURL)
        let good = try writeTemporary(snapshot(positions: [positionRow("g", page: 0, at: "2026-11-29T01:00:00Z")]))
        let before = try dumpPositions(b.path)
        let r = try SyncRunner(store: b).sync(sources: [log.path, good])
        #expect(r.exitStatus == 65)
        #expect(r.sources[0].error?.message.contains("SHA-256") == true)
        #expect(r.sources[1].outcome == .merged)
        #expect(try dumpPositions(b.path).map { $0[0] } == before.map { $0[0] } + [.text("g")])
    }

    @Test("a file the manifest names but that is gone: one fresh look, then 69, nothing merged")
    func fileGone() throws {
        let dir = Support.temporaryDirectory()
        let log = dir.appending(path: "log")
        let a = try LogFixtures.store(dir, "a")
        let b = try LogFixtures.store(dir, "b")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        let m = try LogPublisher(a).publishLog(to: log.path).manifest
        try FileManager.default.removeItem(at: log.appending(path: m.base.name))
        let r = try SyncRunner(store: b).sync(sources: [log.path])
        #expect(r.exitStatus == 69)
        #expect(r.sources[0].error?.message.contains("fresh look") == true)
        #expect(try dumpLandmarks(b.path).isEmpty)
    }

    @Test("a peer that is down and a good one: the good one merged, the log published, exit 69")
    func peerDown() throws {
        let dir = Support.temporaryDirectory()
        let db = dir.appending(path: "me.sqlite").path
        let good = try writeTemporary(snapshot(positions: [positionRow("g", page: 0, at: "2026-11-29T01:00:00Z")]))
        let log = dir.appending(path: "published").path
        let r = runCLI(["sync", "--timeout", "2", "http://127.0.0.1:1/peer/manifest.json", good, "--publish", log], db: db)
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stdout.contains("2 sources (1 merged, 0 not modified, 1 failed)"))
        #expect(try dumpPositions(db).count == 1)
        #expect(try LogFixtures.manifest(URL(fileURLWithPath: log)).through == 1)
        // With no SOURCE and no remote, --publish just publishes.
        #expect(runCLI(["sync", "--publish", log], db: db).status == 0)
    }

    @Test("the same state exported twice gives the same bytes; generatedAt is the newest stamp, not the time of the run")
    func stableExport() throws {
        let dir = Support.temporaryDirectory()
        let clock = ManualClock(testNow)
        let a = try LogFixtures.store(dir, "a", clock: clock)
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("unknown-keys-crlf.json")))
        try Positions(a).setPosition(user: "Zoé", to: .page(0))
        var first: [UInt8] = []
        var second: [UInt8] = []
        try SnapshotExporter(a).exportSnapshot { first += $0 }
        clock.advance(60_000)
        try SnapshotExporter(a).exportSnapshot { second += $0 }
        #expect(first == second)
        #expect(String(decoding: first, as: UTF8.self).hasSuffix(#""generatedAt":"2026-11-30T00:00:00.000Z"}"# + "\n"))
    }

    @Test("status shows the state digest; nodes holding the same state show the same digest")
    func digestInStatus() throws {
        let dir = Support.temporaryDirectory()
        let a = dir.appending(path: "a.sqlite").path
        let b = dir.appending(path: "b.sqlite").path
        #expect(runCLI(["import", Support.fixture("valid.json")], db: a).status == 0)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "1"], db: a).status == 0)
        #expect(runCLI(["publish", dir.appending(path: "log").path], db: a).status == 0)
        #expect(runCLI(["sync", dir.appending(path: "log").path], db: b).status == 0)
        func digest(_ db: String) -> String? {
            let text = runCLI(["status", "--json"], db: db).stdout
            return text.range(of: #""digest":""#).map { String(text[$0.upperBound...].prefix(32)) }
        }
        #expect(digest(a) != nil)
        #expect(digest(a) == digest(b))
        #expect(runCLI(["status"], db: a).stdout.contains("digest:      \(digest(a) ?? "")"))
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "0"], db: b).status == 0)
        #expect(digest(a) != digest(b))
    }
}

/// The convergence property over snapshot logs: stores publishing and consuming each other's logs in
/// random orders — with stale manifest reads, duplicated and skipped reads, generations rolling over
/// and retired files removed — end with equal digests.
@Suite("Snapshot logs: convergence property")
struct LogConvergenceTests {
    @Test("random writes, publishes and log reads with stale manifests and removed files: equal digests", arguments: 0..<12)
    func converges(_ iteration: Int) throws {
        let seed = UInt64(0xB10C) &+ UInt64(iteration) &* 104_729
        var rng = SplitMix64(seed: seed)
        let dir = Support.temporaryDirectory()
        var clocks: [ManualClock] = []
        var stores: [CatalogStore] = []
        var logs: [URL] = []
        for i in 0..<3 {
            let clock = ManualClock(testNow + Int64.random(in: -60_000...60_000, using: &rng))
            clocks.append(clock)
            stores.append(try LogFixtures.store(dir, "s\(i)", clock: clock))
            logs.append(dir.appending(path: "log\(i)"))
        }
        var staleManifests: [[URL]] = [[], [], []]
        var options = PublishOptions()
        options.maxDeltas = Int.random(in: 2...5, using: &rng)
        options.graceSeconds = Double.random(in: 0...5, using: &rng)
        var serial = 0
        for _ in 0..<50 {
            let i = Int.random(in: 0..<3, using: &rng)
            clocks[i].advance(Int64.random(in: -1_000...3_000, using: &rng))
            serial += 1
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...2:
                let pages = try LandmarkReader(stores[i]).featuredIDs().count
                if pages > 0 {
                    try Positions(stores[i]).setPosition(
                        user: ConvergenceTests.users.randomElement(using: &rng)!, to: .page(Int.random(in: 0..<pages, using: &rng)))
                }
            case 3:
                try Positions(stores[i]).clearPosition(user: ConvergenceTests.users.randomElement(using: &rng)!)
            case 4:
                let file = try randomLandmarkFile(&rng, in: dir, serial: serial)
                _ = try Importer(stores[i]).importLandmarks(from: .file(file), options: ImportOptions(prune: Bool.random(using: &rng)))
            case 5, 6:
                _ = try LogPublisher(stores[i]).publishLog(to: logs[i].path, options: options)
                // Keep a copy of this manifest: a later reader may see it late (a stale cache, a slow CDN).
                let manifest = logs[i].appending(path: "manifest.json")
                if FileManager.default.fileExists(atPath: manifest.path) {
                    let copy = logs[i].appending(path: "manifest-\(serial).json")
                    try? FileManager.default.copyItem(at: manifest, to: copy)
                    staleManifests[i].append(copy)
                }
            default:
                let j = (i + Int.random(in: 1...2, using: &rng)) % 3
                guard FileManager.default.fileExists(atPath: logs[j].appending(path: "manifest.json").path) else { continue }
                var sources = [logs[j].path]
                if let stale = staleManifests[j].randomElement(using: &rng), Bool.random(using: &rng) { sources.insert(stale.path, at: 0) }
                if Bool.random(using: &rng) { sources.append(logs[j].path) }  // read twice in one run
                // A stale manifest may name files already removed: that source fails alone (69), nothing from it merged.
                let r = try SyncRunner(store: stores[i]).sync(sources: sources)
                #expect(r.sources.allSatisfy { $0.error == nil || $0.error?.exitStatus == 69 }, "seed \(seed): \(r.sources.compactMap(\.error))")
            }
        }
        // Final exchange, twice (so rows reach every store through any path).
        for _ in 0..<2 {
            for (i, store) in stores.enumerated() { _ = try LogPublisher(store).publishLog(to: logs[i].path, options: options) }
            for (i, store) in stores.enumerated() {
                let others = (0..<3).filter { $0 != i }.shuffled(using: &rng).map { logs[$0].path }
                let r = try SyncRunner(store: store).sync(sources: others)
                #expect(r.exitStatus == 0, "seed \(seed): \(r.sources.compactMap(\.error))")
            }
        }
        let digests = try stores.map { try StateDigest(of: $0) }
        #expect(digests[0] == digests[1] && digests[1] == digests[2], "replay with seed \(seed)")
        #expect(try canonicalDump(stores[0]) == canonicalDump(stores[1]), "seed \(seed)")
        #expect(digests[0].rows > 0)
    }
}
