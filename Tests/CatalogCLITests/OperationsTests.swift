import CatalogTestSupport
import Foundation
import Testing

@_spi(Testing) @testable import CatalogCLI
@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

// Issue 12, docs/operations.md: what an operator sees — bounded diagnostics, JSON logs, status --check, metrics, the
// run ledger, the quarantine and the conflicts — each on real syncs of real snapshots.

@Suite("Operations: bounded diagnostics and JSON logs")
struct BoundedDiagnosticsTests {
    @Test("5,000 quarantined rows in one sync: 20 lines and one summary with the full count (text and JSON)")
    func quarantined() throws {
        let file = try writeTemporary(positionsSnapshot(5000, at: "2099-01-01T00:00:00Z"))
        let db = Support.temporaryDatabase()
        let text = runCLI(["sync", file], db: db)
        #expect(text.status == 0)
        let lines = text.stderr.split(separator: "\n")
        #expect(lines.count == 21)
        #expect(lines.prefix(20).allSatisfy { $0.hasPrefix("catalog: warning: quarantined position u") })
        #expect(lines.last == "catalog: info: 4980 more quarantined diagnostics not shown (5000 in all); see them all with 'catalog quarantine list'")
        #expect(text.stdout.contains("0 of 5000 positions applied, 0 stale, 0 ties, 5000 quarantined"))
        #expect(try Quarantine(CatalogStore.open(path: db)).quarantinedRows().count == 5000)

        let other = Support.temporaryDatabase()
        let json = runCLI(["--log-format", "json", "sync", file], db: other)
        let objects = jsonLines(json.stderr)
        #expect(objects.count == 21)
        for o in objects.prefix(20) {
            #expect(o["level"] as? String == "warning")
            #expect(o["kind"] as? String == "quarantined")
            #expect(o["source"] as? String == file)
            #expect((o["user"] as? String)?.hasPrefix("u") == true)
            #expect(o["stamp"] as? String == "2099-01-01T00:00:00.000Z/0/n-test")
            #expect(Int(o["row"] as? String ?? "") != nil)
        }
        let summary = try #require(objects.last)
        #expect(summary["kind"] as? String == "suppressed")
        #expect(summary["of"] as? String == "quarantined")
        #expect(summary["count"] as? Int == 4980)
        #expect(summary["total"] as? Int == 5000)
    }

    @Test("5,000 ties in one sync: 20 lines and one summary with the full count; every tie is kept for 'conflicts'")
    func ties() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["sync", try writeTemporary(positionsSnapshot(5000, at: "2026-11-29T10:00:00Z", page: 1))], db: db).status == 0)
        let tie = runCLI(["sync", try writeTemporary(positionsSnapshot(5000, at: "2026-11-29T10:00:00Z", page: 2))], db: db)
        #expect(tie.status == 0)
        let lines = tie.stderr.split(separator: "\n")
        #expect(lines.count == 21)
        #expect(lines.prefix(20).allSatisfy { $0.hasPrefix("catalog: warning: tie on position u") })
        #expect(lines.last == "catalog: info: 4980 more tie diagnostics not shown (5000 in all); see them all with 'catalog conflicts'")
        #expect(tie.stdout.contains("5000 of 5000 positions applied, 0 stale, 5000 ties"))
        let listed = try JSONSerialization.jsonObject(with: Data(runCLI(["conflicts", "--json"], db: db).stdout.utf8)) as? [Any]
        #expect(listed?.count == 5000)
        // --max-diagnostics sets the bound.
        let again = Support.temporaryDatabase()
        _ = runCLI(["sync", try writeTemporary(positionsSnapshot(50, at: "2026-11-29T10:00:00Z", page: 1))], db: again)
        let five = runCLI(
            ["--max-diagnostics", "5", "sync", try writeTemporary(positionsSnapshot(50, at: "2026-11-29T10:00:00Z", page: 2))], db: again)
        #expect(five.stderr.split(separator: "\n").count == 6)
        #expect(five.stderr.contains("45 more tie diagnostics not shown (50 in all)"))
    }

    @Test("import warnings are bounded too: 50 unknown keys give 20 lines and a summary")
    func importWarnings() throws {
        let keys = (0..<50).map { #""extra\#($0)": 1"# }.joined(separator: ", ")
        let file = try writeTemporary(#"[{"id": 1, "name": "A", "coordinates": {"latitude": 1, "longitude": 2}, \#(keys)}]"#)
        let result = runCLI(["import", file], db: Support.temporaryDatabase())
        #expect(result.status == 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 21)
        #expect(lines.last?.contains("30 more unknown-key diagnostics not shown (50 in all); rerun with --max-diagnostics 0") == true)
        #expect(result.stdout.contains("50 warnings"))
    }

    @Test("a failing import under --log-format json: every stderr line is a JSON object with its location, id and field")
    func failingImport() throws {
        let records = (0..<30).map { #"{"id": \#(100 + $0), "name": "", "coordinates": {"latitude": 1, "longitude": 2}}"# }
        let file = try writeTemporary("[\n" + records.joined(separator: ",\n") + "\n]")
        let result = try runProcess(Support.catalogBinary, ["--db", Support.temporaryDatabase(), "--log-format", "json", "import", file])
        #expect(result.status == 65)
        let objects = jsonLines(result.stderr)
        #expect(objects.count >= 2)
        #expect(objects.allSatisfy { $0["level"] is String && $0["kind"] is String && $0["message"] is String })
        let invalid = objects.filter { $0["kind"] as? String == "invalid" }
        #expect(invalid.count == 20)
        let first = try #require(invalid.first)
        #expect(first["source"] as? String == file)
        #expect(first["location"] as? String == "\(file):2:13")
        #expect(first["id"] as? Int == 100)
        #expect(first["field"] as? String == "name")
        #expect(objects.last?["level"] as? String == "error")
        #expect(objects.last?["kind"] as? String == "error")
    }

    @Test("a failing sync under --log-format json (bad rows, a peer down, rows from the future): every stderr line is a JSON object")
    func failingSync() throws {
        let bad = try writeTemporary(
            snapshot(positions: (0..<30).map { #"{"user": "b\#($0)", "page": "x", "updatedAt": "2026-11-29T10:00:00Z", "node": "n"}"# }))
        let future = try writeTemporary(positionsSnapshot(30, at: "2099-01-01T00:00:00Z"))
        let result = try runProcess(
            Support.catalogBinary,
            [
                "--db", Support.temporaryDatabase(), "--log-format", "json", "sync", "--timeout", "2",
                "--retries", "0", bad, "http://127.0.0.1:1/peer.json", future,
            ])
        #expect(result.status == 65, "\(result.stderr)")
        let objects = jsonLines(result.stderr)
        #expect(objects.allSatisfy { $0["level"] is String && $0["kind"] is String && $0["message"] is String })
        let kinds = Set(objects.compactMap { $0["kind"] as? String })
        #expect(kinds.isSuperset(of: ["invalid", "quarantined", "source-failed", "suppressed"]), "\(kinds)")
        // A failing source is an error of kind source-failed (bounded like every kind: 25 sources down are 21 lines).
        let errors = objects.filter { $0["kind"] as? String == "source-failed" }
        #expect(errors.allSatisfy { $0["level"] as? String == "error" })
        #expect(Set(errors.compactMap { $0["source"] as? String }) == [bad, "http://127.0.0.1:1/peer.json"])
        #expect(objects.filter { $0["kind"] as? String == "quarantined" }.count == 20)
    }

    @Test(
        "usage errors and status --check under --log-format json are one JSON object each",
        arguments: [
            ["--log-format", "json", "featrued"], ["--log-format=json", "import"], ["sync", "--bogus", "--log-format", "json"],
            ["--log-format", "json", "quarantine", "drop"], ["help", "featrued", "--log-format", "json"],
            ["featured", "--page", "--log-format", "json"],
        ])
    func usageErrors(_ arguments: [String]) throws {
        let result = runCLI(arguments, db: Support.temporaryDatabase())
        #expect(result.status == 64)
        let objects = jsonLines(result.stderr)
        #expect(objects.count == 1)
        #expect(objects.first?["kind"] as? String == "usage")
        #expect(objects.first?["level"] as? String == "error")
        #expect((objects.first?["usage"] as? String)?.hasPrefix("catalog [--db PATH]") == true)
    }

    @Test("status --check under --log-format json: the reason is one JSON object of kind unhealthy")
    func unhealthyJSON() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["init"], db: db).status == 0)
        let result = runCLI(["--log-format", "json", "status", "--check"], db: db)
        #expect(result.status == 69)
        let objects = jsonLines(result.stderr)
        #expect(objects.count == 1)
        #expect(objects.first?["kind"] as? String == "unhealthy")
        #expect(objects.first?["message"] as? String == "unhealthy: no sync run is recorded yet")
    }
}

@Suite("Operations: status --check")
struct HealthCheckTests {
    enum Case: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case healthy, failedLastRun, staleSource, neverSucceeded, noRunYet, busyRunIgnored, publishOnlyStale
        var testDescription: String { rawValue }
    }

    @Test("exit status and the one line, for each state", arguments: Case.allCases)
    func check(_ c: Case) throws {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        func cli(_ arguments: [String]) -> CLIResult { runCLI(arguments, db: db, clock: clock) }
        let good = try writeTemporary(positionsSnapshot(3, at: "2026-11-29T10:00:00Z"))
        let missing = Support.temporaryDirectory().appending(path: "gone.json").path
        var expected: Int32 = 69
        var reason = ""
        switch c {
        case .healthy:
            #expect(cli(["sync", good]).status == 0)
            clock.advance(30 * 60_000)
            expected = 0
        case .failedLastRun:
            #expect(cli(["sync", good]).status == 0)
            #expect(cli(["sync", missing]).status == 66)
            // The failed source is the last run's only one, and it never had a good sync either.
            reason =
                "unhealthy: the last sync (run 2, finished \(at(0))) failed with exit 66: cannot open the file (No such file or directory), \(missing); source \(missing) has never had a good sync"
            #expect(
                cli(["status", "--check"]).stderr
                    == "catalog: error: unhealthy: the last sync (run 2, finished \(at(0))) failed with exit 66: cannot open the file (No such file or directory), \(missing)\n"
            )
        case .staleSource:
            #expect(cli(["sync", good]).status == 0)
            clock.advance(2 * 3_600_000)
            reason = "unhealthy: source \(good) last had a good sync at \(at(0)), 2 h ago (more than 1 h)"
            // Without --max-age only the outcome counts; with a longer one it is fresh enough.
            #expect(cli(["status", "--check"]).status == 0)
            #expect(cli(["status", "--check", "--max-age", "3h"]).status == 0)
        case .neverSucceeded:
            #expect(cli(["sync", good, missing]).status == 66)
            reason =
                "unhealthy: the last sync (run 1, finished \(at(0))) failed with exit 66: cannot open the file (No such file or directory), \(missing); source \(missing) has never had a good sync"
        case .noRunYet:
            #expect(cli(["init"]).status == 0)
            reason = "unhealthy: no sync run is recorded yet"
        case .busyRunIgnored:
            #expect(cli(["sync", good]).status == 0)
            let lock = try SyncLock.acquire(databasePath: db, now: 0)
            #expect(cli(["sync", good]).status == 75)
            withExtendedLifetime(lock) {}
            #expect(try CatalogMonitor(CatalogStore.open(path: db)).syncRuns(limit: 1).first?.outcome == "busy")
            expected = 0
        case .publishOnlyStale:
            #expect(cli(["sync", "--publish", Support.temporaryDirectory().appending(path: "log").path]).status == 0)
            clock.advance(2 * 3_600_000 + 61_000)
            reason = "unhealthy: the last good sync (run 1) finished at \(at(0)), 2 h 1 min ago (more than 1 h)"
        }
        let result = cli(["status", "--check", "--max-age", "1h"])
        #expect(result.status == expected, "\(result.stderr)")
        if expected == 0 {
            #expect(result.stderr == "")
            #expect(result.stdout.hasPrefix("healthy: the last sync (run 1) finished at \(at(0)) (ok)"))
            #expect(result.stdout.split(separator: "\n").count == 1)
            #expect(cli(["status", "--check", "--max-age", "1h", "--quiet"]).stdout == "")
        } else {
            #expect(result.stdout == "")
            #expect(result.stderr == "catalog: error: \(reason)\n")
        }
    }

    @Test(
        "--max-age needs --check, --output needs --prometheus, and the modes exclude each other",
        arguments: [
            ["status", "--max-age", "1h"], ["status", "--output", "x.prom"], ["status", "--check", "--prometheus"], ["status", "--json", "--check"],
            ["status", "--check", "--max-age", "soon"], ["status", "--quiet"],
        ])
    func usage(_ arguments: [String]) {
        #expect(runCLI(arguments, db: Support.temporaryDatabase()).status == 64)
    }
}

@Suite("Operations: status --prometheus")
struct PrometheusTests {
    @Test(
        "parsed by prometheus_client: every family, sample and value; label values escaped (a quote, a backslash, a newline)",
        .enabled(
            if: PrometheusParser.available, "prometheus_client cannot be imported by python3: pip install prometheus_client (scripts/setup does)"))
    func exposition() throws {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        func cli(_ arguments: [String]) -> CLIResult { runCLI(arguments, db: db, clock: clock) }
        #expect(cli(["import", Support.fixture("valid.json")]).status == 0)
        let weird = Support.temporaryDirectory().appending(path: "peer \"a\"\\b\nc")
        try FileManager.default.createDirectory(at: weird, withIntermediateDirectories: true)
        let a = weird.appending(path: "a.json").path
        let b = weird.appending(path: "b.json").path
        try snapshot(positions: [
            positionRow("u1", page: 1, at: "2026-11-29T10:00:00Z"), positionRow("u2", page: 0, at: "2026-11-29T10:00:00Z", deleted: true),
            positionRow("u3", page: 0, at: "2099-01-01T00:00:00Z"),
        ]).write(toFile: a, atomically: true, encoding: .utf8)
        try snapshot(positions: [positionRow("u1", page: 2, at: "2026-11-29T10:00:00Z")]).write(toFile: b, atomically: true, encoding: .utf8)
        #expect(cli(["remote", "add", "peer", a]).status == 0)  // a saved remote keeps its series; b (used once) does not
        #expect(cli(["sync", a]).status == 0)
        #expect(cli(["sync", b]).status == 0)
        clock.advance(1000)
        let missing = Support.temporaryDirectory().appending(path: "gone.json").path
        #expect(cli(["sync", missing]).status == 66)

        let dir = Support.temporaryDirectory()
        let prom = dir.appending(path: "catalog.prom").path
        let written = cli(["status", "--prometheus", "--output", prom])
        #expect(written.status == 0 && written.stdout == "" && written.stderr == "", "\(written.stderr)")
        #expect(try String(contentsOfFile: prom, encoding: .utf8) == cli(["status", "--prometheus"]).stdout)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["catalog.prom"])  // no temporary left
        #expect((try FileManager.default.attributesOfItem(atPath: prom)[.posixPermissions] as? Int) == 0o644)

        let families = try PrometheusParser.parse(file: prom)
        #expect(families.keys.allSatisfy { $0.hasPrefix("catalog_") })
        #expect(families.values.allSatisfy { !$0.help.isEmpty })
        func value(_ family: String, _ labels: [String: String] = [:], sample: String? = nil) -> Double? {
            families[family]?.samples.first { $0.labels == labels && $0.name == (sample ?? $0.name) }?.value
        }
        let t0 = Double(testNow) / 1000
        let node = try CatalogStore.open(path: db).nodeID()
        #expect(
            families["catalog_info"]?.samples == [
                .init(
                    name: "catalog_info",
                    labels: [
                        "node": node, "schema_version": String(try Migrator(migrations: Migration.embedded()).migrations.count),
                        "version": CatalogVersion.string,
                    ], value: 1)
            ])
        #expect(value("catalog_last_run_timestamp_seconds") == t0 + 1)
        #expect(value("catalog_last_run_success") == 0)
        #expect(value("catalog_last_run_exit_status") == 66)
        #expect(value("catalog_last_run_duration_seconds") == 0)
        #expect(value("catalog_last_success_timestamp_seconds") == t0)
        #expect(families["catalog_sync_runs"]?.type == "counter")
        #expect(value("catalog_sync_runs", ["outcome": "ok"], sample: "catalog_sync_runs_total") == 2)
        #expect(value("catalog_sync_runs", ["outcome": "failed"], sample: "catalog_sync_runs_total") == 1)
        #expect(families["catalog_landmarks"]?.type == "gauge")
        #expect(value("catalog_landmarks", ["state": "live"]) == 5)
        #expect(value("catalog_landmarks", ["state": "tombstone"]) == 0)
        #expect(value("catalog_positions", ["state": "live"]) == 1)
        #expect(value("catalog_positions", ["state": "tombstone"]) == 1)
        #expect(value("catalog_quarantined_rows") == 1)
        #expect(value("catalog_conflicts_retained") == 1)
        #expect(value("catalog_ties", sample: "catalog_ties_total") == 1)
        #expect(families["catalog_ties"]?.type == "counter")
        #expect(value("catalog_rows_applied", ["kind": "position"], sample: "catalog_rows_applied_total") == 3)
        #expect(value("catalog_rows_applied", ["kind": "landmark"], sample: "catalog_rows_applied_total") == 0)
        #expect(value("catalog_rows_quarantined", sample: "catalog_rows_quarantined_total") == 1)
        #expect(value("catalog_change_sequence") == 8)  // 5 imported landmarks, u1, u2, and u1 again (the tie's winner)
        #expect((value("catalog_database_bytes") ?? 0) > 0)
        let aBytes = Double(try Data(contentsOf: URL(fileURLWithPath: a)).count)
        #expect(value("catalog_source_last_success_timestamp_seconds", ["kind": "file", "remote": "peer", "source": a]) == t0)
        #expect(value("catalog_source_last_success_timestamp_seconds", ["kind": "file", "source": missing]) == 0)
        #expect(value("catalog_source_last_attempt_timestamp_seconds", ["kind": "file", "source": missing]) == t0 + 1)
        #expect(value("catalog_source_last_status", ["kind": "file", "source": missing]) == 66)
        #expect(value("catalog_source_up", ["kind": "file", "remote": "peer", "source": a]) == 1)
        #expect(value("catalog_source_up", ["kind": "file", "source": missing]) == 0)
        #expect(
            value("catalog_source_fetched_bytes", ["kind": "file", "remote": "peer", "source": a], sample: "catalog_source_fetched_bytes_total")
                == aBytes)
        #expect(value("catalog_source_up", ["kind": "file", "source": b]) == nil)
    }

    /// Regression (a user test): every source ever synced — a typo, a one-off file, a removed remote —
    /// stayed in `status` and in the metrics with `catalog_source_up 0`, so the staleness alert of docs/operations.md §3
    /// fired forever; and while a sync ran, `catalog_last_run_success` read 0.
    @Test("per-source series cover the last run's sources and the saved remotes; a running run is not the last run")
    func currentSources() throws {
        let db = Support.temporaryDatabase()
        let dir = Support.temporaryDirectory()
        let good = dir.appending(path: "good.json").path
        let typo = dir.appending(path: "goood.json").path
        try snapshot(positions: [positionRow("u1", page: 1, at: "2026-11-29T10:00:00Z")]).write(toFile: good, atomically: true, encoding: .utf8)
        #expect(runCLI(["remote", "add", "peer", good], db: db).status == 0)
        #expect(runCLI(["sync", typo], db: db).status == 66)
        #expect(runCLI(["status", "--prometheus"], db: db).stdout.contains("catalog_source_up{kind=\"file\",source=\"\(typo)\"} 0"))
        #expect(runCLI(["sync"], db: db).status == 0)  // the remotes
        let after = runCLI(["status", "--prometheus"], db: db).stdout
        #expect(!after.contains(typo), "\(after)")
        #expect(after.contains("catalog_source_up{kind=\"file\",remote=\"peer\",source=\"\(good)\"} 1"))
        #expect(after.contains("catalog_last_run_success 1"))
        // status keeps the typo's record, out of the way: one line in the text, inUse false in JSON.
        let text = runCLI(["status"], db: db).stdout
        #expect(!text.contains(typo) && text.contains("other:       1 source synced before, not in the last run and not a remote"), "\(text)")
        let listed = try JSONSerialization.jsonObject(with: Data(runCLI(["status", "--json"], db: db).stdout.utf8)) as? [String: Any]
        let inUse = (listed?["sources"] as? [[String: Any]] ?? []).map { ($0["source"] as? String ?? "", $0["inUse"] as? Bool) }
        #expect(inUse.contains { $0 == (typo, false) } && inUse.contains { $0 == (good, true) }, "\(inUse)")

        // A run still going (as a concurrent one is): status says so; the metrics keep the last ended run.
        let store = try CatalogStore.open(path: db)
        try store.connection.execute(
            sql: """
                INSERT INTO sync_runs (started_at, finished_at, sources, outcome, exit_status) VALUES ('2026-12-01T10:00:00.000Z', '2026-12-01T10:00:00.000Z', '[]', 'running', 0)
                """)
        #expect(runCLI(["status", "--prometheus"], db: db).stdout.contains("catalog_last_run_success 1"))
        #expect(runCLI(["status"], db: db).stdout.contains("last sync:   running since 2026-12-01T10:00:00.000Z"))
        let json = try JSONSerialization.jsonObject(with: Data(runCLI(["status", "--json"], db: db).stdout.utf8)) as? [String: Any]
        let lastRun = try #require(json?["lastRun"] as? [String: Any])
        #expect(lastRun["outcome"] as? String == "running" && lastRun["finishedAt"] is NSNull && lastRun["exitStatus"] is NSNull, "\(lastRun)")
        #expect(lastRun["startedAt"] as? String == "2026-12-01T10:00:00.000Z")
        try store.connection.execute(sql: "DELETE FROM sync_runs WHERE outcome = 'running'")

        // A removed remote: gone from status and the metrics.
        #expect(runCLI(["remote", "remove", "peer"], db: db).status == 0)
        #expect(!runCLI(["status"], db: db).stdout.contains(good))
        #expect(!runCLI(["status", "--prometheus"], db: db).stdout.contains("source=\"\(good)\""))
    }

    @Test("before any run: no last-run figures are made up, the rest is there")
    func beforeAnyRun() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let text = runCLI(["status", "--prometheus"], db: db).stdout
        #expect(!text.contains("catalog_last_run"))
        #expect(text.contains("catalog_landmarks{state=\"live\"} 5\n"))
        #expect(text.contains("# TYPE catalog_quarantined_rows gauge\ncatalog_quarantined_rows 0\n"))
    }

    @Test("escaping and seconds, exactly")
    func formatting() {
        #expect(PrometheusText.escapeLabel("a\"b\\c\nd") == #"a\"b\\c\nd"#)
        #expect(PrometheusText.escapeHelp("a\\b\nc") == #"a\\b\nc"#)
        #expect(PrometheusText.seconds(1_795_996_800_123) == "1795996800.123")
        #expect(PrometheusText.seconds(1_500) == "1.5")
        #expect(PrometheusText.seconds(2_000) == "2")
        #expect(PrometheusText.seconds(-1_250) == "-1.25")
    }
}

@Suite("Operations: catalog log")
struct RunLedgerTests {
    /// Regression (a user test): `sync --json` printed nothing on stdout when the lock was held.
    @Test("sync --json prints one object when no run could happen (the lock held): its exit status and error")
    func busyJSON() throws {
        let db = Support.temporaryDatabase()
        let good = try writeTemporary(positionsSnapshot(4, at: "2026-11-29T10:00:00Z"))
        #expect(runCLI(["init"], db: db).status == 0)
        let lock = try SyncLock.acquire(databasePath: db, now: 0)
        let busy = runCLI(["sync", good, "--json"], db: db)
        withExtendedLifetime(lock) {}
        let object = try JSONSerialization.jsonObject(with: Data(busy.stdout.utf8)) as? [String: Any]
        #expect(busy.status == 75 && object?["exitStatus"] as? Int == 75, "\(busy.stdout) \(busy.stderr)")
        #expect((object?["error"] as? String)?.isEmpty == false && (object?["sources"] as? [Any])?.isEmpty == true, "\(busy.stdout)")
        // The same keys as a report of a run (a recheck found a different shape), plus "error".
        let report = try JSONSerialization.jsonObject(with: Data(runCLI(["sync", good, "--json"], db: db).stdout.utf8)) as? [String: Any]
        #expect(Set(object?.keys.map { $0 } ?? []) == Set(report?.keys.map { $0 } ?? []).union(["error"]), "\(busy.stdout)")
        #expect(busy.stderr.contains("error:"))
    }

    @Test("the ledger newest first, with per-source detail, on real runs (ok, failed, busy)")
    func ledger() throws {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        func cli(_ arguments: [String]) -> CLIResult { runCLI(arguments, db: db, clock: clock) }
        let good = try writeTemporary(positionsSnapshot(4, at: "2026-11-29T10:00:00Z"))
        let missing = Support.temporaryDirectory().appending(path: "gone.json").path
        #expect(cli(["sync", good]).status == 0)
        clock.advance(1000)
        // The peer rewrites its file (an unchanged file is not read again).
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(5)], ofItemAtPath: good)
        #expect(cli(["sync", missing, good]).status == 66)
        clock.advance(1000)
        let lock = try SyncLock.acquire(databasePath: db, now: 0)
        #expect(cli(["sync", good]).status == 75)
        withExtendedLifetime(lock) {}

        let json = cli(["log", "--json"])
        #expect(json.status == 0)
        let runs = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(runs.map { $0["id"] as? Int } == [3, 2, 1])
        #expect(runs.map { $0["outcome"] as? String } == ["busy", "failed", "ok"])
        #expect(runs.map { $0["exitStatus"] as? Int } == [75, 66, 0])
        #expect(runs[2]["positionsApplied"] as? Int == 4)
        #expect(runs[2]["finishedAt"] as? String == at(0))
        #expect(runs[1]["positionsSeen"] as? Int == 4)
        #expect(runs[1]["stale"] as? Int == 4)
        let sources = try #require(runs[1]["sources"] as? [[String: Any]])
        #expect(sources.map { $0["source"] as? String } == [missing, good])
        #expect(sources.map { $0["outcome"] as? String } == ["failed", "merged"])
        #expect(sources.map { $0["exitStatus"] as? Int } == [66, 0])
        #expect((sources[0]["message"] as? String)?.contains("No such file or directory") == true)
        #expect(sources[1]["bytes"] as? Int == (try Data(contentsOf: URL(fileURLWithPath: good))).count)
        #expect((runs[0]["sources"] as? [[String: Any]])?.first?["source"] as? String == good)
        // The run's bytes (migration 9, one row in RunLedger.detailColumns): the sum over its sources.
        let size = try Data(contentsOf: URL(fileURLWithPath: good)).count
        #expect(runs.map { $0["bytes"] as? Int } == [0, size, size])

        let text = cli(["log", "--limit", "2"]).stdout
        #expect(text.contains("  bytes fetched: \(size)\n"))
        #expect(text.components(separatedBy: "bytes fetched:").count == 2, "a busy run shows no detail: \(text)")
        #expect(text.hasPrefix("run 3  \(at(2))  busy (exit 75)"))
        #expect(text.contains("run 2  \(at(1))  failed (exit 66)"))
        #expect(text.contains("  - \(missing): failed (exit 66), 0 bytes in 0.000 s; cannot open the file"))
        #expect(text.contains("  - \(good): merged, "))
        #expect(!text.contains("run 1 "))
    }
}

@Suite("Operations: catalog quarantine")
struct QuarantineTests {
    /// A database holding two quarantined positions: u1 an hour ahead (page 2, over a stored page 0)
    /// and u2 two hours ahead; the snapshot file that brought them is removed (never delivered again).
    func held() throws -> (db: String, clock: ManualClock) {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db, clock: clock).status == 0)
        #expect(
            runCLI(["sync", try writeTemporary(snapshot(positions: [positionRow("u1", page: 0, at: at(-3600))]))], db: db, clock: clock).status == 0)
        let future = try writeTemporary(snapshot(positions: [positionRow("u1", page: 2, at: at(3600)), positionRow("u2", page: 1, at: at(7200))]))
        let sync = runCLI(["sync", future], db: db, clock: clock)
        #expect(sync.stdout.contains("2 quarantined"))
        #expect(sync.stderr.contains("quarantined position u1 as row 1:"))
        try FileManager.default.removeItem(atPath: future)
        return (db, clock)
    }

    @Test("list shows each held row with its id, stamp, source and the row itself")
    func list() throws {
        let (db, _) = try held()
        let text = runCLI(["quarantine", "list"], db: db).stdout
        #expect(text.hasPrefix("ROW  KIND      KEY  STAMP"))
        #expect(text.contains("1    position  u1   \(at(3600))/0/n-test  "))
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data(runCLI(["quarantine", "list", "--json"], db: db).stdout.utf8)) as? [[String: Any]])
        #expect(rows.map { $0["id"] as? Int } == [1, 2])
        #expect(rows.map { $0["key"] as? String } == ["u1", "u2"])
        #expect(rows[0]["updatedAt"] as? String == at(3600))
        #expect((rows[0]["row"] as? [String: Any])?["page"] as? Int == 2)
        #expect((rows[0]["source"] as? String)?.hasSuffix("snapshot.json") == true)
        #expect(runCLI(["quarantine", "list", "--json", "--limit", "1"], db: db).stdout.hasPrefix(#"[{"aheadMs":"#))
    }

    /// Issue 25: rows quarantined from a remote were applied when they came due even after its grant
    /// had been narrowed (`remote` added again with `--allow landmarks`).
    @Test("a held position from a remote whose grant was narrowed to landmarks since: released as not allowed, not written")
    func releaseChecksTheGrantNow() throws {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db, clock: clock).status == 0)
        let peer = try writeTemporary(snapshot(positions: [positionRow("u1", page: 2, at: at(3600))]))
        #expect(runCLI(["remote", "add", "peer", peer], db: db, clock: clock).status == 0)
        let sync = runCLI(["sync", "peer"], db: db, clock: clock)
        #expect(sync.stdout.contains("1 quarantined"), "\(sync.stdout)\(sync.stderr)")
        #expect(runCLI(["remote", "remove", "peer"], db: db, clock: clock).status == 0)
        #expect(runCLI(["remote", "add", "peer", peer, "--allow", "landmarks"], db: db, clock: clock).status == 0)
        clock.advance(3_600_000)
        let released = runCLI(["quarantine", "release"], db: db, clock: clock)
        #expect(released.status == 0, "\(released.stderr)")
        #expect(released.stderr.contains("this source may write landmarks only"), "\(released.stderr)")
        #expect(try storedPage(db, "u1") == nil)
        #expect(try Quarantine(CatalogStore.open(path: db)).quarantinedRows().isEmpty)
    }

    @Test("release applies the rows now within the allowance by the merge rule, in one transaction, and moves the clock")
    func releaseDue() throws {
        let (db, clock) = try held()
        #expect(
            runCLI(["quarantine", "release"], db: db, clock: clock).stdout
                == "released 0 rows (none is within the allowance yet); 2 still quarantined\n")
        let before = try CatalogStore.open(path: db).changeSequence()
        clock.advance(3_600_000 - 300_000)  // u1 is now exactly at the allowance
        let released = runCLI(["quarantine", "release"], db: db, clock: clock)
        #expect(released.status == 0, "\(released.stderr)")
        #expect(
            released.stdout == "released 1 row: 0 of 0 landmarks and 1 of 1 position applied, 0 stale, 0 ties, 0 quarantined; 1 still quarantined\n")
        #expect(try storedPage(db, "u1") == 2)
        #expect(try CatalogStore.open(path: db).changeSequence() == before + 1)
        #expect(try Quarantine(CatalogStore.open(path: db)).quarantinedRows().map(\.key) == ["u2"])
        // The clock is past the released stamp: a local write now wins over it.
        #expect(runCLI(["position", "set", "--user", "u1", "--page", "0"], db: db, clock: clock).status == 0)
        #expect(try storedPage(db, "u1") == 0)
    }

    @Test("a released row older than the stored one changes nothing: the rule decides, not a delete-and-insert")
    func releaseStale() throws {
        let (db, clock) = try held()
        clock.advance(3_600_000 + 1)
        #expect(runCLI(["position", "set", "--user", "u1", "--page", "1"], db: db, clock: clock).status == 0)  // stamped after u1's held row
        let released = runCLI(["quarantine", "release", "1"], db: db, clock: clock)
        #expect(
            released.stdout == "released 1 row: 0 of 0 landmarks and 0 of 1 position applied, 1 stale, 0 ties, 0 quarantined; 1 still quarantined\n")
        #expect(try storedPage(db, "u1") == 1)
    }

    @Test("a named row still beyond the allowance is refused (65, nothing released) unless --force, which applies it")
    func releaseForce() throws {
        let (db, clock) = try held()
        let refused = runCLI(["quarantine", "release", "1", "2"], db: db, clock: clock)
        #expect(refused.status == 65)
        #expect(
            refused.stderr.hasPrefix(
                "catalog: error: quarantined row 1 (position u1) is stamped \(at(3600)), still 3300.0 s beyond the allowed clock drift; nothing was released"
            ))
        #expect(try Quarantine(CatalogStore.open(path: db)).quarantinedRows().count == 2)
        let forced = runCLI(["quarantine", "release", "--force", "2"], db: db, clock: clock)
        #expect(forced.status == 0)
        #expect(forced.stdout.hasPrefix("released 1 row: 0 of 0 landmarks and 1 of 1 position applied"))
        #expect(try storedPage(db, "u2") == 1)
        #expect(runCLI(["quarantine", "release", "7"], db: db, clock: clock).status == 64)
        #expect(runCLI(["quarantine", "release", "--force"], db: db, clock: clock).status == 64)
        #expect(runCLI(["quarantine", "release", "x1"], db: db, clock: clock).status == 64)
    }

    @Test("each sync applies held rows once they are within the allowance, though their source never delivers them again")
    func syncReleases() throws {
        let (db, clock) = try held()
        clock.advance(3_600_000)
        let other = try writeTemporary(positionsSnapshot(1, at: "2026-11-29T10:00:00Z", prefix: "other"))
        let sync = runCLI(["sync", other], db: db, clock: clock)
        #expect(
            sync.stdout.hasSuffix(
                "0 of 0 landmarks and 1 of 1 position applied, 0 stale, 0 ties, 0 quarantined; 1 held row released from quarantine (1 applied)\n"),
            "\(sync.stdout)")
        #expect(try storedPage(db, "u1") == 2)
        #expect(try Quarantine(CatalogStore.open(path: db)).quarantinedRows().map(\.key) == ["u2"])
        let json = runCLI(["sync", "--json", other], db: db, clock: clock).stdout
        #expect(json.contains(#""released":0,"releasedApplied":0,"#), "\(json)")
    }

    @Test("drop removes named rows or --all without applying them; an unknown row is refused and nothing is dropped")
    func drop() throws {
        let (db, clock) = try held()
        #expect(runCLI(["quarantine", "drop", "1", "99"], db: db, clock: clock).status == 64)
        #expect(try Quarantine(CatalogStore.open(path: db)).quarantinedRows().count == 2)
        #expect(runCLI(["quarantine", "drop", "1"], db: db, clock: clock).stdout == "dropped 1 row\n")
        #expect(runCLI(["quarantine", "drop", "--all"], db: db, clock: clock).stdout == "dropped 1 row\n")
        #expect(try Quarantine(CatalogStore.open(path: db)).quarantinedRows().isEmpty)
        #expect(try storedPage(db, "u1") == 0)
        #expect(try storedPage(db, "u2") == nil)
        #expect(runCLI(["quarantine", "drop"], db: db, clock: clock).status == 64)
        #expect(runCLI(["quarantine", "drop", "--all", "1"], db: db, clock: clock).status == 64)
        // A mistyped --db is not created.
        let typo = Support.temporaryDirectory().appending(path: "typo.sqlite").path
        #expect(runCLI(["quarantine", "drop", "--all"], db: typo).status == 66)
        #expect(runCLI(["quarantine", "release"], db: typo).status == 66)
        #expect(!FileManager.default.fileExists(atPath: typo))
    }
}

@Suite("Operations: catalog conflicts")
struct ConflictsTests {
    @Test("ties on real syncs: both versions, the rule, the source and when, newest first")
    func listed() throws {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        let x = try writeTemporary(
            snapshot(
                landmarks: [landmarkRow(5, name: "Alpha", at: "2026-11-29T10:00:00Z")],
                positions: [positionRow("ann", page: 1, at: "2026-11-29T10:00:00Z")]))
        let y = try writeTemporary(
            snapshot(
                landmarks: [landmarkRow(5, name: "Beta", at: "2026-11-29T10:00:00Z")],
                positions: [positionRow("ann", page: 1, at: "2026-11-29T10:00:00Z", deleted: true)]))
        #expect(runCLI(["sync", x], db: db, clock: clock).status == 0)
        clock.advance(1000)
        #expect(runCLI(["sync", y], db: db, clock: clock).stdout.contains("2 ties"))
        let json = runCLI(["conflicts", "--json"], db: db, clock: clock)
        let ties = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(ties.count == 2)
        #expect(ties.map { $0["kind"] as? String } == ["position", "landmark"])  // newest first: positions are applied after landmarks
        let position = ties[0]
        let landmark = ties[1]
        #expect(position["key"] as? String == "ann")
        #expect((position["winner"] as? [String: Any])?["deleted"] as? Bool == true)  // the tombstone wins
        #expect((position["loser"] as? [String: Any])?["deleted"] as? Bool == false)
        #expect(landmark["key"] as? String == "5")
        #expect((landmark["winner"] as? [String: Any])?["name"] as? String == "Beta")  // the greater content
        #expect((landmark["loser"] as? [String: Any])?["name"] as? String == "Alpha")
        for tie in ties {
            #expect(tie["rule"] as? String == LastWriterWins.tieRule)
            #expect(tie["source"] as? String == y)
            #expect(tie["detectedAt"] as? String == at(1))
            #expect(tie["updatedAt"] as? String == "2026-11-29T10:00:00.000Z")
            #expect(tie["node"] as? String == "n-test")
        }
        let text = runCLI(["conflicts", "--limit", "1"], db: db, clock: clock).stdout
        #expect(
            text.hasPrefix(
                "tie 2  \(at(1))  position ann at 2026-11-29T10:00:00.000Z/0/n-test\n  source: \(y)\n  rule:   \(LastWriterWins.tieRule)\n  kept:   {"
            ))
        #expect(text.contains("\n  lost:   {\"counter\":0,\"deleted\":false,"))
        #expect(!text.contains("tie 1 "))
    }

    @Test("retention: a sync prunes ties older than 30 days, and keeps at most the newest 10,000")
    func retention() throws {
        let clock = ManualClock(testNow)
        let db = Support.temporaryDatabase()
        #expect(runCLI(["sync", try writeTemporary(positionsSnapshot(5, at: "2026-11-29T10:00:00Z", page: 1))], db: db, clock: clock).status == 0)
        #expect(runCLI(["sync", try writeTemporary(positionsSnapshot(5, at: "2026-11-29T10:00:00Z", page: 2))], db: db, clock: clock).status == 0)
        let other = try writeTemporary(positionsSnapshot(1, at: "2026-11-29T10:00:00Z", prefix: "x"))
        clock.advance(29 * 86_400_000)
        #expect(runCLI(["sync", other], db: db, clock: clock).status == 0)
        #expect(try Conflicts(CatalogStore.open(path: db)).conflictCount() == 5)
        clock.advance(2 * 86_400_000)
        #expect(runCLI(["sync", other], db: db, clock: clock).status == 0)
        #expect(try Conflicts(CatalogStore.open(path: db)).conflictCount() == 0)
        #expect(ConflictRetention.maxRows == 10_000 && ConflictRetention.maxAgeMilliseconds == 30 * 86_400_000)

        // By count (the bound is a parameter; a sync uses 10,000): the newest are kept.
        #expect(runCLI(["sync", try writeTemporary(positionsSnapshot(5, at: "2026-11-29T10:00:00Z", page: 3))], db: db, clock: clock).status == 0)
        let store = try CatalogStore.open(path: db, wallClock: clock)
        let newest = try Conflicts(store).conflicts().prefix(2).map(\.id)
        #expect(try Conflicts(store).pruneConflicts(maxRows: 2) == 3)
        #expect(try Conflicts(store).conflicts().map(\.id) == Array(newest))
    }
}
