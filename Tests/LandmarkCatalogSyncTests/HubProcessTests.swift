import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

#if canImport(Glibc)
    import Glibc
#endif

/// The hub with real `catalog` processes: several edges writing, pushing and pulling at once; a push
/// killed inside its transaction; passwords from a password file.
@Suite("PostgreSQL hub: processes", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"), .serialized)
struct HubProcessTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.running() }

    /// Runs the built `catalog` with `arguments` against `db`, in a minimal environment (as cron gives).
    static func catalog(_ db: String, _ arguments: [String], environment extra: [String: String] = [:]) throws -> CLIResult {
        var environment = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
        environment.merge(extra) { $1 }
        return try runProcess(Support.catalogBinary, ["--db", db] + arguments, environment: environment)
    }

    /// One edge's random work: position set / clear, imports of small random files, syncs with the hub,
    /// until `deadline`.
    ///
    /// Returns the failures (command, status, stderr).
    static func work(db: String, hub: String, seed: UInt64, until deadline: Date) -> [String] {
        var random = SplitMix64(seed: seed)
        let users = ["ann", "bob", "zoë", "用户", "e\u{301}mile", "🙂"]
        let names = ["Tarn", "Ørsted Fjord", "Lac “Bleu”", "富士", "Crater\tLake"]
        var failures: [String] = []
        var step = 0
        while Date() < deadline {
            step += 1
            let roll = Int.random(in: 0..<100, using: &random)
            var arguments: [String]
            if roll < 40 {
                arguments = [
                    "position", "set", "--user", users.randomElement(using: &random) ?? "ann", "--page",
                    String(Int.random(in: 0...3, using: &random)),
                ]
            } else if roll < 52 {
                arguments = ["position", "clear", "--user", users.randomElement(using: &random) ?? "ann"]
            } else if roll < 67 {
                let records = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                    (
                        id: Int.random(in: 5000...5007, using: &random), name: names.randomElement(using: &random) ?? "x",
                        featured: Bool.random(using: &random), description: "step \(step) of \(seed)" as String?
                    )
                }
                var unique: [(id: Int, name: String, featured: Bool, description: String?)] = []
                for record in records where !unique.contains(where: { $0.id == record.id }) { unique.append(record) }
                guard let file = try? HubSupport.landmarkFile(unique) else { continue }
                arguments = ["import", file]
            } else {
                arguments = ["sync", "--quiet", hub]
            }
            do {
                let result = try catalog(db, arguments)
                if result.status != 0 { failures.append("\(arguments) → \(result.status): \(result.stderr)") }
            } catch {
                failures.append("\(arguments): \(error)")
            }
        }
        return failures
    }

    @Test("four edges write, push and pull concurrently for a while; after two rounds of syncs every edge's digest is the hub's")
    func concurrentEdges() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let edges = (0..<4).map { _ in Support.temporaryDatabase() }
        for db in edges {
            let imported = try Self.catalog(db, ["import", Support.root.appending(path: "Seeds/landmarkData.json").path])
            #expect(imported.status == 0, "\(imported.stderr)")
        }
        let seed = UInt64(Date().timeIntervalSince1970 * 1000)
        print("concurrentEdges seed \(seed)")
        let deadline = Date().addingTimeInterval(8)
        let failures = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        for (index, db) in edges.enumerated() {
            Thread.detachNewThread {
                let found = Self.work(db: db, hub: uri, seed: seed &+ UInt64(index), until: deadline)
                failures.update { $0 += found }
                done.signal()
            }
        }
        for _ in edges { #expect(done.wait(timeout: .now() + 60) == .success) }
        #expect(failures.current.isEmpty, "\(failures.current.prefix(5))")
        // Round one pushes what each edge wrote last; round two brings the edges that synced early up to date.
        for _ in 0..<2 {
            for db in edges {
                let result = try Self.catalog(db, ["sync", "--quiet", uri])
                #expect(result.status == 0, "\(result.stderr)")
            }
        }
        var digests: Set<String> = []
        for db in edges {
            let status = try HubSupport.hubStatus(db)
            #expect(status["inAgreement"] as? Bool == true, "\(status)")
            #expect(status["digest"] as? String == status["hubDigest"] as? String)
            digests.insert(status["digest"] as? String ?? "")
            #expect(try HubSupport.edgePositions(db) == HubSupport.hubPositions(server, name))
        }
        #expect(digests.count == 1)
        let pushes = try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_edges WHERE last_push_at IS NOT NULL AND last_pull_at IS NOT NULL")
        #expect(pushes == "4")
    }

    @Test("a push killed with SIGKILL inside its transaction leaves the hub without any of it; the next sync delivers it")
    func killedPush() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let db = Support.temporaryDatabase()
        #expect(try Self.catalog(db, ["import", Support.root.appending(path: "Seeds/landmarkData.json").path]).status == 0)
        #expect(try Self.catalog(db, ["sync", "--quiet", uri]).status == 0)
        let node = try CatalogStore.open(path: db).nodeID()
        for user in ["k1", "k2", "k3"] {
            #expect(try Self.catalog(db, ["position", "set", "--user", user, "--page", "1"]).status == 0)
        }
        #expect(try Self.catalog(db, ["import", try HubSupport.landmarkFile([(4242, "Killed", true, nil)])]).status == 0)
        let edgeBefore = (try dumpLandmarks(db), try dumpPositions(db))
        let hubSequence = try HubSupport.scalar(server, name, "SELECT last_value FROM hub_change_seq")

        // Hold the edge's bookkeeping row: the push writes its rows, then waits on this lock before COMMIT.
        let holder = try HubSupport.connect(server, name)
        try holder.execute(sql: "BEGIN")
        try holder.execute(sql: "SELECT node FROM hub_edges WHERE node = $1 FOR UPDATE", [.text(node)])
        let process = Process()
        process.executableURL = Support.catalogBinary
        process.arguments = ["--db", db, "sync", "--quiet", uri]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let admin = try HubSupport.connect(server, name)
        let waiting = try HubSupport.wait(seconds: 20) {
            try admin.execute(
                sql: """
                    SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'catalog'
                    AND wait_event_type = 'Lock'
                    """
            ).int64(0, 0) == 1
        }
        #expect(waiting, "the push never reached the bookkeeping row")
        // Its rows are written (and numbered) inside the open transaction: the kill lands mid-transaction.
        #expect(try HubSupport.scalar(server, name, "SELECT last_value FROM hub_change_seq") != hubSequence)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        try holder.execute(sql: "ROLLBACK")
        let gone = try HubSupport.wait(seconds: 20) {
            try admin.execute(sql: "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'catalog'")
                .int64(0, 0) == 0
        }
        #expect(gone)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions") == "0")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM landmarks WHERE id = 4242") == "0")
        #expect(try HubSupport.scalar(server, name, "SELECT push_through FROM hub_edges WHERE node = $1", [.text(node)]) == "16")
        #expect(try dumpLandmarks(db) == edgeBefore.0 && dumpPositions(db) == edgeBefore.1)

        let again = try Self.catalog(db, ["sync", "--quiet", uri])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions") == "3")
        #expect(try HubSupport.hubStatus(db)["inAgreement"] as? Bool == true)
    }

    @Test("passwords come from PGPASSFILE or ~/.pgpass; none appears in any output")
    func passwordFiles() throws {
        let hub = try HubSupport.makePasswordHub(server)
        let home = Support.temporaryDirectory()
        let line = "127.0.0.1:\(server.port):\(hub):\(PostgresServer.passwordRole):\(PostgresServer.password)\n"
        let passfile = home.appending(path: "hub.pgpass").path
        try line.write(toFile: passfile, atomically: true, encoding: .utf8)
        try line.write(toFile: home.appending(path: ".pgpass").path, atomically: true, encoding: .utf8)
        chmod(passfile, 0o600)
        chmod(home.appending(path: ".pgpass").path, 0o600)
        let uri = server.uri(database: hub, user: PostgresServer.passwordRole)
        let db = Support.temporaryDatabase()
        #expect(try Self.catalog(db, ["import", Support.root.appending(path: "Seeds/landmarkData.json").path]).status == 0)
        var outputs = [
            try Self.catalog(db, ["sync", uri], environment: ["PGPASSFILE": passfile]),
            try Self.catalog(db, ["sync", uri], environment: ["HOME": home.path]),
            try Self.catalog(db, ["status"], environment: ["HOME": home.path]),
        ]
        #expect(outputs.allSatisfy { $0.status == 0 }, "\(outputs.map(\.stderr))")
        #expect(outputs[2].stdout.contains("the same as here"), "\(outputs[2].stdout)")
        let without = try Self.catalog(db, ["sync", uri])
        #expect(without.status == 69 && without.stderr.contains(".pgpass"), "\(without.stderr)")
        outputs.append(without)
        for output in outputs {
            #expect(!output.stdout.contains(PostgresServer.password) && !output.stderr.contains(PostgresServer.password))
        }
    }
}
