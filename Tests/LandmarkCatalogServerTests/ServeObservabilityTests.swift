import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogServer

#if os(Linux)
    import Glibc
#endif

/// serve's metrics, its alert rules and its operator's page (docs/serve.md §6, §10; docs/operations.md §3),
/// against the real `catalog serve`.
@Suite("Serve: metrics, alert rules and the operator's page")
struct ServeObservabilityTests {
    static let promtool: String? = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Where the page's screenshot is kept after the run: `.build/test-output/` of the package.
    static let outputDirectory = Support.root.appending(path: ".build/test-output")

    @Test("a scrape after real requests: durations per route, refusals by cause, active users, cap, database, process, build")
    func metricsScrape() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let before = Date().timeIntervalSince1970
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--max-connections", "500"], metrics: true)
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let other = try ServeKeys.make(box, "other")
        let forged = try ServeKeys.issue(box, key: other.privateKey, user: "ann")
        let url = serve.base + "/v1/positions"
        // 4 answered 200 without waiting: 2 GETs of ann, 1 of bob, 1 POST of ann.
        #expect(try ServeCurl.get(url, token: ann).status == 200)
        #expect(try ServeCurl.get(url, token: ann).status == 200)
        #expect(try ServeCurl.get(url, token: bob).status == 200)
        #expect(try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 4)).status == 200)
        // 1 long-poll held for its whole second.
        let cursor = try #require(try ServeCurl.get(url, token: bob).json?["cursor"] as? String)
        #expect(try ServeCurl.get(url + "?after=\(cursor)&wait=1", token: bob).status == 200)
        // 5 refusals, one of each cause met here.
        #expect(try ServeCurl.get(url).status == 401)
        #expect(try ServeCurl.get(url, headers: ["Authorization: Basic YW5uOng="]).status == 401)
        #expect(try ServeCurl.get(url, token: forged).status == 401)
        #expect(try ServeCurl.get(url, token: "not-a-token").status == 401)
        #expect(try ServeCurl.get(url, token: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2ln").status == 401)

        let port = try #require(serve.metricsPort)
        let scrape = try ServeCurl.get("http://127.0.0.1:\(port)/metrics")
        #expect(scrape.status == 200)
        #expect(scrape.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        for token in [ann, bob, forged] { #expect(!scrape.body.contains(token), "a token in the metrics") }
        #expect(!scrape.body.contains("ann") && !scrape.body.contains("bob"), "a user in the metrics")

        if let promtool = Self.promtool {
            // Prometheus' own linter: names, units, suffixes and HELP text by its conventions.
            let lint = try runProcess(URL(fileURLWithPath: promtool), ["check", "metrics"], stdin: Data(scrape.body.utf8))
            #expect(lint.status == 0 && lint.stdout.isEmpty && lint.stderr.isEmpty, "\(lint)")
        }
        let samples = try Self.samples(scrape.body)
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }
        let positions = ["route": "/v1/positions"]
        #expect(value("catalog_serve_requests_total", ["route": "/v1/positions", "status": "200"]) == 6)
        #expect(value("catalog_serve_requests_total", ["route": "/v1/positions", "status": "401"]) == 5)
        // Every answer but the long-poll's is timed; the long-poll's wait is in its own histogram.
        #expect(value("catalog_serve_request_duration_seconds_count", positions) == 10)
        #expect(value("catalog_serve_request_duration_seconds_bucket", ["route": "/v1/positions", "le": "+Inf"]) == 10)
        let fast = try #require(value("catalog_serve_request_duration_seconds_bucket", ["route": "/v1/positions", "le": "1.0"]))
        #expect(fast == 10, "every request answered within 1 s")
        let sum = try #require(value("catalog_serve_request_duration_seconds_sum", positions))
        #expect(sum > 0 && sum < 10)
        #expect(value("catalog_serve_long_poll_duration_seconds_count", positions) == 1)
        #expect(value("catalog_serve_long_poll_duration_seconds_bucket", ["route": "/v1/positions", "le": "0.5"]) == 0)
        #expect(value("catalog_serve_long_poll_duration_seconds_bucket", ["route": "/v1/positions", "le": "5.0"]) == 1)
        let waited = try #require(value("catalog_serve_long_poll_duration_seconds_sum", positions))
        #expect(waited >= 0.9 && waited < 5, "the long-poll waited its second: \(waited)")

        for (cause, n) in [("missing", 1.0), ("not_bearer", 1), ("bad_signature", 1), ("malformed", 1), ("algorithm", 1), ("expired", 0)] {
            #expect(value("catalog_serve_auth_refusals_total", ["cause": cause]) == n, "\(cause)")
        }
        #expect(value("catalog_serve_active_users", ["window": "5m"]) == 2)
        #expect(value("catalog_serve_active_users", ["window": "1h"]) == 2)
        #expect(value("catalog_serve_long_polls") == 0)
        #expect(value("catalog_serve_long_polls_limit") == 500)
        #expect(value("catalog_serve_positions_applied_total") == 1)
        #expect(value("catalog_serve_ready") == 1)
        #expect(value("catalog_build_info", ["version": CatalogVersion.string]) == 1)

        let main = try #require(value("catalog_serve_database_bytes", ["file": "main"]))
        let fileSize = try #require((try FileManager.default.attributesOfItem(atPath: db)[.size] as? NSNumber)?.doubleValue)
        #expect(main == fileSize, "main \(main), file \(fileSize)")
        let wal = try #require(value("catalog_serve_database_bytes", ["file": "wal"]))
        #expect(wal > 0, "the POST's write is in the WAL")
        let start = try #require(value("process_start_time_seconds"))
        #expect(start >= before - 5 && start <= Date().timeIntervalSince1970, "started \(start), test began \(before)")
        #if os(Linux)
            let status = try String(contentsOfFile: "/proc/\(serve.pid)/status", encoding: .utf8)
            let vmRSS = try #require(
                status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap { Double($0.split(separator: " ")[1]) })
            let rss = try #require(value("process_resident_memory_bytes"))
            #expect(rss > 1_000_000 && abs(rss - vmRSS * 1024) < max(vmRSS * 1024, 8_000_000) * 0.5, "rss \(rss), VmRSS \(vmRSS) kB")
            let fds = try #require(value("process_open_fds"))
            let open = Double(try FileManager.default.contentsOfDirectory(atPath: "/proc/\(serve.pid)/fd").count)
            #expect(fds >= 5 && abs(fds - open) <= 8, "fds \(fds), /proc says \(open)")
            #expect(try #require(value("process_max_fds")) >= 500)
        #endif
        #expect(serve.stop().status == 0)
    }

    @Test("catalog_serve_ready: 0 after a POST found the database locked past its busy timeout, 1 once a write succeeds")
    func readiness() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], metrics: true, admin: true)
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let metrics = "http://127.0.0.1:\(try #require(serve.metricsPort))/metrics"
        let summary = "http://127.0.0.1:\(try #require(serve.adminPort))/api/summary"
        #expect(try ServeCurl.get(metrics).body.contains("\ncatalog_serve_ready 1\n"))
        // Another process holds the write lock longer than serve's busy timeout.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        holder.arguments = [
            "-c",
            "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\n"
                + "print('locked', flush=True)\ntime.sleep(12)\nc.execute('ROLLBACK')",
            db,
        ]
        let out = Pipe()
        holder.standardOutput = out
        try holder.run()
        defer { if holder.isRunning { kill(holder.processIdentifier, SIGKILL) } }
        #expect(String(decoding: out.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("locked"))
        let refused = try ServeCurl.post(serve.base + "/v1/positions", token: ann, body: ServeRows.body(user: "ann", page: 5))
        #expect(refused.status == 503, "\(refused)")
        #expect(try ServeCurl.get(metrics).body.contains("\ncatalog_serve_ready 0\n"))
        let s = try #require(try ServeCurl.get(summary).json)
        #expect(s["ready"] as? Bool == false && s["notReady"] as? String == "the last write to the database failed", "\(s)")
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        let written = try ServeCurl.post(serve.base + "/v1/positions", token: ann, body: ServeRows.body(user: "ann", page: 5))
        #expect(written.status == 200, "\(written)")
        #expect(try ServeCurl.get(metrics).body.contains("\ncatalog_serve_ready 1\n"))
        #expect(serve.stop().status == 0)
    }

    /// The exposition's samples: prometheus_client's parser when python3 has it (the reference reading of
    /// the format), else the lines read here.
    static func samples(_ text: String) throws -> [PrometheusParser.Sample] {
        if PrometheusParser.available {
            let file = Support.temporaryDirectory().appending(path: "serve.prom").path
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let families = try PrometheusParser.parse(file: file)
            #expect(families.values.allSatisfy { !$0.help.isEmpty })
            #expect(families["catalog_serve_request_duration_seconds"]?.type == "histogram")
            #expect(families["catalog_serve_auth_refusals"]?.type == "counter")
            return families.values.flatMap(\.samples)
        }
        return text.split(separator: "\n").compactMap { line -> PrometheusParser.Sample? in
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "), let v = Double(line[line.index(after: space)...]) else { return nil }
            let series = line[..<space]
            guard let brace = series.firstIndex(of: "{") else { return .init(name: String(series), labels: [:], value: v) }
            var labels: [String: String] = [:]
            for pair in series[series.index(after: brace)..<series.index(before: series.endIndex)].split(separator: ",") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                labels[String(kv[0])] = String(kv[1].dropFirst().dropLast())
            }
            return .init(name: String(series[..<brace]), labels: labels, value: v)
        }
    }

    @Test(
        "contrib/prometheus/catalog.rules.yml: promtool check rules, and its unit tests fire each alert",
        .enabled(if: promtool != nil, "promtool is not installed (Debian: apt-get install prometheus; scripts/setup does)"))
    func alertRules() throws {
        let dir = Support.root.appending(path: "contrib/prometheus")
        let tool = URL(fileURLWithPath: try #require(Self.promtool))
        let check = try runProcess(tool, ["check", "rules", dir.appending(path: "catalog.rules.yml").path])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("SUCCESS: 9 rules found"), "\(check.stdout)")
        let test = try runProcess(tool, ["test", "rules", dir.appending(path: "catalog.rules.test.yml").path])
        #expect(test.status == 0, "\(test.stdout)\(test.stderr)")
        let rules = try String(contentsOf: dir.appending(path: "catalog.rules.yml"), encoding: .utf8)
        for alert in [
            "CatalogServeDown", "CatalogServeNotReady", "CatalogServeErrors", "CatalogServeWriteToVisibleSlow", "CatalogSourceStale",
            "CatalogServeAuthRefusals", "CatalogGCNotRun",
        ] {
            #expect(rules.contains("alert: \(alert)"))
        }
        // Each metric a rule reads is one serve or status --prometheus exports (docs/serve.md §6, operations.md §4).
        for metric in [
            "catalog_serve_ready", "catalog_serve_requests_total", "catalog_serve_write_to_visible_seconds_bucket", "catalog_serve_long_polls_limit",
            "catalog_source_last_success_timestamp_seconds", "catalog_last_run_success", "catalog_gc_last_run_timestamp_seconds",
        ] {
            #expect(rules.contains(metric))
        }
    }

    @Test("--admin-listen refuses an address other than loopback unless --admin-any-address; the flag alone is a usage error")
    func adminListenLoopback() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let run = try box.run(["serve", "--listen", "127.0.0.1:0", "--auth-key", key.publicKey, "--admin-listen", "0.0.0.0:0"], db: db, limit: 20)
        #expect(run.status == 64, "\(run)")
        #expect(run.stderr.contains("--admin-listen takes a loopback address"), "\(run.stderr)")
        let alone = try box.run(["serve", "--listen", "127.0.0.1:0", "--auth-key", key.publicKey, "--admin-any-address"], db: db, limit: 20)
        #expect(alone.status == 64 && alone.stderr.contains("--admin-any-address needs --admin-listen"), "\(alone)")
    }

    /// A serve with its operator's page, after 6 requests: ann pushes page 3 and pulls (her phone), bob
    /// pulls, one is refused, and ann's tablet pushes a row stamped an hour ahead (quarantined).
    static func adminServe() throws -> (serve: ServeProcess, admin: String, ann: String, bob: String) {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        // One source with a good sync: a peer's snapshot, saved as the remote "peer".
        let peer = try box.seededDatabase("peer.sqlite")
        let snapshot = box.path("peer.json")
        #expect(try box.run(["export", "--output", snapshot], db: peer).status == 0)
        #expect(try box.run(["remote", "add", "peer", snapshot], db: db).status == 0)
        let synced = try box.run(["sync", "peer"], db: db)
        #expect(synced.status == 0, "\(synced)")
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], metrics: true, admin: true)
        let admin = "http://127.0.0.1:\(try #require(serve.adminPort))"
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let url = serve.base + "/v1/positions"
        let phone = "User-Agent: TestPhone/1.0 (ann's phone)"
        let push = try ServeCurl.run([
            "-H", "Authorization: Bearer \(ann)", "-H", "Content-Type: application/json", "-H", phone, "--data-binary",
            ServeRows.body(user: "ann", page: 3), url,
        ])
        #expect(push.status == 200, "\(push)")
        #expect(try ServeCurl.get(url, token: ann, headers: [phone]).status == 200)
        #expect(try ServeCurl.get(url, token: bob).status == 200)
        #expect(try ServeCurl.get(url).status == 401)
        let ahead = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
        let tablet = try ServeCurl.run([
            "-H", "Authorization: Bearer \(ann)", "-H", "Content-Type: application/json", "-H", "User-Agent: TestTablet/2.0",
            "--data-binary", ServeRows.body(user: "ann", page: 9, wall: ahead, node: "tablet"), url,
        ])
        #expect(tablet.body.contains(#""outcome":"quarantined""#), "\(tablet)")
        #expect(try ServeCurl.get(serve.base + "/v1/healthz").status == 200)
        return (serve, admin, ann, bob)
    }

    @Test("the operator's page: the JSON behind it, a user's row, last pull and push and why; never on the public port")
    func adminPage() throws {
        let (serve, admin, ann, bob) = try Self.adminServe()
        // A page whose Host is a name (DNS rebinding) is refused.
        #expect(try ServeCurl.get(admin + "/api/summary", headers: ["Host: evil.example"]).status == 403)
        let page = try ServeCurl.get(admin + "/users/ann")
        #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8" && page.body.contains("<svg"))

        let summary = try ServeCurl.get(admin + "/api/summary")
        #expect(summary.status == 200 && summary.headers["cache-control"] == "no-store", "\(summary)")
        let s = try #require(summary.json)
        #expect(s["requestsTotal"] as? Int == 6)
        let history = try #require(s["history"] as? [[Double]])
        #expect(history.count == 360)
        #expect(history.map { $0[1] }.reduce(0, +) == 6)
        #expect(history.map { $0[3] }.reduce(0, +) == 1)
        #expect((s["activeUsers"] as? [String: Int])?["5m"] == 2)
        #expect(s["quarantined"] as? Int == 1)
        let refusals = try #require(s["refusals"] as? [String: Int])
        #expect(refusals["missing"] == 1 && refusals.values.reduce(0, +) == 1 && refusals.count == AuthRefusalCause.allCases.count, "\(refusals)")
        #expect(s["ready"] as? Bool == true)
        #expect(s["hub"] is NSNull)
        let sources = try #require(s["sources"] as? [[String: Any]])
        #expect(sources.count == 1 && sources.first?["remote"] as? String == "peer" && sources.first?["lastStatus"] as? Int == 0, "\(sources)")
        #expect(sources.first?["lastSuccess"] is String)
        #expect(!summary.body.contains(ann) && !summary.body.contains(bob))

        let user = try ServeCurl.get(admin + "/api/users/ann")
        #expect(user.status == 200, "\(user)")
        let u = try #require(user.json)
        let row = try #require(u["row"] as? [String: Any])
        #expect(row["page"] as? Int == 3 && row["node"] as? String == "phone-1" && row["deleted"] as? Bool == false, "\(row)")
        let pull = try #require(u["lastPull"] as? [String: Any])
        #expect(pull["agent"] as? String == "TestPhone/1.0 (ann's phone)" && pull["status"] as? Int == 200, "\(pull)")
        let push = try #require(u["lastPush"] as? [String: Any])
        #expect(push["agent"] as? String == "TestTablet/2.0" && push["outcome"] as? String == "quarantined", "\(push)")
        #expect(u["quarantinedCount"] as? Int == 1)
        #expect((u["quarantined"] as? [[String: Any]])?.first?["node"] as? String == "tablet")
        let why = (u["why"] as? [String] ?? []).joined(separator: "\n")
        #expect(why.contains("Page 3 is the row with the newest stamp") && why.contains("was quarantined"), "\(why)")
        #expect(!user.body.contains(ann))
        #expect(try ServeCurl.get(admin + "/api/users/nobody").json?["row"] is NSNull)
        #expect(try ServeCurl.get(admin + "/nothing").status == 404)
        #expect(try ServeCurl.get(admin + "/api/users/ann", headers: ["Authorization: Bearer \(ann)"]).body == user.body)

        // The page and its data are never on the public listener.
        for path in ["/", "/users/ann", "/api/summary", "/api/users/ann", "/index.html"] {
            #expect(try ServeCurl.get(serve.base + path, token: ann).status == 404, "\(path) on the public port")
        }
        #expect(serve.stop().status == 0)
    }

    @Test(
        "the operator's page in headless Chromium: the charts' figures and ann's page after its script ran; a screenshot",
        .enabled(if: chromium != nil, "chromium is not installed (Debian: apt-get install chromium; scripts/setup does)"))
    func adminPageInChromium() throws {
        let (serve, admin, _, _) = try Self.adminServe()
        let chromium = URL(fileURLWithPath: try #require(Self.chromium))
        let profile = Support.temporaryDirectory()
        let common = [
            "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions", "--user-data-dir=\(profile.path)",
            "--virtual-time-budget=5000",
        ]
        let env = ["HOME": profile.path, "PATH": "/usr/bin:/bin"]
        let dom = try runProcess(chromium, common + ["--dump-dom", admin + "/users/ann"], environment: env, limit: 120)
        #expect(dom.status == 0, "\(dom.stderr)")
        let html = dom.stdout
        #expect(html.contains(#"id="requests-hour">6<"#), "\(html.prefix(4000))")
        #expect(html.contains(#"id="requests-hour-caption">6<"#))
        #expect(html.contains(#"id="unauthorized-hour">1<"#))
        #expect(html.contains(#"id="active-5m">2<"#))
        #expect(html.contains(#"id="quarantined">1<"#))
        #expect(html.contains(#"id="refusals">missing 1<"#))
        #expect(html.contains(#"id="user-page">3<"#), "the look-up of ann: \(html.suffix(4000))")
        #expect(html.contains(#"id="user-quarantined">1<"#))
        #expect(html.contains("TestPhone/1.0 (ann") && html.contains("was quarantined"))
        #expect(html.contains("<polyline"), "the charts are drawn")
        #expect(html.contains("peer.json") && html.contains(#"<td class="ok">0</td>"#), "the source and its last status")
        try FileManager.default.createDirectory(at: Self.outputDirectory, withIntermediateDirectories: true)
        let png = Self.outputDirectory.appending(path: "serve-admin-page.png").path
        try? FileManager.default.removeItem(atPath: png)
        let shot = try runProcess(
            chromium, common + ["--screenshot=\(png)", "--window-size=1280,1400", admin + "/users/ann"], environment: env, limit: 120)
        #expect(shot.status == 0, "\(shot.stderr)")
        let size = (try? FileManager.default.attributesOfItem(atPath: png)[.size] as? NSNumber)?.intValue ?? 0
        #expect(size > 10_000, "a screenshot at \(png): \(size) bytes")
        #expect(serve.stop().status == 0)
    }
}

/// The bounded structures behind the metrics and the page, in-process.
@Suite("Serve: active users, the request history and the per-user record stay bounded and right")
struct ServeFiguresTests {
    @Test("active users: exact for a handful, within 5 % for 100,000, per window, and nothing kept per user")
    func activeUsers() {
        let users = ActiveUsers()
        let now = 1_800_000_000.0
        func hash(_ s: String) -> UInt64 {
            var h = Hasher()
            h.combine(s)
            return UInt64(bitPattern: Int64(h.finalize()))
        }
        for i in 0..<3 { for _ in 0..<10 { users.add(hash: hash("u\(i)"), now: now) } }
        #expect(users.estimate(minutes: 5, now: now) == 3)
        // 100,000 users over the hour: 20 minutes ago and now.
        for i in 0..<50_000 { users.add(hash: hash("a\(i)"), now: now - 1200) }
        for i in 50_000..<100_000 { users.add(hash: hash("a\(i)"), now: now) }
        let hour = users.estimate(minutes: 60, now: now)
        let five = users.estimate(minutes: 5, now: now)
        #expect(abs(hour - 100_003) < 5_000, "\(hour)")
        #expect(abs(five - 50_003) < 2_500, "\(five)")
        // An hour later every minute has aged out.
        #expect(users.estimate(minutes: 60, now: now + 3700) == 0)
    }

    @Test("the per-user record keeps the last pull and push, and at most its capacity of users")
    func userActivity() {
        let activity = UserActivity()
        activity.pulled("ann", agent: "Phone/1", status: 200, polled: true)
        activity.pushed("ann", agent: "Tablet/2", status: 200, outcome: "stale", edge: false)
        let ann = activity.record("ann")
        #expect(ann.pull?.agent == "Phone/1" && ann.pull?.longPoll == true)
        #expect(ann.push?.outcome == "stale" && ann.push?.agent == "Tablet/2")
        for i in 0..<(UserActivity.capacity + 10) { activity.pulled("u\(i)", agent: nil, status: 200, polled: false) }
        #expect(activity.count <= UserActivity.capacity)
        #expect(activity.record("u\(UserActivity.capacity + 9)").pull != nil, "the newest is kept")
    }

    @Test("the request history: 360 buckets of 10 s ending now, the requests counted in the current one")
    func history() {
        let history = RequestHistory()
        history.add(status: 200, seconds: 0.002, longPolls: 3)
        history.add(status: 503, seconds: 0.004, longPolls: 1)
        history.add(status: 401, seconds: nil, longPolls: 0)
        let buckets = history.buckets()
        #expect(buckets.count == 360)
        #expect(buckets.last.map { $0.start + 10 > Int(Date().timeIntervalSince1970) } == true)
        // The three fall in the current bucket, or across a 10-s boundary in the two last.
        let recent = buckets.suffix(2)
        #expect(recent.map(\.requests).reduce(0, +) == 3 && buckets.map(\.requests).reduce(0, +) == 3)
        #expect(recent.map(\.serverErrors).reduce(0, +) == 1 && recent.map(\.unauthorized).reduce(0, +) == 1)
        #expect(recent.map(\.maxSeconds).max() == 0.004 && recent.map(\.longPolls).max() == 3)
        if let one = recent.last, one.requests == 3 { #expect(abs(one.meanSeconds - 0.003) < 1e-9) }
    }
}
