import Foundation
@testable import LandmarkCatalog
import Testing

/// What a first user test of snapshot logs found, each with the input that broke it.
@Suite("Snapshot logs: limits and resources", .serialized)
struct LogRobustnessTests {
    /// A log of `deltas` deltas (one change each) in `dir/log`, published from `dir/a.sqlite`.
    static func manyDeltas(_ deltas: Int, in dir: URL) throws -> (store: CatalogStore, log: URL) {
        let a = try LogTests.store(dir, "a")
        _ = try a.importLandmarks(from: .file(Support.fixture("valid.json")))
        var options = PublishOptions()
        options.maxDeltas = 10_000
        let log = dir.appending(path: "log")
        _ = try a.publishLog(to: log.path, options: options)
        // A base of a few thousand rows, so that many small deltas do not outgrow it.
        var positions: [String] = []
        for i in 0..<2_000 { positions.append(positionRow("bulk-\(i)", page: 0, at: "2026-11-29T01:00:00Z")) }
        _ = try a.sync(sources: [try writeTemporary(snapshot(positions: positions))])
        _ = try a.publishLog(to: log.path, options: options)
        var generation = try LogTests.manifest(log).generation
        for i in 0..<deltas {
            try a.setPosition(user: "u\(i)", to: .page(i % 2))
            let r = try a.publishLog(to: log.path, options: options)
            #expect(!r.newGeneration || r.manifest.generation != generation)
            generation = r.manifest.generation
        }
        return (a, log)
    }

    @Test("a log with more deltas than the process may open files is read one file at a time (it was EMFILE, 66 or 69)")
    func manyDeltasFewDescriptors() throws {
        let dir = Support.temporaryDirectory()
        let (a, log) = try Self.manyDeltas(150, in: dir)
        let deltas = try LogTests.manifest(log).deltas.count
        #expect(deltas > 100, "the log has \(deltas) deltas")
        let db = dir.appending(path: "b.sqlite").path
        let binary = Support.catalogBinary.path
        let local = try runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "ulimit -n 40; exec \"$0\" --db \"$1\" sync --quiet \"$2\"", binary, db, log.path])
        #expect(local.status == 0, "\(local.stderr)")
        #expect(try CatalogStore.open(path: db).stateDigest() == a.stateDigest())
        // Over HTTP: the deltas share one spool file.
        let server = try TestHTTPServer(directory: log)
        let remote = dir.appending(path: "c.sqlite").path
        let overHTTP = try runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "ulimit -n 40; exec \"$0\" --db \"$1\" sync --quiet \"$2\"", binary, remote,
                                                                        server.url("/files/manifest.json")])
        #expect(overHTTP.status == 0, "\(overHTTP.stderr)")
        #expect(try CatalogStore.open(path: remote).stateDigest() == a.stateDigest())
    }

    @Test("--max-bytes holds for a log's files: a manifest declaring a base over the limit fetches nothing more (it downloaded it all)")
    func maxBytesForLogFiles() throws {
        let dir = Support.temporaryDirectory()
        let a = try LogTests.store(dir, "a")
        _ = try a.importLandmarks(from: .file(Support.fixture("valid.json")))
        let log = dir.appending(path: "log")
        let m = try a.publishLog(to: log.path).manifest
        // A hostile manifest: the base is said to be 5 GB.
        let manifest = log.appending(path: "manifest.json")
        let text = try String(contentsOf: manifest, encoding: .utf8).replacingOccurrences(of: "\"bytes\":\(m.base.bytes)", with: "\"bytes\":5000000000")
        try text.write(to: manifest, atomically: true, encoding: .utf8)
        let server = try TestHTTPServer(directory: log)
        let db = dir.appending(path: "b.sqlite").path
        let r = runCLI(["sync", "--max-bytes", "1000000", server.url("/files/manifest.json")], db: db)
        #expect(r.status == 65)
        #expect(r.stderr.contains("is 5000000000 bytes, over the limit of 1000000 bytes"), "\(r.stderr)")
        #expect(r.stderr.contains("hint: raise it with --max-bytes"))
        #expect(try server.log().compactMap { $0["path"] ?? nil }.filter { $0.hasPrefix("/files/") } == ["/files/manifest.json"])
        // And locally.
        let local = runCLI(["sync", "--max-bytes", "1000000", log.path], db: db)
        #expect(local.status == 65)
        #expect(try dumpLandmarks(db).isEmpty)
    }

    @Test("a log directory's URL ending in / means its manifest; without the slash, a 404 hints at manifest.json")
    func directoryURL() throws {
        let dir = Support.temporaryDirectory()
        let a = try LogTests.store(dir, "a")
        _ = try a.importLandmarks(from: .file(Support.fixture("valid.json")))
        let log = dir.appending(path: "log")
        _ = try a.publishLog(to: log.path)
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
