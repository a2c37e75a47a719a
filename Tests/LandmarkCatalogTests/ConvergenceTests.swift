import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

@Suite("Sync: convergence property")
struct ConvergenceTests {
    static let users = ["ann", "bob", "Zoé", "李", "eve"]

    @Test(
        "random writes, random deliveries with duplicates and stale re-deliveries: every store ends identical",
        arguments: 0..<25)
    func converges(_ iteration: Int) throws {
        let seed = UInt64(0xC0FFEE) &+ UInt64(iteration) &* 7919
        var rng = SplitMix64(seed: seed)
        let dir = Support.temporaryDirectory()
        // Three stores whose wall clocks disagree by up to ±90 s (inside the 300 s drift limit).
        var clocks: [ManualClock] = []
        var stores: [CatalogStore] = []
        for i in 0..<3 {
            let clock = ManualClock(testNow + Int64.random(in: -90_000...90_000, using: &rng))
            let store = try CatalogStore.open(path: dir.appending(path: "s\(i).sqlite").path, wallClock: clock)
            try store.setNodeID("node-\(i)")
            clocks.append(clock)
            stores.append(store)
        }
        var snapshots: [String] = []
        var serial = 0
        for _ in 0..<40 {
            let i = Int.random(in: 0..<3, using: &rng)
            let store = stores[i]
            // Time moves on unevenly, sometimes not at all, sometimes backwards a little.
            clocks[i].advance(Int64.random(in: -2_000...3_000, using: &rng))
            serial += 1
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...2:
                let pages = try LandmarkReader(store).featuredIDs().count
                if pages > 0 {
                    try Positions(store).setPosition(user: Self.users.randomElement(using: &rng)!, to: .page(Int.random(in: 0..<pages, using: &rng)))
                }
            case 3:
                try Positions(store).clearPosition(user: Self.users.randomElement(using: &rng)!)
            case 4, 5:
                let file = try randomLandmarkFile(&rng, in: dir, serial: serial)
                _ = try Importer(store).importLandmarks(from: .file(file), options: ImportOptions(prune: Bool.random(using: &rng)))
            case 6, 7:
                let path = dir.appending(path: "snap-\(serial).json").path
                try SnapshotExporter(store).exportSnapshot(toFile: path)
                snapshots.append(path)
            default:
                // Deliver a random handful of past snapshots (old ones included), possibly repeated.
                guard !snapshots.isEmpty else { continue }
                let picks = (0..<Int.random(in: 1...3, using: &rng)).map { _ in snapshots.randomElement(using: &rng)! }
                _ = try SyncRunner(store: store).sync(sources: picks)
            }
        }
        // Final exchange: each store's latest state goes to every store, in a random order, with repeats.
        var finals: [String] = []
        for (i, store) in stores.enumerated() {
            let path = dir.appending(path: "final-\(i).json").path
            try SnapshotExporter(store).exportSnapshot(toFile: path)
            finals.append(path)
        }
        for store in stores {
            var order = (finals + finals.prefix(Int.random(in: 0...2, using: &rng))).shuffled(using: &rng)
            if let stale = snapshots.randomElement(using: &rng) { order.insert(stale, at: Int.random(in: 0...order.count, using: &rng)) }
            for source in order { _ = try SyncRunner(store: store).sync(sources: [source]) }
        }
        let dumps = try stores.map(canonicalDump)
        #expect(dumps[0] == dumps[1], "stores 0 and 1 differ; replay with seed \(seed)")
        #expect(dumps[1] == dumps[2], "stores 1 and 2 differ; replay with seed \(seed)")
        #expect(dumps[0].count > 2, "seed \(seed) produced no rows at all")
        // And merging everything again changes nothing (idempotent).
        let again = try SyncRunner(store: stores[0]).sync(sources: finals + snapshots.prefix(3))
        #expect(again.counts.landmarksApplied + again.counts.positionsApplied == 0, "seed \(seed)")
        #expect(try canonicalDump(stores[0]) == dumps[0])
    }
}
