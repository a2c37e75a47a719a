import CatalogTestSupport
import Foundation
import Testing

@_spi(Testing) @testable import CatalogCLI
@testable import LandmarkCatalog

// Issue 17: what a new operator tripped over — each test starts from the input that broke it.

@Suite("Operator contracts: a command that fails before it writes creates nothing")
struct CreatesNothingTests {
    /// Whether `db` or anything beside it exists (its WAL, its lock, its directory).
    func leftovers(_ db: String) -> [String] {
        let directory = URL(fileURLWithPath: db).deletingLastPathComponent().path
        return (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    }

    @Test("import nothere.json: 66, and no database (nor its directory) is created", arguments: [false, true])
    func importMissing(_ dryRun: Bool) {
        let root = Support.temporaryDirectory()
        let db = root.appending(path: "new/catalog.sqlite").path
        let missing = root.appending(path: "nothere.json").path
        let result = runCLI(["import", missing] + (dryRun ? ["--dry-run"] : []), db: db)
        #expect(result.status == 66)
        #expect(result.stderr == "catalog: error: cannot open the file (No such file or directory), \(missing)\n")
        #expect(!FileManager.default.fileExists(atPath: root.appending(path: "new").path))
    }

    @Test("import nothere.json without --db: ~/.local/share/landmark-catalog/ is not made")
    func importMissingDefaultPath() {
        let home = Support.temporaryDirectory()
        let result = runCLI(["import", home.appending(path: "nothere.json").path], environment: ["HOME": home.path])
        #expect(result.status == 66)
        #expect(!FileManager.default.fileExists(atPath: home.appending(path: ".local").path))
    }

    @Test("import of a directory: 66, nothing created")
    func importDirectory() {
        let root = Support.temporaryDirectory()
        let db = root.appending(path: "new/catalog.sqlite").path
        #expect(runCLI(["import", root.path], db: db).status == 66)
        #expect(!FileManager.default.fileExists(atPath: root.appending(path: "new").path))
    }

    @Test(
        "sync with only missing files, or with nothing to sync: no database",
        arguments: [
            ["sync", "MISSING"], ["sync", "MISSING", "MISSING2"], ["sync", "--json", "MISSING"], ["sync"],
            ["remote", "remove", "peer"], ["remote", "add", "bad name", "/x.json"], ["remote", "add", "peer", "gopher://x"],
            ["init", "--node", "bad node"],
        ])
    func syncMissing(_ arguments: [String]) throws {
        let root = Support.temporaryDirectory()
        let db = root.appending(path: "new/catalog.sqlite").path
        let args = arguments.map { $0 == "MISSING" ? root.appending(path: "nothere.json").path : $0 == "MISSING2" ? "nothere2.json" : $0 }
        let result = runCLI(args, db: db)
        #expect(result.status != 0)
        #expect(!FileManager.default.fileExists(atPath: root.appending(path: "new").path), "\(arguments): \(result)")
        if arguments == ["sync", "MISSING"] {
            #expect(result.status == 66)
            #expect(
                result.stderr == """
                    catalog: error: cannot open the file (No such file or directory), \(root.appending(path: "nothere.json").path)
                    hint: nothing was created: there is no database at \(db) yet

                    """)
        }
        if arguments.contains("--json") {
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            #expect(object?["exitStatus"] as? Int == 66)
        }
    }

    @Test("sync with one missing file and one good one: the database is made, the good one merged, the missing one fails alone")
    func syncOneMissing() throws {
        let root = Support.temporaryDirectory()
        let db = root.appending(path: "new/catalog.sqlite").path
        let good = try writeTemporary(positionsSnapshot(2, at: "2026-11-29T10:00:00Z"))
        let result = runCLI(["sync", root.appending(path: "nothere.json").path, good], db: db)
        #expect(result.status == 66)
        #expect(try Positions(CatalogStore.open(path: db)).positions().count == 2)
    }

    @Test("sync --publish with a missing file: the node still publishes (a write), so the database is made")
    func syncPublishes() throws {
        let root = Support.temporaryDirectory()
        let db = root.appending(path: "new/catalog.sqlite").path
        let result = runCLI(["sync", root.appending(path: "nothere.json").path, "--publish", root.appending(path: "log").path], db: db)
        #expect(result.status == 66)
        #expect(FileManager.default.fileExists(atPath: db))
        #expect(FileManager.default.fileExists(atPath: root.appending(path: "log/manifest.json").path))
    }
}

@Suite("Operator contracts: status --check, status and the metrics agree on the last run (docs/operations.md §3)")
struct LastRunAgreementTests {
    @Test("--max-age 1h after one failed run whose source synced 3 s before: healthy, and the line says the last run failed")
    func failedRunFreshSource() throws {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        func cli(_ arguments: [String]) -> CLIResult { runCLI(arguments, db: db, clock: clock) }
        let good = try writeTemporary(positionsSnapshot(3, at: "2026-11-29T10:00:00Z"))
        #expect(cli(["sync", good]).status == 0)
        clock.advance(3000)
        try FileManager.default.removeItem(atPath: good)
        #expect(cli(["sync", good]).status == 66)
        let failure = "the last sync (run 2, finished \(at(3))) failed with exit 66: cannot open the file (No such file or directory), \(good)"

        let lenient = cli(["status", "--check", "--max-age", "1h"])
        #expect(lenient.status == 0, "\(lenient.stderr)")
        #expect(lenient.stdout == "healthy: \(failure); its source had a good sync within 1 h\n")
        #expect(lenient.stderr == "")
        // Without --max-age a failed last run is unhealthy.
        let strict = cli(["status", "--check"])
        #expect(strict.status == 69)
        #expect(strict.stderr == "catalog: error: unhealthy: \(failure)\n")
        // Past the age it is stale, and the line says the last run failed too.
        clock.advance(3_600_000)
        let stale = cli(["status", "--check", "--max-age", "1h"])
        #expect(stale.status == 69)
        #expect(stale.stderr == "catalog: error: unhealthy: \(failure); source \(good) last had a good sync at \(at(0)), 1 h ago (more than 1 h)\n")
    }

    @Test("a run that found the lock held (75) is not the last run for status, --check and the metrics alike")
    func busyRun() throws {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        func cli(_ arguments: [String]) -> CLIResult { runCLI(arguments, db: db, clock: clock) }
        let good = try writeTemporary(positionsSnapshot(3, at: "2026-11-29T10:00:00Z"))
        #expect(cli(["sync", good]).status == 0)
        clock.advance(5000)
        let lock = try SyncLock.acquire(databasePath: db, now: 0)
        #expect(cli(["sync", good]).status == 75)
        withExtendedLifetime(lock) {}
        #expect(try CatalogMonitor(CatalogStore.open(path: db)).syncRuns(limit: 1).first?.outcome == "busy")

        #expect(cli(["status"]).stdout.contains("last sync:   \(at(0)) ok (exit 0)\n"))
        let json = try JSONSerialization.jsonObject(with: Data(cli(["status", "--json"]).stdout.utf8)) as? [String: Any]
        let lastRun = try #require(json?["lastRun"] as? [String: Any])
        #expect(lastRun["outcome"] as? String == "ok" && lastRun["exitStatus"] as? Int == 0, "\(lastRun)")
        #expect(cli(["status", "--check"]).stdout == "healthy: the last sync (run 1) finished at \(at(0)) (ok)\n")
        let metrics = cli(["status", "--prometheus"]).stdout
        #expect(metrics.contains("catalog_last_run_exit_status 0\n") && metrics.contains("catalog_last_run_success 1\n"), "\(metrics)")
        // The ledger still shows the busy run.
        #expect(cli(["log"]).stdout.hasPrefix("run 2  \(at(5))  busy (exit 75)"))
    }
}

@Suite("Operator contracts: a saved remote's name beside its URL")
struct RemoteNameTests {
    @Test("status, status --json, log, log --json, sync --json, --check and the metrics (remote=\"…\") name the remote")
    func everywhere() throws {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        func cli(_ arguments: [String]) -> CLIResult { runCLI(arguments, db: db, clock: clock) }
        let good = try writeTemporary(positionsSnapshot(2, at: "2026-11-29T10:00:00Z"))
        let other = try writeTemporary(positionsSnapshot(1, at: "2026-11-29T10:00:00Z", prefix: "v"))
        #expect(cli(["remote", "add", "peer", good]).status == 0)

        let synced = cli(["sync", "--json", "peer", other])
        #expect(synced.status == 0, "\(synced.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(synced.stdout.utf8)) as? [String: Any]
        let sources = (report?["sources"] as? [[String: Any]] ?? []).map { ($0["source"] as? String ?? "", $0["remote"] as? String) }
        #expect(sources.count == 2 && sources[0] == (good, "peer") && sources[1].0 == other && sources[1].1 == nil, "\(sources)")
        #expect(synced.stdout.contains("\"remote\":null"))

        let status = cli(["status"]).stdout
        #expect(status.contains("source:      peer (\(good)) last good \(at(0)); last attempt merged\n"), "\(status)")
        #expect(status.contains("source:      \(other) last good"))
        let statusJSON = try JSONSerialization.jsonObject(with: Data(cli(["status", "--json"]).stdout.utf8)) as? [String: Any]
        let named = (statusJSON?["sources"] as? [[String: Any]] ?? []).map { ($0["source"] as? String ?? "", $0["remote"] as? String) }
        #expect(named.contains { $0 == (good, "peer") } && named.contains { $0.0 == other && $0.1 == nil }, "\(named)")

        let log = cli(["log"]).stdout
        #expect(log.contains("  - peer (\(good)): merged"), "\(log)")
        #expect(log.contains("  - \(other): merged"))
        let logJSON = try JSONSerialization.jsonObject(with: Data(cli(["log", "--json"]).stdout.utf8)) as? [[String: Any]]
        let logSources = (logJSON?.first?["sources"] as? [[String: Any]] ?? []).map { $0["remote"] as? String }
        #expect(logSources == ["peer", nil])

        let metrics = cli(["status", "--prometheus"]).stdout
        #expect(metrics.contains("catalog_source_up{kind=\"file\",remote=\"peer\",source=\"\(good)\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("catalog_source_up{kind=\"file\",source=\"\(other)\"} 1\n"))

        clock.advance(2 * 3_600_000)
        let check = cli(["status", "--check", "--max-age", "1h"])
        #expect(check.status == 69)
        #expect(check.stderr.contains("source peer (\(good)) last had a good sync at \(at(0))"), "\(check.stderr)")
    }
}

@Suite("Operator contracts: durations for every time option")
struct DurationOptionTests {
    @Test(
        "90s, 10m, 1h, 1d and plain seconds, the same for every time option",
        arguments: [
            ("90s", 90.0), ("10m", 600), ("1h", 3600), ("1d", 86_400), ("30", 30), ("0.5", 0.5), ("1.5m", 90),
        ])
    func parses(_ text: String, _ seconds: Double) throws {
        #expect(try Values.duration()(text) == seconds)
        #expect(try Values.duration(zeroAllowed: true, atMost: 31_536_000)(text) == seconds)
    }

    @Test("--deadline 10m is taken (it was refused while --max-age 1h was), and so is every other time option")
    func everyOption() throws {
        let db = Support.temporaryDatabase()
        let file = try writeTemporary(positionsSnapshot(1, at: "2026-11-29T10:00:00Z"))
        let sync = runCLI(["sync", file, "--deadline", "10m", "--timeout", "90s", "--max-drift", "1h", "--grace", "2h", "-q"], db: db)
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(runCLI(["status", "--check", "--max-age", "1h", "-q"], db: db).status == 0)
        #expect(runCLI(["publish", Support.temporaryDirectory().appending(path: "log").path, "--grace", "90", "-q"], db: db).status == 0)
        #expect(runCLI(["quarantine", "release", "--max-drift", "5m"], db: db).status == 0)
    }

    @Test(
        "what is refused, and the message saying why",
        arguments: [
            (["publish", "DIR", "--grace", "0s"], "--grace needs a duration more than 0 (such as 90s, 10m or 1h), got '0s'"),
            (["publish", "DIR", "--grace", "0"], "--grace needs a duration more than 0 (such as 90s, 10m or 1h), got '0'"),
            (["sync", "x.json", "--deadline", "0m"], "--deadline needs a duration more than 0 (such as 90s, 10m or 1h), got '0m'"),
            (["sync", "x.json", "--deadline", "8d"], "--deadline needs a duration of at most 7d, got '8d'"),
            (["sync", "x.json", "--timeout", "soon"], "--timeout needs a duration such as 90s, 10m, 1h or plain seconds, got 'soon'"),
            (["sync", "x.json", "--timeout", "-5"], "--timeout needs a duration such as 90s, 10m, 1h or plain seconds, got '-5'"),
            (["sync", "x.json", "--max-drift", "366d"], "--max-drift needs a duration of at most 365d, got '366d'"),
            (["status", "--check", "--max-age", "1w"], "--max-age needs a duration such as 90s, 10m, 1h or plain seconds, got '1w'"),
            (["status", "--check", "--max-age", "inf"], "--max-age needs a duration such as 90s, 10m, 1h or plain seconds, got 'inf'"),
        ])
    func refused(_ arguments: [String], _ message: String) {
        let args = arguments.map { $0 == "DIR" ? Support.temporaryDirectory().appending(path: "log").path : $0 }
        let result = runCLI(args, db: Support.temporaryDatabase())
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("catalog: error: \(message)\n"), "\(result.stderr)")
    }

    @Test("--max-drift 0 is allowed (only it may be 0)")
    func zeroDrift() throws {
        #expect(try Values.duration(zeroAllowed: true, atMost: 31_536_000)("0") == 0)
        #expect(throws: ValueError.self) { try Values.duration()("0") }
    }
}

@Suite("Operator contracts: empty listings say so; counts agree with their nouns")
struct EmptyListingTests {
    @Test(
        "an empty text listing prints a 'none' line; its JSON is []",
        arguments: [
            (["remote", "list"], "no remotes"), (["quarantine", "list"], "no quarantined rows"), (["conflicts"], "no conflicts"),
            (["log"], "no sync runs"), (["positions"], "no positions"), (["featured"], "no featured landmarks"),
        ])
    func none(_ arguments: [String], _ line: String) {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["init"], db: db).status == 0)
        let text = runCLI(arguments, db: db)
        #expect(text.status == 0 && text.stdout == line + "\n" && text.stderr == "", "\(text)")
        let json = runCLI(arguments + ["--json"], db: db)
        #expect(json.status == 0 && json.stdout == "[]\n", "\(json)")
    }

    @Test("one of each: '1 tie', '1 of 1 position', '1 row', '1 source'")
    func plurals() throws {
        let db = Support.temporaryDatabase()
        // Two sources stamping one user at the same instant with different pages: one tie.
        let a = try writeTemporary(snapshot(node: "n1", positions: [positionRow("u1", page: 0, at: "2026-11-29T10:00:00Z", node: "n1")]))
        let b = try writeTemporary(snapshot(node: "n1", positions: [positionRow("u1", page: 1, at: "2026-11-29T10:00:00Z", node: "n1")]))
        #expect(
            runCLI(["sync", a], db: db).stdout
                == "1 source (1 merged, 0 not modified): 0 of 0 landmarks and 1 of 1 position applied, 0 stale, 0 ties, 0 quarantined\n")
        let tied = runCLI(["sync", b], db: db)
        #expect(tied.stdout.hasSuffix(" 1 tie, 0 quarantined\n"), "\(tied)")
        #expect(runCLI(["log"], db: db).stdout.contains("1 tie, 0 quarantined"))
        #expect(runCLI(["status"], db: db).stdout.contains("(1 row)"))
        #expect(plural(1, "row") == "1 row" && plural(2, "row") == "2 rows" && plural(0, "tie") == "0 ties")
        #expect(plural(1, "entry", "entries") == "1 entry" && plural(3, "entry", "entries") == "3 entries")
    }
}

@Suite("Operator contracts: the suite cleans up after itself")
struct TemporaryCleanupTests {
    @Test("temporary directories live in this process's own parent, which is removed at exit")
    func ownParent() throws {
        let dir = Support.temporaryDirectory()
        let parent = dir.deletingLastPathComponent().path
        #expect(parent == Support.temporaryRoot.path)
        #expect(URL(fileURLWithPath: parent).lastPathComponent.hasPrefix("catalog-tests-"))
        #expect(parent.hasPrefix(Support.temporaryRootPrefix) && Support.temporaryRootPrefix.hasSuffix("-\(getpid())-"))
        #expect(Support.temporaryRootPath.withLock { $0 } == parent)
        // Nothing of this process lies beside it: every directory the suite makes is inside it.
        let tmp = FileManager.default.temporaryDirectory.path
        let mine = try FileManager.default.contentsOfDirectory(atPath: tmp).filter {
            (tmp + "/" + $0).hasPrefix(Support.temporaryRootPrefix) || $0.hasPrefix("catalog-tests-") && $0.contains("-\(getpid())-")
        }
        #expect(mine == [URL(fileURLWithPath: parent).lastPathComponent])
    }
}

@Suite("Operator contracts: merge memory")
struct BatchRecyclingTests {
    @Test("a merged batch's position storage goes back to the reader (capacity kept, at most two kept, none after cancel)")
    func recycle() {
        let queue = BatchQueue()
        #expect(queue.takeSpare() == nil)
        func merged(_ rows: Int) -> RowBatch {
            let batch = RowBatch(reserving: false)
            batch.positions.reserveCapacity(rows)
            for n in 0..<rows {
                batch.positions.append(
                    PositionRecord(
                        user: "u\(n)", page: 0, landmark: nil,
                        stamp: HLCStamp(wallMilliseconds: 1, counter: 0, node: "n"), deleted: false))
            }
            return batch
        }
        let a = merged(1000)
        let b = merged(1000)
        let c = merged(1000)
        let storageA = a.positions.withUnsafeBufferPointer { $0.baseAddress }
        let storageB = b.positions.withUnsafeBufferPointer { $0.baseAddress }
        for batch in [a, b, c] { queue.recycle(batch) }
        #expect(a.positions.isEmpty && a.positions.capacity == 0)  // the batch no longer holds it
        let first = queue.takeSpare()
        let second = queue.takeSpare()
        // The very buffers the merged batches had, emptied, their room kept.
        #expect(first?.withUnsafeBufferPointer { $0.baseAddress } == storageB && second?.withUnsafeBufferPointer { $0.baseAddress } == storageA)
        #expect(first?.isEmpty == true && (first?.capacity ?? 0) >= 1000)
        #expect(queue.takeSpare() == nil)  // the third was not kept
        queue.recycle(merged(10))
        queue.cancel()
        #expect(queue.takeSpare() == nil)
    }
}
