import CatalogTestSupport
import Foundation
import LandmarkCatalogClient
import Testing

@testable import LandmarkCatalog

/// The app's sync session against the real `catalog serve` (the built binary, JWTs from `catalog token
/// issue`, as in ClientSyncTests): two devices of one user, and a user who cannot see another's row.
@Suite("Client through the real catalog serve", .serialized)
struct ClientServeInteropTests {
    /// A real serve over a seeded database, with one token per user (`catalog token issue`).
    struct Server {
        let db: String
        let serve: ServeProcess
        let url: URL
        let tokens: [String: String]
    }

    static func server(users: [String]) throws -> Server {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        var tokens: [String: String] = [:]
        for user in users { tokens[user] = try ServeKeys.issue(box, key: key.privateKey, user: user) }
        return Server(db: db, serve: serve, url: try #require(URL(string: serve.base)), tokens: tokens)
    }

    @Test("two devices through catalog serve: A's page reaches B's CarouselModel; bob's device never holds ann's row")
    func twoDevicesThroughServe() async throws {
        let server = try Self.server(users: ["ann", "bob"])
        let (db, serve, url) = (server.db, server.serve, server.url)
        let (annToken, bobToken) = (server.tokens["ann"]!, server.tokens["bob"]!)

        func device(_ token: String) async throws -> (Catalog, SyncSession) {
            let catalog = try Catalog(path: Support.temporaryDatabase())
            let session = try await catalog.startSync(server: url, user: nil, configuration: ClientSyncTests.quick()) { token }
            #expect(try await eventually { try await catalog.featured().count == 4 })
            return (catalog, session)
        }
        let (a, sessionA) = try await device(annToken)
        let (b, sessionB) = try await device(annToken)
        let (c, sessionC) = try await device(bobToken)
        let model = await CarouselModel(catalog: b, user: "ann")

        for page in [1, 3, 2] { try await a.setPosition(user: "ann", to: .page(page)) }
        try await bounded(60, "sessionA.flush()") { try await sessionA.flush() }
        #expect(sessionA.status.pendingChanges == 0)
        #expect(try await eventually { await model.currentPage == 2 })
        #expect(try await b.position(user: "ann")?.landmarkID == 1006)

        // The server stored ann's last page once; bob's device holds only the landmarks.
        let stored = try dumpRows(db, sql: "SELECT page FROM positions WHERE user_id = 'ann'")
        #expect(stored == [[.integer(2)]])
        try await c.setPosition(user: "bob", to: .page(1))
        try await bounded(60, "sessionC.flush()") { try await sessionC.flush() }
        #expect(try await c.positions().map(\.user) == ["bob"])
        #expect(try await a.position(user: "bob") == nil)

        for session in [sessionA, sessionB, sessionC] { try await bounded(60, "session.stop()") { await session.stop() } }
        for catalog in [a, b, c] { catalog.close() }
        let stopped = serve.stop()
        #expect(stopped.status == 0, "\(stopped)")
        #expect(!serve.log.contains(annToken) && !serve.log.contains(bobToken))
    }

    /// Found by a breaker: a position stamped two days ahead (another process with its clock ahead) was
    /// quarantined by the server, the session counted it as sent, and the next long-poll's answer wiped
    /// the warning, so the device fell out of sync with nothing shown.
    ///
    /// The error now stays until a push is applied again.
    @Test("a position stamped far ahead: the server quarantines it, and status keeps saying so (.clockAhead) after later answers")
    func clockAheadStaysVisible() async throws {
        let server = try Self.server(users: ["ann"])
        let (db, serve, url, token) = (server.db, server.serve, server.url, server.tokens["ann"]!)
        let path = Support.temporaryDatabase()
        let catalog = try Catalog(path: path)
        var configuration = ClientSyncTests.quick()
        configuration.longPollSeconds = 1
        let session = try await catalog.startSync(server: url, user: nil, configuration: configuration) { token }
        #expect(try await eventually { try await catalog.featured().count == 4 })
        let ahead = ManualClock(Int64(Date().timeIntervalSince1970 * 1000) + 2 * 86_400_000)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "3"], db: path, clock: ahead).status == 0)
        #expect(await eventually { session.status.lastError?.reason == .clockAhead }, "\(session.status)")
        // Two long-poll answers later the warning is still there.
        let seen = try #require(session.status.lastSyncedAt)
        #expect(await eventually { (session.status.lastSyncedAt ?? seen) > seen.addingTimeInterval(1.5) }, "\(session.status)")
        #expect(session.status.lastError?.reason == .clockAhead, "\(session.status)")
        #expect(session.status.isConnected)
        #expect(try dumpRows(db, sql: "SELECT count(*) FROM sync_quarantine") == [[.integer(1)]])
        try await bounded(60, "session.stop()") { await session.stop() }
        catalog.close()
        #expect(serve.stop().status == 0)
    }
}
