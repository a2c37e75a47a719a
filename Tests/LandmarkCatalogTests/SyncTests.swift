import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// Issue 25: `SyncLock.takeSkipped` deleted the noted runs before they were recorded, so a ledger that
/// refused one lost it and every line after it.
@Suite("Sync: runs noted beside the lock")
struct SkippedRunsTests {
    static func note(_ db: String, _ message: String, outcome: String = "busy") {
        SyncLock.noteSkipped(
            databasePath: db, line: #"{"exitStatus":75,"message":"\#(message)","sources":[],"started":1,"finished":2,"outcome":"\#(outcome)"}"#)
    }

    @Test("a noted run the ledger refuses is kept with the ones after it; the next try records each once, then nothing is left")
    func refusedRunsKept() throws {
        let db = Support.temporaryDatabase()
        let store = try CatalogStore.open(path: db)
        try Connection(path: db).execute(
            sql: "CREATE TRIGGER planted BEFORE INSERT ON sync_runs WHEN NEW.outcome = 'planted' BEGIN SELECT RAISE(ABORT, 'planted refusal'); END")
        Self.note(db, "m1")
        Self.note(db, "m2", outcome: "planted")
        Self.note(db, "m3")
        let messages = { try dumpRows(db, sql: "SELECT message FROM sync_runs ORDER BY id") }
        #expect(throws: (any Error).self) { try SyncLedger(store: store).recordSkippedRuns() }
        #expect(try messages() == [[.text("m1")]])
        // Refused again (the trigger is still there), a line noted meanwhile waits its turn: nothing lost, nothing twice.
        Self.note(db, "m4")
        #expect(throws: (any Error).self) { try SyncLedger(store: store).recordSkippedRuns() }
        #expect(try messages() == [[.text("m1")]])
        try Connection(path: db).execute(sql: "DROP TRIGGER planted")
        try SyncLedger(store: store).recordSkippedRuns()
        #expect(try messages() == [[.text("m1")], [.text("m2")], [.text("m3")], [.text("m4")]])
        let skipped = SyncLock.skippedPath(for: db)
        #expect(!FileManager.default.fileExists(atPath: skipped) && !FileManager.default.fileExists(atPath: skipped + ".taking"))
        try SyncLedger(store: store).recordSkippedRuns()
        #expect(try messages().count == 4)
    }
}

@Suite("Sync: merge rules")
struct MergeRuleTests {
    func store() throws -> (CatalogStore, String) {
        let path = Support.temporaryDatabase()
        return (try CatalogStore.open(path: path, wallClock: ManualClock(testNow)), path)
    }

    @Test("equal instant and counter: the greater node wins, in either delivery order")
    func nodeBreaksTies() throws {
        let a = try writeTemporary(snapshot(positions: [positionRow("u", page: 1, at: "2026-11-29T10:00:00.000Z", counter: 4, node: "n-a")]))
        let b = try writeTemporary(snapshot(positions: [positionRow("u", page: 2, at: "2026-11-29T10:00:00.000Z", counter: 4, node: "n-b")]))
        for order in [[a, b], [b, a], [a, b, a, b]] {
            let (s, _) = try store()
            for source in order { _ = try SyncRunner(store: s).sync(sources: [source]) }
            let row = try s.connection.scalarText(sql: "SELECT node || ':' || page FROM positions WHERE user_id = 'u'")
            #expect(row == "n-b:2", "order \(order)")
        }
    }

    @Test("equal keys, different content: the tombstone wins and the tie is counted, in either order")
    func trueTie() throws {
        let live = try writeTemporary(snapshot(positions: [positionRow("u", page: 1, at: "2026-11-29T10:00:00.000Z", node: "n-a")]))
        let dead = try writeTemporary(snapshot(positions: [positionRow("u", page: 1, at: "2026-11-29T10:00:00.000Z", node: "n-a", deleted: true)]))
        for order in [[live, dead], [dead, live]] {
            let (s, _) = try store()
            var ties = 0
            for source in order { ties += try SyncRunner(store: s).sync(sources: [source]).counts.ties }
            #expect(ties == 1)
            #expect(try Positions(s).hasTombstone(user: "u"))
        }
        // Landmarks too: equal stamps, different names → the greater canonical content, whatever the order.
        let x = try writeTemporary(snapshot(landmarks: [landmarkRow(5, name: "Alpha", at: "2026-11-29T10:00:00.000Z")]))
        let y = try writeTemporary(snapshot(landmarks: [landmarkRow(5, name: "Beta", at: "2026-11-29T10:00:00.000Z")]))
        var names: Set<String> = []
        for order in [[x, y], [y, x]] {
            let (s, _) = try store()
            for source in order { _ = try SyncRunner(store: s).sync(sources: [source]) }
            names.insert(try #require(try LandmarkReader(s).landmark(id: 5)).name)
        }
        #expect(names == ["Beta"])
    }

    @Test("offsets other than Z are compared as instants, not as text")
    func mixedOffsets() throws {
        let (s, _) = try store()
        // 01:30Z is later than 02:00+01:00 (= 01:00Z), though "02:00" sorts after "01:30" as text.
        _ = try SyncRunner(store: s).sync(sources: [
            try writeTemporary(snapshot(positions: [positionRow("u", page: 1, at: "2026-11-29T01:30:00.000Z")]))
        ])
        let r = try SyncRunner(store: s).sync(sources: [
            try writeTemporary(snapshot(positions: [positionRow("u", page: 2, at: "2026-11-29T02:00:00.000+01:00")]))
        ])
        #expect(r.counts.stale == 1)
        #expect(try s.connection.scalarInt(sql: "SELECT page FROM positions") == 1)
        // The same instant written with another offset and the same counter/node is a duplicate, not a change.
        let same = try SyncRunner(store: s).sync(sources: [
            try writeTemporary(snapshot(positions: [positionRow("u", page: 1, at: "2026-11-29T03:30:00.000+02:00")]))
        ])
        #expect(same.counts.stale == 1)
        #expect(same.counts.positionsApplied == 0)
        #expect(try s.connection.scalarInt(sql: "SELECT updated_ms FROM positions") == Timestamp.parse("2026-11-29T01:30:00Z"))
    }

    @Test("a stamp a day ahead is quarantined, reported, and does not win")
    func skewedClock() throws {
        let (s, path) = try store()
        _ = try SyncRunner(store: s).sync(sources: [
            try writeTemporary(snapshot(positions: [positionRow("u", page: 1, at: "2026-11-29T23:00:00.000Z")]))
        ])
        var warnings: [String] = []
        let r = try SyncRunner(store: s).sync(sources: [
            try writeTemporary(snapshot(positions: [positionRow("u", page: 2, at: "2026-12-01T00:00:00.000Z")]))
        ]) {
            warnings.append($0.description)
        }
        #expect(r.counts.quarantined == 1)
        #expect(r.counts.positionsApplied == 0)
        #expect(warnings.contains { $0.contains("quarantined position u") })
        #expect(try s.connection.scalarInt(sql: "SELECT page FROM positions") == 1)
        #expect(try CatalogMonitor(s).status().quarantined == 1)
        // The clock did not jump to the skewed stamp: a local write now is stamped near now.
        let local = try s.write { try s.issueLocalStamp() }
        #expect(local.wallMilliseconds < Timestamp.parse("2026-11-30T01:00:00Z")!)
        // And the status command shows it.
        #expect(runCLI(["status"], db: path).stdout.contains("quarantine:  1 row\n"))
    }

    @Test("a tombstone beats an older update delivered after it; an old snapshot never resurrects")
    func noResurrection() throws {
        let (s, _) = try store()
        let old = try writeTemporary(
            snapshot(
                landmarks: [landmarkRow(7, name: "Seven", at: "2026-11-29T01:00:00.000Z")],
                positions: [positionRow("u", page: 0, landmark: 7, at: "2026-11-29T01:00:00.000Z")]))
        let newer = try writeTemporary(
            snapshot(
                landmarks: [landmarkRow(7, name: "Seven", at: "2026-11-29T02:00:00.000Z", deleted: true)],
                positions: [positionRow("u", page: 0, landmark: 7, at: "2026-11-29T02:00:00.000Z", deleted: true)]))
        _ = try SyncRunner(store: s).sync(sources: [newer])
        let r = try SyncRunner(store: s).sync(sources: [old])
        #expect(r.counts.stale == 2)
        #expect(try LandmarkReader(s).landmark(id: 7) == nil)
        #expect(try Positions(s).position(user: "u") == nil)
        #expect(try Positions(s).hasTombstone(user: "u"))
    }

    @Test("a later local write wins over everything merged before it (the clock moved past merged stamps)")
    func clockMovesPastMerged() throws {
        let path = Support.temporaryDatabase()
        let clock = ManualClock(testNow)
        let s = try CatalogStore.open(path: path, wallClock: clock)
        _ = try SyncRunner(store: s).sync(sources: [
            try writeTemporary(
                snapshot(
                    landmarks: [
                        landmarkRow(1, name: "One", at: "2026-11-30T00:04:00.000Z"), landmarkRow(2, name: "Two", at: "2026-11-30T00:04:00.000Z"),
                    ],
                    positions: [positionRow("u", page: 0, landmark: 1, at: "2026-11-30T00:04:00.000Z", counter: 9, node: "zz")]))
        ])
        let local = try Positions(s).setPosition(user: "u", to: .page(1))
        #expect(local.stamp.wallMilliseconds == Timestamp.parse("2026-11-30T00:04:00Z"))
        #expect(local.stamp.counter == 11)
    }

    @Test("a position may name a landmark this database does not have yet; it resolves when read")
    func positionBeforeLandmark() throws {
        let (s, _) = try store()
        _ = try SyncRunner(store: s).sync(sources: [
            try writeTemporary(snapshot(positions: [positionRow("u", page: 1, landmark: 9, at: "2026-11-29T01:00:00.000Z")]))
        ])
        #expect(try Positions(s).position(user: "u")?.currentPage == nil)
        _ = try SyncRunner(store: s).sync(sources: [
            try writeTemporary(
                snapshot(landmarks: [
                    landmarkRow(8, name: "Eight", at: "2026-11-29T01:00:00.000Z"), landmarkRow(9, name: "Nine", at: "2026-11-29T01:00:00.000Z"),
                ]))
        ])
        #expect(try Positions(s).position(user: "u")?.currentPage == 1)
        #expect(try Positions(s).position(user: "u")?.landmarkID == 9)
    }

    struct BadSnapshot: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var status: Int32
        var mentions: String
        var testDescription: String { name }
    }

    @Test(
        "bad snapshots: 65 or 76, a message naming where; nothing from the bad source merged, the good one merged",
        arguments: [
            BadSnapshot(
                name: "truncated", text: String(snapshot(positions: [positionRow("u", page: 1, at: "2026-11-29T01:00:00Z")]).dropLast(20)),
                status: 65, mentions: "snapshot.json:"),
            BadSnapshot(name: "format", text: snapshot(format: "something-else"), status: 76, mentions: "unknown snapshot format \"something-else\""),
            BadSnapshot(name: "version", text: snapshot(version: 2), status: 76, mentions: "snapshot version 2 is newer"),
            BadSnapshot(
                name: "bad stamp", text: snapshot(positions: [positionRow("u", page: 1, at: "yesterday")]), status: 65,
                mentions: "updatedAt must be an RFC 3339 date-time"),
            BadSnapshot(
                name: "negative page", text: snapshot(positions: [positionRow("u", page: -1, at: "2026-11-29T01:00:00Z")]), status: 65,
                mentions: "page must be a non-negative integer"),
            BadSnapshot(
                name: "bad landmark", text: snapshot(landmarks: [landmarkRow(1, name: "", at: "2026-11-29T01:00:00Z")]), status: 65,
                mentions: "name must not be empty"),
            BadSnapshot(name: "not an object", text: "[]", status: 65, mentions: "a snapshot must be a JSON object"),
        ])
    func badSnapshots(_ bad: BadSnapshot) throws {
        let db = Support.temporaryDatabase()
        let good = try writeTemporary(snapshot(positions: [positionRow("g", page: 0, at: "2026-11-29T01:00:00Z")]))
        let badPath = try writeTemporary(bad.text)
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let before = try dumpLandmarks(db)
        let result = runCLI(["sync", good, badPath], db: db)
        #expect(result.status == bad.status, "\(result.stderr)")
        #expect(result.stderr.contains(bad.mentions), "\(result.stderr)")
        #expect(try dumpLandmarks(db) == before)
        // Each source stands alone (docs/cli.md §7): the good one merged, nothing of the bad one did.
        #expect(try dumpPositions(db).map { $0[0] } == [.text("g")])
        let status = runCLI(["status", "--json"], db: db).stdout
        #expect(status.contains(#""outcome":"failed""#))
        #expect(status.contains(#""lastOutcome":"failed","lastStatus":\#(bad.status)"#), "\(status)")
    }

    @Test("--dry-run reports and changes nothing; --publish writes the merged state atomically")
    func dryRunAndPublish() throws {
        let db = Support.temporaryDatabase()
        let source = try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: "2026-11-29T01:00:00Z")]))
        let dry = runCLI(["sync", "--dry-run", source], db: db)
        #expect(
            dry.stdout.hasPrefix("dry run, nothing written: 1 source (1 merged, 0 not modified): 0 of 0 landmarks and 1 of 1 position applied"),
            "\(dry.stdout)")
        #expect(!FileManager.default.fileExists(atPath: db))  // not even the database was created
        #expect(runCLI(["init"], db: db).status == 0)
        #expect(runCLI(["sync", "--dry-run", source], db: db).status == 0)
        #expect(try dumpPositions(db).isEmpty)
        let out = Support.temporaryDirectory().appending(path: "published.json").path
        let real = runCLI(["sync", "--quiet", "--publish", out, source], db: db)
        #expect(real.status == 0)
        #expect(real.stdout == "")
        #expect(real.stderr == "")
        let published = try String(contentsOfFile: out, encoding: .utf8)
        #expect(published.hasPrefix(#"{"format":"landmark-catalog-snapshot","version":1,"#))
        #expect(published.contains(#""user":"u""#))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: (out as NSString).deletingLastPathComponent)
        #expect(leftovers == ["published.json"])
    }

    @Test("export then sync into an empty database reproduces every row, stamps included")
    func roundTrip() throws {
        let a = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("unknown-keys-crlf.json")], db: a).status == 0)
        #expect(runCLI(["position", "set", "--user", "Zoé", "--page", "1"], db: a).status == 0)
        #expect(runCLI(["position", "set", "--user", "x", "--page", "0"], db: a).status == 0)
        #expect(runCLI(["position", "clear", "--user", "x"], db: a).status == 0)
        let file = Support.temporaryDirectory().appending(path: "a.json").path
        #expect(runCLI(["export", "--output", file], db: a).status == 0)
        let b = Support.temporaryDatabase()
        let r = runCLI(["sync", file], db: b)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try replicatedLandmarks(b) == replicatedLandmarks(a))
        #expect(try replicatedPositions(b) == replicatedPositions(a))
    }

    /// Regression (a user test): `<stdin>` was logged as 0 bytes.
    @Test("a snapshot on standard input counts its bytes in --json and in the run ledger")
    func standardInputBytes() throws {
        let text = snapshot(positions: [positionRow("u", page: 1, at: "2026-11-29T01:00:00Z")])
        let file = try writeTemporary(text)
        let fd = open(file, O_RDONLY)
        defer { close(fd) }
        let db = Support.temporaryDatabase()
        let result = runCLI(["sync", "--json", "-"], db: db, stdinFD: fd)
        #expect(result.status == 0 && result.stdout.contains(#""bytes":\#(text.utf8.count)"#), "\(result.stdout)")
        #expect(runCLI(["log", "--json"], db: db).stdout.contains(#""bytes":\#(text.utf8.count)"#))
        // A source's last outcome is named as sync and log name it (status said "ok" for "merged").
        #expect(runCLI(["sync", file], db: db).status == 0)
        #expect(runCLI(["status", "--json"], db: db).stdout.contains(#""lastOutcome":"merged""#))
    }

    /// Regression (a user test): a log directory's URL without its "/" gave "expected a value, found '<'".
    @Test("what is not a snapshot says what it looks like: a web page, a landmarkData.json")
    func notASnapshot() throws {
        let db = Support.temporaryDatabase()
        let html = runCLI(["sync", try writeTemporary("\n<!DOCTYPE html><html><body>Index of /logA2/</body></html>")], db: db)
        #expect(html.status == 65 && html.stderr.contains("this is HTML, not a snapshot") && html.stderr.contains("trailing /"), "\(html.stderr)")
        let array = runCLI(["sync", Support.fixture("valid.json")], db: db)
        #expect(array.status == 65 && array.stderr.contains("load it with 'catalog import FILE'"), "\(array.stderr)")
    }

    /// Regression (a user test): `sync hub` with no remote of that name said only "cannot open the file".
    @Test("a bare word that is neither a file nor a remote: 66, with a hint that no remote has that name")
    func bareWord() throws {
        let db = Support.temporaryDatabase()
        let result = runCLI(["sync", "no-such-remote-xyz"], db: db)
        #expect(result.status == 66 && result.stderr.contains("no remote is named 'no-such-remote-xyz' either"), "\(result.stderr)")
        let peer = try writeTemporary(snapshot(positions: []))
        #expect(runCLI(["remote", "add", "good2", peer], db: db).status == 0)
        let near = runCLI(["sync", "goood2"], db: db)
        #expect(near.status == 66 && near.stderr.contains("no remote is named 'goood2' either; did you mean 'good2'?"), "\(near.stderr)")
        // A remote whose file is gone is not "no remote of that name".
        #expect(runCLI(["remote", "add", "gone", "/nonexistent-dir-xyz/peer.json"], db: db).status == 0)
        let gone = runCLI(["sync", "gone"], db: db)
        #expect(gone.status == 66 && !gone.stderr.contains("no remote is named"), "\(gone.stderr)")
        let path = runCLI(["sync", "./no-such-file-xyz.json"], db: db)
        #expect(path.status == 66 && !path.stderr.contains("no remote is named"), "\(path.stderr)")
    }

    @Test("saved remotes: add, list, remove; sync with no SOURCE uses them")
    func remotes() throws {
        let db = Support.temporaryDatabase()
        let source = try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: "2026-11-29T01:00:00Z")]))
        #expect(runCLI(["sync"], db: db).status == 64)
        #expect(runCLI(["remote", "add", "peer", source], db: db).status == 0)
        #expect(runCLI(["remote", "add", "peer", source], db: db).status == 64)
        #expect(runCLI(["remote", "add", "bad name", source], db: db).status == 64)
        // A relative path is saved absolute (against the working directory), as cron will need it.
        #expect(runCLI(["remote", "add", "rel", "relative/path.json"], db: db).status == 0)
        #expect(
            try RemoteBook(CatalogStore.open(path: db)).remotes().first { $0.name == "rel" }?.url
                == URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appending(path: "relative/path.json").standardizedFileURL.path)
        #expect(runCLI(["remote", "remove", "rel"], db: db).status == 0)
        #expect(runCLI(["remote", "list"], db: db).stdout == "NAME  URL\npeer  \(source)\n")
        #expect(runCLI(["sync", "--quiet"], db: db).status == 0)
        #expect(try dumpPositions(db).count == 1)
        #expect(runCLI(["remote", "remove", "peer"], db: db).status == 0)
        #expect(runCLI(["remote", "remove", "peer"], db: db).status == 64)
    }

    /// Regression (a new user's run): removing one of two remotes of one URL dropped the cursor the other
    /// syncs with, so its next sync read the source whole again.
    @Test("remote remove keeps the cursor while another saved remote names the same source")
    func removeSharedRemote() throws {
        let db = Support.temporaryDatabase()
        let source = try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: "2026-11-29T01:00:00Z")]))
        #expect(runCLI(["remote", "add", "one", source], db: db).status == 0)
        #expect(runCLI(["remote", "add", "two", source], db: db).status == 0)
        #expect(runCLI(["sync", "--quiet"], db: db).status == 0)
        let cursor = "SELECT source FROM sync_sources"
        #expect(try dumpRows(db, sql: cursor) == [[.text(source)]])
        #expect(runCLI(["remote", "remove", "one"], db: db).status == 0)
        #expect(try dumpRows(db, sql: cursor) == [[.text(source)]], "two still syncs it: its cursor stays")
        #expect(runCLI(["sync", "two"], db: db).stdout.contains("0 merged, 1 not modified"))
        #expect(runCLI(["remote", "remove", "two"], db: db).status == 0)
        #expect(try dumpRows(db, sql: cursor).isEmpty, "the last remote of it: its cursor goes")
    }
}
