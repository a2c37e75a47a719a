import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogClient

#if canImport(Glibc)
    import Glibc
#endif

/// What `SyncStatus` says in each state, against the real `catalog serve`, real nginx in front of a stopped
/// or draining serve, and a socket that accepts and never answers (docs/swift-library.md "Showing the
/// status"); and the controls an app has: retryNow, flush(timeout:), signOut, stop.
@Suite("Client: status and control", .serialized)
struct ClientStatusTests {
    /// A listener on 127.0.0.1 that completes handshakes (the kernel's backlog) and never answers.
    final class SilentListener {
        let fd: Int32
        let port: Int
        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.fd = fd
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let size = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
            guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw CatalogError(.software, "cannot listen") }
            var length = size
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            port = Int(UInt16(bigEndian: address.sin_port))
        }
        deinit { close(fd) }
        // A literal URL with a numeric port always parses.
        // swift-format-ignore: NeverForceUnwrap
        var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
    }

    struct Server {
        let box: Sandbox
        let db: String
        let key: (privateKey: String, publicKey: String)
        var serve: ServeProcess
        func token(_ user: String) throws -> String { try ServeKeys.issue(box, key: key.privateKey, user: user) }
    }

    static func server(binary: URL = Support.catalogBinary, environment: [String: String] = [:]) throws -> Server {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], binary: binary, environment: environment)
        return Server(box: box, db: db, key: key, serve: serve)
    }

    static func session(_ url: URL, token: String, user: String? = nil, configuration: SyncSession.Configuration = ClientSyncTests.quick())
        async throws -> (Catalog, SyncSession)
    {
        let catalog = try Catalog(path: Support.temporaryDatabase())
        let session = try await catalog.startSync(server: url, user: user, configuration: configuration) { token }
        return (catalog, session)
    }

    @Test("connecting until the first answer (a server that never answers); then connected and hasSynced through serve")
    func connectingThenConnected() async throws {
        let silent = try SilentListener()
        let (c, quiet) = try await Self.session(silent.url, token: "e30.eyJzdWIiOiJhbm4ifQ.x")
        #expect(quiet.status.state == .connecting && !quiet.status.hasSynced)
        try await Task.sleep(for: .milliseconds(500))
        #expect(quiet.status.state == .connecting, "\(quiet.status)")
        let stopping = ContinuousClock.now
        await quiet.stop()
        // stop() gives its tasks 1 s, timed by a task on the cooperative pool; a loaded run adds scheduling
        // (3.9 s seen with the whole suite and a CPU hog on 2 cores, 11.7 s beside five compilers, while
        // other suites held pool threads). What it must never do is wait out the request (30 s).
        #expect(ContinuousClock.now - stopping < .seconds(20), "stop() took \(ContinuousClock.now - stopping)")
        c.close()

        let server = try Self.server()
        let url = try #require(URL(string: server.serve.base))
        let (catalog, session) = try await Self.session(url, token: try server.token("ann"))
        #expect(await eventually { session.status.state == .connected && session.status.hasSynced }, "\(session.status)")
        #expect(session.status.isConnected && session.status.lastError == nil)
        await session.stop()
        // hasSynced is kept in the database: a new session starts with it.
        let annToken = try server.token("ann")
        let again = try await catalog.startSync(server: url, user: "ann", configuration: ClientSyncTests.quick()) { annToken }
        #expect(again.status.hasSynced)
        await again.stop()
        catalog.close()
        #expect(server.serve.stop().status == 0)
    }

    @Test("offline: nothing listening; a 502 from nginx in front of a stopped serve (no HTML in the message)")
    func offlineUnreachableAndProxy() async throws {
        let closedPort = try PostgresServer.freePort()
        let (a, nowhere) = try await Self.session(try #require(URL(string: "http://127.0.0.1:\(closedPort)")), token: "e30.eyJzdWIiOiJhbm4ifQ.x")
        #expect(await eventually { nowhere.status.state == .offline }, "\(nowhere.status)")
        #expect(nowhere.status.lastError?.reason == .offline && nowhere.status.lastError?.httpStatus == nil)
        await nowhere.stop()
        a.close()

        guard NginxServer.available else {
            print("skipped: nginx is not installed (apt-get install nginx-light)")
            return
        }
        let server = try Self.server()
        let nginx = try NginxServer(servePort: server.serve.port)
        let (b, proxied) = try await Self.session(
            try #require(URL(string: "http://127.0.0.1:\(nginx.port)")), token: try server.token("ann"))
        #expect(await eventually { proxied.status.state == .connected }, "\(proxied.status)")
        #expect(server.serve.stop().status == 0)
        #expect(await eventually { proxied.status.lastError?.httpStatus == 502 }, "\(proxied.status)")
        #expect(proxied.status.state == .offline && proxied.status.lastError?.reason == .offline)
        let message = proxied.status.lastError?.message ?? ""
        // contrib/nginx/serve.conf answers its own 502 in the protocol's JSON shape.
        #expect(!message.contains("<") && message.contains("502") && message.contains("unavailable"), "\(message)")
        // A write while offline lands locally and waits.
        try await b.setPosition(user: "ann", to: .page(2))
        #expect(await eventually { proxied.status.pendingChanges == 1 })
        #expect(try await proxied.flush(timeout: .milliseconds(300)) == false)
        await proxied.stop()
        b.close()
    }

    /// A serve that is gone is a refused connection (through nginx, a 502, tested above): offline.
    ///
    /// A draining serve closes its listener and idle connections; only a request in flight at that moment
    /// gets serve's own 503 `draining` (offline by the rule tested below).
    @Test("offline once serve is gone (killed with -9); retryNow() reaches a server that is back before the backoff ends")
    func drainingAndRetryNow() async throws {
        var server = try Self.server()
        let front = try #require(URL(string: server.serve.base))
        var slow = ClientSyncTests.quick()
        slow.longPollSeconds = 1
        slow.minimumBackoff = 60
        slow.maximumBackoff = 60
        let (catalog, session) = try await Self.session(front, token: try server.token("ann"), configuration: slow)
        #expect(await eventually { session.status.state == .connected }, "\(session.status)")
        // Killed, not drained: a draining serve answers the open long-poll at once with nothing, which the
        // session waits out as no progress (here its 20 s backoff) before it asks again and finds it gone.
        server.serve.kill9()
        #expect(await eventually(within: 15) { session.status.state == .offline }, "\(session.status)")
        #expect(session.status.lastError?.reason == .offline, "\(session.status)")

        // Back on the same port: the session waits out its 60 s backoff unless told to retry now.
        let port = server.serve.port
        server.serve = try ServeProcess(server.box, db: server.db, keys: [server.key.publicKey], listen: "127.0.0.1:\(port)")
        let asked = ContinuousClock.now
        await session.retryNow()
        #expect(await eventually(within: 25) { session.status.state == .connected }, "\(session.status)")
        #expect(ContinuousClock.now - asked < .seconds(25))
        await session.stop()
        catalog.close()
        #expect(server.serve.stop().status == 0)
    }

    @Test("each error status's state: 429, 502, 503, 504 and no answer are offline; 400, 401, 403, 404, 413, 500 are failing")
    func statesByStatus() {
        for (status, expected) in [
            (502, SyncStatus.State.offline), (503, .offline), (504, .offline), (400, .failing), (401, .failing), (403, .failing),
            (404, .failing), (413, .failing), (429, .offline), (500, .failing),
        ] {
            let body = Data("<html><body><h1>\(status)</h1></body></html>".utf8)
            let error = ServerConnection.failure(
                ServerConnection.Answer(status: status, body: body, etag: nil, retryAfter: nil), method: "GET", path: "positions", server: "s")
            #expect(SyncStatus.State(failure: error) == expected, "\(status): \(error)")
            #expect(error.httpStatus == status && !error.message.contains("<html"))
        }
        let unreachable = CatalogError(.unavailable, "cannot reach the server s: connection refused", reason: .offline)
        #expect(SyncStatus.State(failure: unreachable) == .offline)
        #expect(SyncStatus.State(failure: CatalogError(.dataInvalid, "not a page of rows")) == .failing)
    }

    @Test("failing: a token the server refuses (401 after a refresh), a token of another user (403)")
    func failing() async throws {
        let server = try Self.server()
        let url = try #require(URL(string: server.serve.base))
        let other = try ServeKeys.make(server.box, "other")
        let forged = try ServeKeys.issue(server.box, key: other.privateKey, user: "ann")
        let (a, refused) = try await Self.session(url, token: forged)
        #expect(await eventually { refused.status.state == .failing }, "\(refused.status)")
        #expect(refused.status.lastError?.httpStatus == 401 && refused.status.lastError?.reason == .unauthorized)
        await refused.stop()
        a.close()

        let (b, wrongUser) = try await Self.session(url, token: try server.token("ann"), user: "bob")
        #expect(try await eventually { try await b.featured().count == 4 })
        try await b.setPosition(user: "bob", to: .page(1))
        #expect(await eventually { wrongUser.status.lastError?.httpStatus == 403 }, "\(wrongUser.status)")
        #expect(wrongUser.status.state == .failing && wrongUser.status.lastError?.reason == .forbidden)
        await wrongUser.stop()
        b.close()
        #expect(server.serve.stop().status == 0)
    }

    /// Found by a breaker: a self-signed certificate was shown as offline ("nothing to do"), though waiting
    /// never cures it.
    @Test("failing: a TLS certificate that does not verify (a self-signed server); the message says TLS")
    func failingOnTLS() async throws {
        let server = try HostileServer(tls: true)
        defer { server.stop() }
        let (catalog, session) = try await Self.session(try #require(URL(string: server.url(""))), token: "e30.eyJzdWIiOiJhbm4ifQ.x")
        #expect(await eventually { session.status.state == .failing }, "\(session.status)")
        #expect(session.status.lastError?.message.contains("TLS") == true, "\(session.status)")
        await session.stop()
        catalog.close()
    }

    /// Found by a breaker: a token closure that never returns held the session in "connecting" with
    /// nothing said; it is now bounded by `requestTimeout`.
    @Test("failing: a token closure that never returns is given requestTimeout, then reported; stop() still returns")
    func tokenClosureThatHangs() async throws {
        let server = try Self.server()
        let url = try #require(URL(string: server.serve.base))
        var configuration = ClientSyncTests.quick()
        configuration.requestTimeout = 1
        let catalog = try Catalog(path: Support.temporaryDatabase())
        let session = try await catalog.startSync(server: url, user: "ann", configuration: configuration) {
            try await Task.sleep(for: .seconds(3600))
            return "never"
        }
        #expect(await eventually { session.status.state == .failing }, "\(session.status)")
        #expect(session.status.lastError?.reason == .unauthorized && session.status.lastError?.message.contains("did not return") == true)
        let stopping = ContinuousClock.now
        await session.stop()
        #expect(ContinuousClock.now - stopping < .seconds(10))
        catalog.close()
        #expect(server.serve.stop().status == 0)
    }

    /// Found by a breaker: the status flickered while pushes went through and the pull kept failing.
    ///
    /// Against a server whose pages say `more` without moving their cursor, every applied push cleared the
    /// pull's error, and the status flipped between connected and failing 31
    /// times in 40 s. One task's success no longer hides the other's failure.
    @Test("a pull that keeps failing while pushes go through: the status stays failing, no flicker")
    func noFlicker() async throws {
        let server = try ClientMisbehavingServerTests.Server(mode: "stuck-more")
        defer { server.stop() }
        let catalog = try Catalog(path: Support.temporaryDatabase())
        try await catalog.importLandmarks(from: .file(ClientSyncTests.seeds))
        var configuration = ClientSyncTests.quick()
        configuration.minimumBackoff = 0.2
        configuration.maximumBackoff = 0.4
        let session = try await catalog.startSync(server: server.url, user: "ann", configuration: configuration) {
            unsignedToken(user: "ann")
        }
        #expect(await eventually { session.status.state == .failing }, "\(session.status)")
        let states = Task { () -> [SyncStatus.State] in
            var seen: [SyncStatus.State] = []
            for await status in session.statusUpdates { seen.append(status.state) }
            return seen
        }
        for page in [1, 2, 3] {
            try await catalog.setPosition(user: "ann", to: .page(page))
            #expect(await eventually { session.status.pendingChanges == 0 }, "\(session.status)")
        }
        await session.stop()
        let seen = await states.value
        #expect(!seen.contains(.connected), "\(seen)")
        catalog.close()
    }

    @Test("signOut(erasingLocalData:) stops the session and removes the user's row and the session's state; the landmarks stay")
    func signOut() async throws {
        let server = try Self.server()
        let url = try #require(URL(string: server.serve.base))
        let (catalog, session) = try await Self.session(url, token: try server.token("ann"))
        #expect(try await eventually { try await catalog.featured().count == 4 })
        try await catalog.setPosition(user: "ann", to: .page(3))
        #expect(try await session.flush(timeout: .seconds(20)))
        try await session.signOut(erasingLocalData: true)
        #expect(!session.status.isRunning)
        #expect(try await catalog.position(user: "ann") == nil)
        #expect(try await catalog.featured().count == 4)
        #expect(try dumpRows(catalog.path, sql: "SELECT count(*) FROM sync_sources WHERE kind = 'device'") == [[.integer(0)]])
        // The server keeps the row: signing in again brings it back.
        let annToken = try server.token("ann")
        let again = try await catalog.startSync(server: url, user: nil, configuration: ClientSyncTests.quick()) { annToken }
        #expect(try await eventually { try await catalog.position(user: "ann")?.currentPage == 3 })
        await again.stop()
        catalog.close()
        #expect(server.serve.stop().status == 0)
    }
}

extension ClientStatusTests {
    @Test("429 from serve's POST rate: offline (not failing) while it lasts, Retry-After waited out, the row then taken")
    func rateLimitedIsWaitedOut() async throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--post-burst", "1", "--post-rate", "1"])
        var configuration = ClientSyncTests.quick()
        configuration.maximumBackoff = 5  // above the server's Retry-After (1 s), which the session honours
        let (catalog, session) = try await Self.session(
            try #require(URL(string: serve.base)), token: try ServeKeys.issue(box, key: key.privateKey, user: "ann"),
            configuration: configuration)
        #expect(await eventually { session.status.state == .connected }, "\(session.status)")
        try await catalog.setPosition(user: "ann", to: .page(2))
        #expect(await eventually { session.status.pendingChanges == 0 }, "\(session.status)")
        // Another POST of ann's (an old row: stale) takes the one allowance; the device's next write finds
        // none: 429, which is a wait, not a failure.
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        _ = try ServeCurl.post(serve.base + "/v1/positions", token: ann, body: ServeRows.body(user: "ann", page: 1, wall: 1000))
        try await catalog.setPosition(user: "ann", to: .page(3))
        #expect(await eventually { session.status.lastError?.httpStatus == 429 }, "\(session.status)")
        #expect(session.status.state == .offline && session.status.lastError?.reason == .offline, "\(session.status)")
        #expect(session.status.lastError?.message.contains("rate_limited") == true, "\(session.status)")
        // Then it goes: the server's row is the device's, the session connected again.
        #expect(await eventually { session.status.pendingChanges == 0 && session.status.state == .connected }, "\(session.status)")
        #expect(try StoredPositions.row(db, "ann")?.page == 3)
        await session.stop()
        catalog.close()
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
        // The retry came no sooner than Retry-After (1 s) after the refusal (the access log's times).
        let posts = ServeProcess.accessLog(run.stderr, "POST", "/v1/positions")
        let refused = try #require(posts.firstIndex { $0["status"] as? Int == 429 }, "\(posts)")
        let retried = try #require(posts[(refused + 1)...].first { $0["status"] as? Int == 200 }, "\(posts)")
        func milliseconds(_ line: [String: Any]) -> Int64? { (line["time"] as? String).flatMap(Timestamp.parse) }
        let gap = (milliseconds(retried) ?? 0) - (milliseconds(posts[refused]) ?? 0)
        #expect(gap >= 900, "retried \(gap) ms after the 429")
    }
}
