import CatalogTestSupport
import Foundation
import Testing

@_spi(Testing) @testable import CatalogCLI
@testable import LandmarkCatalog

/// The collection units in `contrib/systemd/` (docs/operations.md §2): `catalog gc` on a node and
/// `catalog gc --hub` on one machine of a fleet, each a oneshot service started once a day by its timer.
@Suite("Operations: contrib/ collection units")
struct ContribGCTests {
    static let units = ["catalog-gc", "catalog-hub-gc"].flatMap { name in
        ["service", "timer"].map { Support.root.appending(path: "contrib/systemd/\(name).\($0)") }
    }

    @Test("each service is a hardened oneshot gc run as catalog, each timer starts it daily and persistently; the commands parse")
    func keysAndCommands() throws {
        for name in ["catalog-gc", "catalog-hub-gc"] {
            let service = try Contrib.unit(Support.root.appending(path: "contrib/systemd/\(name).service"))
            #expect(Contrib.value(service, "Service", "Type") == ["oneshot"])
            #expect(Contrib.value(service, "Service", "User") == ["catalog"])
            #expect(Contrib.value(service, "Service", "ProtectSystem") == ["strict"])
            let exec = Contrib.execLines(service, "ExecStart")
            #expect(exec.count == 1)
            let argv = try #require(exec.first).split(separator: " ").map(String.init)
            #expect(argv.first == Contrib.binary)
            let (command, _) = try Parser.parse(Array(argv.dropFirst()), root: CatalogCLI.rootCommand)
            #expect(command.name == "gc", "\(argv)")
            #expect(argv.contains("--hub") == (name == "catalog-hub-gc"))
            let timer = try Contrib.unit(Support.root.appending(path: "contrib/systemd/\(name).timer"))
            #expect(Contrib.value(timer, "Timer", "Unit") == ["\(name).service"])
            #expect(Contrib.value(timer, "Timer", "Persistent") == ["true"])
            #expect(Contrib.value(timer, "Install", "WantedBy") == ["timers.target"])
            #expect(Contrib.value(timer, "Timer", "OnCalendar") == ["*-*-* 04:00:00"])
        }
    }

    @Test(
        "systemd-analyze verifies the four units with no warning and rates both services OK (≤ 2.0)",
        .enabled(if: Contrib.systemdAnalyze != nil, "systemd-analyze is not installed"))
    func verified() throws {
        let analyze = URL(fileURLWithPath: try #require(Contrib.systemdAnalyze))
        let root = try ContribTests.scratchRoot(Self.units)
        let verified = try runProcess(
            analyze, ["verify", "--man=no", "--root=\(root.path)"] + Self.units.map { "/etc/systemd/system/" + $0.lastPathComponent })
        #expect(verified.status == 0 && verified.stderr == "", "\(verified.stderr)")
        for unit in Self.units where unit.pathExtension == "service" {
            let rated = try runProcess(analyze, ["security", "--offline=true", "--no-pager", unit.path])
            let line = rated.stdout.split(separator: "\n").last { $0.contains("Overall exposure level") }.map(String.init) ?? ""
            let score = line.split(separator: ":").last.flatMap { Double($0.split(separator: " ").first ?? "") }
            #expect(score.map { $0 <= 2.0 } == true, "\(unit.lastPathComponent): \(line)")
        }
    }

    @Test("the node's unit command collects a scratch database")
    func nodeCommandRuns() throws {
        let service = try Contrib.unit(Support.root.appending(path: "contrib/systemd/catalog-gc.service"))
        let argv = try #require(Contrib.execLines(service, "ExecStart").first).split(separator: " ").map(String.init)
        let sandbox = Support.temporaryDirectory()
        let arguments = argv.dropFirst().map { $0.replacingOccurrences(of: "/var/lib/catalog", with: sandbox.path) }
        let db = sandbox.appending(path: "catalog.sqlite").path
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path, "--quiet"], db: db).status == 0)
        let ran = try runProcess(Support.catalogBinary, Array(arguments))
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(ran.stdout.contains("collected up to"), "\(ran.stdout)")
    }
}
