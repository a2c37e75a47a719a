import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogClient

/// LandmarkCatalogClient: the outbox over a real database, and sessions through a real `catalog serve` on
/// 127.0.0.1 (the built binary over a seeded database, tokens from `catalog token issue`; docs/protocol.md,
/// docs/swift-library.md "Syncing from the app").
@Suite("Client: the app's sync session", .serialized)
struct ClientSyncTests {
    static let seeds = Support.root.appending(path: "Seeds/landmarkData.json").path

    /// Small bounds, so a test waits milliseconds where an app waits seconds.
    static func quick() -> SyncSession.Configuration {
        var c = SyncSession.Configuration()
        c.longPollSeconds = 5
        c.minimumBackoff = 0.05
        c.maximumBackoff = 0.3
        c.requestTimeout = 5
        return c
    }

    /// A device: an empty database and a session for `user` through `server` (its token from `catalog token
    /// issue`), once its landmarks arrived.
    static func device(_ server: DeviceServe, user: String, path: String? = nil, configuration: SyncSession.Configuration = quick())
        async throws -> (Catalog, SyncSession)
    {
        let catalog = try Catalog(path: path ?? Support.temporaryDatabase())
        let token = try server.token(user)
        let session = try await catalog.startSync(server: server.url, user: nil, configuration: configuration) { token }
        #expect(try await eventually { try await !catalog.featured().isEmpty })
        return (catalog, session)
    }

    /// The device's own row of `user` at `path` and the server's are the same row (page, landmark, stamp).
    static func sameRow(_ server: DeviceServe, _ path: String, _ user: String) throws -> Bool {
        guard let mine = try StoredPositions.row(path, user), let theirs = try server.row(user) else { return false }
        return mine.page == theirs.page && mine.landmark == theirs.landmark && mine.stamp == theirs.stamp && mine.deleted == theirs.deleted
    }

    // MARK: - The pieces

    @Test("the outbox: a local write is pending until acknowledged; a row merged from the server is not")
    func outboxOverADatabase() async throws {
        let db = Support.temporaryDatabase()
        let catalog = try Catalog(path: db)
        try await catalog.importLandmarks(from: .file(Self.seeds))
        let key = "http://example/v1 as ann"
        let pending: @Sendable () async throws -> [PendingPosition] = {
            try await catalog.read { try DeviceSync(store: $0).pendingPositions(user: "ann", key: key) }
        }
        #expect(try await pending().isEmpty)
        try await catalog.setPosition(user: "ann", to: .page(2))
        let first = try await pending()
        #expect(first.count == 1)
        #expect(first[0].json.contains(#""page":2"#))
        #expect(first[0].json.contains(#""user":"ann""#))
        // Acknowledged: gone, and it stays gone across a reopen (the push cursor is in the database).
        try await catalog.write { try DeviceSync(store: $0).acknowledgePositions(key: key, through: first[0].seq) }
        #expect(try await pending().isEmpty)
        catalog.close()
        let reopened = try Catalog(path: db)
        #expect(try await reopened.read { try DeviceSync(store: $0).pendingPositions(user: "ann", key: key) }.isEmpty)
        // A newer local write is pending again; another user's row is not this outbox's.
        try await reopened.setPosition(user: "ann", to: .page(1))
        try await reopened.setPosition(user: "bob", to: .page(1))
        let second = try await reopened.read { try DeviceSync(store: $0).pendingPositions(user: "ann", key: key) }
        #expect(second.count == 1 && second[0].seq > first[0].seq)
        // A newer row from the server (another node's stamp) replaces it: nothing left to send.
        let far = Timestamp.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 1000)
        let answer =
            #"{"format":"landmark-catalog-snapshot","version":1,"node":"serve-1","positions":[{"counter":0,"deleted":false,"landmarkId":null,"node":"phone-b","page":0,"updatedAt":"\#(far)","user":"ann"}],"cursor":"x:9","more":false}"#
        try await reopened.write { store in
            _ = try DeviceSync(store: store).mergeAnswer(Array(answer.utf8), route: .positions, key: key, server: "test", after: nil)
        }
        #expect(try await reopened.read { try DeviceSync(store: $0).pendingPositions(user: "ann", key: key) }.isEmpty)
        #expect(try await reopened.position(user: "ann")?.currentPage == 0)
        let state = try await reopened.read { try DeviceSync(store: $0).state(key: key) }
        #expect(state.positionsCursor == "x:9")
        #expect(state.pushed == first[0].seq)
        // A malformed answer changes nothing, its cursor included.
        await #expect(throws: CatalogError.self) {
            try await reopened.write { store in
                _ = try DeviceSync(store: store).mergeAnswer(
                    Array(#"{"format":"landmark-catalog-snapshot","version":1,"positions":[{"user":1}],"cursor":"x:10"}"#.utf8),
                    route: .positions, key: key, server: "test", after: "x:9")
            }
        }
        // An answer without a cursor, or one that says more without moving it, changes nothing either.
        for body in [
            #"{"format":"landmark-catalog-snapshot","version":1,"positions":[]}"#,
            #"{"format":"landmark-catalog-snapshot","version":1,"positions":[],"cursor":"x:9","more":true}"#,
        ] {
            await #expect(throws: CatalogError.self) {
                try await reopened.write { store in
                    _ = try DeviceSync(store: store).mergeAnswer(Array(body.utf8), route: .positions, key: key, server: "test", after: "x:9")
                }
            }
        }
        // A cursor naming another database: the server forgot, and the user's row (stamped by another
        // node, merged above) is in the outbox again until acknowledged (docs/protocol.md §3).
        let forgot = try await reopened.write { store in
            try DeviceSync(store: store).mergeAnswer(
                Array(#"{"format":"landmark-catalog-snapshot","version":1,"positions":[],"cursor":"y:1","more":false}"#.utf8),
                route: .positions, key: key, server: "test", after: "x:9")
        }
        #expect(forgot.serverForgot && forgot.page == AnswerPage(cursor: "y:1", more: false, rows: 0))
        let again = try await reopened.read { try DeviceSync(store: $0).pendingPositions(user: "ann", key: key) }
        #expect(again.count == 1 && again[0].json.contains(#""node":"phone-b""#))
        try await reopened.write { try DeviceSync(store: $0).acknowledgePositions(key: key, through: again[0].seq) }
        #expect(try await reopened.read { try DeviceSync(store: $0).pendingPositions(user: "ann", key: key) }.isEmpty)
        #expect(try await reopened.read { try DeviceSync(store: $0).state(key: key) }.positionsCursor == "y:1")
        reopened.close()
    }

    @Test("the user is the token's sub, read without verifying; a token without one is refused with 64")
    func tokenSubject() throws {
        #expect(try TokenSource.subject(of: unsignedToken(user: "ann")) == "ann")
        #expect(throws: CatalogError.self) { try TokenSource.subject(of: "not-a-jwt") }
        #expect(throws: CatalogError.self) { try TokenSource.subject(of: "e30.e30.x") }  // {} claims
    }

    @Test("the backoff doubles with jitter within its bounds and resets")
    func backoffBounds() {
        var backoff = Backoff(minimum: 0.1, maximum: 2)
        var waits: [Double] = []
        for _ in 0..<12 { waits.append(backoff.next()) }
        #expect(waits.allSatisfy { $0 >= 0.05 && $0 <= 2 })
        #expect(waits[0] <= 0.1 && waits[11] >= 1)
        #expect(backoff.next(atLeast: 5) == 2)  // a Retry-After is bounded too
        backoff.reset()
        #expect(backoff.next() <= 0.1)
    }

    // MARK: - Through a real serve

    @Test("two devices through one server: A's page reaches B, and B's model moves")
    func twoDevices() async throws {
        let server = try DeviceServe()
        let (pathA, pathB) = (Support.temporaryDatabase(), Support.temporaryDatabase())
        let (a, sessionA) = try await Self.device(server, user: "ann", path: pathA)
        let (b, sessionB) = try await Self.device(server, user: "ann", path: pathB)
        let model = await CarouselModel(catalog: b, user: "ann")
        try await a.setPosition(user: "ann", to: .page(3))
        try await bounded(60, "sessionA.flush()") { try await sessionA.flush() }
        #expect(sessionA.status.pendingChanges == 0)
        #expect(try Self.sameRow(server, pathA, "ann"))
        #expect(try await eventually { try await b.position(user: "ann")?.currentPage == 3 })
        #expect(await eventually { await model.currentPage == 3 })
        // And back: B's page reaches A.
        try await b.setPosition(user: "ann", to: .page(2))
        try await bounded(60, "sessionB.flush()") { try await sessionB.flush() }
        #expect(try await eventually { try await a.position(user: "ann")?.currentPage == 2 })
        #expect(sessionA.status.isConnected && sessionA.status.lastSyncedAt != nil && sessionA.status.lastError == nil)
        // The device holds the landmarks and its user's row only (the server holds bob's too).
        #expect(try await b.positions().map(\.user) == ["ann"])
        #expect(try server.row("bob")?.page == 2)
        #expect(try await b.featured() == a.featured())
        #expect(try server.row("ann")?.page == 2)
        #expect(try Self.sameRow(server, pathB, "ann") && Self.sameRow(server, pathA, "ann"))
        try await bounded(60, "sessionA.stop()") { await sessionA.stop() }
        try await bounded(60, "sessionB.stop()") { await sessionB.stop() }
        #expect(!sessionA.status.isRunning)
        #expect(server.stop()?.status == 0)
    }

    @Test("offline: writes land locally and are counted, then flushed when the server is back; B converges")
    func offline() async throws {
        let server = try DeviceServe()
        let pathA = Support.temporaryDatabase()
        let (a, sessionA) = try await Self.device(server, user: "ann", path: pathA)
        let (b, sessionB) = try await Self.device(server, user: "ann")
        #expect(server.stop()?.status == 0)
        for page in [1, 2, 3, 0, 2] { try await a.setPosition(user: "ann", to: .page(page)) }
        #expect(try await a.position(user: "ann")?.currentPage == 2)
        // Drained: the long-polls were answered; the next requests find no server.
        #expect(
            await eventually {
                sessionA.status.pendingChanges == 1 && !sessionA.status.isConnected && sessionA.status.lastError?.reason == .offline
            }, "\(sessionA.status)")
        #expect(sessionA.status.lastError?.kind == .unavailable)
        // A flush waits while the server is away.
        let flushing = Task { try await bounded(60, "sessionA.flush()") { try await sessionA.flush() } }
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(sessionA.status.pendingChanges == 1)
        // A new serve on the same database and port.
        try server.start()
        try await bounded(60, "flushing") { try await flushing.value }
        #expect(sessionA.status.pendingChanges == 0)
        #expect(try await eventually { try await b.position(user: "ann")?.currentPage == 2 })
        // Five writes offline, one row sent (the last), written once.
        #expect(try server.writes("ann").count == 1)
        #expect(try Self.sameRow(server, pathA, "ann"))
        #expect(server.serve?.accessLog("POST", "/v1/positions").filter { $0["status"] as? Int == 200 }.count == 1)
        try await bounded(60, "sessionA.stop()") { await sessionA.stop() }
        try await bounded(60, "sessionB.stop()") { await sessionB.stop() }
        #expect(server.stop()?.status == 0)
    }

    @Test("killed between the server's answer and its record: the next session sends the row again, stored once")
    func killedBeforeAcknowledgement() async throws {
        let server = try DeviceServe()
        let path = Support.temporaryDatabase()
        // The first session never records an answer: it hangs where a kill would stop it.
        var hanging = Self.quick()
        let answered = Locked(false)
        hanging.hooks.afterPushAnswered = {
            answered.set(true)
            try? await Task.sleep(nanoseconds: 3_600_000_000_000)
        }
        let (a, first) = try await Self.device(server, user: "ann", path: path, configuration: hanging)
        try await a.setPosition(user: "ann", to: .page(2))
        #expect(await eventually { answered.current })
        // The server has it (one write, one POST answered 200)…
        #expect(try server.writes("ann").count == 1)
        #expect(try Self.sameRow(server, path, "ann"))
        let posted: @Sendable () -> [Int] = { server.accessLog("POST", "/v1/positions").compactMap { $0["status"] as? Int } }
        #expect(await eventually { posted() == [200] }, "\(posted())")
        // …the device does not know.
        #expect(try await a.read { try DeviceSync(store: $0).pendingPositions(user: "ann", key: first.key) }.count == 1)
        try await bounded(60, "first.stop()") { await first.stop() }
        a.close()
        // Restarted: pending again, pushed, and the server stores it once.
        let (again, second) = try await Self.device(server, user: "ann", path: path)
        try await bounded(60, "second.flush()") { try await second.flush() }
        #expect(second.status.pendingChanges == 0)
        #expect(await eventually { posted() == [200, 200] }, "sent again: \(posted())")
        #expect(try server.writes("ann").count == 1)
        #expect(try server.row("ann")?.page == 2)
        #expect(try Self.sameRow(server, path, "ann"))
        try await bounded(60, "second.stop()") { await second.stop() }
        again.close()
        #expect(server.stop()?.status == 0)
    }

    /// Regression (CI, 1 run in 5 under load): stop() invalidated the URLSession and then awaited its
    /// tasks, so a task that was about to send made a request on the invalidated session, and
    /// FoundationNetworking trapped ("Session invalidated"), taking the whole process down.
    ///
    /// The hook holds a request just before URLSession until its task is cancelled, and for a moment
    /// longer, for the invalidation that used to follow the cancel at once.
    @Test("stop() while a request is about to start: it ends, no request is made on the closed session")
    func stopRacingARequest() async throws {
        let server = try DeviceServe()
        let catalog = try Catalog(path: Support.temporaryDatabase())
        let token = try server.token("ann")
        let session = try await catalog.startSync(server: server.url, user: "ann", configuration: Self.quick()) { token }
        #expect(try await eventually { try await !catalog.featured().isEmpty })
        let entered = Locked(0)
        let endpoint = session.endpoint
        endpoint.beforeRequest.withLock {
            $0 = {
                entered.update { $0 += 1 }
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(2)) }
                let until = ContinuousClock.now + .seconds(1)
                while !endpoint.isClosed && ContinuousClock.now < until { await Task.yield() }
            }
        }
        let before = server.accessLog("POST", "/v1/positions").count
        try await catalog.setPosition(user: "ann", to: .page(1))
        #expect(await waitTurns { entered.current >= 1 })
        try await bounded(60, "session.stop()") { await session.stop() }
        #expect(endpoint.isClosed)
        // Stopped: what the serve logs now, it has heard; it answered no POST.
        #expect(server.stop()?.status == 0)
        #expect(server.accessLog("POST", "/v1/positions").count == before)
        #expect(try server.writes("ann").isEmpty)
        #expect(try await catalog.read { try DeviceSync(store: $0).pendingPositions(user: "ann", key: session.key) }.count == 1)
    }

    @Test("a 401 asks the token closure once more, then the error is published and retried")
    func tokenRefresh() async throws {
        let server = try DeviceServe()
        let (good, forged) = (try server.token("ann"), try server.forgedToken("ann"))
        let asked = Locked(0)
        let catalog = try Catalog(path: Support.temporaryDatabase())
        // Tokens signed by another key until the third ask: the first request's 401 is refreshed (ask 2,
        // refused again), published, and the retry asks again (3: good).
        let session = try await catalog.startSync(server: server.url, user: "ann", configuration: Self.quick()) {
            var n = 0
            asked.update {
                $0 += 1
                n = $0
            }
            return n < 3 ? forged : good
        }
        #expect(try await eventually { try await !catalog.featured().isEmpty })
        #expect(asked.current == 3)
        let landmarks: @Sendable () -> [Int] = { server.accessLog("GET", "/v1/landmarks").compactMap { $0["status"] as? Int } }
        #expect(await eventually { landmarks() == [401, 401, 200] }, "\(landmarks())")
        try await catalog.setPosition(user: "ann", to: .page(3))
        try await bounded(60, "session.flush()") { try await session.flush() }
        #expect(try server.row("ann")?.page == 3)
        #expect(session.status.lastError == nil)
        try await bounded(60, "session.stop()") { await session.stop() }

        // A closure that keeps giving a refused token: the 401 is published, and retried (asked again).
        let stubborn = Locked(0)
        let other = try Catalog(path: Support.temporaryDatabase())
        let refusing = try await other.startSync(server: server.url, user: "ann", configuration: Self.quick()) {
            stubborn.update { $0 += 1 }
            return forged
        }
        #expect(await eventually { refusing.status.lastError?.httpStatus == 401 }, "\(refusing.status)")
        #expect(refusing.status.lastError?.reason == .unauthorized)
        #expect(!refusing.status.isConnected)
        #expect(await eventually { stubborn.current >= 6 }, "asked \(stubborn.current) times")
        try await bounded(60, "refusing.stop()") { await refusing.stop() }
        #expect(try await other.featured().isEmpty)
        let log = server.log
        #expect(server.stop()?.status == 0)
        #expect(!log.contains(good) && !log.contains(forged))
    }
}
