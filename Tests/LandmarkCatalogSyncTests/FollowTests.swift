import CatalogTestSupport
import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import CatalogCLI
@testable import LandmarkCatalog
@_spi(Testing) @testable import LandmarkCatalogSync

/// `catalog sync --follow` (docs/live-sync.md), run as the built binary: each test starts a
/// follower as a child process and stops it with SIGTERM (or kills it in a `defer` when the test ends early).
@Suite("Sync: follow (live sync)", .serialized)
struct FollowTests {

    static func count(_ db: String, _ sql: String) -> Int64 {
        guard let rows = try? dumpRows(db, sql: sql), case .integer(let n)? = rows.first?.first else { return -1 }
        return n
    }

    /// Sends SIGTERM and collects the run (status 0 expected).
    static func terminate(_ process: StartedProcess) -> BinaryRun {
        process.terminate(limit: 20)
    }

    /// A: the seeded database publishing its log to `a-log`; B: an empty database that will follow it.
    static func publisher(_ sandbox: Sandbox) throws -> (a: String, log: String, b: String) {
        let a = try sandbox.seededDatabase("a.sqlite")
        let log = sandbox.path("a-log")
        let published = try sandbox.run(["publish", log], db: a)
        try #require(published.status == 0, "\(published)")
        return (a, log, sandbox.path("b.sqlite"))
    }

    /// Starts `sync --follow ARGS` on `db` and waits for its first cycle to be in the ledger.
    static func follower(
        _ sandbox: Sandbox, db: String, _ arguments: [String], binary: URL = Support.catalogBinary,
        environment: [String: String] = [:]
    ) throws -> StartedProcess {
        let process = try sandbox.start(["sync", "--follow"] + arguments, db: db, binary: binary, environment: environment)
        let ready = Waits.waitFor(20) { count(db, "SELECT count(*) FROM sync_runs") >= 1 || !process.process.isRunning }
        try #require(ready != nil && process.process.isRunning, "the follower did not start: \(process.finish(limit: 1))")
        return process
    }

    @Test("a change published into a watched directory is merged at once (inotify), long before a 30 s interval")
    func inotify() throws {
        let sandbox = try Sandbox()
        let (a, log, b) = try Self.publisher(sandbox)
        let follower = try Self.follower(sandbox, db: b, [log, "--interval", "30s"])
        defer { follower.stop() }
        #expect(Waits.page(b, "ann") == 1)  // the first cycle merged the log
        #expect(try sandbox.run(["position", "set", "--user", "bob", "--page", "3"], db: a).status == 0)
        #expect(try sandbox.run(["publish", log], db: a).status == 0)
        let took = Waits.waitFor(10) { Waits.page(b, "bob") == 3 }
        #expect(took != nil && took! < 3, "merged after \(String(describing: took)) s")
        // The metrics: a poll counter and the write-to-visible lag of bob's row (one row, under 10 s),
        // as prometheus_client reads them.
        let metricsFile = sandbox.path("catalog.prom")
        #expect(try sandbox.run(["status", "--prometheus", "--output", metricsFile], db: b).status == 0)
        let text = try String(contentsOfFile: metricsFile, encoding: .utf8)
        let key = CatalogStore.realPathForTests(log)
        #expect(text.contains("catalog_follow_lag_seconds_count{source=\"\(key)\"} 1"), "\(text)")
        #expect(text.contains("catalog_follow_lag_seconds_bucket{source=\"\(key)\",le=\"10\"} 1"), "\(text)")
        #expect(text.contains("catalog_follow_lag_seconds_bucket{source=\"\(key)\",le=\"+Inf\"} 1"), "\(text)")
        #expect(text.contains("catalog_follow_polls_total{source=\"\(key)\"} 2"), "\(text)")
        if PrometheusParser.available {
            let families = try PrometheusParser.parse(file: metricsFile)
            #expect(families["catalog_follow_lag_seconds"]?.type == "histogram")
        }
        let run = Self.terminate(follower)
        #expect(run.status == 0, "\(run)")
        #expect(run.stderr.isEmpty, "\(run.stderr)")
        // The first cycle and the one that merged bob's page: two runs.
        #expect(Self.count(b, "SELECT count(*) FROM sync_runs") == 2)
    }

    /// Issue 25: with stdout a file or a pipe (journald, a `--json` pipeline) the follower held its lines
    /// in its buffer until it exited.
    @Test("stdout not a terminal: each cycle's line (text and --json) is written while the follower runs", arguments: [false, true])
    func cycleLinesAreNotHeld(json: Bool) throws {
        let sandbox = try Sandbox()
        let (a, log, b) = try Self.publisher(sandbox)
        let follower = try Self.follower(sandbox, db: b, [log, "--interval", "30s"] + (json ? ["--json"] : []))
        defer { follower.stop() }
        let printed = { String(decoding: (try? Data(contentsOf: follower.stdout)) ?? Data(), as: UTF8.self) }
        // The first cycle merged the log; its line is there while the follower still runs.
        #expect(Waits.waitFor(10) { !printed().isEmpty } != nil, "nothing printed yet")
        #expect(try sandbox.run(["position", "set", "--user", "bob", "--page", "3"], db: a).status == 0)
        #expect(try sandbox.run(["publish", log], db: a).status == 0)
        // Text mode begins with the "following …" line (issue 25); then one line per cycle that merged.
        let expected = json ? 2 : 3
        #expect(Waits.waitFor(10) { printed().split(separator: "\n").count == expected } != nil, "\(printed())")
        #expect(follower.process.isRunning)
        let lines = printed().split(separator: "\n")
        if json {
            #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) is [String: Any] }, "\(lines)")
        } else {
            #expect(lines.last?.contains("1 position") == true, "\(lines)")
        }
        let run = Self.terminate(follower)
        #expect(run.status == 0, "\(run)")
    }

    /// Issue 25: a follower showed at most `--max-diagnostics` warnings of each kind for its whole life;
    /// after that a source's new refusals were never shown.
    ///
    /// The limit is per window now (an hour; the harness shortens it to each cycle here).
    @Test("--max-diagnostics bounds a follower's warnings per window, not for its life: a later cycle's refusal is shown")
    func warningsPerWindow() throws {
        let sandbox = try Sandbox()
        let (a, log, b) = try Self.publisher(sandbox)
        #expect(try sandbox.run(["remote", "add", "pub", log, "--allow", "landmarks"], db: b).status == 0)
        let follower = try Self.follower(
            sandbox, db: b, ["pub", "--interval", "30s", "--max-diagnostics", "1"], binary: Support.harnessBinary,
            environment: ["CATALOG_TEST_FOLLOW_DIAGNOSTICS_WINDOW_S": "0"])
        defer { follower.stop() }
        let stderr = { String(decoding: (try? Data(contentsOf: follower.stderr)) ?? Data(), as: UTF8.self) }
        let refusals = { stderr().components(separatedBy: "not applied: position").count - 1 }
        #expect(Waits.waitFor(10) { refusals() == 1 } != nil, "\(stderr())")  // ann's, from the first cycle
        #expect(try sandbox.run(["position", "set", "--user", "zed", "--page", "3"], db: a).status == 0)
        #expect(try sandbox.run(["publish", log], db: a).status == 0)
        #expect(Waits.waitFor(10) { refusals() == 2 } != nil, "\(stderr())")
        #expect(stderr().contains("not applied: position zed"), "\(stderr())")
        #expect(Waits.page(b, "zed") == nil)
        #expect(Self.terminate(follower).status == 0)
    }

    @Test("runs noted beside the lock that cannot be moved into the ledger: the follower warns (kind ledger), as sync does")
    func skippedRunsFailureWarned() throws {
        let sandbox = try Sandbox()
        let (_, log, _) = try Self.publisher(sandbox)
        let b = try sandbox.seededDatabase("b.sqlite")
        // A noted run whose ledger insert is refused (issue 26: the follower swallowed this failure).
        let connection = try Connection(path: b)
        try connection.execute(
            sql: "CREATE TRIGGER planted BEFORE INSERT ON sync_runs WHEN NEW.outcome = 'planted' BEGIN SELECT RAISE(ABORT, 'planted refusal'); END")
        SyncLock.noteSkipped(databasePath: b, line: #"{"message":"m","sources":[],"started":1,"finished":2,"outcome":"planted"}"#)
        let follower = try Self.follower(sandbox, db: b, [log, "--interval", "30s"])
        defer { follower.stop() }
        let run = Self.terminate(follower)
        #expect(run.status == 0, "\(run)")
        #expect(run.stderr.contains("runs noted beside the lock were not moved into the ledger yet"), "\(run)")
        #expect(run.stderr.contains("planted refusal"), "\(run)")
    }

    @Test("over HTTP, a published change arrives within the interval (conditional GET every second)")
    func http() throws {
        let sandbox = try Sandbox()
        let (a, log, b) = try Self.publisher(sandbox)
        let server = try TestHTTPServer(directory: URL(fileURLWithPath: log))
        let follower = try Self.follower(sandbox, db: b, [server.url("/files/manifest.json")])
        defer { follower.stop() }
        #expect(Waits.page(b, "ann") == 1)
        #expect(try sandbox.run(["position", "set", "--user", "bob", "--page", "2"], db: a).status == 0)
        #expect(try sandbox.run(["publish", log], db: a).status == 0)
        let took = Waits.waitFor(10) { Waits.page(b, "bob") == 2 }
        #expect(took != nil && took! < 2.5, "merged after \(String(describing: took)) s")
        #expect(Self.terminate(follower).status == 0)
        // Polls after the first are conditional: the manifest's ETag goes with them.
        let manifests = try server.log().filter { $0["path"] == "/files/manifest.json" }
        #expect(manifests.count >= 2)
        #expect(manifests.dropFirst().allSatisfy { ($0["ifNoneMatch"] ?? nil) != nil })
    }

    @Test("a commit by 'position set' in another process is published by the follower within the interval")
    func localCommitPublished() throws {
        let sandbox = try Sandbox()
        let a = try sandbox.seededDatabase("a.sqlite")
        let log = sandbox.path("a-log")
        let follower = try Self.follower(sandbox, db: a, ["--publish", log])
        defer { follower.stop() }
        let manifest = log + "/manifest.json"
        func through() -> Int64? {
            guard let data = FileManager.default.contents(atPath: manifest),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { return nil }
            return (object["through"] as? NSNumber)?.int64Value
        }
        #expect(Waits.waitFor(5) { through() != nil } != nil)
        let before = try #require(through())
        #expect(try sandbox.run(["position", "set", "--user", "bob", "--page", "2"], db: a).status == 0)
        #expect(try sandbox.run(["position", "set", "--user", "cy", "--page", "3"], db: a).status == 0)
        let took = Waits.waitFor(5) { (through() ?? 0) >= before + 2 }
        #expect(took != nil && took! < 1.5, "published after \(String(describing: took)) s")
        #expect(Self.terminate(follower).status == 0)
        // A peer reading the log gets both pages.
        let b = sandbox.path("b.sqlite")
        #expect(try sandbox.run(["sync", "--quiet", log], db: b).status == 0)
        #expect(Waits.page(b, "bob") == 2 && Waits.page(b, "cy") == 3)
    }

    /// The `through` of the log manifest in `log`, or nil.
    static func through(_ log: String) -> Int64? {
        guard let data = FileManager.default.contents(atPath: log + "/manifest.json"),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return (object["through"] as? NSNumber)?.int64Value
    }

    /// The harness's hook runs `position set --user bob --page 2` from another process at the end of the
    /// follower's first cycle, after that cycle published (issue 25: the follower read `data_version`
    /// again there and took the commit up unseen; it was published only after the next foreign commit).
    @Test("a commit by another process inside a follower's cycle is published within the interval")
    func commitInsideCycle() throws {
        let sandbox = try Sandbox()
        let a = try sandbox.seededDatabase("a.sqlite")
        let log = sandbox.path("a-log")
        let command = [Support.catalogBinary.path, "--db", a, "position", "set", "--user", "bob", "--page", "2"]
        let hook = String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self)
        let follower = try Self.follower(
            sandbox, db: a, ["--publish", log], binary: Support.harnessBinary, environment: ["CATALOG_TEST_FOLLOW_CYCLE_END": hook])
        defer { follower.stop() }
        // The first cycle published ann; the hook's commit is change 2 (the seed is import + ann).
        let published = try #require(Waits.waitFor(5) { Self.through(log) != nil })
        #expect(published < 5)
        let took = Waits.waitFor(5) { Waits.page(a, "bob") == 2 && (Self.through(log) ?? 0) >= Self.count(a, "SELECT max(seq) FROM positions") }
        #expect(took != nil && took! < 1.5, "bob's commit published after \(String(describing: took)) s")
        #expect(Self.terminate(follower).status == 0)
        let b = sandbox.path("b.sqlite")
        #expect(try sandbox.run(["sync", "--quiet", log], db: b).status == 0)
        #expect(Waits.page(b, "bob") == 2)
    }

    /// The hook commits inside the first cycle and then stops the follower as SIGTERM does, so the
    /// commit is pending when the loop sees the stop (issue 25: the follower exited without it).
    @Test("stopped with a commit by another process pending: the follower publishes it before it exits")
    func stopPublishesPending() throws {
        let sandbox = try Sandbox()
        let a = try sandbox.seededDatabase("a.sqlite")
        let log = sandbox.path("a-log")
        let command = [Support.catalogBinary.path, "--db", a, "position", "set", "--user", "bob", "--page", "3"]
        let hook = String(decoding: try JSONSerialization.data(withJSONObject: command), as: UTF8.self)
        let follower = try sandbox.start(
            ["sync", "--follow", "--publish", log], db: a, binary: Support.harnessBinary,
            environment: ["CATALOG_TEST_FOLLOW_CYCLE_END": hook, "CATALOG_TEST_FOLLOW_CYCLE_END_STOP": "1"])
        defer { follower.stop() }
        let run = follower.finish(limit: 20)
        #expect(run.status == 0, "\(run)")
        let b = sandbox.path("b.sqlite")
        #expect(try sandbox.run(["sync", "--quiet", log], db: b).status == 0)
        #expect(Waits.page(b, "bob") == 3)
    }

    @Test("SIGTERM in the middle of a merge: the merge finishes (rows and cursor together), the run is recorded, exit 0")
    func sigtermMidMerge() throws {
        let sandbox = try Sandbox()
        let (_, log, b) = try Self.publisher(sandbox)
        // The harness sleeps 1.5 s inside each source's transaction, before its commit.
        let process = try sandbox.start(
            ["sync", "--follow", log], db: b, binary: Support.harnessBinary,
            environment: ["CATALOG_TEST_PAUSE_BEFORE_COMMIT_MS": "1500"])
        defer { process.stop() }
        usleep(600_000)
        #expect(Self.count(b, "SELECT count(*) FROM positions") <= 0)  // not committed yet
        let run = Self.terminate(process)
        #expect(run.status == 0, "\(run)")
        #expect(run.seconds < 5, "\(run)")
        // After the merge, never between: the position and the source's cursor came in one transaction.
        #expect(Waits.page(b, "ann") == 1)
        #expect(Self.count(b, "SELECT count(*) FROM sync_sources WHERE cursor IS NOT NULL") == 1)
        #expect(Self.count(b, "SELECT count(*) FROM sync_runs WHERE outcome = 'ok'") == 1)
        #expect(!FileManager.default.fileExists(atPath: b + ".sync-follow"))
    }

    /// Regression (issue 25): sources were polled one after another, so one HTTP server that accepted
    /// and never answered held a local log's merge for ~28 s, and SIGTERM waited for the hung GET.
    @Test(
        "a hung HTTP source or serve beside a local log: the log's changes merge within 1 s; SIGTERM exits 0 within 2 s",
        arguments: ["http", "serve", "serve+6000"])
    func hungSourceHoldsNoOther(_ kind: String) throws {
        let sandbox = try Sandbox()
        let (a, log, b) = try Self.publisher(sandbox)
        let hung = try TCPListener()
        let tokenFile = sandbox.path("token.jwt")
        try "e30.e30.c2ln".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let source =
            kind == "http"
            ? ["http://127.0.0.1:\(hung.port)/manifest.json"] : ["catalog+http://127.0.0.1:\(hung.port)/v1", "--token-file", tokenFile]
        if kind == "serve+6000" {
            // More rows to push than a worker's sync reads ahead (5 pages of 1,000): issue 25's breaker saw
            // the whole sync run on the follower's thread, the log's merges held 24–28 s.
            let backlog = sandbox.path("backlog.json")
            try positionsSnapshot(6000, at: "2026-12-01T00:00:00.000Z").write(toFile: backlog, atomically: true, encoding: .utf8)
            #expect(try sandbox.run(["sync", backlog], db: b).status == 0)
        }
        let follower = try Self.follower(sandbox, db: b, source + [log, "--timeout", "120s"])
        defer { follower.stop() }
        // The follower's first cycle is the run after the backlog's.
        if kind == "serve+6000" { #expect(Waits.waitFor(15) { Self.count(b, "SELECT count(*) FROM sync_runs") >= 2 } != nil) }
        #expect(Waits.page(b, "ann") == 1)
        // The hung source, never synced yet, is not recorded as "not modified" (issue 25's breaker: counted
        // healthy by status --check).
        #expect(Self.count(b, "SELECT count(*) FROM sync_run_sources WHERE source LIKE '%\(hung.port)%'") == 0)
        for (user, page) in [("bob", 2), ("cy", 3)] {
            #expect(try sandbox.run(["position", "set", "--user", user, "--page", "\(page)"], db: a).status == 0)
            #expect(try sandbox.run(["publish", log], db: a).status == 0)
            let took = Waits.waitFor(10) { Waits.page(b, user) == Int64(page) }
            #expect(took != nil && took! < 1, "\(user) merged after \(String(describing: took)) s")
        }
        // A local commit right before SIGTERM: the last pass pushes it to the hung serve for at most 1.5 s
        // (issue 25's breaker: 31 s, the whole --timeout).
        #expect(try sandbox.run(["position", "set", "--user", "dee", "--page", "1"], db: b).status == 0)
        let stopping = ContinuousClock.now
        let run = Self.terminate(follower)
        #expect(run.status == 0, "\(run)")
        #expect(ContinuousClock.now - stopping < .milliseconds(2500), "SIGTERM took \(ContinuousClock.now - stopping)")
    }

    /// Regression (issue 25's breaker): a hub whose PostgreSQL was frozen (SIGSTOP) held a follower's SIGTERM
    /// for the connect timeout, 28 s: libpq's waits did not see the stop.
    @Test("a frozen hub (accepts, never answers): SIGTERM ends the follower within 2 s, exit 0")
    func frozenHubStopsAtOnce() throws {
        let sandbox = try Sandbox()
        let (_, log, b) = try Self.publisher(sandbox)
        let frozen = try TCPListener()
        let hub = "postgresql://postgres@127.0.0.1:\(frozen.port)/catalog_hub?sslmode=disable"
        let follower = try sandbox.start(["sync", "--follow", hub, log, "--timeout", "120s"], db: b)
        defer { follower.stop() }
        // The hook: the follower's connection is waiting in the listener's backlog, unanswered.
        let connected = Waits.waitFor(20) {
            var descriptor = pollfd(fd: frozen.fd, events: Int16(POLLIN), revents: 0)
            return poll(&descriptor, 1, 0) > 0
        }
        #expect(connected != nil, "the follower never connected to the frozen hub")
        let stopping = ContinuousClock.now
        let run = Self.terminate(follower)
        #expect(run.status == 0, "\(run)")
        #expect(ContinuousClock.now - stopping < .milliseconds(2500), "SIGTERM took \(ContinuousClock.now - stopping)")
        #expect(!run.stderr.contains("internal error"), "\(run.stderr)")
    }

    /// Regression (issue 25): a followed log directory removed and re-created was not watched again: the
    /// re-creating publish waited for the next poll (17–20 s with `--interval 20s`), and so did every later one.
    @Test(
        "a followed directory removed (or renamed away) and re-created: the re-creating publish and the next merge within 1 s",
        arguments: [[], ["--interval", "20s"]], ["rm", "mv"])
    func directoryRecreated(_ interval: [String], _ how: String) throws {
        let sandbox = try Sandbox()
        let (a, log, b) = try Self.publisher(sandbox)
        let follower = try Self.follower(sandbox, db: b, [log] + interval)
        defer { follower.stop() }
        #expect(Waits.page(b, "ann") == 1)
        // Renamed away, the directory keeps its inotify watch (issue 25's breaker: the path was not watched
        // again, 20 s a publish with --interval 20s).
        if how == "mv" {
            try FileManager.default.moveItem(atPath: log, toPath: sandbox.path("away"))
        } else {
            try FileManager.default.removeItem(atPath: log)
        }
        // Away long enough for polls to fail and back off (at the default interval: 1, 2, 4 s).
        usleep(3_500_000)
        for (user, page) in [("bob", 2), ("cy", 3)] {
            #expect(try sandbox.run(["position", "set", "--user", user, "--page", "\(page)"], db: a).status == 0)
            #expect(try sandbox.run(["publish", log], db: a).status == 0)
            let took = Waits.waitFor(25) { Waits.page(b, user) == Int64(page) }
            #expect(took != nil && took! < 1, "\(user) merged after \(String(describing: took)) s")
        }
        #expect(Self.terminate(follower).status == 0)
    }

    @Test("a failing source backs off (doubling) while another keeps flowing")
    func backoff() throws {
        let sandbox = try Sandbox()
        let (a, log, b) = try Self.publisher(sandbox)
        let server = try TestHTTPServer(directory: URL(fileURLWithPath: log))
        let good = server.url("/files/manifest.json")
        let bad = server.url("/missing")
        let follower = try Self.follower(sandbox, db: b, [bad, good, "--interval", "0.2s"])
        defer { follower.stop() }
        usleep(1_500_000)
        #expect(try sandbox.run(["position", "set", "--user", "bob", "--page", "2"], db: a).status == 0)
        #expect(try sandbox.run(["publish", log], db: a).status == 0)
        #expect(Waits.waitFor(3) { Waits.page(b, "bob") == 2 } != nil)
        usleep(1_000_000)
        let run = Self.terminate(follower)
        #expect(run.status == 0, "\(run)")
        let requests = try server.log().compactMap { $0["path"] ?? nil }
        let goodPolls = requests.filter { $0 == "/files/manifest.json" }.count
        let badPolls = requests.filter { $0 == "/missing" }.count
        // ~3.5 s: the good one every 0.2 s (~15 polls); the bad one at 0, 0.2, 0.6, 1.4, 3.0 s (≤ 6).
        #expect(goodPolls >= 10, "\(goodPolls) polls of the good source")
        #expect(badPolls >= 3 && badPolls <= 6, "\(badPolls) polls of the failing source")
        // The failure is said once, not at every retry.
        #expect(run.stderr.components(separatedBy: "/missing").count - 1 == 1, "\(run.stderr)")
        // Recorded: the first cycle (failed) and the cycle that merged bob's page; not every failed retry.
        #expect(Self.count(b, "SELECT count(*) FROM sync_runs") == 2)
    }

    /// Regression (issue 25): the follower printed no line when it started, and a source's failure was
    /// printed but never its end.
    @Test("the follower says when it starts, and when a failing source recovers (once; none of it with --quiet)")
    func startAndRecovered() throws {
        for quiet in [false, true] {
            let sandbox = try Sandbox()
            let a = try sandbox.seededDatabase("a.sqlite")
            let log = sandbox.path("later-log")
            let b = sandbox.path("b.sqlite")
            let follower = try Self.follower(sandbox, db: b, [log, "--interval", "0.2s"] + (quiet ? ["--quiet"] : []))
            defer { follower.stop() }
            #expect(try sandbox.run(["publish", log], db: a).status == 0)
            #expect(Waits.waitFor(10) { Waits.page(b, "ann") == 1 } != nil)
            usleep(600_000)
            let run = Self.terminate(follower)
            #expect(run.status == 0, "\(run)")
            #expect(run.stderr.components(separatedBy: "later-log").count - 1 >= 1, "the failure is said: \(run.stderr)")
            let lines = run.stdout.split(separator: "\n")
            if quiet {
                #expect(run.stdout.isEmpty, "\(run.stdout)")
            } else {
                #expect(lines.first?.contains("following \(log) (every 0.2 s; SIGTERM stops)") == true, "\(run.stdout)")
                #expect(lines.filter { $0.hasSuffix("\(log): recovered") }.count == 1, "\(run.stdout)")
            }
        }
    }

    @Test("an idle follower's ledger gains no rows over 100 polls, and its polls write nothing")
    func idleLedger() throws {
        let sandbox = try Sandbox()
        let (_, log, b) = try Self.publisher(sandbox)
        let server = try TestHTTPServer(directory: URL(fileURLWithPath: log))
        let url = server.url("/files/manifest.json")
        let follower = try Self.follower(sandbox, db: b, [url, "--interval", "0.03s"])
        defer { follower.stop() }
        let runs = Self.count(b, "SELECT count(*) FROM sync_runs")
        let attempt = try dumpRows(b, sql: "SELECT last_attempt_at FROM sync_sources")
        #expect(Waits.waitFor(15, every: 100_000) { ((try? server.log()) ?? []).count > 110 } != nil)
        #expect(Self.count(b, "SELECT count(*) FROM sync_runs") == runs)
        #expect(runs == 1)
        #expect(try dumpRows(b, sql: "SELECT last_attempt_at FROM sync_sources") == attempt)
        #expect(Self.terminate(follower).status == 0)
        #expect(Self.count(b, "SELECT count(*) FROM sync_runs") == runs)
    }

    @Test("while a follower runs: sync exits 75 at once; status says 'following since' with the pid; status --check is healthy")
    func lockAndStatus() throws {
        let sandbox = try Sandbox()
        let (_, log, b) = try Self.publisher(sandbox)
        let follower = try Self.follower(sandbox, db: b, [log])
        defer { follower.stop() }
        let sync = try sandbox.run(["sync", log], db: b)
        #expect(sync.status == 75, "\(sync)")
        #expect(sync.seconds < 2)
        #expect(sync.stderr.contains("pid \(follower.pid)") && sync.stderr.contains("following"), "\(sync.stderr)")
        // Issue 25: the hint said cron would retry, which a follower holding the lock for good makes untrue.
        #expect(sync.stderr.contains("a follower (sync --follow) syncs this database") && !sync.stderr.contains("cron"), "\(sync.stderr)")
        let status = try sandbox.run(["status"], db: b)
        #expect(status.stdout.contains("following:   since ") && status.stdout.contains("(pid \(follower.pid) on "), "\(status.stdout)")
        let check = try sandbox.run(["status", "--check", "--max-age", "5m"], db: b)
        #expect(check.status == 0, "\(check)")
        #expect(check.stdout.contains("following since") && check.stdout.contains("(pid \(follower.pid))"), "\(check.stdout)")
        let metrics = try sandbox.run(["status", "--prometheus"], db: b)
        #expect(metrics.stdout.contains("catalog_follower_up 1"))
        #expect(metrics.stdout.contains("catalog_follow_polls_total{source=\"\(CatalogStore.realPathForTests(log))\"}"), "\(metrics.stdout)")
        #expect(Self.terminate(follower).status == 0)
        // Stopped cleanly: no marker, and status says nothing about following.
        #expect(!(try sandbox.run(["status"], db: b).stdout.contains("following")))
    }

    @Test("a follower killed with SIGKILL: status --check says it is not running; the next sync clears the marker")
    func killedFollower() throws {
        let sandbox = try Sandbox()
        let (_, log, b) = try Self.publisher(sandbox)
        let follower = try Self.follower(sandbox, db: b, [log])
        kill(follower.pid, SIGKILL)
        _ = follower.finish(limit: 5)
        let check = try sandbox.run(["status", "--check"], db: b)
        #expect(check.status == 69)
        #expect(check.stderr.contains("(pid \(follower.pid)) is not running"), "\(check.stderr)")
        #expect(try sandbox.run(["sync", "--quiet", log], db: b).status == 0)
        #expect(try sandbox.run(["status", "--check"], db: b).status == 0)
    }

    @Test(
        "a log directory that does not exist yet fails once, is merged as soon as it is published (inotify on its parent), and the recovery is recorded"
    )
    func recovers() throws {
        let sandbox = try Sandbox()
        let a = try sandbox.seededDatabase("a.sqlite")
        let log = sandbox.path("later-log")
        let b = sandbox.path("b.sqlite")
        let follower = try Self.follower(sandbox, db: b, [log, "--interval", "30s"])
        defer { follower.stop() }
        #expect(Self.count(b, "SELECT count(*) FROM sync_runs WHERE outcome = 'failed' AND exit_status = 66") == 1)
        #expect(try sandbox.run(["status", "--check"], db: b).status == 69)
        #expect(try sandbox.run(["publish", log], db: a).status == 0)
        let took = Waits.waitFor(10) { Waits.page(b, "ann") == 1 }
        #expect(took != nil && took! < 3, "merged after \(String(describing: took)) s")
        // Recorded: the first failure, perhaps a second (the directory there, its manifest not yet), the recovery.
        #expect(
            Waits.waitFor(5) { Self.count(b, "SELECT count(*) FROM sync_runs WHERE id = (SELECT max(id) FROM sync_runs) AND outcome = 'ok'") == 1 }
                != nil)
        #expect((2...3).contains(Self.count(b, "SELECT count(*) FROM sync_runs")))
        let check = try sandbox.run(["status", "--check"], db: b)
        #expect(check.status == 0, "\(check)")
        let run = Self.terminate(follower)
        #expect(run.status == 0, "\(run)")
        // A failure is printed when it is new: the directory missing, perhaps its manifest not there yet.
        #expect((1...2).contains(run.stderr.components(separatedBy: "catalog: error:").count - 1), "\(run.stderr)")
    }

    /// Issue 25: the follower worked out the source's key once as `DIR` (not there yet) while the trust
    /// lookup later used `DIR/manifest.json`: unsigned and disallowed rows were all merged.
    @Test("a remote with --trust and --allow positions whose directory appears after the follower started: unsigned 77, signed merges only positions")
    func trustOfDirectoryThatAppearsLater() throws {
        let sandbox = try Sandbox()
        let a = try sandbox.seededDatabase("a.sqlite")
        let log = sandbox.path("later-log")
        let b = sandbox.path("b.sqlite")
        let generated = try sandbox.run(["key", "generate", "--output", sandbox.path("peer.key")])
        try #require(generated.status == 0, "\(generated)")
        let line = try #require(generated.stdout.split(separator: "\n").last.map(String.init))
        let added = try sandbox.run(["remote", "add", "peer", log, "--trust", line, "--allow", "positions"], db: b)
        try #require(added.status == 0, "\(added)")
        let follower = try Self.follower(sandbox, db: b, ["--interval", "30s"])
        defer { follower.stop() }
        #expect(try sandbox.run(["publish", log], db: a).status == 0)
        let refused = Waits.waitFor(10) { Self.count(b, "SELECT count(*) FROM sync_runs WHERE exit_status = 77") >= 1 }
        #expect(refused != nil, "the unsigned log was not refused with 77")
        #expect(Self.count(b, "SELECT count(*) FROM landmarks") == 0)
        #expect(Self.count(b, "SELECT count(*) FROM positions") == 0)
        #expect(try sandbox.run(["publish", log, "--sign", sandbox.path("peer.key")], db: a).status == 0)
        let took = Waits.waitFor(10) { Waits.page(b, "ann") == 1 }
        #expect(took != nil && took! < 3, "merged after \(String(describing: took)) s")
        #expect(Self.count(b, "SELECT count(*) FROM landmarks") == 0)
        let run = Self.terminate(follower)
        #expect(run.status == 0, "\(run)")
        #expect(Self.count(b, "SELECT count(*) FROM landmarks") == 0)
    }

    @Test("SIGHUP reads the saved remotes again: a remote added while following is followed")
    func reload() throws {
        let sandbox = try Sandbox()
        let (_, log, b) = try Self.publisher(sandbox)
        #expect(try sandbox.run(["remote", "add", "a", log], db: b).status == 0)
        let c = try sandbox.seededDatabase("c.sqlite")
        let cLog = sandbox.path("c-log")
        #expect(try sandbox.run(["position", "set", "--user", "dee", "--page", "2"], db: c).status == 0)
        #expect(try sandbox.run(["publish", cLog], db: c).status == 0)
        let follower = try Self.follower(sandbox, db: b, ["--interval", "30s"])
        defer { follower.stop() }
        #expect(try sandbox.run(["remote", "add", "c", cLog], db: b).status == 0)
        usleep(300_000)
        #expect(Waits.page(b, "dee") == nil)  // not followed yet
        kill(follower.pid, SIGHUP)
        let took = Waits.waitFor(5) { Waits.page(b, "dee") == 2 }
        #expect(took != nil, "not merged after SIGHUP")
        let run = Self.terminate(follower)
        #expect(run.status == 0, "\(run)")
    }

    @Test("usage: --interval needs --follow; --follow refuses --dry-run and '-'")
    func usage() throws {
        let sandbox = try Sandbox()
        let db = sandbox.path("c.sqlite")
        #expect(try sandbox.run(["sync", "x", "--interval", "2s"], db: db).status == 64)
        #expect(try sandbox.run(["sync", "--follow", "--dry-run", "x"], db: db).status == 64)
        let stdin = try sandbox.run(["sync", "--follow", "-"], db: db)
        #expect(stdin.status == 64 && stdin.stderr.contains("cannot be followed"), "\(stdin)")
    }
}

/// `contrib/systemd/catalog-follow.service`, checked like the timer's units (ContribTests).
@Suite("Operations: contrib/systemd/catalog-follow.service")
struct FollowUnitTests {
    static let service = Support.root.appending(path: "contrib/systemd/catalog-follow.service")

    @Test("its keys: a simple service restarted on failure, reloaded by SIGHUP, one absolute sync --follow command the CLI accepts")
    func keys() throws {
        let unit = try Contrib.unit(Self.service)
        #expect(Contrib.value(unit, "Service", "Type") == ["simple"])
        #expect(Contrib.value(unit, "Service", "Restart") == ["on-failure"])
        #expect(!Contrib.value(unit, "Service", "User").isEmpty)
        #expect(Contrib.value(unit, "Service", "ExecReload") == ["/bin/kill -HUP $MAINPID"])
        #expect(Contrib.value(unit, "Unit", "After").contains("network-online.target"))
        #expect(Contrib.value(unit, "Install", "WantedBy") == ["multi-user.target"])
        let exec = Contrib.execLines(unit, "ExecStart")
        #expect(exec.count == 1)
        let argv = exec[0].split(separator: " ").map(String.init)
        #expect(argv.first == Contrib.binary)
        #expect(argv.contains("--follow"))
        let parsed = try Parser.parse(Array(argv.dropFirst()), root: CatalogCLI.rootCommand)
        #expect(parsed.1.path == ["sync"] && parsed.1.flags.contains("--follow"))
    }

    @Test("it runs: the ExecStart line against a scratch directory follows, publishes, and stops with SIGTERM (exit 0)")
    func runs() throws {
        let sandbox = try Sandbox()
        let unit = try Contrib.unit(Self.service)
        let argv = Contrib.execLines(unit, "ExecStart")[0].split(separator: " ").map {
            $0.replacingOccurrences(of: "/var/lib/catalog", with: sandbox.path("state"))
        }
        try FileManager.default.createDirectory(atPath: sandbox.path("state"), withIntermediateDirectories: true)
        let db = sandbox.path("state/catalog.sqlite")
        let peer = try sandbox.seededDatabase("peer.sqlite")
        #expect(try sandbox.run(["publish", sandbox.path("peer-log")], db: peer).status == 0)
        #expect(try sandbox.run(["remote", "add", "peer", sandbox.path("peer-log")], db: db).status == 0)
        let process = try sandbox.start(Array(argv.dropFirst()))
        defer { process.stop() }
        #expect(Waits.waitFor(10) { FileManager.default.fileExists(atPath: sandbox.path("state/publish/manifest.json")) } != nil)
        #expect(Waits.page(db, "ann") == 1)
        let run = FollowTests.terminate(process)
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout.isEmpty && run.stderr.isEmpty, "\(run)")
    }

    @Test("systemd-analyze verify accepts it with no warning", .enabled(if: Contrib.systemdAnalyze != nil))
    func verify() throws {
        let root = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let units = root.appending(path: "etc/systemd/system")
        try FileManager.default.createDirectory(at: units, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appending(path: "usr/local/bin"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appending(path: "bin"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.service, to: units.appending(path: "catalog-follow.service"))
        try FileManager.default.copyItem(at: Support.catalogBinary, to: root.appending(path: "usr/local/bin/catalog"))
        try FileManager.default.copyItem(at: URL(fileURLWithPath: "/bin/kill"), to: root.appending(path: "bin/kill"))
        let system = ["/usr/lib/systemd/system", "/lib/systemd/system"].first { FileManager.default.fileExists(atPath: $0) }
        try FileManager.default.createDirectory(at: root.appending(path: "usr/lib/systemd"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: try #require(system)), to: root.appending(path: "usr/lib/systemd/system"))
        let result = try runProcess(
            URL(fileURLWithPath: try #require(Contrib.systemdAnalyze)),
            ["verify", "--man=no", "--root=\(root.path)", "/etc/systemd/system/catalog-follow.service"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "", "\(result.stderr)")
    }
}

/// Followers through a PostgreSQL hub: A's commits are pushed as soon as they are seen, B pulls them.
@Suite("Sync: follow through a hub", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"), .serialized)
struct FollowHubTests {
    @Test(
        "a 'position set' on A is on B at once with a 30 s interval: A sees its commit (inotify, data_version) and pushes; the push NOTIFYs; B LISTENs and pulls"
    )
    func throughHub() throws {
        let server = try PostgresServer.running()
        let (hub, _) = try HubSupport.makeHub(server)
        let sandbox = try Sandbox()
        let a = try sandbox.seededDatabase("a.sqlite")
        let b = sandbox.path("b.sqlite")
        let followA = try FollowTests.follower(sandbox, db: a, [hub, "--interval", "30s"])
        defer { followA.stop() }
        let followB = try FollowTests.follower(sandbox, db: b, [hub, "--interval", "30s"])
        defer { followB.stop() }
        #expect(Waits.waitFor(5) { Waits.page(b, "ann") == 1 } != nil)
        let runsB = FollowTests.count(b, "SELECT count(*) FROM sync_runs")
        let start = ContinuousClock.now
        #expect(try sandbox.run(["position", "set", "--user", "bob", "--page", "3"], db: a).status == 0)
        let took = Waits.waitFor(10, every: 2_000) { Waits.page(b, "bob") == 3 }
        // B listens (LISTEN catalog_hub): with a 30 s interval, only the push's NOTIFY explains this.
        #expect(took != nil && Waits.seconds(since: start) < 1.5, "on B after \(String(describing: took)) s")
        // B recorded the cycle that merged bob's page, and nothing for its idle polls.
        usleep(1_500_000)
        #expect(FollowTests.count(b, "SELECT count(*) FROM sync_runs") == runsB + 1)
        let runA = FollowTests.terminate(followA)
        let runB = FollowTests.terminate(followB)
        #expect(runA.status == 0 && runB.status == 0, "\(runA) \(runB)")
        #expect(runA.stderr.isEmpty && runB.stderr.isEmpty, "\(runA.stderr) \(runB.stderr)")
    }

    /// The backends of the follower's polls on `database`: its connections but the listener's (whose last
    /// statement is its `pg_notify` self-test) and this suite's own (`catalog-tests`).
    static func pollBackends(_ server: PostgresServer, _ database: String) throws -> Set<Int32> {
        let result = try HubSupport.connect(server, database).execute(
            sql: """
                SELECT pid FROM pg_stat_activity
                WHERE datname = $1 AND backend_type = 'client backend' AND application_name = 'catalog'
                  AND query NOT LIKE '%pg_notify%'
                """, [.text(database)])
        return Set((0..<result.rowCount).compactMap { result.text($0, 0).flatMap { Int32($0) } })
    }

    /// Follows `hub` from a seeded edge in this process, with a 30 s interval, so that only the local
    /// writes `afterCycle` makes (it returns false to stop) bring a poll; returns each cycle's report.
    static func followHub(_ hub: String, afterCycle: @escaping @Sendable (Int, String) throws -> Bool) throws -> [SyncReport] {
        _ = Support.networkSources
        let sandbox = try Sandbox()
        let edge = try sandbox.seededDatabase("edge.sqlite")
        var options = FollowOptions()
        options.intervalSeconds = 30
        let cycles = Mutex(0)
        options.cycleEndHook = { control in
            let n = cycles.withLock { n in
                n += 1
                return n
            }
            do {
                guard try afterCycle(n, edge), n < 10 else { return control.stop() }
                // A commit by another process: the follower sees it and polls the hub to push it.
                _ = try Positions(CatalogStore.open(path: edge)).setPosition(user: "u\(n)", to: .page(1))
            } catch {
                Issue.record("\(error)")
                control.stop()
            }
        }
        var reports: [SyncReport] = []
        try SyncRunner(store: CatalogStore.open(path: edge)).follow(
            sources: [hub], options: options, control: try FollowControl(), onCycle: { reports.append($0.report) })
        return reports
    }

    /// Issue 26: every poll opened a new connection to the hub and checked its migrations again.
    @Test("a follower keeps one connection to a hub across its polls: the same backend pid, so the schema is checked once")
    func keepsHubConnection() throws {
        let server = try PostgresServer.running()
        let (hub, database) = try HubSupport.makeHub(server)
        let seen = Mutex<[Set<Int32>]>([])
        let reports = try Self.followHub(hub) { n, _ in
            seen.withLock { $0.append((try? Self.pollBackends(server, database)) ?? []) }
            return n < 4
        }
        let backends = seen.withLock { $0 }
        #expect(backends.count == 4 && reports.count == 4, "\(backends)")
        #expect(backends.allSatisfy { $0.count == 1 } && Set(backends).count == 1, "one backend, the same after every poll: \(backends)")
        #expect(reports.allSatisfy { $0.firstError == nil }, "\(reports.map(\.sources))")
        // Each poll after the first pushed the write that brought it.
        let pushed = try HubSupport.scalar(server, database, "SELECT count(*) FROM positions WHERE user_id LIKE 'u%'")
        #expect(pushed == "3")
    }

    /// A hub restarted under a follower drops its connections (SQLSTATE 57P01, "terminating connection due
    /// to administrator command"): the next poll opens a new one instead of failing.
    @Test("a hub that dropped the follower's kept connection (as a restart does) is connected again at the next poll, which succeeds")
    func reconnectsToHub() throws {
        let server = try PostgresServer.running()
        let (hub, database) = try HubSupport.makeHub(server)
        let seen = Mutex<[Set<Int32>]>([])
        let reports = try Self.followHub(hub) { n, _ in
            let before = try Self.pollBackends(server, database)
            seen.withLock { $0.append(before) }
            guard n == 2 else { return n < 3 }
            // What a restart does to the follower's connections: every backend of the hub's database ends.
            let admin = try HubSupport.connect(server, database)
            _ = try admin.execute(
                sql: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [.text(database)])
            let deadline = ContinuousClock.now + .seconds(10)
            while try !Self.pollBackends(server, database).isDisjoint(with: before), ContinuousClock.now < deadline { usleep(20_000) }
            return true
        }
        let backends = seen.withLock { $0 }
        #expect(reports.count == 3 && backends.count == 3, "\(backends)")
        guard reports.count == 3, backends.count == 3 else { return }
        #expect(backends[0] == backends[1] && backends[1].count == 1, "kept before the restart: \(backends)")
        #expect(backends[2].count == 1 && backends[2] != backends[1], "a new connection after it: \(backends)")
        #expect(reports[2].firstError == nil, "the poll after the restart succeeded: \(reports[2].sources)")
        #expect(try HubSupport.scalar(server, database, "SELECT count(*) FROM positions WHERE user_id LIKE 'u%'") == "2")
    }
}

/// Followers run in this process (``SyncRunner/follow(sources:options:control:diagnostics:onCycle:)``),
/// driven by the cycle-end hook: what SIGHUP does is ``FollowControl/reload()``, called here between two
/// cycles, so no signal's timing decides what a test sees.
@Suite("Sync: follow, driven in process", .serialized)
struct FollowInProcessTests {
    /// The key id that signed `log`'s manifest, nil when it is not signed (or the signature is not minisign's).
    static func signer(_ log: URL) -> String? {
        guard let data = FileManager.default.contents(atPath: log.appending(path: "manifest.json.minisig").path) else { return nil }
        return (try? MinisignSignature(text: String(decoding: data, as: UTF8.self), source: ""))?.keyIDText
    }

    /// Whether `key` signed `log`'s manifest as it is now.
    static func verifies(_ log: URL, _ key: MinisignPublicKey) -> Bool {
        guard let manifest = FileManager.default.contents(atPath: log.appending(path: "manifest.json").path),
            let data = FileManager.default.contents(atPath: log.appending(path: "manifest.json.minisig").path),
            let signature = try? MinisignSignature(text: String(decoding: data, as: UTF8.self), source: "")
        else { return false }
        return signature.verifies(Array(manifest), with: key)
    }

    /// Issue 25: `--sign` was read once; SIGHUP did not read it again, so a rotated key never signed.
    @Test("SIGHUP (reload) reads the --sign key file again: the next publish is signed by the key now in the file; an unreadable file keeps the key")
    func reloadReadsSigningKey() throws {
        _ = Support.networkSources
        let dir = Support.temporaryDirectory()
        let (keyFile, _) = try Trust.generate(dir, "publisher")
        let (replacement, _) = try Trust.generate(dir, "replacement")
        let oldKey = try MinisignSecretKey.load(path: keyFile).publicKey
        let newKey = try MinisignSecretKey.load(path: replacement).publicKey
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        var options = FollowOptions()
        options.intervalSeconds = 30
        options.sync.publishPath = log.path
        options.sync.publish.signingKey = try MinisignSecretKey.load(path: keyFile)
        options.signingKeyFile = keyFile
        let signers = Mutex<[String?]>([])
        let writer = a.path
        options.cycleEndHook = { control in
            let cycle = signers.withLock { list in
                list.append(Self.signer(log))
                return list.count
            }
            do {
                switch cycle {
                case 1:
                    // The key is rotated in its file (as an operator does before `systemctl reload`), and
                    // another process commits: the next cycle publishes that commit.
                    #expect(rename(replacement, keyFile) == 0)
                    control.reload()
                    _ = try Positions(CatalogStore.open(path: writer)).setPosition(user: "bob", to: .page(0))
                case 2:
                    // A key file that cannot be used now (open to others): the key in use goes on signing.
                    #expect(chmod(keyFile, 0o644) == 0)
                    control.reload()
                    _ = try Positions(CatalogStore.open(path: writer)).setPosition(user: "bob", to: .page(1))
                default:
                    control.stop()
                }
            } catch {
                Issue.record("\(error)")
                control.stop()
            }
        }
        let diagnostics = Mutex<[Diagnostic]>([])
        try SyncRunner(store: a).follow(
            sources: [], options: options, control: try FollowControl(), diagnostics: { d in diagnostics.withLock { $0.append(d) } })
        let seen = signers.withLock { $0 }
        #expect(seen == [oldKey.id, newKey.id, newKey.id], "\(seen)")
        #expect(Self.verifies(log, newKey))
        #expect(try LogFixtures.manifest(log).through == a.changeSequence())
        let warnings = diagnostics.withLock { $0 }
        #expect(warnings.count == 1 && warnings.first?.kind == "reload", "\(warnings)")
        #expect(warnings.first?.message.contains("key \(newKey.id) goes on signing") == true, "\(warnings)")
        let secret = try String(contentsOfFile: keyFile, encoding: .utf8).components(separatedBy: "\n")[1]
        #expect(!warnings.contains { $0.message.contains(secret.suffix(40)) })
    }

    /// Issue 25: a cycle whose rows were all refused by the source's grant left no ledger row, so
    /// `catalog log` never showed them.
    @Test("a follow cycle whose rows were all not allowed (--allow landmarks, a position arrives) is recorded with its count")
    func notAllowedCycleRecorded() throws {
        let dir = Support.temporaryDirectory()
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try Trust.publish(a, log)
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(runCLI(["remote", "add", "pub", log.path, "--allow", "landmarks"], db: consumer).status == 0)
        var options = FollowOptions()
        options.intervalSeconds = 30
        let cycles = Mutex(0)
        let publisher = a.path
        options.cycleEndHook = { control in
            let cycle = cycles.withLock { n in
                n += 1
                return n
            }
            guard cycle == 1 else { return control.stop() }
            do {
                // Only a position changes: the next cycle (inotify) merges nothing, refuses one row.
                let store = try CatalogStore.open(path: publisher)
                _ = try Positions(store).setPosition(user: "zed", to: .page(0))
                _ = try Trust.publish(store, log)
            } catch {
                Issue.record("\(error)")
                control.stop()
            }
        }
        try SyncRunner(store: CatalogStore.open(path: consumer)).follow(sources: [], options: options, control: try FollowControl())
        #expect(cycles.withLock { $0 } == 2)
        let runs = try dumpRows(consumer, sql: "SELECT not_allowed, positions_applied, landmarks_applied FROM sync_runs ORDER BY id")
        #expect(runs == [[.integer(1), .integer(0), .integer(5)], [.integer(1), .integer(0), .integer(0)]], "\(runs)")
        let ledger = runCLI(["log"], db: consumer)
        #expect(
            ledger.status == 0
                && ledger.stdout.contains("0 of 0 landmarks and 0 of 1 position applied, 0 stale, 0 ties, 0 quarantined, 1 not allowed"),
            "\(ledger.stdout)")
        #expect(try dumpRows(consumer, sql: "SELECT count(*) FROM positions") == [[.integer(0)]])
    }
}
