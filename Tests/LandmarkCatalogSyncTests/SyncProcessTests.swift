import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Sync: HTTP sources", .serialized)
struct HTTPSyncTests {
    static func served() throws -> (URL, TestHTTPServer) {
        let dir = Support.temporaryDirectory()
        let peer = dir.appending(path: "peer.json")
        try snapshot(positions: [positionRow("u", page: 0, at: "2026-11-29T01:00:00Z")]).write(to: peer, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-2 * 86_400)], ofItemAtPath: peer.path)
        return (dir, try TestHTTPServer(directory: dir))
    }

    @Test("first run fetches and merges; the second is a 304 that changes nothing")
    func conditionalGet() throws {
        let (_, server) = try Self.served()
        let db = Support.temporaryDatabase()
        let first = runCLI(["sync", "--json", server.url("/files/peer.json")], db: db)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains(#""outcome":"merged""#))
        #expect(first.stdout.contains(#""positionsApplied":1"#))
        let before = try dumpPositions(db)
        let second = runCLI(["sync", "--json", server.url("/files/peer.json")], db: db)
        #expect(second.status == 0)
        #expect(second.stdout.contains(#""outcome":"not-modified""#), "\(second.stdout)")
        #expect(second.stdout.contains(#""positionsSeen":0"#))
        #expect(try dumpPositions(db) == before)
        let log = try server.log().filter { $0["path"] == "/files/peer.json" }
        #expect(log.count == 2)
        #expect(log[0]["ifNoneMatch"]! == nil)
        #expect(log[1]["ifNoneMatch"]! != nil)
        // peer.json was last modified two days before it was served: a strong Last-Modified, sent back.
        // (One within a second of the response's Date is weak and dropped: HTTPClientTests.)
        #expect(log[1]["ifModifiedSince"]! != nil)
    }

    @Test("a 500 then a 200 is retried and succeeds; a 429 honours Retry-After")
    func retries() throws {
        let (_, server) = try Self.served()
        let db = Support.temporaryDatabase()
        let env = ["CATALOG_TEST_BACKOFF_SECONDS": "0.05"]
        let flaky = runCLI(["sync", server.url("/flaky/2/peer.json")], db: db, environment: env)
        #expect(flaky.status == 0, "\(flaky.stderr)")
        #expect(flaky.stderr.contains("HTTP 500"))
        #expect(try server.log().filter { $0["path"] == "/flaky/2/peer.json" }.count == 3)
        let busy = runCLI(["sync", server.url("/busy/peer.json")], db: Support.temporaryDatabase(), environment: env)
        #expect(busy.status == 0, "\(busy.stderr)")
        // Retries are bounded: two retries cannot get past three 500s.
        let tooFlaky = runCLI(["sync", "--retries", "2", server.url("/flaky/3/peer.json")], db: Support.temporaryDatabase(), environment: env)
        #expect(tooFlaky.status == 69)
        #expect(tooFlaky.stderr.contains("HTTP 500 after 3 attempts"))
    }

    @Test("a server that never answers times out with 69; a 404 is 69")
    func unavailable() throws {
        let (_, server) = try Self.served()
        let db = Support.temporaryDatabase()
        let started = Date()
        let hang = runCLI(["sync", "--timeout", "1", server.url("/hang")], db: db)
        #expect(hang.status == 69, "\(hang.stderr)")
        #expect(hang.stderr.contains("source unavailable"))
        #expect(Date().timeIntervalSince(started) < 20)
        let missing = runCLI(["sync", server.url("/missing")], db: db)
        #expect(missing.status == 69)
        #expect(missing.stderr.contains("HTTP 404"))
        let refused = runCLI(["sync", "--timeout", "2", "http://127.0.0.1:1/none.json"], db: db)
        #expect(refused.status == 69)
    }

    @Test("an unavailable source among good ones: the good one merges, the run exits 69")
    func oneBadSource() throws {
        let (dir, server) = try Self.served()
        let db = Support.temporaryDatabase()
        let result = runCLI(["sync", server.url("/missing"), dir.appending(path: "peer.json").path], db: db)
        #expect(result.status == 69)
        #expect(try dumpPositions(db).count == 1)
        #expect(result.stdout.contains("2 sources (1 merged, 0 not modified, 1 failed)"), "\(result.stdout)")
    }

    @Test("a body over --max-bytes is refused")
    func sizeLimit() throws {
        let (_, server) = try Self.served()
        let result = runCLI(["sync", "--max-bytes", "10", server.url("/files/peer.json")], db: Support.temporaryDatabase())
        #expect(result.status == 65)
        #expect(result.stderr.contains("over the limit of 10 bytes"))
    }
}

@Suite("Sync: one run at a time", .serialized)
struct SyncLockTests {
    @Test("a second sync while the lock is held exits 75 at once, naming the holder")
    func lockHeld() throws {
        let db = Support.temporaryDatabase()
        let source = try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: "2026-11-29T01:00:00Z")]))
        _ = try CatalogStore.open(path: db)
        let holder = try SyncLock.acquire(databasePath: db, now: testNow)
        let started = Date()
        let second = runCLI(["sync", source], db: db)
        #expect(second.status == 75)
        #expect(second.stderr.contains("another sync is running on this database (pid \(getpid())"), "\(second.stderr)")
        #expect(Date().timeIntervalSince(started) < 2)
        #expect(try dumpPositions(db).isEmpty)
        withExtendedLifetime(holder) {}
    }

    @Test("two catalog sync processes at once: one merges, the other exits 75")
    func twoProcesses() throws {
        let db = Support.temporaryDatabase()
        _ = try CatalogStore.open(path: db)
        let source = try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: "2026-11-29T01:00:00Z")]))
        let first = Process()
        first.executableURL = Support.harnessBinary
        first.arguments = ["--db", db, "sync", "--quiet", source]
        first.environment = ["CATALOG_TEST_PAUSE_BEFORE_COMMIT_MS": "3000", "PATH": "/usr/bin:/bin"]
        try first.run()
        try waitForLock(db)
        let second = try runProcess(Support.catalogBinary, ["--db", db, "sync", source])
        #expect(second.status == 75, "\(second.stderr)")
        #expect(second.stderr.contains("another sync is running"))
        first.waitUntilExit()
        #expect(first.terminationStatus == 0)
        #expect(try dumpPositions(db).count == 1)
    }

    @Test("a sync killed with SIGKILL mid-merge leaves the database as before; the next run succeeds")
    func killed() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let before = (try dumpLandmarks(db), try dumpPositions(db))
        let source = try writeTemporary(
            snapshot(
                // A minute ahead: newer than the import's stamp, inside the default drift allowance.
                landmarks: [landmarkRow(1001, name: "Renamed", at: Timestamp.format(milliseconds: SystemClock().nowMilliseconds() + 60_000))],
                positions: (0..<500).map { positionRow("user-\($0)", page: 0, at: "2026-11-29T01:00:00Z") }))
        let victim = Process()
        victim.executableURL = Support.harnessBinary
        victim.arguments = ["--db", db, "sync", source]
        victim.environment = ["CATALOG_TEST_PAUSE_BEFORE_COMMIT_MS": "10000", "PATH": "/usr/bin:/bin"]
        try victim.run()
        try waitForLock(db)
        Thread.sleep(forTimeInterval: 1.0)  // inside the transaction, rows written, not committed
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        #expect(victim.terminationReason == .uncaughtSignal)
        #expect(try dumpLandmarks(db) == before.0)
        #expect(try dumpPositions(db) == before.1)
        let next = runCLI(["sync", source], db: db)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try dumpPositions(db).count == 500)
        #expect(try LandmarkReader(CatalogStore.open(path: db)).landmark(id: 1001)?.name == "Renamed")
    }

    /// Waits until a sync process has written its name into the lock file.
    func waitForLock(_ db: String) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: db + ".sync-lock", encoding: .utf8), text.hasPrefix("pid ") { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw CatalogError(.software, "the sync process never took the lock")
    }
}
