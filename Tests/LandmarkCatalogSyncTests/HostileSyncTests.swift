import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

// Issue 8, "Sync under hostile servers, extreme stamps and races", proved end to end: every test runs the
// built `catalog` binary as cron would (its own TMPDIR, a minimal environment) with the input that broke
// it, and asserts the exit status, the message, that the database is unchanged and that TMPDIR is empty.

/// One misbehaving response and what `catalog sync` must make of it.
struct HostileCase: Sendable, CustomTestStringConvertible {
    var path: String
    var options: [String] = []
    var status: Int32
    var message: String
    var hint: String?
    /// The run must end within this many seconds.
    var seconds: Double
    var testDescription: String { ([path] + options).joined(separator: " ") }
}

@Suite("Issue 8: sync under hostile servers, extreme stamps and races, through the CLI")
struct HostileSyncTests {
    // MARK: 1, 2 and 10a — hostile HTTP servers

    static let hostileCases: [HostileCase] = [
        // 1: no Content-Length, chunked, a gzip bomb: the decoded bytes are counted as they arrive.
        HostileCase(
            path: "/stream/3000000", options: ["--max-bytes", "1000000"], status: 65,
            message: "the body is over the limit of 1000000 bytes (stopped at ", hint: "raise it with --max-bytes", seconds: 10),
        HostileCase(
            path: "/chunked/3000000", options: ["--max-bytes", "1000000"], status: 65,
            message: "the body is over the limit of 1000000 bytes (stopped at ", hint: "raise it with --max-bytes", seconds: 10),
        HostileCase(
            path: "/bomb", options: ["--max-bytes", "10000000"], status: 65,
            message: "the body is over the limit of 10000000 bytes (stopped at ", hint: "raise it with --max-bytes", seconds: 15),
        // 2: one byte every 0.5 s — the stall limit, and the whole-fetch deadline.
        HostileCase(
            path: "/drip", options: ["--timeout", "2"], status: 69,
            message: "source unavailable: stalled: fewer than 1024 bytes/s for 2 s", seconds: 8),
        HostileCase(
            path: "/drip", options: ["--timeout", "30", "--deadline", "3"], status: 69,
            message: "source unavailable: did not finish within 3 s", seconds: 9),
        HostileCase(path: "/reset", status: 69, message: "source unavailable: the connection broke after 1000 bytes of the body", seconds: 10),
        // 10: a redirect to file:// says so (it used to be "HTTP 404").
        HostileCase(
            path: "/redirect-file", status: 69,
            message: "source unavailable: redirect to a file:// URL refused (only http and https are followed): file:///etc/passwd",
            seconds: 10),
        HostileCase(path: "/loop", status: 69, message: "source unavailable: too many redirects (more than 5)", seconds: 10),
        // A Retry-After longer than what is left of the deadline fails at once instead of waiting.
        HostileCase(
            path: "/status/503?retry-after=86400", options: ["--deadline", "30"], status: 69,
            message: "source unavailable: HTTP 503, and the server asked to wait 86400 s (Retry-After), more than the", seconds: 5),
        HostileCase(
            path: "/retry-date/3600", options: ["--deadline", "30"], status: 69,
            message: "source unavailable: HTTP 503, and the server asked to wait 3600 s (Retry-After), more than the", seconds: 5),
        // Retries are bounded: 1 + 2 attempts with 0.5 s and 1 s of backoff.
        HostileCase(
            path: "/status/503", options: ["--retries", "2"], status: 69,
            message: "source unavailable: HTTP 503 after 3 attempts", seconds: 8),
    ]

    @Test(
        "a hostile server ends the run in bounded time with its documented status; database unchanged, TMPDIR empty",
        arguments: hostileCases)
    func hostileServer(_ c: HostileCase) throws {
        let server = try HostileServer()
        defer { server.stop() }
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let before = try catalogState(db)
        let url = server.url(c.path)
        let run = try sandbox.run(["sync"] + c.options + [url], db: db, limit: c.seconds + 20)
        #expect(!run.killed && run.seconds < c.seconds, "\(run)")
        #expect(run.status == c.status, "\(run)")
        #expect(run.stderr.contains("catalog: error: " + c.message), "\(run.stderr)")
        #expect(run.stderr.contains(url), "the message names the source: \(run.stderr)")
        if let hint = c.hint { #expect(run.stderr.contains("hint: \(hint)"), "\(run.stderr)") }
        #expect(try catalogState(db) == before)
        #expect(sandbox.tmpContents.isEmpty, "left in TMPDIR: \(sandbox.tmpContents)")
        if c.status == 65, let range = run.stderr.range(of: "(stopped at ") {
            // The bytes taken in before stopping stay near the limit (one libcurl buffer past it at most).
            let stoppedAt = Int(run.stderr[range.upperBound...].prefix { $0.isNumber }) ?? .max
            let limit = Int(c.options[1]) ?? 0
            #expect(stoppedAt > limit && stoppedAt <= limit + (1 << 20), "stopped at \(stoppedAt)")
        }
    }

    @Test("the spool honours TMPDIR; a spool write that fails (disk full) is 74, never a trap")
    func spoolWriteFailure() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let before = try catalogState(db)
        let url = server.url("/stream/5000000")

        // TMPDIR is where the body goes: one that does not exist is named in a 73.
        let missing = "/nonexistent-\(UUID().uuidString)"
        let nowhere = try sandbox.run(["sync", url], db: db, environment: ["TMPDIR": missing], limit: 30)
        #expect(nowhere.status == 73, "\(nowhere)")
        #expect(nowhere.stderr.contains("cannot create a spool file in \(missing)/: No such file or directory"), "\(nowhere.stderr)")

        let small = sandbox.root.appending(path: "small-tmp")
        if let why = Mounts.tmpfs(at: small, size: "1m") {
            try Test.cancel("mounting a 1 MiB tmpfs is not permitted here (\(why)): the disk-full case is not run")
        }
        defer {
            Mounts.unmount(small)
            withExtendedLifetime(sandbox) {}
        }  // unmounted before the sandbox is removed
        let full = try sandbox.run(["sync", url], db: db, environment: ["TMPDIR": small.path], limit: 30)
        #expect(full.status == 74, "\(full)")
        #expect(
            full.stderr.contains("catalog: error: cannot write the body to a spool file in \(small.path)/: No space left on device, \(url)"),
            "\(full.stderr)")
        #expect(!full.stderr.contains("Fatal error"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: small.path).isEmpty)
        #expect(try catalogState(db) == before)
    }

    // MARK: 3 — counters

    /// A snapshot with one landmark row (id 4242) or one position row (user `u`) stamped now, carrying
    /// `counter` exactly as written.
    static func counterSnapshot(landmark: Bool, counter: String, at: String) -> String {
        landmark
            ? snapshot(landmarks: [
                #"{"id": 4242, "name": "Counter", "category": null, "city": null, "state": null, "park": null, "description": null, "imageName": null, "isFeatured": true, "isFavorite": false, "coordinates": {"latitude": 1.5, "longitude": 2.5}, "updatedAt": "\#(at)", "counter": \#(counter), "node": "n-peer", "deleted": false}"#
            ])
            : snapshot(positions: [
                #"{"user": "u", "page": 0, "landmarkId": null, "updatedAt": "\#(at)", "counter": \#(counter), "node": "n-peer", "deleted": false}"#
            ])
    }

    @Test(
        "a counter past 2^32-1 within the drift allowance is 65 with its location; nothing merged, the clock unmoved",
        arguments: ["9223372036854775807", "9223372036854775806", "9223372036854775808", "4294967296"], [true, false])
    func counterOutOfBounds(counter: String, landmark: Bool) throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let before = try catalogState(db)
        let file = try sandbox.write(Self.counterSnapshot(landmark: landmark, counter: counter, at: stampFromNow(1000)), to: "peer.json")
        let run = try sandbox.run(["sync", file], db: db)
        #expect(run.status == 65, "\(run)")
        let field = landmark ? "record 0 (id 4242), field landmarks.counter" : "record 0, field positions.counter"
        #expect(
            run.stderr.contains(
                try Regex(
                    "catalog: error: counter must be an integer in 0…4294967295, found the number \(counter), \(NSRegularExpression.escapedPattern(for: file)):[0-9]+:[0-9]+, \(NSRegularExpression.escapedPattern(for: field))"
                )),
            "\(run.stderr)")
        #expect(run.stderr.contains("\(file) is not a valid snapshot (1 error); nothing was merged from it"))
        #expect(try catalogState(db) == before)
    }

    @Test("after a sync of a counter at the bound, position set, position clear and a changing import succeed with growing stamps")
    func counterAtBound() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        func stamp(_ sql: String) throws -> HLCStamp {
            try #require(
                try Connection(path: db).firstRow(sql: sql) { HLCStamp(wallMilliseconds: $0.int(0), counter: $0.int(1), node: $0.text(2) ?? "") })
        }
        let positionStamp = "SELECT updated_ms, counter, node FROM positions WHERE user_id = 'u'"
        let file = try sandbox.write(
            snapshot(positions: [
                positionRow(
                    "u", page: 0, at: stampFromNow(60_000), counter: Int(HLCStamp.maxCounter),
                    node: "n-peer")
            ]), to: "peer.json")
        let synced = try sandbox.run(["sync", file], db: db)
        #expect(synced.status == 0, "\(synced)")
        let merged = try stamp(positionStamp)
        #expect(merged.counter == HLCStamp.maxCounter)

        let set = try sandbox.run(["position", "set", "--user", "u", "--page", "2"], db: db)
        #expect(set.status == 0, "\(set)")
        let afterSet = try stamp(positionStamp)
        let clear = try sandbox.run(["position", "clear", "--user", "u"], db: db)
        #expect(clear.status == 0, "\(clear)")
        let afterClear = try stamp(positionStamp)
        let row = try #require(try dumpRows(db, sql: "SELECT latitude, longitude FROM landmarks WHERE id = 1001").first)
        guard case .real(let latitude) = row[0], case .real(let longitude) = row[1] else {
            Issue.record("coordinates \(row)")
            return
        }
        let changed = try sandbox.write(
            #"[{"id": 1001, "name": "Renamed at the bound", "coordinates": {"latitude": \#(latitude), "longitude": \#(longitude)}}]"#,
            to: "changed.json")
        let imported = try sandbox.run(["import", changed], db: db)
        #expect(imported.status == 0, "\(imported)")
        #expect(imported.stdout.contains("1 updated"), "\(imported.stdout)")
        let afterImport = try stamp("SELECT updated_ms, counter, node FROM landmarks WHERE id = 1001")

        #expect(merged < afterSet && afterSet < afterClear && afterClear < afterImport, "\([merged, afterSet, afterClear, afterImport])")
        for s in [afterSet, afterClear, afterImport] { #expect(s.counter <= HLCStamp.maxCounter) }
        #expect(try dumpRows(db, sql: "SELECT deleted FROM positions WHERE user_id = 'u'") == [[.integer(1)]])
    }

    @Test("a database whose clock already holds a huge counter (written before the bound) still issues stamps, never traps")
    func clockStateBeyondBound() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let wall = SystemClock().nowMilliseconds() + 60_000
        try Connection(path: db).execute(sql: "UPDATE hlc_clock SET wall_ms = ?, counter = ?", [.integer(wall), .integer(Int64.max - 1)])
        let set = try sandbox.run(["position", "set", "--user", "u", "--page", "0"], db: db)
        #expect(set.status == 0, "\(set)")
        let row = try dumpRows(db, sql: "SELECT updated_ms, counter FROM positions WHERE user_id = 'u'")
        #expect(row == [[.integer(wall + 1), .integer(0)]])
    }

    // MARK: 4 — kept unknown keys named like snapshot fields

    @Test("an import record with keys updatedAt, node, counter, deleted is 65 naming each with its location; nothing written")
    func reservedKeysRefused() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let before = try catalogState(db)
        let file = try sandbox.write(
            """
            [{"id": 1, "name": "A", "coordinates": {"latitude": 1, "longitude": 2}, "isFeatured": true,
              "updatedAt": "2020-01-01T00:00:00Z", "node": "evil", "counter": 99, "deleted": true}]
            """, to: "reserved.json")
        let run = try sandbox.run(["import", file], db: db)
        #expect(run.status == 65, "\(run)")
        for (key, column) in [("updatedAt", 3), ("node", 40), ("counter", 56), ("deleted", 71)] {
            #expect(
                run.stderr.contains(
                    "catalog: error: '\(key)' is a snapshot field and cannot be a landmark key (kept, it would repeat that key in every snapshot); rename or remove it, \(file):2:\(column), record 0 (id 1), field \(key)"
                ),
                "\(key): \(run.stderr)")
        }
        #expect(run.stderr.contains("4 errors; nothing was imported"))
        #expect(try catalogState(db) == before)
    }

    @Test("a database that already holds such extras: export, --publish and featured --json never repeat a key; peers accept the snapshot")
    func reservedKeysAlreadyStored() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        // As an older binary stored them: kept unknown keys that collide with every shape's own keys.
        try Connection(path: db).execute(
            sql: """
                UPDATE landmarks SET extra = '{"counter":99,"deleted":true,"node":"evil","updatedAt":"2020-01-01T00:00:00Z","id":5,"name":"x","coordinates":1,"url":"https://example.org/kept"}'
                WHERE id IN (1001, 1003)
                """)
        let export = try sandbox.run(["export"], db: db)
        #expect(export.status == 0, "\(export)")
        #expect(try strictJSONProblem(export.stdoutBytes) == nil)
        #expect(export.stdout.contains(#""url":"https://example.org/kept""#))
        let published = sandbox.path("published.json")
        let publish = try sandbox.run(["sync", "--quiet", "--publish", published], db: db)
        #expect(publish.status == 0, "\(publish)")
        #expect(try strictJSONProblem(Array(Data(contentsOf: URL(fileURLWithPath: published)))) == nil)

        let featured = try sandbox.run(["featured", "--json"], db: db)
        #expect(featured.status == 0, "\(featured)")
        #expect(try strictJSONProblem(featured.stdoutBytes) == nil)
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(featured.stdoutBytes)) as? [[String: Any]])
        #expect(!objects.isEmpty)
        for object in objects {
            for key in ["deleted", "counter", "node", "updatedAt"] { #expect(object[key] == nil, "\(key) in \(object)") }
        }
        let halfDome = try #require(objects.first { $0["id"] as? Int == 1001 })
        #expect(halfDome["name"] as? String == "Half Dome" && halfDome["url"] as? String == "https://example.org/kept")

        // One bad row no longer stops replication: a peer merges the published snapshot.
        let peer = sandbox.path("peer.sqlite")
        let merged = try sandbox.run(["sync", "--json", published], db: peer)
        #expect(merged.status == 0, "\(merged)")
        #expect(
            try dumpRows(peer, sql: "SELECT name, extra FROM landmarks WHERE id = 1001") == [
                [.text("Half Dome"), .text(#"{"url":"https://example.org/kept"}"#)]
            ])
    }

    // MARK: 5 — temporaries of killed writers

    /// A database of 100,000 landmarks (an export of about 70 MB), built with SQL in a second or two:
    /// big enough that a writer can be killed mid-write. (Benchmarks/generate.py plus an import takes
    /// half a minute in a debug build.)
    static func bigDatabase(_ sandbox: Sandbox) throws -> String {
        let db = try sandbox.seededDatabase("big.sqlite")
        try Connection(path: db).execute(
            sql: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
                INSERT INTO landmarks (id, name, category, city, state, park, description, image_name, is_featured, is_favorite,
                                       latitude, longitude, extra, updated_ms, counter, node, deleted, seq)
                SELECT 100000 + i, 'Landmark ' || i, 'Lakes', 'Anchorage', 'Alaska', NULL, substr(hex(randomblob(320)), 1, 640), 'img', 0, 0,
                       61.2, -149.9, NULL, 1700000000000 + i, 0, 'n-big', 0, 1000 + i FROM n
                """)
        return db
    }

    /// Waits until `writer` has a temporary for `name` in `directory` holding at least 1 MiB, and returns
    /// the temporary's name.
    static func temporary(of writer: StartedProcess, for name: String, in directory: URL) throws -> String {
        let deadline = Date().addingTimeInterval(30)
        let prefix = ".\(name)\(AtomicFileWriter.marker)\(AtomicFileWriter.hostTag)-\(writer.pid)-"
        while Date() < deadline {
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where entry.hasPrefix(prefix) {
                let size = (try? FileManager.default.attributesOfItem(atPath: directory.appending(path: entry).path)[.size] as? Int) ?? 0
                if size >= 1 << 20 { return entry }
            }
            guard writer.process.isRunning else {
                throw CatalogError(.software, "the writer ended before it was seen mid-write: \(writer.finish())")
            }
            usleep(2_000)
        }
        throw CatalogError(.software, "no temporary for \(name) appeared in \(directory.path)")
    }

    @Test("kill -9 of export --output and of sync --publish FILE mid-write: the next writer removes the stale temporary, never a live writer's")
    func staleTemporaries() throws {
        let sandbox = try Sandbox()
        let big = try Self.bigDatabase(sandbox)
        let small = try sandbox.seededDatabase()
        let exports = sandbox.root.appending(path: "exports")
        let publishes = sandbox.root.appending(path: "publishes")
        for dir in [exports, publishes] { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        func exists(_ dir: URL, _ name: String) -> Bool { FileManager.default.fileExists(atPath: dir.appending(path: name).path) }
        let pattern = try Regex(
            #"^\.snap\.json\.tmp-catalog-"# + NSRegularExpression.escapedPattern(for: AtomicFileWriter.hostTag) + #"-[0-9]+-[0-9a-f]{8}$"#)

        // export --output, killed mid-write.
        let victim = try sandbox.start(["export", "--output", exports.appending(path: "snap.json").path], db: big)
        defer { victim.stop() }
        let stale = try Self.temporary(of: victim, for: "snap.json", in: exports)
        kill(victim.pid, SIGKILL)
        #expect(victim.finish().status == 128 + SIGKILL)
        #expect(stale.wholeMatch(of: pattern) != nil, "\(stale)")
        #expect(exists(exports, stale) && !exists(exports, "snap.json"))

        // sync --publish FILE, killed mid-write.
        let bigCopy = sandbox.path("big-copy.sqlite")
        try FileManager.default.copyItem(atPath: big, toPath: bigCopy)
        let publisher = try sandbox.start(["sync", "--quiet", "--publish", publishes.appending(path: "peer.json").path], db: bigCopy)
        defer { publisher.stop() }
        let stalePublish = try Self.temporary(of: publisher, for: "peer.json", in: publishes)
        kill(publisher.pid, SIGKILL)
        #expect(publisher.finish().status == 128 + SIGKILL)
        #expect(exists(publishes, stalePublish))

        // Temporaries that are not stale: a live writer's (a real export in progress, and one named after a
        // live process), and one from another host (whose processes this host cannot see).
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["60"]
        try sleeper.run()
        defer {
            kill(sleeper.processIdentifier, SIGKILL)
            sleeper.waitUntilExit()
        }  // SIGTERM may be blocked in children of the test process
        let liveName = ".snap.json\(AtomicFileWriter.marker)\(AtomicFileWriter.hostTag)-\(sleeper.processIdentifier)-0badc0de"
        let otherHost = ".snap.json\(AtomicFileWriter.marker)some-other-host-\(victim.pid)-0badc0de"
        for name in [liveName, otherHost] { try Data("partial".utf8).write(to: exports.appending(path: name)) }
        let live = try sandbox.start(["export", "--output", exports.appending(path: "live.json").path], db: big)
        defer { live.stop() }
        let liveTemporary = try Self.temporary(of: live, for: "live.json", in: exports)

        let next = try sandbox.run(["export", "--output", exports.appending(path: "snap.json").path], db: small)
        #expect(next.status == 0, "\(next)")
        let liveWasWriting = live.process.isRunning
        #expect(!exists(exports, stale), "the killed export's temporary is still there")
        #expect(exists(exports, liveName) && exists(exports, otherHost))
        #expect(liveWasWriting, "the live export ended before the next writer looked: make the big catalog bigger")
        if liveWasWriting { #expect(exists(exports, liveTemporary), "a live writer's temporary was removed") }
        #expect(try strictJSONProblem(Array(Data(contentsOf: exports.appending(path: "snap.json")))) == nil)
        let liveRun = live.finish()
        #expect(liveRun.status == 0, "the live export failed: \(liveRun)")
        #expect(exists(exports, "live.json") && !exists(exports, liveTemporary))

        let nextPublish = try sandbox.run(["sync", "--quiet", "--publish", publishes.appending(path: "peer.json").path], db: small)
        #expect(nextPublish.status == 0, "\(nextPublish)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: publishes.path) == ["peer.json"])
        #expect(sandbox.tmpContents.isEmpty)
    }

    // MARK: 6 — tie accounting and noise

    @Test("seen = applied + stale + quarantined on every path; a tie settled once is not reported again (stderr empty with --quiet)")
    func tieAccounting() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let t = stampFromNow(-3_600_000)
        let first = try sandbox.write(
            snapshot(
                landmarks: [landmarkRow(5, name: "Alpha", at: t, node: "n-a")],
                positions: [
                    positionRow("a", page: 1, at: t, node: "n-a"),
                    positionRow("b", page: 1, at: t, node: "n-a", deleted: true),
                    positionRow("c", page: 1, at: t, node: "n-a"),
                ]), to: "first.json")
        let second = try sandbox.write(
            snapshot(
                landmarks: [landmarkRow(5, name: "Beta", at: t, node: "n-a")],
                positions: [
                    positionRow("a", page: 1, at: t, node: "n-a", deleted: true),  // tie, tombstone wins: applied
                    positionRow("b", page: 1, at: t, node: "n-a"),  // tie, stored tombstone wins: stale
                    positionRow("c", page: 1, at: t, node: "n-a"),  // repeated: stale
                    positionRow("d", page: 1, at: stampFromNow(86_400_000), node: "n-a"),  // quarantined
                    positionRow("e", page: 1, at: t, node: "n-a"),
                ]), to: "second.json")
        struct Counts: Equatable { var seen, applied, stale, quarantined, ties: Int }
        func counts(_ run: BinaryRun) throws -> Counts {
            let j = try jsonObject(run.stdout)
            func n(_ key: String) -> Int { j[key] as? Int ?? -1 }
            let c = Counts(
                seen: n("landmarksSeen") + n("positionsSeen"), applied: n("landmarksApplied") + n("positionsApplied"),
                stale: n("stale"), quarantined: n("quarantined"), ties: n("ties"))
            #expect(c.seen == c.applied + c.stale + c.quarantined, "\(c)")
            return c
        }
        let dryCopy = sandbox.path("dry.sqlite")
        #expect(try counts(sandbox.run(["sync", "--json", first], db: db)) == Counts(seen: 4, applied: 4, stale: 0, quarantined: 0, ties: 0))
        try FileManager.default.copyItem(atPath: db, toPath: dryCopy)

        let settled = try sandbox.run(["sync", "--json", second], db: db)
        #expect(settled.status == 0, "\(settled)")
        #expect(try counts(settled) == Counts(seen: 6, applied: 3, stale: 2, quarantined: 1, ties: 3))
        for line in ["tie on position a", "tie on position b", "tie on landmark 5", "quarantined position d"] {
            #expect(settled.stderr.contains(line), "\(line): \(settled.stderr)")
        }
        // The same snapshot again, as cron delivers it every five minutes (rewritten by the peer, so read
        // again: an unchanged file is skipped by its cursor): nothing new to say.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(5)], ofItemAtPath: second)
        let again = try sandbox.run(["sync", "--quiet", second], db: db)
        #expect(again.status == 0 && again.stderr.isEmpty && again.stdout.isEmpty, "\(again)")
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(10)], ofItemAtPath: second)
        let againJSON = try sandbox.run(["sync", "--json", second], db: db)
        #expect(try counts(againJSON) == Counts(seen: 6, applied: 0, stale: 5, quarantined: 1, ties: 1))
        #expect(againJSON.stderr.isEmpty, "\(againJSON.stderr)")

        // Dry run, standard input, and a failing source beside a good one: the counts still add up.
        let before = try catalogState(dryCopy)
        let dry = try sandbox.run(["sync", "--json", "--dry-run", second], db: dryCopy)
        #expect(try counts(dry) == Counts(seen: 6, applied: 3, stale: 2, quarantined: 1, ties: 3))
        #expect(try catalogState(dryCopy) == before)
        let stdin = try sandbox.run(["sync", "--json", "-"], db: dryCopy, stdin: try String(contentsOfFile: second, encoding: .utf8))
        #expect(try counts(stdin) == Counts(seen: 6, applied: 3, stale: 2, quarantined: 1, ties: 3))
        let mixed = try sandbox.run(["sync", "--json", sandbox.path("missing.json"), first], db: sandbox.path("fresh.sqlite"))
        #expect(mixed.status == 66, "\(mixed)")
        #expect(try counts(mixed) == Counts(seen: 4, applied: 4, stale: 0, quarantined: 0, ties: 0))

        // The run ledger adds up too, per run and per source.
        for table in ["sync_runs", "sync_run_sources"] {
            let rows = try dumpRows(
                db, sql: "SELECT landmarks_seen + positions_seen, landmarks_applied + positions_applied + stale + quarantined FROM \(table)")
            #expect(rows.count == 4)
            for row in rows { #expect(row[0] == row[1], "\(table): \(row)") }
        }
    }

    // MARK: 7 and 10h — the sync lock through a symbolic link; the busy run in the ledger

    /// Waits until the sync process `pid` has written its name into the lock file of `db`.
    static func waitForHolder(_ db: String, pid: Int32) throws {
        let deadline = Date().addingTimeInterval(20)
        let lock = SyncLock.lockPath(for: db)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: lock, encoding: .utf8), text.hasPrefix("pid \(pid) ") { return }
            usleep(10_000)
        }
        throw CatalogError(.software, "sync \(pid) never took the lock \(lock)")
    }

    @Test("a sync through a symbolic link to a database being synced exits 75 naming the holder, and is in the run ledger")
    func lockThroughSymbolicLink() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let link = sandbox.path("link.sqlite")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: db)
        let source = try sandbox.write(snapshot(positions: [positionRow("locked", page: 0, at: stampFromNow(-1000))]), to: "peer.json")
        let intruder = try sandbox.write(snapshot(positions: [positionRow("intruder", page: 0, at: stampFromNow(-1000))]), to: "other.json")
        let holder = try sandbox.start(
            ["sync", "--quiet", source], db: db, binary: Support.harnessBinary,
            environment: ["CATALOG_TEST_PAUSE_BEFORE_COMMIT_MS": "3000"])
        defer { holder.stop() }
        try Self.waitForHolder(db, pid: holder.pid)
        let second = try sandbox.run(["sync", intruder], db: link)
        #expect(second.status == 75, "\(second)")
        #expect(second.stderr.contains("catalog: error: another sync is running on this database (pid \(holder.pid) on "), "\(second.stderr)")
        #expect(second.stderr.contains("hint: it exits 75 so cron retries at the next run; nothing was changed"))
        // It waits at most for the holder's open transaction, to write its ledger row (the busy timeout is 5 s).
        #expect(second.seconds < 6, "\(second)")
        let first = holder.finish()
        #expect(first.status == 0, "\(first)")
        // The holder merged its source; the second run merged nothing.
        #expect(try dumpRows(db, sql: "SELECT user_id FROM positions WHERE user_id IN ('locked', 'intruder')") == [[.text("locked")]])
        let ledger = try dumpRows(db, sql: "SELECT outcome, exit_status, message LIKE 'another sync is running%' FROM sync_runs ORDER BY id")
        #expect(ledger.contains([.text("busy"), .integer(75), .integer(1)]), "\(ledger)")
        #expect(ledger.contains([.text("ok"), .integer(0), .null]), "\(ledger)")

        // What docs/operations.md §9 says of hard links: another name with its own real path, so its own lock file.
        let hard = sandbox.path("hard.sqlite")
        try FileManager.default.linkItem(atPath: db, toPath: hard)
        #expect(SyncLock.lockPath(for: hard) != SyncLock.lockPath(for: db))
        #expect(SyncLock.lockPath(for: link) == SyncLock.lockPath(for: db))
    }

    // MARK: 8 — the concurrent first run

    @Test("import, sync, init and remote add started together on a new database: 0 failures in 50 trials")
    func concurrentFirstRun() throws {
        let sandbox = try Sandbox()
        let seeds = Support.root.appending(path: "Seeds/landmarkData.json").path
        let source = try sandbox.write(snapshot(positions: [positionRow("first", page: 0, at: stampFromNow(-1000))]), to: "peer.json")
        let started = Date()
        var failures: [String] = []
        for trial in 0..<50 {
            // A directory that does not exist yet either, as on a fresh machine.
            let db = sandbox.path("trial-\(trial)/data/catalog.sqlite")
            let commands = [
                ["import", seeds], ["sync", "--quiet", source], ["init"], ["remote", "add", "origin", "https://example.org/peer.json"],
            ]
            let processes = try commands.map { try sandbox.start($0, db: db) }
            for (command, run) in zip(commands, processes.map { $0.finish(limit: 30) }) where run.status != 0 {
                failures.append("trial \(trial) \(command[0]): \(run)")
            }
            let counts = try dumpRows(db, sql: "SELECT (SELECT count(*) FROM landmarks), (SELECT count(*) FROM positions)")
            if counts != [[.integer(16), .integer(1)]] { failures.append("trial \(trial): \(counts)") }
        }
        #expect(failures.isEmpty, "\(failures.count) failures: \(failures.prefix(5))")
        #expect(Date().timeIntervalSince(started) < 60)
        #expect(sandbox.tmpContents.isEmpty)
    }

    // MARK: 9 — read-only media

    /// The reading commands of issue 8, item 9.
    static let readingCommands = [["featured"], ["positions"], ["status"], ["export"], ["remote", "list"], ["migrate", "--status"]]

    @Test("on a read-only file system the reading commands work (opened immutable); writing says the mount is read-only")
    func readOnlyFileSystem() throws {
        let sandbox = try Sandbox()
        let original = try sandbox.seededDatabase()
        #expect(try sandbox.run(["remote", "add", "origin", "https://example.org/peer.json"], db: original).status == 0)
        let media = sandbox.root.appending(path: "media")
        if let why = Mounts.tmpfs(at: media, size: "16m") {
            try Test.cancel("mounting a tmpfs is not permitted here (\(why)): the read-only file system case is not run")
        }
        defer {
            Mounts.unmount(media)
            withExtendedLifetime(sandbox) {}
        }  // unmounted before the sandbox is removed
        let db = media.appending(path: "catalog.sqlite").path
        try FileManager.default.copyItem(atPath: original, toPath: db)
        if let why = Mounts.remountReadOnly(media) { try Test.cancel("remounting read-only is not permitted here (\(why))") }

        for command in Self.readingCommands {
            let expected = try sandbox.run(command, db: original)
            let run = try sandbox.run(command, db: db)
            #expect(run.status == 0 && run.stderr.isEmpty, "\(command): \(run)")
            #expect(run.stdout == expected.stdout.replacingOccurrences(of: original, with: db), "\(command)")
            #expect(!run.stdout.isEmpty || command == ["positions"], "\(command)")
        }
        let write = try sandbox.run(["position", "set", "--user", "bob", "--page", "0"], db: db)
        #expect(write.status == 73, "\(write)")
        #expect(write.stderr.contains("catalog: error: cannot open or write the database: the file system is mounted read-only ("), "\(write.stderr)")
        #expect(
            write.stderr.contains("hint: the reading commands (featured, positions, status, export, remote list, migrate --status) still work there"))
        let output = try sandbox.run(["export", "--output", media.appending(path: "out.json").path], db: original)
        #expect(output.status == 73 && output.stderr.contains("cannot create a file in \(media.path) (Read-only file system)"), "\(output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: media.path) == ["catalog.sqlite"])
    }

    @Test(
        "in a directory this user cannot write (run as nobody) the reading commands say why and how to fix it; a read-only file in a writable directory is read",
        .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser"), "needs root and runuser(8) to run as nobody")
    )
    func readOnlyDirectory() throws {
        let sandbox = try Sandbox()
        let directory = sandbox.root.appending(path: "shared")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let db = try sandbox.seededDatabase("shared/catalog.sqlite")
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: directory.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path) }
        for command in Self.readingCommands {
            let run = try sandbox.run(command, db: db, user: "nobody")
            #expect(run.status == 73 && run.stdout.isEmpty, "\(command): \(run)")
            #expect(
                run.stderr.contains(
                    "catalog: error: cannot read the database: SQLite needs to create \(db)-shm beside a WAL database and the directory \(directory.path) is not writable by this user"
                ),
                "\(command): \(run.stderr)")
            #expect(run.stderr.contains("hint: run as the database's owner, or give this user write access to the directory"), "\(command)")
        }
        let write = try sandbox.run(["position", "set", "--user", "bob", "--page", "0"], db: db, user: "nobody")
        #expect(write.status == 73, "\(write)")
        #expect(write.stderr.contains("cannot open or write the database: this user cannot write the database file ("), "\(write.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["catalog.sqlite"])

        // The directory writable, the file not: SQLite can make its -shm, so reading works.
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path)
        let featured = try sandbox.run(["featured"], db: db, user: "nobody")
        let expected = try sandbox.run(["featured"], db: db)
        #expect(featured.status == 0 && featured.stdout == expected.stdout && !featured.stdout.isEmpty, "\(featured)")
    }

    // MARK: 10 — the smaller defects

    @Test("sync ftp://x/y is 64, unsupported scheme, as remote add says; nothing recorded")
    func unsupportedScheme() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let before = try catalogState(db)
        for command in [["sync", "ftp://x/y"], ["remote", "add", "r", "ftp://x/y"]] {
            let run = try sandbox.run(command, db: db)
            #expect(run.status == 64, "\(command): \(run)")
            #expect(run.stderr.contains("catalog: error: unsupported scheme 'ftp://' in SOURCE ftp://x/y"), "\(run.stderr)")
            #expect(
                run.stderr.contains(
                    "hint: a SOURCE is a path, file://, http://, https://, postgres://, postgresql://, 'host=H dbname=D', catalog+https://, catalog+http:// (loopback only), - or a saved remote's name"
                )
            )
        }
        #expect(
            try dumpRows(db, sql: "SELECT (SELECT count(*) FROM sync_sources), (SELECT count(*) FROM sync_remotes)") == [[.integer(0), .integer(0)]])
        #expect(try catalogState(db) == before)
    }

    @Test("export --output \"\" and sync --publish \"\" are 64 with a clear message; nothing written")
    func emptyOutputPath() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let files = try FileManager.default.contentsOfDirectory(atPath: sandbox.root.path).sorted()
        for (command, option) in [(["export", "--output", ""], "--output"), (["sync", "--publish", ""], "--publish")] {
            let run = try sandbox.run(command, db: db)
            #expect(run.status == 64, "\(run)")
            #expect(run.stderr.hasPrefix("catalog: error: \(option) needs a non-empty value, got ''\n"), "\(run.stderr)")
            #expect(!run.stderr.contains("cannot replace"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.root.path).sorted() == files)
    }

    @Test(
        "a duplicate top-level key in a snapshot is 65 with its location, as inside rows; nothing merged",
        arguments: ["positions", "format", "landmarks"])
    func duplicateTopLevelKey(key: String) throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let before = try catalogState(db)
        let row = positionRow("dup", page: 0, at: stampFromNow(-1000))
        let members: [String: String] = [
            "positions": #""positions": [], "positions": [\#(row)]"#,
            "format": #""format": "landmark-catalog-snapshot", "format": "landmark-catalog-snapshot", "positions": [\#(row)]"#,
            "landmarks": #""landmarks": [], "positions": [\#(row)], "landmarks": []"#,
        ]
        let file = try sandbox.write(#"{"format": "landmark-catalog-snapshot", "version": 1, "node": "n-x", \#(members[key] ?? "")}"#, to: "dup.json")
        let run = try sandbox.run(["sync", file], db: db)
        #expect(run.status == 65, "\(run)")
        #expect(
            run.stderr.contains(
                try Regex(
                    "catalog: error: duplicate top-level key '\(key)' in a snapshot, \(NSRegularExpression.escapedPattern(for: file)):1:[0-9]+, field \(key)"
                )),
            "\(run.stderr)")
        #expect(run.stderr.contains("nothing was merged from it"))
        #expect(try catalogState(db) == before)
    }

    @Test("a 304 from a source that never sent validators is 69, and status does not record it as a good sync")
    func notModifiedWithoutValidators() throws {
        let server = try HostileServer()
        defer { server.stop() }
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let before = try catalogState(db)
        let url = server.url("/not-modified")
        let run = try sandbox.run(["sync", url], db: db)
        #expect(run.status == 69, "\(run)")
        #expect(
            run.stderr.contains("catalog: error: source unavailable: answered 304 Not Modified to an unconditional request, \(url)"), "\(run.stderr)")
        #expect(try catalogState(db) == before)
        #expect(sandbox.tmpContents.isEmpty)
        let status = try jsonObject(sandbox.run(["status", "--json"], db: db).stdout)
        let lastRun = try #require(status["lastRun"] as? [String: Any])
        #expect(lastRun["outcome"] as? String == "failed" && lastRun["exitStatus"] as? Int == 69, "\(lastRun)")
        let sources = try #require(status["sources"] as? [[String: Any]])
        let entry = try #require(sources.first { $0["source"] as? String == url }, "\(sources)")
        #expect(entry["lastSuccessAt"] is NSNull, "\(entry)")
        #expect(entry["lastOutcome"] as? String == "failed" && entry["lastStatus"] as? Int == 69, "\(entry)")
        #expect(try sandbox.run(["status"], db: db).stdout.contains("source:      \(url) last good never; last attempt failed"))
    }

    @Test("http://user:pass@… never shows the password: stdout, stderr, status, status --json, remote list, the run ledger")
    func passwordNeverShown() throws {
        let secret = "s3cret-Pa55"
        let hostile = try HostileServer()
        defer { hostile.stop() }
        let directory = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try snapshot(positions: [positionRow("pw", page: 0, at: stampFromNow(-1000))]).write(
            to: directory.appending(path: "peer.json"), atomically: true, encoding: .utf8)
        let files = try TestHTTPServer(directory: directory)
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let good = "http://alice:\(secret)@127.0.0.1:\(files.port)/files/peer.json"
        var outputs: [BinaryRun] = []
        func run(_ arguments: [String], _ status: Int32) throws {
            let r = try sandbox.run(arguments, db: db, environment: ["CATALOG_TEST_BACKOFF_SECONDS": "0.05"])
            #expect(r.status == status, "\(arguments.map { $0.replacingOccurrences(of: secret, with: "<secret>") }): exit \(r.status)")
            outputs.append(r)
        }
        try run(["sync", "--json", good], 0)
        try run(["sync", good], 0)  // 304: validators sent back
        try run(["sync", hostile.url("/status/404", userInfo: "alice:\(secret)")], 69)
        try run(["sync", hostile.url("/redirect-file", userInfo: "alice:\(secret)")], 69)
        try run(["sync", "--retries", "1", hostile.url("/flaky/1", userInfo: "alice:\(secret)")], 65)  // a retry line, then not a snapshot
        try run(["--log-format", "json", "sync", "--json", hostile.url("/status/500", userInfo: "alice:\(secret)"), "--retries", "1"], 69)
        try run(["remote", "add", "origin", good], 0)
        try run(["sync"], 0)
        try run(["remote", "list"], 0)
        try run(["remote", "list", "--json"], 0)
        try run(["status"], 0)
        try run(["status", "--json"], 0)
        for r in outputs {
            #expect(!r.stdout.contains(secret) && !r.stderr.contains(secret), "the password was shown")
        }
        let shown = outputs.map { $0.stdout + $0.stderr }.joined()
        #expect(shown.contains("http://alice:***@127.0.0.1:\(files.port)/files/peer.json"))
        #expect(shown.contains("retry 1 of 1"), "the retry line was checked too")
        for table in ["sync_runs", "sync_sources", "sync_run_sources", "sync_quarantine", "sync_conflicts"] {
            let cells = try dumpRows(db, sql: "SELECT * FROM \(table)").flatMap { $0 }
            #expect(!cells.contains { if case .text(let s) = $0 { s.contains(secret) } else { false } }, "\(table) holds the password")
        }
        #expect(try dumpRows(db, sql: "SELECT count(*) FROM sync_runs") == [[.integer(7)]])
        withExtendedLifetime(files) {}
    }

    @Test("control characters in a landmark name are escaped by featured (table) and kept by featured --json; a key's on stderr too")
    func controlCharacters() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let name = "Evil\u{1B}[31mRed\u{07}\u{9B}end"
        let file = try sandbox.write(
            #"[{"id": 7, "name": "Evil\u001b[31mRed\u0007\u009bend", "isFeatured": true, "\u001b]0;pwned\u0007": 1, "coordinates": {"latitude": 1, "longitude": 2}}]"#,
            to: "evil.json")
        let imported = try sandbox.run(["import", file], db: db)
        #expect(imported.status == 0, "\(imported)")
        #expect(imported.stderr.contains(#"unknown key '\u{1B}]0;pwned\u{7}' is kept"#), "\(imported.stderr)")
        func raw(_ text: String) -> [Unicode.Scalar] {
            text.unicodeScalars.filter { $0 != "\n" && ($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) }
        }
        #expect(raw(imported.stderr).isEmpty)
        for command in [["featured"], ["featured", "--user", "ann"]] {
            let table = try sandbox.run(command, db: db)
            #expect(table.status == 0, "\(table)")
            #expect(table.stdout.contains(#"Evil\u{1B}[31mRed\u{7}\u{9B}end"#), "\(table.stdout)")
            #expect(raw(table.stdout).isEmpty, "raw control characters: \(raw(table.stdout))")
        }
        let json = try sandbox.run(["featured", "--json"], db: db)
        #expect(json.status == 0, "\(json)")
        #expect(try strictJSONProblem(json.stdoutBytes) == nil)
        #expect(!json.stdoutBytes.contains(0x1B) && !json.stdoutBytes.contains(0x07))
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.stdoutBytes)) as? [[String: Any]])
        let evil = try #require(objects.first { $0["id"] as? Int == 7 })
        #expect(evil["name"] as? String == name)
        #expect(evil["\u{1B}]0;pwned\u{07}"] as? Int == 1)
    }

    @Test("a lone surrogate in name before id names the record's id: record 0 (id 7)")
    func loneSurrogateBeforeID() throws {
        let sandbox = try Sandbox()
        let db = try sandbox.seededDatabase()
        let before = try catalogState(db)
        let file = try sandbox.write(#"[{"name":"\ud800","id":7,"coordinates":{"latitude":1,"longitude":2}}]"#, to: "surrogate.json")
        let run = try sandbox.run(["import", file], db: db)
        #expect(run.status == 65, "\(run)")
        #expect(
            run.stderr.contains(#"catalog: error: name contains a lone surrogate escape \ud800, \#(file):1:11, record 0 (id 7), field name"#),
            "\(run.stderr)")
        #expect(try catalogState(db) == before)
    }
}
