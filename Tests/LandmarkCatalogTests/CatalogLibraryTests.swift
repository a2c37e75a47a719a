@_spi(Testing) import CatalogCLI
import CatalogTestSupport
import Foundation
import LandmarkCatalogSync
import Testing

@testable import LandmarkCatalog

/// The Swift library an app binds to (docs/swift-library.md): the Codable model, `Catalog`, `observe`, `CarouselModel`.
@Suite("Catalog library")
struct CatalogLibraryTests {
    static let seeds = Support.root.appending(path: "Seeds/landmarkData.json")

    /// A catalog on a fresh database holding the seeds.
    static func seededCatalog() async throws -> (Catalog, String) {
        let db = Support.temporaryDatabase()
        let catalog = try Catalog(path: db)
        try await catalog.importLandmarks(from: .file(seeds.path))
        return (catalog, db)
    }

    /// A landmark file of `count` records (ids from 1), every tenth featured.
    static func bigLandmarkFile(count: Int) throws -> String {
        var text = "["
        for id in 1...count {
            if id > 1 { text += "," }
            text +=
                #"{"id":\#(id),"name":"Landmark \#(id)","category":"Lakes","park":"Park \#(id)","state":"Alaska","city":"Town","#
                + #""description":"A landmark with a description long enough to matter.","imageName":"l\#(id)","#
                + #""isFeatured":\#(id % 10 == 0),"isFavorite":false,"coordinates":{"latitude":60.5,"longitude":-150.25}}"#
        }
        text += "]"
        let url = Support.temporaryDirectory().appending(path: "big.json")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    // MARK: - Codable

    @Test("the tutorial's decoder reads the seeds and featured --json into [Landmark], equal to featured()")
    func decodesSeedsAndFeaturedJSON() async throws {
        let (catalog, db) = try await Self.seededCatalog()
        let seeds = try JSONDecoder().decode([Landmark].self, from: Data(contentsOf: Self.seeds))
        #expect(seeds.count == 16)
        let featured = try await catalog.featured()
        #expect(featured.count == 4)
        #expect(seeds.filter(\.isFeatured) == featured)
        #expect(featured.map(\.id) == featured.map(\.id).sorted())

        let printed = runCLI(["featured", "--json"], db: db)
        #expect(printed.status == 0)
        let decoded = try JSONDecoder().decode([Landmark].self, from: Data(printed.stdout.utf8))
        #expect(decoded == featured)
        #expect(Set(decoded).count == 4)  // Hashable
        #expect(decoded.map(\.id) == featured.map(\.id))  // Identifiable by id
    }

    @Test("landmarks() reads the whole catalog in id order, equal to the seeds; pruned landmarks are left out")
    func landmarksReadsTheWholeCatalog() async throws {
        let (catalog, _) = try await Self.seededCatalog()
        let all = try await catalog.landmarks()
        let seeds = try JSONDecoder().decode([Landmark].self, from: Data(contentsOf: Self.seeds))
        #expect(all.map(\.id) == Array(1001...1016))
        #expect(all == seeds.sorted { $0.id < $1.id })
        #expect(all.filter(\.isFeatured).map(\.id) == [1001, 1003, 1006, 1010])
        let kilauea = try #require(all.first { $0.id == 1013 })
        #expect(kilauea.name == "Kīlauea")
        #expect(kilauea.park == "Hawaiʻi Volcanoes National Park")
        #expect(kilauea.isFavorite && !kilauea.isFeatured)
        #expect(kilauea.latitude == 19.4069 && kilauea.longitude == -155.2834)
        let pruneFile = Support.root.appending(path: "Tests/Fixtures/valid-one-change.json").path
        try await catalog.importLandmarks(from: .file(pruneFile), options: ImportOptions(prune: true))
        #expect(try await catalog.landmarks().map(\.id) == [1001, 1002, 1003, 1004, 1005])
    }

    @Test("kept unknown keys survive decode → encode → decode, and featured --json with them decodes equal to featured()")
    func unknownKeysRoundTrip() async throws {
        let json =
            #"[{"id":7,"name":"Rock","isFeatured":true,"coordinates":{"latitude":1.5,"longitude":-2},"zeta":[1,2.5,"x"],"url":"https://example.org/r","meta":{"b":null,"a":true}}]"#
        let decoded = try JSONDecoder().decode([Landmark].self, from: Data(json.utf8))
        #expect(decoded[0].extraJSON == #"{"meta":{"a":true,"b":null},"url":"https://example.org/r","zeta":[1,2.5,"x"]}"#)
        #expect(decoded[0].category == nil)
        let again = try JSONDecoder().decode([Landmark].self, from: JSONEncoder().encode(decoded))
        #expect(again[0].extraJSON == decoded[0].extraJSON)
        #expect(again[0].id == 7 && again[0].latitude == 1.5 && again[0].longitude == -2)
        #expect(again[0].category == "")  // the file's shape has no null strings (as featured --json)

        let db = Support.temporaryDatabase()
        let catalog = try Catalog(path: db)
        let file = Support.temporaryDirectory().appending(path: "unknown.json")
        try Data(
            #"[{"id":7,"name":"Rock","category":"C","city":"c","state":"s","park":"p","description":"d","imageName":"i","isFeatured":true,"isFavorite":false,"coordinates":{"latitude":1.5,"longitude":-2},"url":"u","meta":{"a":1}}]"#
                .utf8
        ).write(to: file)
        try await catalog.importLandmarks(from: .file(file.path))
        let printed = runCLI(["featured", "--json"], db: db)
        let fromCLI = try JSONDecoder().decode([Landmark].self, from: Data(printed.stdout.utf8))
        #expect(fromCLI == (try await catalog.featured()))
    }

    @Test("a landmark the import refuses does not decode: the error names the field")
    func decodingRefusesInvalid() throws {
        let json = #"{"id":1,"name":"X","coordinates":{"latitude":91,"longitude":0}}"#
        #expect {
            try JSONDecoder().decode(Landmark.self, from: Data(json.utf8))
        } throws: { error in
            "\(error)".contains("coordinates.latitude")
        }
        // Apple's quirks are read as the import reads them.
        let legacy = try JSONDecoder().decode(
            Landmark.self,
            from: Data(#"{"id":1,"name":"X","category":"Featured","isFavourite":true,"coordinates":{"latitude":1,"longitude":0}}"#.utf8))
        #expect(legacy.isFeatured && legacy.isFavorite)
    }

    @Test("a CarouselPosition decodes what position get --json prints and round-trips")
    func positionCodable() async throws {
        let (catalog, db) = try await Self.seededCatalog()
        let stored = try await catalog.setPosition(user: "u-1", to: .page(2))
        let printed = runCLI(["position", "get", "--user", "u-1", "--json"], db: db)
        let decoded = try JSONDecoder().decode(CarouselPosition.self, from: Data(printed.stdout.utf8))
        #expect(decoded == stored)
        #expect(decoded.id == "u-1")
        #expect(try JSONDecoder().decode(CarouselPosition.self, from: JSONEncoder().encode(stored)) == stored)
    }

    // MARK: - Catalog

    @Test("8 tasks read while 1 writes, concurrently")
    func concurrentReadsAndWrites() async throws {
        let (catalog, _) = try await Self.seededCatalog()
        let featured = try await catalog.featured()
        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                for i in 0..<60 { try await catalog.setPosition(user: "u-\(i % 5)", to: .page(i % featured.count)) }
                return 60
            }
            for _ in 0..<8 {
                group.addTask {
                    var reads = 0
                    for _ in 0..<40 {
                        #expect(try await catalog.featured() == featured)
                        for p in try await catalog.positions() { #expect((0..<featured.count).contains(p.currentPage ?? -1)) }
                        reads += 1
                    }
                    return reads
                }
            }
            var total = 0
            for try await n in group { total += n }
            #expect(total == 60 + 8 * 40)
        }
        #expect(try await catalog.positions().count == 5)
        #expect(try await catalog.position(user: "u-4")?.currentPage == 59 % featured.count)
    }

    @Test("a read during a long import returns before the import ends, with the state before it")
    func readNotBlockedByImport() async throws {
        let (catalog, _) = try await Self.seededCatalog()
        let before = try await catalog.featured()
        let file = try Self.bigLandmarkFile(count: 25_000)
        let importing = DispatchSemaphore(value: 0)
        let readDone = DispatchSemaphore(value: 0)
        let finished = Protected(false)
        let job = Task {
            let summary = try await catalog.importLandmarks(
                from: .file(file),
                progress: { _ in
                    importing.signal()
                    _ = readDone.wait(timeout: .now() + 20)  // the import holds its transaction open meanwhile
                })
            finished.withLock { $0 = true }
            return summary
        }
        await withCheckedContinuation { c in
            DispatchQueue.global().async {
                importing.wait()
                c.resume()
            }
        }
        let during = try await catalog.featured()
        #expect(!finished.withLock { $0 })
        #expect(during == before)
        readDone.signal()
        readDone.signal()
        readDone.signal()
        let summary = try await job.value
        #expect(summary.records == 25_000)
        #expect(try await catalog.featured() != before)
    }

    @Test("cancelling an import leaves the database unchanged")
    func cancelledImportRollsBack() async throws {
        let (catalog, db) = try await Self.seededCatalog()
        let before = try dumpLandmarks(db)
        let sequence = try await catalog.status().changeSequence
        let file = try Self.bigLandmarkFile(count: 30_000)
        let handle = Protected<Task<ImportSummary, any Error>?>(nil)
        let job = Task {
            try await catalog.importLandmarks(
                from: .file(file),
                progress: { _ in
                    // At the first progress report (10,000 records in), on the writer thread.
                    while handle.withLock({ $0 == nil }) { usleep(1_000) }
                    handle.withLock { $0?.cancel() }
                })
        }
        handle.withLock { $0 = job }
        await #expect(throws: CancellationError.self) { try await job.value }
        #expect(try dumpLandmarks(db) == before)
        #expect(try await catalog.status().changeSequence == sequence)
        // The writer still works afterwards.
        #expect(try await catalog.setPosition(user: "u", to: .page(1)).currentPage == 1)
    }

    @Test("a closed or missing database is an error, never a trap")
    func closedAndMissing() async throws {
        let (catalog, db) = try await Self.seededCatalog()
        catalog.close()
        await #expect(throws: CatalogError.self) { try await catalog.featured() }
        await #expect(throws: CatalogError.self) { try await catalog.setPosition(user: "u", to: .page(0)) }
        let reader = try Catalog(path: db, access: .read)
        try FileManager.default.removeItem(atPath: db)
        try? FileManager.default.removeItem(atPath: db + "-wal")
        try? FileManager.default.removeItem(atPath: db + "-shm")
        await #expect(throws: CatalogError.self) { try await reader.featured() }
        #expect(throws: CatalogError.self) { try Catalog(path: db + ".nope", access: .read) }
    }

    @Test("a database replaced under the catalog is read from its new file")
    func replacedFile() async throws {
        let (catalog, db) = try await Self.seededCatalog()
        #expect(try await catalog.featured().count == 4)
        let other = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1002])], db: other).status == 0)
        // Removed with its -wal and -shm (a stale -wal beside a new file would be read into it: SQLite's
        // own caveat), then a new database moved to the path.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
        #expect(rename(other, db) == 0)
        #expect(try await catalog.featured().map(\.id) == [1001, 1002])
        #expect(try await catalog.setPosition(user: "u", to: .page(1)).landmarkID == 1002)
    }

    // MARK: - observe

    /// Iterates `observation` in a task, collecting what it yields.
    final class Collector<Value: Sendable>: Sendable {
        let values = Protected<[Value]>([])
        let task: Task<Void, any Error>
        init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Value {
            let values = values
            task = Task {
                for try await value in sequence { values.withLock { $0.append(value) } }
            }
        }
        var count: Int { values.withLock { $0.count } }
        var last: Value? { values.withLock { $0.last } }
        /// Waits until at least `n` values arrived: for `seconds` of wall time *and* at least 2,000 turns of
        /// its own on Swift's cooperative threads.
        ///
        /// The turns matter on a loaded machine: with 2 cores, the other tests can hold both threads for a
        /// minute, and a wall-clock bound alone then ran out before the observing task had its first turn
        /// (CI failed so twice, at a first `wait(for: 1)`).
        func wait(for n: Int, seconds: Double = 60) async -> Bool {
            await waitTurns(seconds: seconds) { self.count >= n }
        }
    }

    @Test("observe yields at once, after a local write, and stops when its task is cancelled")
    func observeLocalWrite() async throws {
        let (catalog, _) = try await Self.seededCatalog()
        let seen = Collector(catalog.observe { try await $0.position(user: "u-1")?.currentPage })
        #expect(await seen.wait(for: 1))
        #expect(seen.last == .some(nil))
        try await catalog.setPosition(user: "u-1", to: .page(2))
        #expect(await seen.wait(for: 2))
        #expect(seen.last == 2)
        seen.task.cancel()
        _ = try await seen.task.value  // ends (no error) once cancelled
        try await catalog.setPosition(user: "u-1", to: .page(3))
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.count == 2)
    }

    @Test("observe yields after catalog position set in another process")
    func observeOtherProcess() async throws {
        let (catalog, db) = try await Self.seededCatalog()
        let seen = Collector(catalog.observe { try await $0.position(user: "u-1")?.landmarkID })
        #expect(await seen.wait(for: 1))
        let run = try await runProcessAsync(Support.catalogBinary, ["--db", db, "position", "set", "--user", "u-1", "--landmark", "1006"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(await seen.wait(for: 2))
        #expect(seen.last == 1006)
        seen.task.cancel()
    }

    @Test("observe yields after catalog sync in another process")
    func observeSync() async throws {
        let (catalog, db) = try await Self.seededCatalog()
        let seen = Collector(catalog.observe { try await $0.position(user: "u-9") })
        #expect(await seen.wait(for: 1))
        // Another device: its own database, a page set there, exported as a snapshot.
        let peer = Support.temporaryDatabase()
        #expect(runCLI(["import", Self.seeds.path], db: peer).status == 0)
        #expect(runCLI(["init", "--node", "peer-1"], db: peer).status == 0)
        #expect(runCLI(["position", "set", "--user", "u-9", "--page", "3"], db: peer).status == 0)
        let snapshot = URL(fileURLWithPath: peer).deletingLastPathComponent().appending(path: "peer.json").path
        #expect(runCLI(["export", "--output", snapshot], db: peer).status == 0)
        let run = try await runProcessAsync(Support.catalogBinary, ["--db", db, "sync", snapshot, "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(await seen.wait(for: 2))
        let position = try #require(seen.last ?? nil)
        #expect(position.currentPage == 3)
        #expect(position.stamp.node == "peer-1")
        seen.task.cancel()
    }

    @Test("observe does not yield after a commit that leaves its result equal")
    func observeSkipsEqual() async throws {
        let (catalog, _) = try await Self.seededCatalog()
        let seen = Collector(catalog.observe { try await $0.featured().map(\.id) })
        #expect(await seen.wait(for: 1))
        try await catalog.setPosition(user: "u-1", to: .page(1))  // commits, featured unchanged
        try await catalog.importLandmarks(from: .file(Self.seeds.path))  // a re-import: unchanged
        let store = try CatalogStore.open(path: catalog.path)  // another connection's commit
        try Positions(store).setPosition(user: "u-2", to: .page(0))
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.count == 1)
        try await catalog.importLandmarks(from: .file(try landmarkFile(featured: [1001, 1002])))
        #expect(await seen.wait(for: 2))
        #expect(seen.last == (try await catalog.featured().map(\.id)))
        #expect(seen.last?.prefix(2) == [1001, 1002])
        #expect(seen.count == 2)
        seen.task.cancel()
    }

    // MARK: - CarouselModel

    /// Waits until `condition` holds on the main actor: 60 s of wall time and 2,000 turns at least (see
    /// ``Collector/wait(for:seconds:)``).
    @MainActor
    static func eventually(_ condition: @MainActor () -> Bool) async -> Bool {
        var turns = 0
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() && (ContinuousClock.now < deadline || turns < 2000) {
            turns += 1
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    /// Regression (a new user's report): a page set right after `init`, before the first read arrived,
    /// was dropped: `currentPage` stayed 0 and `flush()` stored nothing.
    @Test("CarouselModel: a page set before the first read is shown and stored once the pages arrive")
    @MainActor
    func pageSetBeforeLoad() async throws {
        let (catalog, _) = try await Self.seededCatalog()
        let model = CarouselModel(catalog: catalog, user: "early")
        model.currentPage = 3
        await model.flush()
        #expect(model.isLoaded && model.currentPage == 3)
        let stored = try #require(try await catalog.position(user: "early"))
        #expect(stored.currentPage == 3 && stored.landmarkID == model.pages[3].id)
    }

    @Test("CarouselModel: 50 settings of currentPage within 1 s store the last page in at most 5 writes")
    @MainActor
    func modelCoalesces() async throws {
        let (catalog, _) = try await Self.seededCatalog()
        let model = CarouselModel(catalog: catalog, user: "u-1")
        #expect(await Self.eventually { model.isLoaded })
        #expect(model.pageCount == 4)
        let sequence = try await catalog.status().changeSequence
        let start = ContinuousClock.now
        var setAt: [ContinuousClock.Instant] = []
        for i in 0..<50 {
            model.currentPage = (i * 7) % 4
            setAt.append(ContinuousClock.now)
            // 50 swipes 19 ms apart, paced by absolute times (a late wake-up does not push the rest back).
            try await Task.sleep(until: start + .milliseconds(19 * (i + 1)))
        }
        let last = (49 * 7) % 4
        let elapsed = ContinuousClock.now - start
        #expect(model.currentPage == last)
        await model.flush()
        let writes = try await catalog.status().changeSequence - sequence
        // Within 1 s at most 5 writes (the window is 250 ms, an unsent change waits at most 1 s). On a
        // machine so loaded that the burst itself took longer, the bound is one write per started second
        // plus the trailing one.
        // A pause longer than the coalescing window between two swipes (a wake-up delayed on a loaded
        // machine) lets the trailing write go out, as it should: each such pause allows one write more.
        let pauses = zip(setAt, setAt.dropFirst()).filter { $1 - $0 > .milliseconds(250) }.count
        // One more: the first swipe after the quiet start is written at once (the leading edge).
        let bound = (elapsed <= .milliseconds(1200) ? 5 : Int(elapsed.components.seconds) + 2) + pauses + 1
        #expect(writes >= 1 && writes <= bound, "\(writes) writes in \(elapsed)")
        let stored = try #require(try await catalog.position(user: "u-1"))
        #expect(stored.currentPage == last)
        #expect(stored.landmarkID == model.pages[last].id)
        #expect(model.lastError == nil)
    }

    @Test("CarouselModel: a newer position from another connection moves currentPage")
    @MainActor
    func modelFollowsRemote() async throws {
        let (catalog, db) = try await Self.seededCatalog()
        let model = CarouselModel(catalog: catalog, user: "u-1")
        #expect(await Self.eventually { model.isLoaded })
        model.currentPage = 1
        await model.flush()
        // Off the main actor: a process blocks its thread until it exits, and the main actor is shared by
        // every @MainActor test running in parallel (one blocked it for seconds on a loaded machine).
        let run = try await runProcessAsync(Support.catalogBinary, ["--db", db, "position", "set", "--user", "u-1", "--page", "3"])
        #expect(run.status == 0)
        #expect(await Self.eventually { model.currentPage == 3 })
        // And our own next swipe is stored over it.
        model.currentPage = 0
        await model.flush()
        #expect(try await catalog.position(user: "u-1")?.currentPage == 0)
        try await Task.sleep(for: .milliseconds(150))
        #expect(model.currentPage == 0)
    }

    @Test("CarouselModel: a change of the featured set keeps the user on their landmark")
    @MainActor
    func modelKeepsLandmark() async throws {
        let db = Support.temporaryDatabase()
        let catalog = try Catalog(path: db)
        try await catalog.importLandmarks(from: .file(try landmarkFile(featured: [1001, 1004, 1007])))
        let model = CarouselModel(catalog: catalog, user: "u-1")
        #expect(await Self.eventually { model.pageCount == 3 })
        model.currentPage = 2
        await model.flush()
        try await catalog.importLandmarks(from: .file(try landmarkFile(featured: [1001, 1002, 1004, 1007])))
        #expect(await Self.eventually { model.pageCount == 4 })
        #expect(model.currentPage == 3)
        #expect(model.pages[model.currentPage].id == 1007)
        // Its landmark leaves: the page is clamped, as position get resolves it.
        try await catalog.importLandmarks(from: .file(try landmarkFile(featured: [1001, 1002])))
        #expect(await Self.eventually { model.pageCount == 2 })
        #expect(model.currentPage == 1)
        #expect(try await catalog.position(user: "u-1")?.currentPage == model.currentPage)
    }

    @Test("CarouselModel: a closed catalog is published in lastError, never trapped")
    @MainActor
    func modelClosed() async throws {
        let (catalog, _) = try await Self.seededCatalog()
        let model = CarouselModel(catalog: catalog, user: "u-1")
        #expect(await Self.eventually { model.isLoaded })
        catalog.close()
        model.currentPage = 2
        await model.flush()
        #expect(model.lastError is CatalogError)
        #expect(model.currentPage == 2)
    }
}

/// `catalog watch`, run as a process (it runs until a signal or until its reader goes away).
@Suite("catalog watch")
struct WatchCommandTests {
    /// A running `catalog watch` with its stdout and stderr on pipes.
    final class Watch {
        let process = Process()
        let out = Pipe(), err = Pipe()
        private var buffer: [UInt8] = []

        init(db: String, _ arguments: [String] = []) throws {
            process.executableURL = Support.catalogBinary
            process.arguments = ["--db", db, "watch"] + arguments
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }

        /// The next line of its stdout, or nil after `seconds` without one.
        func line(within seconds: Double = 15) -> String? {
            let fd = out.fileHandleForReading.fileDescriptor
            let deadline = Date().addingTimeInterval(seconds)
            while true {
                if let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    return line
                }
                let left = deadline.timeIntervalSinceNow
                guard left > 0 else { return nil }
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, Int32(left * 1000)) > 0 else { return nil }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = read(fd, &chunk, chunk.count)
                guard n > 0 else { return nil }
                buffer += chunk[..<n]
            }
        }

        /// Waits (up to `seconds`) for it to exit; its status, or nil if it is still running.
        func exitStatus(within seconds: Double = 5) -> Int32? {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            guard !process.isRunning else { return nil }
            return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        }

        var stderr: String { String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
    }

    @Test("watch prints the featured set now and when it changes, not for other commits; SIGINT exits 0")
    func featured() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004])], db: db).status == 0)
        let watch = try Watch(db: db)
        #expect(watch.line() == "featured: 1001, 1004")
        #expect(runCLI(["position", "set", "--user", "u-1", "--page", "1"], db: db).status == 0)  // featured unchanged
        // Issue 25: a featured landmark renamed changed the value watched but not the text line, which was
        // printed again. A --json watcher (whose line does change) says when the rename has been observed.
        let json = try Watch(db: db, ["--json"])
        #expect(json.line()?.contains("Landmark 1004") == true)
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004], renamed: [1004: "Renamed"])], db: db).status == 0)
        #expect(json.line()?.contains("Renamed") == true)
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007], renamed: [1004: "Renamed"])], db: db).status == 0)
        #expect(watch.line() == "featured: 1001, 1004, 1007")
        kill(watch.process.processIdentifier, SIGINT)
        #expect(watch.exitStatus() == 0)
        #expect(watch.stderr == "")
    }

    @Test("watch --user --json prints the user's position as position get --json does; SIGTERM exits 0")
    func userJSON() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1004, 1007])], db: db).status == 0)
        let watch = try Watch(db: db, ["--user", "u-1", "--json"])
        #expect(watch.line() == #"{"currentPage":null,"landmarkId":null,"pageCount":3,"user":"u-1"}"#)
        let set = try runProcess(Support.catalogBinary, ["--db", db, "position", "set", "--user", "u-1", "--landmark", "1004"])
        #expect(set.status == 0)
        let line = try #require(watch.line())
        #expect(line == runCLI(["position", "get", "--user", "u-1", "--json"], db: db).stdout.dropLast())
        // The featured set changes before its landmark: the resolved page moves with it.
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1002, 1004, 1007])], db: db).status == 0)
        #expect(watch.line()?.contains(#""currentPage":2,"landmarkId":1004"#) == true)
        kill(watch.process.processIdentifier, SIGTERM)
        #expect(watch.exitStatus() == 0)
        #expect(watch.stderr == "")
    }

    @Test("watch ends quietly with 0 when its standard output is closed")
    func stdoutClosed() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001])], db: db).status == 0)
        let watch = try Watch(db: db)
        #expect(watch.line() == "featured: 1001")
        try watch.out.fileHandleForReading.close()
        #expect(watch.exitStatus(within: 3) == 0)
        #expect(watch.stderr == "")
    }

    @Test("watch on a missing database fails with 66 at once")
    func missing() throws {
        let result = runCLI(["watch"], db: Support.temporaryDirectory().appending(path: "none.sqlite").path)
        #expect(result.status == 66)
        #expect(result.stderr.contains("no catalog database"))
    }
}

/// `Catalog`'s long work besides import: export and sync.
@Suite("Catalog export and sync")
struct CatalogExportSyncTests {
    @Test("export(to:) writes the bytes catalog export writes; exportSnapshot() returns them")
    func export() async throws {
        let (catalog, db) = try await CatalogLibraryTests.seededCatalog()
        try await catalog.setPosition(user: "ann", to: .page(1))
        let dir = Support.temporaryDirectory()
        let summary = try await catalog.export(to: dir.appending(path: "lib.json").path)
        #expect(summary.landmarks == 16 && summary.positions == 1)
        #expect(runCLI(["export", "--output", dir.appending(path: "cli.json").path], db: db).status == 0)
        let written = try Data(contentsOf: dir.appending(path: "lib.json"))
        #expect(written == (try Data(contentsOf: dir.appending(path: "cli.json"))))
        #expect(Data(try await catalog.exportSnapshot()) == written)
    }

    @Test("sync merges a peer's snapshot and wakes observers; a sync cancelled before it starts does nothing")
    func sync() async throws {
        let (catalog, db) = try await CatalogLibraryTests.seededCatalog()
        let peer = Support.temporaryDatabase()
        #expect(runCLI(["import", CatalogLibraryTests.seeds.path], db: peer).status == 0)
        #expect(runCLI(["position", "set", "--user", "bo", "--page", "2"], db: peer).status == 0)
        let snapshot = Support.temporaryDirectory().appending(path: "peer.json").path
        #expect(runCLI(["export", "--output", snapshot], db: peer).status == 0)

        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await catalog.sync([snapshot])
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(try await catalog.position(user: "bo") == nil)

        let seen = CatalogLibraryTests.Collector(catalog.observe { try await $0.position(user: "bo")?.currentPage })
        #expect(await seen.wait(for: 1))
        let report = try await catalog.sync([snapshot])
        #expect(report.exitStatus == 0)
        #expect(await seen.wait(for: 2))
        #expect(seen.last == 2)
        seen.task.cancel()
        _ = db
    }
}

/// Issue 28: a one-shot `Catalog.sync` ran on the writer for its whole fetch, so a swipe's `setPosition`
/// waited behind the network, up to the sync's deadline.
@Suite("Catalog.sync beside the writer")
struct CatalogSyncBesideWriterTests {
    @Test("a setPosition during a sync's stalled fetch returns while the fetch is held; the sync then merges")
    func setPositionDuringStalledFetch() async throws {
        NetworkSources.register()
        let (catalog, _) = try await CatalogLibraryTests.seededCatalog()
        let peer = Support.temporaryDatabase()
        #expect(runCLI(["import", CatalogLibraryTests.seeds.path], db: peer).status == 0)
        #expect(runCLI(["position", "set", "--user", "bo", "--page", "2"], db: peer).status == 0)
        let dir = Support.temporaryDirectory()
        #expect(runCLI(["export", "--output", dir.appending(path: "peer.json").path], db: peer).status == 0)
        let server = try TestHTTPServer(directory: dir)
        // The server holds its answer until `release` exists: the sync is inside its fetch.
        let source = server.url("/hold/peer.json")
        let syncing = Task { try await catalog.sync([source]) }
        #expect(await waitTurns { ((try? server.log()) ?? []).contains { $0["path"] == "/hold/peer.json" } })
        let set = try await bounded(20, "setPosition while the sync's fetch is held") {
            try await catalog.setPosition(user: "ann", to: .page(1))
        }
        #expect(set.currentPage == 1)
        #expect(try await catalog.position(user: "bo") == nil)
        try Data().write(to: dir.appending(path: "release"))
        let report = try await bounded(60, "the sync") { try await syncing.value }
        #expect(report.exitStatus == 0)
        #expect(try await catalog.position(user: "bo")?.currentPage == 2)
        #expect(try await catalog.position(user: "ann")?.currentPage == 1)
    }
}

/// `observe` across a schema change made by another connection (what a migration by a newer binary does).
@Suite("observe across a migration")
struct ObserveMigrationTests {
    @Test("a schema change by another connection wakes observers, yields nothing equal, and later changes still arrive")
    func schemaChange() async throws {
        let (catalog, db) = try await CatalogLibraryTests.seededCatalog()
        let seen = CatalogLibraryTests.Collector(catalog.observe { try await $0.position(user: "u")?.currentPage })
        #expect(await seen.wait(for: 1))
        let other = try Connection(path: db)
        try other.execute(sql: "CREATE TABLE app_bench_extra (x INTEGER)")
        try other.execute(sql: "CREATE INDEX positions_bench_extra ON positions (page)")
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.count == 1)
        try Positions(CatalogStore.open(path: db)).setPosition(user: "u", to: .page(3))
        #expect(await seen.wait(for: 2))
        #expect(seen.last == 3)
        seen.task.cancel()
    }
}
