import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// What a first user test of snapshot logs found, each with the input that broke it.
@Suite("Snapshot logs: limits and resources", .serialized)
struct LogRobustnessTests {
    /// A log of `deltas` deltas (one change each) in `dir/log`, published from `dir/a.sqlite`.
    static func manyDeltas(_ deltas: Int, in dir: URL) throws -> (store: CatalogStore, log: URL) {
        let a = try LogFixtures.store(dir, "a")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        var options = PublishOptions()
        options.maxDeltas = 10_000
        let log = dir.appending(path: "log")
        _ = try LogPublisher(a).publishLog(to: log.path, options: options)
        // A base of a few thousand rows, so that many small deltas do not outgrow it.
        var positions: [String] = []
        for i in 0..<2_000 { positions.append(positionRow("bulk-\(i)", page: 0, at: "2026-11-29T01:00:00Z")) }
        _ = try SyncRunner(store: a).sync(sources: [try writeTemporary(snapshot(positions: positions))])
        _ = try LogPublisher(a).publishLog(to: log.path, options: options)
        var generation = try LogFixtures.manifest(log).generation
        for i in 0..<deltas {
            try Positions(a).setPosition(user: "u\(i)", to: .page(i % 2))
            let r = try LogPublisher(a).publishLog(to: log.path, options: options)
            #expect(!r.newGeneration || r.manifest.generation != generation)
            generation = r.manifest.generation
        }
        return (a, log)
    }

    @Test("a log with more deltas than the process may open files is read one file at a time (it was EMFILE, 66 or 69)")
    func manyDeltasFewDescriptors() throws {
        let dir = Support.temporaryDirectory()
        let (a, log) = try Self.manyDeltas(150, in: dir)
        let deltas = try LogFixtures.manifest(log).deltas.count
        #expect(deltas > 100, "the log has \(deltas) deltas")
        let db = dir.appending(path: "b.sqlite").path
        let binary = Support.catalogBinary.path
        let local = try runProcess(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "ulimit -n 40; exec \"$0\" --db \"$1\" sync --quiet \"$2\"", binary, db, log.path])
        #expect(local.status == 0, "\(local.stderr)")
        #expect(try StateDigest(of: CatalogStore.open(path: db)) == StateDigest(of: a))
        // Over HTTP: the deltas share one spool file.
        let server = try TestHTTPServer(directory: log)
        let remote = dir.appending(path: "c.sqlite").path
        let overHTTP = try runProcess(
            URL(fileURLWithPath: "/bin/sh"),
            [
                "-c", "ulimit -n 40; exec \"$0\" --db \"$1\" sync --quiet \"$2\"", binary, remote,
                server.url("/files/manifest.json"),
            ])
        #expect(overHTTP.status == 0, "\(overHTTP.stderr)")
        #expect(try StateDigest(of: CatalogStore.open(path: remote)) == StateDigest(of: a))
    }

    @Test("--max-bytes holds for a log's files: a manifest declaring a base over the limit fetches nothing more (it downloaded it all)")
    func maxBytesForLogFiles() throws {
        let dir = Support.temporaryDirectory()
        let a = try LogFixtures.store(dir, "a")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        let log = dir.appending(path: "log")
        let m = try LogPublisher(a).publishLog(to: log.path).manifest
        // A hostile manifest: the base is said to be 5 GB.
        let manifest = log.appending(path: "manifest.json")
        let text = try String(contentsOf: manifest, encoding: .utf8).replacingOccurrences(
            of: "\"bytes\":\(m.base.bytes)", with: "\"bytes\":5000000000")
        try text.write(to: manifest, atomically: true, encoding: .utf8)
        let server = try TestHTTPServer(directory: log)
        let db = dir.appending(path: "b.sqlite").path
        let r = runCLI(["sync", "--max-bytes", "1000000", server.url("/files/manifest.json")], db: db)
        #expect(r.status == 65)
        #expect(r.stderr.contains("is 5000000000 bytes, over the limit of 1000000 bytes"), "\(r.stderr)")
        #expect(r.stderr.contains("hint: raise it with --max-bytes"))
        #expect(try server.log().compactMap { $0["path"] ?? nil }.filter { $0.hasPrefix("/files/") } == ["/files/manifest.json"])
        // Locally the files are on disk already (no limit), and the size does not match the manifest: 65 all the same.
        let local = runCLI(["sync", "--max-bytes", "1000000", log.path], db: db)
        #expect(local.status == 65)
        #expect(try dumpLandmarks(db).isEmpty)
    }

    @Test("a log directory's URL ending in / means its manifest; without the slash, a 404 hints at manifest.json")
    func directoryURL() throws {
        let dir = Support.temporaryDirectory()
        let a = try LogFixtures.store(dir, "a")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        let log = dir.appending(path: "log")
        _ = try LogPublisher(a).publishLog(to: log.path)
        let server = try TestHTTPServer(directory: log)  // the log directory is served as /files/
        let db = dir.appending(path: "b.sqlite").path
        let slash = runCLI(["sync", server.url("/files/")], db: db)
        #expect(slash.status == 0, "\(slash.stderr)")
        #expect(try dumpLandmarks(db).count == 5)
        let bare = runCLI(["sync", server.url("/files")], db: db)
        #expect(bare.status == 69)
        #expect(bare.stderr.contains("hint: for a snapshot log, give its manifest's URL (…/manifest.json)"), "\(bare.stderr)")
    }
}

/// What the same user test found outside the logs' internals.
@Suite("Sync: what a first user test found")
struct SyncUserFindingsTests {
    @Test("publish and --publish / --output refuse a URL (64): they write local files (publish created ./https:/…)")
    func publishURL() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let publish = runCLI(["publish", "https://a.example.org/catalog/"], db: db)
        #expect(publish.status == 64)
        #expect(publish.stderr.contains("cannot publish to https://"))
        #expect(runCLI(["sync", "--publish", "postgres://127.0.0.1:1/db"], db: db).status == 64)
        #expect(runCLI(["sync", "--publish", "https://a.example.org/x.json"], db: db).status == 64)
        #expect(runCLI(["export", "--output", "https://a.example.org/x.json"], db: db).status == 64)
        #expect(!FileManager.default.fileExists(atPath: "https:"))
    }

    @Test("publishing into another node's log directory is refused (73); it replaced that node's manifest silently")
    func anotherNodesLog() throws {
        let dir = Support.temporaryDirectory()
        let a = try LogFixtures.store(dir, "a")
        let b = try LogFixtures.store(dir, "b")
        let log = dir.appending(path: "log")
        _ = try LogPublisher(a).publishLog(to: log.path)
        let before = try Data(contentsOf: log.appending(path: "manifest.json"))
        #expect {
            try LogPublisher(b).publishLog(to: log.path)
        } throws: { error in
            (error as? CatalogError)?.exitStatus == 73 && (error as? CatalogError)?.message.contains("holds the snapshot log of node node-a") == true
        }
        #expect(try Data(contentsOf: log.appending(path: "manifest.json")) == before)
    }

    @Test("a source published under this database's own node id (a copied database) is warned about, once")
    func copiedDatabase() throws {
        let dir = Support.temporaryDirectory()
        let a = dir.appending(path: "a.sqlite").path
        let copy = dir.appending(path: "copy.sqlite").path
        #expect(runCLI(["import", Support.fixture("valid.json")], db: a).status == 0)
        try FileManager.default.copyItem(atPath: a, toPath: copy)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "0"], db: copy).status == 0)
        #expect(runCLI(["publish", dir.appending(path: "copy-log").path], db: copy).status == 0)
        let r = runCLI(["sync", dir.appending(path: "copy-log").path], db: a)
        #expect(r.status == 0)
        #expect(r.stderr.components(separatedBy: "this database's own").count == 2, "\(r.stderr)")
        #expect(r.stderr.contains("catalog init --node ID"))
        // The source is named once, at the end, as in every diagnostic (a user test found it twice).
        let manifest = dir.appending(path: "copy-log/manifest.json").path
        #expect(r.stderr.components(separatedBy: manifest).count == 2, "\(r.stderr)")
    }

    @Test("publish to a file is refused naming it once, with a hint at export --output")
    func publishToFile() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let file = try writeTemporary("{}")
        let r = runCLI(["publish", file], db: db)
        #expect(
            r.status == 73
                && r.stderr == "catalog: error: cannot create the log directory: not a directory, \(file)\n"
                    + "hint: a snapshot log is a directory; to write one snapshot file, use 'catalog export --output FILE'\n",
            "\(r.stderr)")
    }

    @Test("many failing sources are bounded like any diagnostic (25 were 25 lines)")
    func boundedSourceFailures() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["init"], db: db).status == 0)  // without a database, sources that are all missing files create none (one error)
        let missing = (0..<25).map { "/nonexistent/peer-\($0).json" }
        let r = runCLI(["--max-diagnostics", "3", "sync", "--quiet"] + missing, db: db)
        #expect(r.status == 66)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("catalog: error:") }.count == 3, "\(r.stderr)")
        #expect(lines.last?.contains("22 more source-failed diagnostics not shown (25 in all)") == true, "\(r.stderr)")
        #expect(runCLI(["log", "--json"], db: db).stdout.contains(#""exitStatus":66"#))
    }

    @Test("a saved remote's name means the remote, whatever is in the working directory")
    func remoteBeatsLocalPath() throws {
        let dir = Support.temporaryDirectory()
        let db = dir.appending(path: "me.sqlite").path
        let remote = try writeTemporary(snapshot(positions: [positionRow("from-remote", page: 0, at: "2026-11-29T01:00:00Z")]))
        #expect(runCLI(["remote", "add", "peer", remote], db: db).status == 0)
        let cwd = FileManager.default.currentDirectoryPath
        let local = URL(fileURLWithPath: cwd).appending(path: "peer")
        guard !FileManager.default.fileExists(atPath: local.path) else { return }
        let here = SourceLocator.parse
        #expect(try here("peer", [Remote(name: "peer", url: remote)], cwd) == .file(path: remote))
        #expect(try here("./peer", [Remote(name: "peer", url: remote)], cwd) == .file(path: local.path))
    }

    @Test("a sync killed before it finished is in the ledger as interrupted, and status --check says so")
    func interruptedRun() throws {
        let dir = Support.temporaryDirectory()
        let db = dir.appending(path: "me.sqlite").path
        let source = try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: "2026-11-29T01:00:00Z")]))
        #expect(runCLI(["init"], db: db).status == 0)
        let victim = Process()
        victim.executableURL = Support.harnessBinary
        victim.arguments = ["--db", db, "sync", "--quiet", source]
        victim.environment = ["CATALOG_TEST_PAUSE_BEFORE_COMMIT_MS": "10000", "PATH": "/usr/bin:/bin"]
        try victim.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, (try? dumpRows(db, sql: "SELECT outcome FROM sync_runs"))?.contains([.text("running")]) != true { usleep(20_000) }
        #expect(try dumpRows(db, sql: "SELECT outcome FROM sync_runs") == [[.text("running")]])
        kill(victim.processIdentifier, SIGKILL)
        victim.waitUntilExit()
        // The row still says running (nothing could update it); the next run marks it.
        let next = runCLI(["sync", "--quiet", "--dry-run", source], db: db)
        #expect(next.status == 0)
        #expect(try dumpRows(db, sql: "SELECT outcome FROM sync_runs") == [[.text("running")]])
        let real = runCLI(["sync", "--quiet", source], db: db)
        #expect(real.status == 0, "\(real.stderr)")
        #expect(
            try dumpRows(db, sql: "SELECT outcome, exit_status FROM sync_runs ORDER BY id") == [
                [.text("interrupted"), .integer(-1)], [.text("ok"), .integer(0)],
            ])
        // The good run after it is what status --check looks at; an interrupted last run is not healthy.
        #expect(runCLI(["status", "--check", "--quiet"], db: db).status == 0)
        let c = try Connection(path: db)
        try c.execute(sql: "DELETE FROM sync_runs WHERE outcome = 'ok'")
        let check = runCLI(["status", "--check"], db: db)
        #expect(check.status == 69)
        #expect(check.stderr.contains("the run ended before it finished"), "\(check.stderr)")
    }

    @Test("sync --json names a publish failure")
    func publishErrorInJSON() throws {
        let db = Support.temporaryDatabase()
        let r = runCLI(["sync", "--json", "--publish", "/proc/nope/x.json"], db: db)
        #expect(r.status == 73)
        #expect(r.stdout.contains(#""publishError":"publishing failed: "#), "\(r.stdout)")
    }
}
