import CatalogTestSupport
import Foundation
import Testing

@_spi(Testing) @testable import CatalogCLI
@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// A log reader's cursor (docs/log-format.md §6–§8, issue 25): it moves only to what the manifest's files
/// prove, a replay of an older generation leaves it alone, `status --check` says when a source is stuck
/// behind it or untrusted, and `sync --reset-cursor` starts a source over.
@Suite("Sync: a cursor no forged manifest can freeze", .serialized)
struct CursorTests {
    /// A publisher with the five fixture landmarks, its log published once, and a consumer that read it.
    static func setUp(_ dir: URL) throws -> (publisher: CatalogStore, log: URL, consumer: String) {
        let publisher = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try Trust.publish(publisher, log)
        let consumer = dir.appending(path: "consumer.sqlite").path
        let first = runCLI(["sync", log.path], db: consumer)
        try #require(first.status == 0, "\(first.stderr)")
        return (publisher, log, consumer)
    }

    /// The manifest with every `through` (the manifest's and its base's) set to Int64.max: the
    /// publisher's generation and real files, as in issue 25.
    static func forge(_ log: URL) throws -> (real: Data, forged: Data) {
        let path = log.appending(path: "manifest.json")
        let real = try Data(contentsOf: path)
        let manifest = try LogManifest.parse([UInt8](real), source: "manifest")
        let text = String(decoding: real, as: UTF8.self)
            .replacingOccurrences(of: "\"through\":\(manifest.through)", with: "\"through\":\(Int64.max)")
        #expect(text.components(separatedBy: "\"through\":\(Int64.max)").count == 3)
        return (real, Data(text.utf8))
    }

    static func cursor(_ db: String, _ key: String) throws -> [[SQLValue]] { try Trust.cursor(db, source: key) }

    @Test("a manifest whose through its files do not prove (the publisher's files, through = Int64.max): 65, cursor kept; the real one merges next")
    func forgedThroughInDirectory() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (publisher, log, consumer) = try Self.setUp(dir)
        let key = log.path + "/manifest.json"
        let before = try Self.cursor(consumer, key)
        let (real, forged) = try Self.forge(log)
        try forged.write(to: log.appending(path: "manifest.json"))
        let r = runCLI(["sync", log.path], db: consumer)
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("not proven by its files"), "\(r.stderr)")
        #expect(try Self.cursor(consumer, key) == before)
        try real.write(to: log.appending(path: "manifest.json"))
        _ = try Positions(publisher).setPosition(user: "bob", to: .page(1))
        _ = try Trust.publish(publisher, log)
        let next = runCLI(["sync", log.path], db: consumer)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'bob'") == [[.integer(1)]])
    }

    @Test("the forged through over HTTP: 65, cursor kept; the real manifest merges next")
    func forgedThroughOverHTTP() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let publisher = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try Trust.publish(publisher, log)
        let server = try TestHTTPServer(directory: log)
        let url = server.url("/files/manifest.json")
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(runCLI(["sync", url], db: consumer).status == 0)
        let before = try Self.cursor(consumer, url)
        let (real, forged) = try Self.forge(log)
        try forged.write(to: log.appending(path: "manifest.json"))
        let r = runCLI(["sync", url], db: consumer)
        #expect(r.status == 65, "\(r.stderr)")
        #expect(try Self.cursor(consumer, url) == before)
        try real.write(to: log.appending(path: "manifest.json"))
        _ = try Positions(publisher).setPosition(user: "bob", to: .page(1))
        _ = try Trust.publish(publisher, log)
        #expect(runCLI(["sync", url], db: consumer).status == 0)
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'bob'") == [[.integer(1)]])
    }

    @Test("a cursor already moved too far: behind at every run, status --check unhealthy after a few, sync --reset-cursor reads it again")
    func stuckBehindAndReset() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (publisher, log, consumer) = try Self.setUp(dir)
        let key = log.path + "/manifest.json"
        // What the old reader stored from the forged manifest.
        let manifest = try LogManifest.parse([UInt8](try Data(contentsOf: log.appending(path: "manifest.json"))), source: "m")
        let c = try Connection(path: consumer)
        try c.execute(
            sql: "UPDATE sync_sources SET cursor = ? WHERE source = ?",
            [.text("{\"generation\":\"\(manifest.generation)\",\"through\":\"\(Int64.max)\"}"), .text(key)])
        _ = try Positions(publisher).setPosition(user: "bob", to: .page(1))
        _ = try Trust.publish(publisher, log)
        for n in 1...(CatalogMonitor.staleRunsLimit + 1) {
            let r = runCLI(["sync", log.path], db: consumer)
            #expect(r.status == 0 && r.stderr.contains("behind"), "\(r.stderr)")
            let check = runCLI(["status", "--check"], db: consumer)
            #expect((check.status == 0) == (n <= CatalogMonitor.staleRunsLimit), "run \(n): \(check.stdout)\(check.stderr)")
            if n > CatalogMonitor.staleRunsLimit {
                #expect(check.stderr.contains("--reset-cursor") || check.stdout.contains("--reset-cursor"), "\(check.stderr)")
            }
        }
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'bob'") == [])
        let reset = runCLI(["sync", "--reset-cursor", log.path], db: consumer)
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'bob'") == [[.integer(1)]])
        let raw = try dumpRows(consumer, sql: "SELECT cursor FROM sync_sources WHERE source = '\(key)'")
        let cursor = try #require(raw.first.flatMap { if case .text(let t) = $0.first { SourceCursor(text: t) } else { nil } })
        #expect(cursor["through"] == String(try publisher.changeSequence()) && cursor["behind"] == nil, "\(cursor)")
        #expect(runCLI(["status", "--check"], db: consumer).status == 0)
    }

    @Test("status --check --max-age: a source whose last try failed with 77 is unhealthy at once, though it had a good sync within the age")
    func untrustedIsUnhealthy() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (_, log, consumer) = try Self.setUp(dir)
        let (_, line) = try Trust.generate(dir, "k")
        #expect(runCLI(["status", "--check", "--max-age", "1h"], db: consumer).status == 0)
        #expect(runCLI(["sync", log.path, "--trust", line], db: consumer).status == 77)
        let check = runCLI(["status", "--check", "--max-age", "1h"], db: consumer)
        #expect(check.status != 0, "\(check.stdout)")
        #expect((check.stdout + check.stderr).contains("exit 77"), "\(check.stdout)\(check.stderr)")
    }

    /// Issue 25: "a host flipping between two generations made a follower fetch 20 base files in 10 s".
    ///
    /// A reader that had read the newer generation fetched the older one's base when it was served, moved
    /// its cursor back to it, and then took every manifest of the newer one for a replay.
    @Test("a host flipping between an older and a newer generation: the older is never fetched, the newer goes on merging")
    func flippingHost() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clock = ManualClock(testNow)
        let publisher = try LogFixtures.store(dir, "a", clock: clock)
        _ = try Importer(publisher).importLandmarks(from: .file(Support.fixture("valid.json")))
        let log = dir.appending(path: "log")
        let manifestURL = log.appending(path: "manifest.json")
        let older = try LogPublisher(publisher).publishLog(to: log.path).manifest
        let olderBytes = try Data(contentsOf: manifestURL)
        // A newer generation (the older base removed, so the publisher starts over), then the older base
        // back: the host serves both generations' files.
        let base = log.appending(path: older.base.name)
        let saved = try Data(contentsOf: base)
        try FileManager.default.removeItem(at: base)
        clock.advance(5_000)
        let newer = try LogPublisher(publisher).publishLog(to: log.path).manifest
        try #require(newer.generation > older.generation)
        try saved.write(to: base)
        let newerBytes = try Data(contentsOf: manifestURL)
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(runCLI(["sync", log.path], db: consumer).status == 0)
        let cursor = try Self.cursor(consumer, log.path + "/manifest.json")
        for _ in 0..<10 {
            try olderBytes.write(to: manifestURL)
            let flipped = runCLI(["sync", log.path, "--json"], db: consumer)
            #expect(flipped.status == 0, "\(flipped.stderr)")
            #expect(flipped.stdout.contains("\"bytes\":\(olderBytes.count),"), "only the manifest read: \(flipped.stdout)")
            #expect(flipped.stderr.contains("older than generation \(newer.generation)"), "\(flipped.stderr)")
            try newerBytes.write(to: manifestURL)
            let back = runCLI(["sync", log.path, "--json"], db: consumer)
            #expect(back.status == 0 && back.stdout.contains("\"outcome\":\"not-modified\""), "\(back.stdout)")
        }
        #expect(try Self.cursor(consumer, log.path + "/manifest.json") == cursor)
        // The newer generation goes on: its next delta merges, and only it is fetched.
        _ = try Positions(publisher).setPosition(user: "zed", to: .page(0))
        let delta = try LogPublisher(publisher).publishLog(to: log.path).manifest
        #expect(delta.generation == newer.generation)
        let next = runCLI(["sync", log.path, "--json"], db: consumer)
        #expect(next.status == 0 && next.stdout.contains("\"outcome\":\"merged\""), "\(next.stdout)")
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'zed'") == [[.integer(0)]])
    }

    @Test("a publisher whose clock went back names its new generation after the directory's last one")
    func generationsSortAfterClockGoesBack() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clock = ManualClock(testNow)
        let publisher = try LogFixtures.store(dir, "a", clock: clock)
        _ = try Importer(publisher).importLandmarks(from: .file(Support.fixture("valid.json")))
        let log = dir.appending(path: "log")
        let first = try LogPublisher(publisher).publishLog(to: log.path).manifest
        try FileManager.default.removeItem(at: log.appending(path: first.base.name))
        clock.set(testNow - 86_400_000)
        let second = try LogPublisher(publisher).publishLog(to: log.path)
        #expect(second.newGeneration && second.manifest.generation > first.generation, "\(first.generation) \(second.manifest.generation)")
        #expect(LogManifest.isPublisherGeneration(second.manifest.generation))
        #expect(!LogManifest.isPublisherGeneration("g1") && !LogManifest.isPublisherGeneration("g20261201T101500Z-3F9A1C"))
    }

    @Test("a signed replay of an older generation: only the manifest (and its signature) read, nothing merged, cursor kept")
    func olderGenerationReplay() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (secret, line) = try Trust.generate(dir, "k")
        let publisher = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try Trust.publish(publisher, log, key: secret)
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(runCLI(["sync", log.path, "--trust", line], db: consumer).status == 0)
        let old = (
            try Data(contentsOf: log.appending(path: "manifest.json")), try Data(contentsOf: log.appending(path: "manifest.json.minisig"))
        )
        let oldGeneration = try LogManifest.parse([UInt8](old.0), source: "m").generation
        // A new generation: the old base removed (the publisher starts over when its files are missing).
        let first = try LogManifest.parse([UInt8](old.0), source: "m")
        try FileManager.default.removeItem(at: log.appending(path: first.base.name))
        _ = try Positions(publisher).setPosition(user: "bob", to: .page(1))
        let second = try Trust.publish(publisher, log, key: secret)
        try #require(second.manifest.generation != oldGeneration)
        #expect(runCLI(["sync", log.path, "--trust", line], db: consumer).status == 0)
        let key = log.path + "/manifest.json"
        let state = try dumpLandmarks(consumer) + dumpPositions(consumer)
        let position = try #require(
            SourceCursor(text: try Self.cursor(consumer, key).first.flatMap { if case .text(let t) = $0.first { t } else { nil } }))
        // The old generation's manifest and signature served again, its base there again too.
        let newFiles = (
            try Data(contentsOf: log.appending(path: "manifest.json")), try Data(contentsOf: log.appending(path: "manifest.json.minisig"))
        )
        try old.0.write(to: log.appending(path: "manifest.json"))
        try old.1.write(to: log.appending(path: "manifest.json.minisig"))
        let replay = runCLI(["sync", log.path, "--trust", line, "--json"], db: consumer)
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(replay.stderr.contains("left for generation"), "\(replay.stderr)")
        #expect(replay.stdout.contains("\"outcome\":\"not-modified\""), "\(replay.stdout)")
        // Bytes fetched: the manifest and its signature only (the base is gone: nothing else was opened).
        #expect(replay.stdout.contains("\"bytes\":\(old.0.count + old.1.count)"), "\(replay.stdout)")
        #expect(try dumpLandmarks(consumer) + dumpPositions(consumer) == state)
        let after = try #require(
            SourceCursor(text: try Self.cursor(consumer, key).first.flatMap { if case .text(let t) = $0.first { t } else { nil } }))
        #expect(after["generation"] == position["generation"] && after["through"] == position["through"])
        // The publisher's manifest served again: nothing new, healthy.
        try newFiles.0.write(to: log.appending(path: "manifest.json"))
        try newFiles.1.write(to: log.appending(path: "manifest.json.minisig"))
        #expect(runCLI(["sync", log.path, "--trust", line], db: consumer).status == 0)
    }
}

/// A source is the log its name resolves to now (docs/log-format.md §6): a remote whose symbolic link is
/// re-pointed to another node's log read nothing of it ("older than generation … this database has read",
/// 4 of 4 runs), and one log reached by two names showed as two sources in `status`.
@Suite("Sync: a source is the log its name resolves to", .serialized)
struct SourceResolutionTests {
    /// A publisher `name` whose clock is `offset` ms from `testNow`, with `user` on page `page`, published into `dir/log-NAME`.
    static func node(_ dir: URL, _ name: String, offset: Int64, user: String, page: Int) throws -> URL {
        let store = try LogFixtures.store(dir, name, clock: ManualClock(testNow + offset))
        _ = try Importer(store).importLandmarks(from: .file(Support.fixture("valid.json")))
        _ = try Positions(store).setPosition(user: user, to: .page(page))
        let log = dir.appending(path: "log-\(name)")
        _ = try Trust.publish(store, log)
        return log
    }

    static func page(_ db: String, _ user: String) throws -> [[SQLValue]] {
        try dumpRows(db, sql: "SELECT page FROM positions WHERE user_id = '\(user)'")
    }

    @Test("a remote's symbolic link re-pointed to an older node's log: that log merges on the next sync")
    func repointedLink() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // The older node's generation sorts first: the newer node's cursor took it for an old copy.
        let older = try Self.node(dir, "b", offset: -86_400_000, user: "bob-b", page: 0)
        let newer = try Self.node(dir, "a", offset: 0, user: "ann-a", page: 1)
        let link = dir.appending(path: "peer").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: newer.path)
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(runCLI(["remote", "add", "peer", link], db: consumer).status == 0)
        let first = Trust.sync(["peer"], db: consumer)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try Self.page(consumer, "ann-a") == [[.integer(1)]])
        try FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: older.path)
        let second = Trust.sync(["peer", "--json"], db: consumer)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(!second.stderr.contains("older than generation"), "\(second.stderr)")
        #expect(try Self.page(consumer, "bob-b") == [[.integer(0)]], "\(second.stdout)")
    }

    @Test("a directory replaced by another node's log under the same path: read from its base, not taken for an old copy")
    func replacedDirectory() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let older = try Self.node(dir, "b", offset: -86_400_000, user: "bob-b", page: 0)
        let newer = try Self.node(dir, "a", offset: 0, user: "ann-a", page: 1)
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(Trust.sync([newer.path], db: consumer).status == 0)
        try FileManager.default.removeItem(at: newer)
        try FileManager.default.moveItem(at: older, to: newer)
        let again = Trust.sync([newer.path], db: consumer)
        #expect(again.status == 0 && !again.stderr.contains("older than generation"), "\(again.stderr)")
        #expect(try Self.page(consumer, "bob-b") == [[.integer(0)]])
    }

    @Test("one log by its path and by a symbolic link: one source in status, one cursor")
    func twoNamesOneSource() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = try Self.node(dir, "a", offset: 0, user: "ann-a", page: 1)
        let link = dir.appending(path: "alias").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: log.path)
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(Trust.sync([log.path], db: consumer).status == 0)
        let viaLink = Trust.sync([link + "/", "--json"], db: consumer)
        #expect(viaLink.status == 0, "\(viaLink.stderr)")
        // The same cursor: nothing fetched again.
        #expect(viaLink.stdout.contains(#""outcome":"not-modified""#), "\(viaLink.stdout)")
        let sources = try dumpRows(consumer, sql: "SELECT source FROM sync_sources")
        let resolved = SourceLocator.identity(ofKey: log.path) + "/manifest.json"
        #expect(sources == [[.text(resolved)]], "\(sources)")
        let status = runCLI(["status", "--json"], db: consumer)
        #expect(status.stdout.components(separatedBy: "manifest.json").count == 2, "\(status.stdout)")
    }
}
