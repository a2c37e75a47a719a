import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogClient
@testable import LandmarkCatalogSync

/// One erasure through a whole fleet (docs/erasure.md §3): two serves over a PostgreSQL hub, a node
/// following one of them and publishing a log that real nginx serves, a consumer of that log, and the
/// app's devices.
@Suite(
    "Erasure through a fleet", .serialized,
    .enabled(if: PostgresServer.isAvailable && NginxServer.available, "needs PostgreSQL server binaries and nginx"))
struct ErasureFleetTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.running() }

    /// The user's id bytes in every file under `directory` (recursively), by file, the ones holding it only.
    static func holders(under directory: String, skipping skipped: Set<String> = []) -> [String: Int] {
        var found: [String: Int] = [:]
        let files = FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? []
        for file in files where !skipped.contains(where: { file.hasPrefix($0) }) {
            let path = directory + "/" + file
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let n = ErasureTraces.occurrences(of: ErasureTraces.user, in: path)
            if n > 0 { found[path] = n }
        }
        return found
    }

    /// `pg_dump` of the hub database `name`, as text.
    func dump(_ name: String) throws -> String {
        let bin = try #require(PostgresServer.binDirectory)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "\(bin)/pg_dump")
        process.arguments = ["-h", server.socketDirectory, "-p", "\(server.port)", "-U", "postgres", "--no-owner", name]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "pg_dump exited \(process.terminationStatus)")
        return String(decoding: data, as: UTF8.self)
    }

    @Test(
        "DELETE /v1/users/me: within one follow cycle and a publish (and the log's grace) no file of any node, no row of the hub holds the user; digests agree"
    )
    func fleetErasure() async throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let box = try Sandbox()
        let user = ErasureTraces.user
        let key = try ServeKeys.make(box, "k")
        let oneDB = try box.seededDatabase("one.sqlite")
        let twoDB = box.path("two.sqlite")
        let one = try ServeProcess(box, db: oneDB, keys: [key.publicKey], extra: ["--hub", uri])
        let two = try ServeProcess(box, db: twoDB, keys: [key.publicKey], extra: ["--hub", uri])
        let userToken = try ServeKeys.issue(box, key: key.privateKey, user: user)
        let bobToken = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let edgeFile = box.path("edge.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"]).write(
            toFile: edgeFile, atomically: true, encoding: .utf8)

        // The node follows serve one and publishes its log where nginx serves it, with a 2 s grace.
        let nginx = try NginxServer()
        let logDir = nginx.logDirectory.path
        let nodeDB = box.path("node.sqlite")
        let follower = try box.start(
            [
                "sync", "--follow", "catalog+http://127.0.0.1:\(one.port)/v1", "--token-file", edgeFile, "--interval", "1s",
                "--publish", logDir, "--grace", "2s", "--quiet",
            ], db: nodeDB)
        defer { follower.stop() }
        let consumerDB = box.path("consumer.sqlite")
        let manifest = nginx.url("manifest.json")

        // Devices: the user's phone on one, the user's tablet on two, bob's phone on two.
        var quick = SyncSession.Configuration()
        (quick.longPollSeconds, quick.minimumBackoff, quick.maximumBackoff, quick.requestTimeout) = (5, 0.05, 0.3, 5)
        let phoneDB = box.path("phone.sqlite")
        let phone = try Catalog(path: phoneDB)
        let phoneSession = try await phone.startSync(server: URL(string: one.base)!, user: nil, configuration: quick) { userToken }
        let tablet = try Catalog(path: box.path("tablet.sqlite"))
        let tabletSession = try await tablet.startSync(server: URL(string: two.base)!, user: nil, configuration: quick) { userToken }
        let bobPhone = try Catalog(path: box.path("bob.sqlite"))
        let bobSession = try await bobPhone.startSync(server: URL(string: two.base)!, user: nil, configuration: quick) { bobToken }
        try await phone.setPosition(user: user, to: .page(2))
        try await phoneSession.flush()
        try await bobPhone.setPosition(user: "bob", to: .page(3))
        try await bobSession.flush()
        #expect(try await eventually(within: 20) { try await tablet.position(user: user)?.currentPage == 2 })

        // Everyone holds the user before the erasure: the hub, both serves, the node, its log, the consumer.
        let hasUser = "SELECT count(*) FROM positions WHERE user_id = '\(user)'"
        #expect(try HubSupport.wait { try HubSupport.scalar(server, name, hasUser) == "1" })
        for db in [twoDB, nodeDB] {
            #expect(HubSupport.wait(seconds: 20) { Waits.page(db, user) == 2 }, "\(db) never got the user's row")
        }
        #expect(HubSupport.wait(seconds: 20) { !Self.holders(under: logDir).isEmpty }, "the log never held the user")
        #expect(try box.run(["sync", manifest], db: consumerDB).status == 0)
        #expect(Waits.page(consumerDB, user) == 2)
        let bobBefore = try HubSupport.hubPositions(server, name).filter { $0.hasPrefix("bob|") }
        #expect(bobBefore.count == 1)

        // The phone deletes the account (DELETE /v1/users/me through serve one). Timed from before the call:
        // under load the rest of the fleet may be done (grace included) before the call returns.
        let erasedAt = Date()
        try await phoneSession.eraseUser()

        // Serve one, the hub, serve two and the node have applied it; the node has published a new generation.
        #expect(try HubSupport.wait { try HubSupport.scalar(server, name, hasUser) == "0" })
        for db in [oneDB, twoDB, nodeDB] {
            #expect(HubSupport.wait(seconds: 20) { Waits.page(db, user) == nil }, "\(db) still holds the user's row")
        }
        let published = HubSupport.wait(seconds: 20) {
            guard let text = try? String(contentsOfFile: logDir + "/manifest.json", encoding: .utf8),
                let base = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                let file = (base["base"] as? [String: Any])?["name"] as? String
            else { return false }
            let path = logDir + "/" + file
            return (try? String(contentsOfFile: path, encoding: .utf8))?.contains("\"erasures\"") == true
                && ErasureTraces.occurrences(of: user, in: path) == 0
        }
        #expect(published, "the node never published a base without the user")
        #expect(try box.run(["sync", manifest], db: consumerDB).status == 0)
        // The files that held the user stay for the readers' grace (2 s here), then the follower removes them.
        let swept = Waits.waitFor(20) { Self.holders(under: logDir).isEmpty }
        #expect(swept != nil, "the log still holds the user: \(Self.holders(under: logDir))")
        #expect(Date().timeIntervalSince(erasedAt) >= 2, "removed before the grace")

        // Every node's files: the databases with their WAL and shm, cursors, markers, the log, quarantine.
        // io/ holds the processes' captured stderr: serve's access log, which names the user by design
        // (docs/operations.md §5).
        let leftover = Self.holders(under: box.root.path, skipping: ["io/", "phone.sqlite", "tablet.sqlite", "bob.sqlite"])
            .merging(Self.holders(under: logDir)) { $0 + $1 }
        #expect(leftover.isEmpty, "\(leftover)")
        #expect(ErasureTraces.traces(phoneDB) == [0, 0, 0], "the phone that erased still holds the id")
        let dumped = try dump(name)
        #expect(!dumped.contains(user), "pg_dump holds the user")
        #expect(dumped.contains("bob"))

        // The other user is untouched everywhere, and all copies agree.
        #expect(try HubSupport.hubPositions(server, name).filter { $0.hasPrefix("bob|") } == bobBefore)
        #expect(try await bobPhone.position(user: "bob")?.currentPage == 3)
        for db in [oneDB, twoDB, nodeDB, consumerDB] {
            #expect(try HubSupport.edgePositions(db).filter { $0.hasPrefix("bob|") } == bobBefore, "\(db)")
        }
        let hub = try HubConnection(conninfo: uri, name: name, limits: HubLimits(options: SyncOptions()))
        let digest = try hub.digest()
        for db in [oneDB, twoDB, nodeDB, consumerDB] {
            let settled = HubSupport.wait { (try? StateDigest(of: CatalogStore.open(path: db))) == digest }
            #expect(settled, "\(db) digests otherwise than the hub")
        }

        await phoneSession.stop()
        await tabletSession.stop()
        await bobSession.stop()
        #expect(follower.terminate(limit: 20).status == 0)
        #expect(one.stop().status == 0)
        #expect(two.stop().status == 0)
    }
}
