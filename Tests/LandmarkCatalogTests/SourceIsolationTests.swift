import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

#if canImport(Glibc)
    import Glibc
#endif

/// A source fails alone, whatever it throws, and a log keeps its place (issue 17; docs/log-format.md,
/// docs/exit-statuses.md): each test with the input that broke it.
@Suite("Sync: a source fails alone; a log keeps its place", .serialized)
struct SourceIsolationTests {
    /// A plain Swift error, as a bug in a source would throw.
    struct Boom: Error, CustomStringConvertible {
        var description: String { "boom" }
    }

    /// What a planted source throws, and when.
    enum Failure: CaseIterable, CustomStringConvertible {
        case badData, noInput, unavailable, ioError, incompatible, busyLike, sqlite, postgres, logFileGone, plain
        var description: String { "\(self.error)" }

        var error: any Error {
            switch self {
            case .badData: return CatalogError(.dataInvalid, "bad row")
            case .noInput: return CatalogError(.noInput, "no such file")
            case .unavailable: return CatalogError(.unavailable, "server down")
            case .ioError: return CatalogError(.ioError, "disk full")
            case .incompatible: return CatalogError(.incompatible, "version 9")
            case .busyLike: return CatalogError(.tempFail, "too many open files")
            case .sqlite: return SQLiteError(code: SQLiteError.Code(rawValue: 19), message: "constraint failed", sql: nil)
            case .postgres: return PGError(kind: .server, message: "relation does not exist")
            case .logFileGone: return LogFileGone(name: "d-0007.json")
            case .plain: return Boom()
            }
        }

        /// The documented status the source must end with.
        var status: Int32 {
            switch self {
            case .badData: return 65
            case .noInput: return 66
            case .unavailable, .logFileGone: return 69
            case .ioError: return 74
            case .incompatible: return 76
            case .busyLike: return 75
            case .sqlite, .plain: return 70
            case .postgres: return CatalogError(PGError(kind: .server, message: "x")).exitStatus
            }
        }
    }

    /// A source that throws `failure`, either from `fetch` or from its feed's `merge` after merging a
    /// real row (so a leak would keep half of it).
    final class PlantedSource: SyncSource {
        let locator: SourceLocator
        let failure: Failure
        let duringMerge: Bool
        var nextCursor: SourceCursor? { nil }
        var bytesFetched: Int64 { 0 }

        init(path: String, failure: Failure, duringMerge: Bool) {
            locator = .file(path: path)
            self.failure = failure
            self.duringMerge = duringMerge
        }

        func fetch(since cursor: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]? {
            if !duringMerge { throw failure.error }
            return [Feed(failure: failure)]
        }

        struct Feed: ChangeFeed {
            let failure: Failure
            func merge(into merger: inout RowMerger) throws {
                let batch = RowBatch()
                batch.positions.append(
                    PositionRecord(
                        user: "planted", page: 0, landmark: nil,
                        stamp: HLCStamp(wallMilliseconds: 1_700_000_000_000, counter: 0, node: "n-planted"), deleted: false))
                try merger.apply(batch)
                throw failure.error
            }
        }
    }

    /// Property: any failing source among good ones, failing when fetched or while merged — the good
    /// ones merge, `--publish` runs, the run ends in the ledger with the first failure's status, the
    /// failing source changed nothing. (Planted once: with `catch let error as CatalogError` in the
    /// engine's source loop, the plain, SQLite, PostgreSQL and log-gone cases escaped the run as 70
    /// with the ledger left `running`; this test failed.)
    @Test("a failing source of any error kind beside good ones: the good merge, --publish runs, the ledger ends the run", arguments: Failure.allCases)
    func failingSourceBesideGood(failure: Failure) throws {
        var random = SplitMix64(seed: UInt64(Failure.allCases.firstIndex(of: failure)!) &+ 17)
        for round in 0..<4 {
            let dir = Support.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let store = try CatalogStore.open(path: dir.appending(path: "c.sqlite").path)
            let goodCount = 1 + Int(random.next() % 3)
            var goods: [String] = []
            for g in 0..<goodCount {
                goods.append(
                    try writeTemporary(
                        snapshot(positions: [positionRow("good-\(g)", page: g, at: "2026-11-29T01:00:00Z")]),
                        name: "good-\(round)-\(g).json"))
            }
            let duringMerge = random.next() % 2 == 0
            let planted = "/planted/\(failure)-\(round)"
            var options = SyncOptions()
            options.sourceFactory = { locator in
                if case .file(let path) = locator, path == planted { return PlantedSource(path: path, failure: failure, duringMerge: duringMerge) }
                return nil
            }
            var sources = goods
            sources.insert(planted, at: Int(random.next() % UInt64(goods.count + 1)))
            let published = dir.appending(path: "published.json").path
            options.publishPath = published
            let report = try SyncRunner(store: store).sync(sources: sources, options: options)
            // The planted source failed with its documented status, alone.
            let failed = try #require(report.sources.first { $0.source == planted })
            #expect(failed.outcome == .failed && failed.error?.exitStatus == failure.status, "\(failure): \(String(describing: failed.error))")
            #expect(failed.error?.message.isEmpty == false)
            #expect(report.exitStatus == failure.status)
            for good in goods {
                #expect(report.sources.first { $0.source == good }?.outcome == .merged, "\(good)")
            }
            let users = try dumpPositions(store.path).compactMap { row -> String? in if case .text(let u) = row[0] { return u } else { return nil } }
            #expect(users == (0..<goodCount).map { "good-\($0)" }, "the planted row was rolled back: \(users)")
            #expect(FileManager.default.fileExists(atPath: published), "--publish ran")
            let run = try #require(try CatalogMonitor(store).syncRuns(limit: 1).first)
            #expect(run.outcome == "failed" && run.exitStatus == Int(failure.status), "\(run)")
        }
    }

    /// Regression: a local log's delta removed while a large base merged (a publisher with a short
    /// `--grace`) ended the run with `internal error: LogFileGone(…)`, 70: the other source was not
    /// merged, `--publish` did not run, the ledger kept the run `running`.
    @Test("a log file removed while the base merges: one fresh look, then 69; the good source merged, --publish written, the run ended")
    func logFileRemovedMidMerge() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try LogFixtures.store(dir, "a")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        var positions: [String] = []
        for i in 0..<3_000 { positions.append(positionRow("bulk-\(i)", page: 0, at: "2026-11-29T01:00:00Z")) }
        _ = try SyncRunner(store: a).sync(sources: [try writeTemporary(snapshot(positions: positions))])
        let log = dir.appending(path: "log")
        _ = try LogPublisher(a).publishLog(to: log.path)
        try Positions(a).setPosition(user: "late", to: .page(0))
        _ = try LogPublisher(a).publishLog(to: log.path)
        let delta = try #require(try LogFixtures.manifest(log).deltas.last)
        let good = try writeTemporary(snapshot(positions: [positionRow("good", page: 1, at: "2026-11-29T01:00:00Z")]), name: "good.json")
        let b = try LogFixtures.store(dir, "b")
        var options = SyncOptions()
        let published = dir.appending(path: "b-log").path
        options.publishPath = published
        var removed = 0
        let report = try SyncRunner(store: b).sync(
            sources: [log.path, good], options: options,
            progress: { progress in
                // While the base merges, the delta goes (each fresh look finds it named and gone again).
                if progress.phase == .merging, progress.subject?.hasSuffix("manifest.json") == true,
                    FileManager.default.fileExists(atPath: log.appending(path: delta.name).path)
                {
                    try? FileManager.default.removeItem(at: log.appending(path: delta.name))
                    removed += 1
                }
            })
        #expect(removed == 1)
        let failed = report.sources[0]
        #expect(failed.error?.exitStatus == 69 && failed.error?.message.contains(delta.name) == true, "\(String(describing: failed.error))")
        #expect(failed.error?.message.contains("fresh look") == true)
        #expect(report.sources[1].outcome == .merged)
        #expect(report.exitStatus == 69)
        #expect(try dumpPositions(b.path).count == 1, "the log's rows were rolled back, the good source's row kept")
        #expect(try dumpLandmarks(b.path).isEmpty)
        #expect(FileManager.default.fileExists(atPath: published + "/manifest.json"), "--publish ran")
        let run = try #require(try CatalogMonitor(b).syncRuns(limit: 1).first)
        #expect(run.outcome == "failed" && run.exitStatus == 69)
    }

    /// A log directory, a consumer that read it to its end, and the manifest as it was one publish
    /// before (an old copy).
    static func staleLog(_ dir: URL) throws -> (log: URL, consumer: CatalogStore, old: Data, newest: Data) {
        let a = try LogFixtures.store(dir, "a")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        let log = dir.appending(path: "log")
        _ = try LogPublisher(a).publishLog(to: log.path)
        try Positions(a).setPosition(user: "one", to: .page(0))
        _ = try LogPublisher(a).publishLog(to: log.path)
        let old = try Data(contentsOf: log.appending(path: "manifest.json"))
        try Positions(a).setPosition(user: "two", to: .page(1))
        _ = try LogPublisher(a).publishLog(to: log.path)
        let newest = try Data(contentsOf: log.appending(path: "manifest.json"))
        let b = try LogFixtures.store(dir, "b")
        return (log, b, old, newest)
    }

    /// The source's stored cursor as text, without its count of tries found behind it (`behind`, kept for
    /// `status --check`): where it stands.
    func cursor(_ store: CatalogStore, _ source: String) throws -> String? {
        try dumpRows(store.path, sql: "SELECT cursor FROM sync_sources WHERE source = '\(source)'").first.flatMap { row in
            guard case .text(let t) = row[0], var cursor = SourceCursor(text: t) else { return nil }
            cursor["behind"] = nil
            return cursor.text
        }
    }

    /// Regression: a manifest behind the cursor (same generation, lower `through`) made the consumer
    /// fetch and merge the base and every delta again and move its cursor back; naming a delta
    /// deleted since, it failed with 69.
    @Test(
        "a manifest behind the cursor in a directory: nothing fetched beyond it, the cursor kept, not modified with a note; a deleted delta it names is no error"
    )
    func staleManifestInDirectory() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (log, b, old, _) = try Self.staleLog(dir)
        let source = log.appending(path: "manifest.json").path
        #expect(try SyncRunner(store: b).sync(sources: [log.path]).exitStatus == 0)
        let before = try cursor(b, source)
        let digest = try StateDigest(of: b)
        try old.write(to: log.appending(path: "manifest.json"))
        // The delta the old manifest names last is deleted (a cleanup after the newer publish).
        let oldManifest = try LogManifest.parse(Array(old), source: "old")
        try FileManager.default.removeItem(at: log.appending(path: try #require(oldManifest.deltas.last).name))
        var warnings: [String] = []
        let report = try SyncRunner(store: b).sync(sources: [log.path], diagnostics: { warnings.append($0.message) })
        #expect(report.exitStatus == 0)
        #expect(report.sources[0].outcome == .notModified)
        #expect(report.sources[0].note?.contains("behind") == true, "\(String(describing: report.sources[0].note))")
        #expect(report.sources[0].bytes == Int64(old.count), "only the manifest was read")
        #expect(warnings.count == 1 && warnings[0].contains("behind"), "\(warnings)")
        #expect(try cursor(b, source) == before)
        #expect(try StateDigest(of: b) == digest)
    }

    @Test("a manifest behind the cursor over HTTP: no bytes beyond the manifest, the cursor kept; the fresh one then fetches only what is new")
    func staleManifestOverHTTP() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (log, b, old, newest) = try Self.staleLog(dir)
        let server = try TestHTTPServer(directory: log)
        let url = server.url("/files/manifest.json")
        #expect(try SyncRunner(store: b).sync(sources: [url]).exitStatus == 0)
        let before = try cursor(b, url)
        try old.write(to: log.appending(path: "manifest.json"))
        let stale = try SyncRunner(store: b).sync(sources: [url])
        #expect(stale.exitStatus == 0 && stale.sources[0].outcome == .notModified)
        #expect(stale.sources[0].bytes == Int64(old.count), "only the manifest was fetched: \(stale.sources[0].bytes) bytes")
        #expect(try cursor(b, url) == before)
        // The fresh manifest again: nothing new for this consumer, nothing but the manifest fetched.
        try newest.write(to: log.appending(path: "manifest.json"))
        let fresh = try SyncRunner(store: b).sync(sources: [url])
        #expect(fresh.exitStatus == 0 && fresh.sources[0].bytes <= Int64(newest.count), "\(fresh.sources[0].bytes)")
        #expect(fresh.counts.seen == 0)
    }

    /// Regression: with another process holding the write lock, `sync` took 30 s to exit 75 (six busy
    /// timeouts in a row), holding the sync lock all along.
    @Test("a database another process holds a write lock on: 75 within about one busy timeout, recorded, the lock released")
    func heldWriteLock() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appending(path: "c.sqlite").path
        let good = try writeTemporary(snapshot(positions: [positionRow("ann", page: 1, at: "2026-11-29T01:00:00Z")]), name: "a.json")
        let other = try writeTemporary(snapshot(positions: [positionRow("bob", page: 1, at: "2026-11-29T01:00:00Z")]), name: "b.json")
        #expect(runCLI(["sync", good], db: db).status == 0)
        let holder = try Connection(path: db)
        try holder.execute(sql: "BEGIN IMMEDIATE")
        let started = Date()
        let busy = try runProcess(Support.catalogBinary, ["--db", db, "sync", good, other, "--publish", dir.appending(path: "out.json").path])
        let elapsed = Date().timeIntervalSince(started)
        try holder.execute(sql: "ROLLBACK")
        #expect(busy.status == 75, "\(busy.stderr)")
        #expect(elapsed < 10, "took \(elapsed) s")
        #expect(busy.stderr.contains("database is busy"), "\(busy.stderr)")
        // The sync lock was released, and the busy run is in the ledger once the next run has run.
        #expect(runCLI(["sync", other], db: db).status == 0)
        let runs = try CatalogMonitor(CatalogStore.open(path: db)).syncRuns(limit: 5)
        #expect(runs.contains { $0.exitStatus == 75 }, "\(runs.map(\.outcome))")
        #expect(!runs.contains { $0.outcome == "running" || $0.outcome == "interrupted" }, "\(runs.map(\.outcome))")
    }

    @Test("a log reached as DIR/, DIR/manifest.json and by its URL with or without manifest.json is one source with one cursor")
    func oneKeyPerLog() throws {
        let url = try SourceLocator.parse("http://example.test/catalog/")
        let manifest = try SourceLocator.parse("http://example.test/catalog/manifest.json")
        #expect(url == manifest && url.description == manifest.description)
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = dir.appending(path: "log")
        try FileManager.default.createDirectory(at: log, withIntermediateDirectories: true)
        #expect(try SourceLocator.parse(log.path + "/").description == SourceLocator.parse(log.appending(path: "manifest.json").path).description)
    }
}

/// The edge's quarantine keeps the tie rule's winner, as the hub's does (docs/merge-rules.md §3, §6).
@Suite("Quarantine: of one key and stamp, the tie rule's winner is kept")
struct QuarantineTieTests {
    /// Regression (issue 18): the quarantine kept the first row received for a key and stamp
    /// (`ON CONFLICT … DO NOTHING`); a log or a hub delivers each row once, so a node that got the tie's
    /// loser first kept it after release, while its peers held the winner.
    @Test("two deliveries of one key and future stamp, in either order, leave the winner after release", arguments: [false, true])
    func winnerKept(loserFirst: Bool) throws {
        let future = "2026-11-30T00:10:00Z"  // 10 min after testNow: beyond the 300 s allowance
        let beta = try writeTemporary(
            snapshot(
                landmarks: [landmarkRow(7, name: "Beta", at: future)],
                positions: [
                    positionRow("t1", page: 1, landmark: 9, at: future),
                    positionRow("t2", page: 0, at: future, deleted: true),
                ]), name: "beta.json")
        let alpha = try writeTemporary(
            snapshot(
                landmarks: [landmarkRow(7, name: "Alpha", at: future)],
                positions: [
                    positionRow("t1", page: 1, landmark: 7, at: future),
                    positionRow("t2", page: 3, at: future),
                ]), name: "alpha.json")
        let clock = ManualClock(testNow)
        let dir = Support.temporaryDirectory()
        let store = try CatalogStore.open(path: dir.appending(path: "q.sqlite").path, wallClock: clock)
        for file in loserFirst ? [alpha, beta] : [beta, alpha] {
            let report = try SyncRunner(store: store).sync(sources: [file])
            #expect(report.exitStatus == 0 && report.counts.quarantined == 3)
        }
        #expect(try Quarantine(store).quarantinedRows().count == 3)
        clock.set(testNow + 11 * 60_000)
        _ = try Quarantine(store).releaseQuarantine()
        // The rule: the greater content (landmark 9 over 7; "Beta" over "Alpha"), a tombstone over a live row.
        let positions = try dumpRows(store.path, sql: "SELECT user_id, page, landmark_id, deleted FROM positions ORDER BY user_id")
        #expect(positions == [[.text("t1"), .integer(1), .integer(9), .integer(0)], [.text("t2"), .integer(0), .null, .integer(1)]])
        let name = try dumpRows(store.path, sql: "SELECT name FROM landmarks WHERE id = 7")
        #expect(name == [[.text("Beta")]])
    }

    @Test("a position's tie bytes order as its content does: page, then landmark, none lowest")
    func positionTieBytes() {
        var random = SplitMix64(seed: 42)
        let values: [Int64] = [Int64.min, -5, -1, 0, 1, 2, 255, 256, Int64.max]
        for _ in 0..<500 {
            let a = (values[Int(random.next() % 9)], random.next() % 3 == 0 ? nil : values[Int(random.next() % 9)])
            let b = (values[Int(random.next() % 9)], random.next() % 3 == 0 ? nil : values[Int(random.next() % 9)])
            let record = PositionRecord(
                user: "u", page: a.0, landmark: a.1, stamp: HLCStamp(wallMilliseconds: 0, counter: 0, node: "n"), deleted: false)
            let byBytes = LastWriterWins.order(
                bytes: RowMerger.positionTieContent(page: a.0, landmark: a.1),
                RowMerger.positionTieContent(page: b.0, landmark: b.1))
            #expect(byBytes == record.compareContent(page: b.0, landmark: b.1), "\(a) vs \(b)")
        }
    }
}

/// A command that fails leaves no database it created behind, unless it wrote data into it.
@Suite("A failed command leaves no empty database behind")
struct CreatedDatabaseTests {
    /// Regression (a new user's report): `import bad.json` (65) and a sync of an unreachable URL (69)
    /// left an empty database, which `featured` then read as "No featured landmarks" with exit 0.
    @Test("a refused import, a dry run and an unreachable source create nothing; a failed run that merged something keeps its database")
    func nothingLeftBehind() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = dir.appending(path: "bad.json")
        try Data(#"[{"id": 1, "name": ""}]"#.utf8).write(to: bad)
        let nested = dir.appending(path: "new/deeper/catalog.sqlite").path
        #expect(runCLI(["import", bad.path], db: nested).status == 65)
        #expect(runCLI(["import", "--dry-run", bad.path], db: nested).status == 65)
        #expect(!FileManager.default.fileExists(atPath: dir.appending(path: "new").path), "no database, no directory")
        let unreachable = dir.appending(path: "u.sqlite").path
        #expect(runCLI(["sync", "http://127.0.0.1:1/log/"], db: unreachable).status == 69)
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("u.sqlite") }
        #expect(left.isEmpty, "\(left)")
        #expect(runCLI(["featured"], db: unreachable).status == 66)
        // A run that merged one source and failed another keeps what it merged.
        let good = try writeTemporary(snapshot(positions: [positionRow("ann", page: 1, at: "2026-11-29T01:00:00Z")]), name: "g.json")
        let mixed = dir.appending(path: "m.sqlite").path
        #expect(runCLI(["sync", good, "http://127.0.0.1:1/log/"], db: mixed).status == 69)
        #expect(try dumpPositions(mixed).count == 1)
    }
}

/// The publisher repairs a log whose files are gone (docs/log-format.md §3).
@Suite("Snapshot logs: a publisher whose files are gone starts a new generation")
struct MissingLogFileTests {
    /// Regression (a new user's report): a delta removed by hand made every reader fail with 69 ("the
    /// next run tries again", which never succeeded), while `publish` said "nothing changed" and kept
    /// appending deltas to the broken manifest.
    @Test("a delta removed by hand: readers fail with 69 and a hint; the next publish starts a new generation; readers converge")
    func publishRepairs() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appending(path: "a.sqlite").path
        let b = dir.appending(path: "b.sqlite").path
        let log = dir.appending(path: "log").path
        #expect(runCLI(["import", Support.fixture("valid.json")], db: a).status == 0)
        #expect(runCLI(["publish", log], db: a).status == 0)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "1"], db: a).status == 0)
        #expect(runCLI(["publish", log], db: a).status == 0)
        let delta = try #require(try LogFixtures.manifest(URL(fileURLWithPath: log)).deltas.last)
        try FileManager.default.removeItem(atPath: log + "/" + delta.name)
        let broken = runCLI(["sync", log], db: b)
        #expect(broken.status == 69 && broken.stderr.contains("catalog publish"), "\(broken.stderr)")
        let repaired = runCLI(["publish", "--json", log], db: a)
        #expect(repaired.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(repaired.stdout.utf8)) as? [String: Any]
        #expect(object?["newGeneration"] as? Bool == true && object?["missing"] as? [String] == [delta.name], "\(repaired.stdout)")
        #expect(runCLI(["sync", log], db: b).status == 0)
        #expect(try StateDigest(of: CatalogStore.open(path: b)) == StateDigest(of: CatalogStore.open(path: a)))
    }
}
