import CatalogTestSupport
import Foundation
import Testing

@_spi(Testing) @testable import CatalogCLI
@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// The scheduling examples in `contrib/`: the systemd service and timer, and the cron file.
///
/// Checked by `systemd-analyze verify` where it exists, always by a parse of their keys and fields, and
/// by running their command lines — parsed by the CLI's own parser, then run against a scratch
/// directory.
@Suite("Operations: contrib/ systemd units and cron file")
struct ContribTests {
    static let service = Support.root.appending(path: "contrib/systemd/catalog-sync.service")
    static let timer = Support.root.appending(path: "contrib/systemd/catalog-sync.timer")
    static let serve = Support.root.appending(path: "contrib/systemd/catalog-serve.service")
    static let cron = Support.root.appending(path: "contrib/cron/catalog-sync")

    /// The cron file's job lines: five time fields, the user, the command.
    static func cronJobs() throws -> [(schedule: [String], user: String, command: String)] {
        try String(contentsOf: cron, encoding: .utf8).split(separator: "\n").compactMap { raw in
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.range(of: #"^[A-Z_]+="#, options: .regularExpression) != nil { return nil }
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            try #require(fields.count >= 7, "not a cron.d job line: \(line)")
            let command = line.range(of: #"^(\S+\s+){6}"#, options: .regularExpression).map { String(line[$0.upperBound...]) } ?? ""
            return (fields.prefix(5).map(String.init), String(fields[5]), command)
        }
    }

    static func commandLines() throws -> [[String]] {
        let service = try Contrib.unit(Self.service)
        let lines = Contrib.execLines(service, "ExecStart") + Contrib.execLines(service, "ExecStopPost") + (try cronJobs().map(\.command))
        return lines.map { line in
            Array(line.split(separator: " ").map(String.init).prefix { $0 != "2>&1" && $0 != "|" && !$0.hasPrefix(">") })
        }
    }

    @Test(
        "systemd-analyze verify accepts both units with no warning (in a scratch root holding the binary)",
        .enabled(if: Contrib.systemdAnalyze != nil, "systemd-analyze is not installed: the unit keys are still checked by the other tests"))
    func verify() throws {
        let root = Support.temporaryDirectory()
        let units = root.appending(path: "etc/systemd/system")
        try FileManager.default.createDirectory(at: units, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appending(path: "usr/local/bin"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.service, to: units.appending(path: "catalog-sync.service"))
        try FileManager.default.copyItem(at: Self.timer, to: units.appending(path: "catalog-sync.timer"))
        try FileManager.default.copyItem(at: Support.catalogBinary, to: root.appending(path: "usr/local/bin/catalog"))
        // The targets the units name (timers.target, network-online.target, …) from this machine.
        let system = ["/usr/lib/systemd/system", "/lib/systemd/system"].first { FileManager.default.fileExists(atPath: $0) }
        try FileManager.default.createDirectory(at: root.appending(path: "usr/lib/systemd"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: try #require(system)), to: root.appending(path: "usr/lib/systemd/system"))
        let result = try runProcess(
            URL(fileURLWithPath: try #require(Contrib.systemdAnalyze)),
            [
                "verify", "--man=no", "--root=\(root.path)", "/etc/systemd/system/catalog-sync.service",
                "/etc/systemd/system/catalog-sync.timer",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "")  // an unknown key or a bad value is only a warning: none allowed
    }

    @Test("the units' keys: a oneshot service with absolute commands; a persistent calendar timer for it, enabled by timers.target")
    func unitKeys() throws {
        let service = try Contrib.unit(Self.service)
        #expect(Contrib.value(service, "Service", "Type") == ["oneshot"])
        #expect(!Contrib.value(service, "Service", "User").isEmpty)
        let exec = Contrib.value(service, "Service", "ExecStart")
        #expect(exec.count == 1)
        #expect(exec.allSatisfy { $0.hasPrefix("/") })
        #expect(Contrib.value(service, "Service", "ExecStopPost").allSatisfy { $0.hasPrefix("-/") })  // its failure never fails the unit
        #expect(Contrib.execLines(service, "ExecStopPost").allSatisfy { $0.hasPrefix("/") })
        #expect(Contrib.value(service, "Service", "ReadWritePaths").allSatisfy { $0.hasPrefix("-/") })  // optional: no node_exporter, no failure
        #expect(Contrib.value(service, "Service", "ProtectHome") == ["yes"])  // ~/.pgpass is in the home, /var/lib/catalog (sysusers)
        #expect(Contrib.value(service, "Service", "SuccessExitStatus") == ["75"])
        #expect(Contrib.value(service, "Unit", "After").contains("network-online.target"))
        #expect(Contrib.value(service, "Install", "WantedBy").isEmpty)  // started by the timer, not at boot
        let timer = try Contrib.unit(Self.timer)
        let calendar = try #require(Contrib.value(timer, "Timer", "OnCalendar").first)
        #expect(Contrib.value(timer, "Timer", "Persistent") == ["true"])
        #expect(Contrib.value(timer, "Timer", "Unit") == ["catalog-sync.service"])
        #expect(Contrib.value(timer, "Install", "WantedBy") == ["timers.target"])
        if let analyze = Contrib.systemdAnalyze {
            let parsed = try runProcess(URL(fileURLWithPath: analyze), ["calendar", calendar])
            #expect(parsed.status == 0, "\(parsed.stderr)")
            #expect(parsed.stdout.contains("Normalized form: *-*-* *:00/5:00"))
        }
    }

    @Test("the cron file: cron.d job lines (five time fields, a user, an absolute command), a name cron reads, every job's output handled")
    func cronFile() throws {
        #expect(!Self.cron.lastPathComponent.contains("."))  // cron.d skips names with dots
        let jobs = try Self.cronJobs()
        #expect(jobs.count == 3)
        let field = #"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$"#
        for job in jobs {
            #expect(job.schedule.allSatisfy { $0.range(of: field, options: .regularExpression) != nil }, "\(job.schedule)")
            #expect(job.user == "catalog")
            #expect(job.command.hasPrefix(Contrib.binary + " "))
            // Cron mails output: each job is quiet on success, or sends its output elsewhere.
            #expect(
                job.command.contains("--quiet") || job.command.contains("--output ") || job.command.contains("| /usr/bin/logger"), "\(job.command)")
        }
        #expect(jobs.contains { $0.command.contains("status --check --max-age") })
    }

    @Test("every command line of the examples is one the CLI accepts, and they run: sync, metrics, check")
    func commandsRun() throws {
        let lines = try Self.commandLines()
        #expect(lines.count == 5)
        for argv in lines {
            #expect(argv.first == Contrib.binary)
            #expect(throws: Never.self, "\(argv)") { _ = try Parser.parse(Array(argv.dropFirst()), root: CatalogCLI.rootCommand) }
        }
        // Run each against a scratch directory standing in for /var/lib and the textfile collector's directory.
        let sandbox = Support.temporaryDirectory()
        try FileManager.default.createDirectory(at: sandbox.appending(path: "prometheus/node-exporter"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: sandbox.appending(path: "catalog"), withIntermediateDirectories: true)
        for argv in lines {
            let arguments = argv.dropFirst().map {
                $0.replacingOccurrences(of: "/var/lib/catalog", with: sandbox.appending(path: "catalog").path)
                    .replacingOccurrences(of: "/var/lib/prometheus", with: sandbox.appending(path: "prometheus").path)
            }
            let result = try runProcess(Support.catalogBinary, Array(arguments), environment: ["PATH": "/usr/bin:/bin"])
            #expect(result.status == 0, "\(argv): \(result.stderr)")
        }
        let metrics = try String(contentsOfFile: sandbox.appending(path: "prometheus/node-exporter/catalog.prom").path, encoding: .utf8)
        #expect(metrics.contains("\ncatalog_last_run_success 1\n"))
        #expect(FileManager.default.fileExists(atPath: sandbox.appending(path: "catalog/publish/manifest.json").path))
    }

    @Test("catalog-serve.service: verified, long-running with a drain on SIGTERM, hardened; its ExecStart parses and starts")
    func serveUnit() throws {
        let unit = try Contrib.unit(Self.serve)
        #expect(Contrib.value(unit, "Service", "Type") == ["simple"])
        #expect(Contrib.value(unit, "Service", "User") == ["catalog"])
        #expect(Contrib.value(unit, "Service", "StateDirectory") == ["catalog"])
        #expect(Contrib.value(unit, "Service", "KillMode") == ["mixed"])
        #expect(Contrib.value(unit, "Service", "TimeoutStopSec") == ["30s"])  // above the drain's 10 s
        #expect(Contrib.value(unit, "Service", "Restart") == ["on-failure"])
        #expect(Contrib.value(unit, "Service", "NoNewPrivileges") == ["yes"])
        #expect(Contrib.value(unit, "Service", "ProtectSystem") == ["strict"])
        #expect(Contrib.value(unit, "Install", "WantedBy") == ["multi-user.target"])
        let exec = Contrib.execLines(unit, "ExecStart")
        #expect(exec.count == 1)
        let argv = try #require(exec.first).split(separator: " ").map(String.init)
        #expect(argv.first == Contrib.binary)
        let parsed = try Parser.parse(Array(argv.dropFirst()), root: CatalogCLI.rootCommand)
        #expect(parsed.0.name == "serve")
        for (flag, value) in [
            ("--listen", "127.0.0.1:8080"), ("--auth-key", "/etc/catalog/serve-public.pem"), ("--log-format", "json"),
            ("--db", "/var/lib/catalog/catalog.sqlite"),
        ] {
            let i = try #require(argv.firstIndex(of: flag), "\(flag)")
            #expect(argv[i + 1] == value)
        }
        // The nginx example proxies to the same address.
        let nginx = try String(contentsOf: Support.root.appending(path: "contrib/nginx/serve.conf"), encoding: .utf8)
        #expect(nginx.contains("proxy_pass http://127.0.0.1:8080;"))
        // Run it with the paths moved into a scratch directory and port 0: it listens, then SIGTERM exits 0.
        let box = try Sandbox()
        let key = try ServeKeys.make(box, "k")
        let db = try box.seededDatabase()
        let extra = Array(argv.drop { $0 != "serve" }.dropFirst())
            .map { $0 == "/etc/catalog/serve-public.pem" ? key.publicKey : $0 }
            .map { $0.hasPrefix("127.0.0.1:") ? "127.0.0.1:0" : $0 }
            .drop { $0 != "--auth-key" }.dropFirst(2)
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: Array(extra))
        #expect(try ServeCurl.get(serve.base + "/v1/healthz").status == 200)
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
        if let analyze = Contrib.systemdAnalyze {
            let root = Support.temporaryDirectory()
            let units = root.appending(path: "etc/systemd/system")
            try FileManager.default.createDirectory(at: units, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: root.appending(path: "usr/local/bin"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: Self.serve, to: units.appending(path: "catalog-serve.service"))
            try FileManager.default.copyItem(at: Support.catalogBinary, to: root.appending(path: "usr/local/bin/catalog"))
            let system = ["/usr/lib/systemd/system", "/lib/systemd/system"].first { FileManager.default.fileExists(atPath: $0) }
            try FileManager.default.createDirectory(at: root.appending(path: "usr/lib/systemd"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: URL(fileURLWithPath: try #require(system)), to: root.appending(path: "usr/lib/systemd/system"))
            let result = try runProcess(
                URL(fileURLWithPath: analyze), ["verify", "--man=no", "--root=\(root.path)", "/etc/systemd/system/catalog-serve.service"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr == "")
        }
    }

    static let follow = Support.root.appending(path: "contrib/systemd/catalog-follow.service")
    static let metricsService = Support.root.appending(path: "contrib/systemd/catalog-metrics.service")
    static let metricsTimer = Support.root.appending(path: "contrib/systemd/catalog-metrics.timer")
    static let sysusers = Support.root.appending(path: "contrib/systemd/catalog.sysusers")

    /// A scratch root holding `units` in etc/systemd/system, the binary in usr/local/bin and this machine's
    /// system units (the targets the units name), for `systemd-analyze --root`.
    static func scratchRoot(_ units: [URL]) throws -> URL {
        let root = Support.temporaryDirectory()
        let dir = root.appending(path: "etc/systemd/system")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appending(path: "usr/local/bin"), withIntermediateDirectories: true)
        for unit in units { try FileManager.default.copyItem(at: unit, to: dir.appending(path: unit.lastPathComponent)) }
        try FileManager.default.copyItem(at: Support.catalogBinary, to: root.appending(path: "usr/local/bin/catalog"))
        // The follower's ExecReload runs /bin/kill.
        try FileManager.default.createDirectory(at: root.appending(path: "bin"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: "/bin/kill"), to: root.appending(path: "bin/kill"))
        let system = ["/usr/lib/systemd/system", "/lib/systemd/system"].first { FileManager.default.fileExists(atPath: $0) }
        try FileManager.default.createDirectory(at: root.appending(path: "usr/lib/systemd"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: try #require(system)), to: root.appending(path: "usr/lib/systemd/system"))
        return root
    }

    /// Issue 25: `systemd-analyze security` rated the follow and sync units 8.6 EXPOSED; nothing made the
    /// `User=catalog` account; a follower's figures reached no scraper.
    @Test(
        "every service unit is hardened (systemd-analyze security ≤ 2.0, OK); catalog.sysusers makes the account; the metrics timer runs a command that writes the figures",
        .enabled(if: Contrib.systemdAnalyze != nil, "systemd-analyze is not installed"))
    func hardenedAccountAndMetrics() throws {
        let analyze = URL(fileURLWithPath: try #require(Contrib.systemdAnalyze))
        let services = [Self.service, Self.serve, Self.follow, Self.metricsService]
        for unit in services {
            let parsed = try Contrib.unit(unit)
            #expect(Contrib.value(parsed, "Service", "User") == ["catalog"], "\(unit.lastPathComponent)")
            let rated = try runProcess(analyze, ["security", "--offline=true", "--no-pager", unit.path])
            let line = rated.stdout.split(separator: "\n").last { $0.contains("Overall exposure level") }.map(String.init) ?? ""
            let score = line.split(separator: ":").last.flatMap { Double($0.split(separator: " ").first ?? "") }
            #expect(score.map { $0 <= 2.0 } == true, "\(unit.lastPathComponent): \(line) \(rated.stderr)")
        }
        // The check can fail: the units as they were (a few keys only) rate far worse.
        let weak = Support.temporaryDirectory().appending(path: "weak.service")
        try "[Service]\nUser=catalog\nExecStart=/usr/local/bin/catalog status\nNoNewPrivileges=yes\nPrivateTmp=yes\nProtectSystem=strict\n"
            .write(to: weak, atomically: true, encoding: .utf8)
        let weakRated = try runProcess(analyze, ["security", "--offline=true", "--no-pager", weak.path])
        #expect(weakRated.stdout.contains("EXPOSED") || weakRated.stdout.contains("UNSAFE"), "\(weakRated.stdout.suffix(200))")
        // All four services and the timer verify with no warning.
        let root = try Self.scratchRoot(services + [Self.metricsTimer])
        let verified = try runProcess(
            analyze,
            ["verify", "--man=no", "--root=\(root.path)"] + (services + [Self.metricsTimer]).map { "/etc/systemd/system/" + $0.lastPathComponent })
        #expect(verified.status == 0 && verified.stderr == "", "\(verified.stderr)")
        // The metrics timer starts the metrics service, at once and every 30 s, enabled by timers.target.
        let timer = try Contrib.unit(Self.metricsTimer)
        #expect(Contrib.value(timer, "Timer", "Unit") == ["catalog-metrics.service"])
        #expect(Contrib.value(timer, "Timer", "OnUnitActiveSec") == ["30s"])
        #expect(Contrib.value(timer, "Install", "WantedBy") == ["timers.target"])
        // Its command parses, and writes the figures (a scratch directory for /var/lib).
        let exec = try #require(Contrib.execLines(try Contrib.unit(Self.metricsService), "ExecStart").first)
        let argv = exec.split(separator: " ").map(String.init)
        #expect(argv.first == Contrib.binary)
        let sandbox = Support.temporaryDirectory()
        try FileManager.default.createDirectory(at: sandbox.appending(path: "prometheus/node-exporter"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: sandbox.appending(path: "catalog"), withIntermediateDirectories: true)
        let arguments = argv.dropFirst().map {
            $0.replacingOccurrences(of: "/var/lib/catalog", with: sandbox.appending(path: "catalog").path)
                .replacingOccurrences(of: "/var/lib/prometheus", with: sandbox.appending(path: "prometheus").path)
        }
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path, "--quiet"], db: arguments[1]).status == 0)
        let wrote = try runProcess(Support.catalogBinary, Array(arguments))
        #expect(wrote.status == 0, "\(wrote.stderr)")
        let figures = try String(contentsOfFile: sandbox.appending(path: "prometheus/node-exporter/catalog.prom").path, encoding: .utf8)
        #expect(figures.contains("catalog_landmarks "), "\(figures.prefix(300))")
        // systemd-sysusers makes the account in a scratch root: a system user whose home is the state directory.
        let sysusersTool = ["/usr/bin/systemd-sysusers", "/bin/systemd-sysusers"].first { FileManager.default.isExecutableFile(atPath: $0) }
        if let sysusersTool {
            let accounts = Support.temporaryDirectory()
            try FileManager.default.createDirectory(at: accounts.appending(path: "etc"), withIntermediateDirectories: true)
            let made = try runProcess(URL(fileURLWithPath: sysusersTool), ["--root=\(accounts.path)", Self.sysusers.path])
            #expect(made.status == 0, "\(made.stderr)")
            let passwd = try String(contentsOfFile: accounts.appending(path: "etc/passwd").path, encoding: .utf8)
            let entry = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("catalog:") }, "\(passwd)")
            let fields = entry.split(separator: ":", omittingEmptySubsequences: false)
            #expect(fields.count == 7 && fields[5] == "/var/lib/catalog" && fields[6] == "/usr/sbin/nologin", "\(entry)")
            #expect((Int(fields[2]) ?? 65_534) < 1000, "a system user: \(entry)")
        }
    }
}
