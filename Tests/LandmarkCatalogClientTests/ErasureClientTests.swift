import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogClient
@testable import LandmarkCatalogSync

/// Erasure from a device: `SyncSession.eraseUser` against a real serve (docs/erasure.md).
@Suite("Erasure from a device", .serialized)
struct ErasureClientTests {
    @Test("SyncSession.eraseUser: erased on the server, the device cleared; an offline device's old row leaves its outbox")
    func sessionErasure() async throws {
        let server = try DeviceServe()
        let user = "ann"
        let (phone, session) = try await ClientSyncTests.device(server, user: user)
        try await phone.setPosition(user: user, to: .page(2))
        try await session.flush()
        // The tablet writes while offline: its row waits in the outbox.
        let tabletPath = Support.temporaryDatabase()
        let (tablet, tabletSession) = try await ClientSyncTests.device(server, user: user, path: tabletPath)
        await tabletSession.stop()
        try await tablet.setPosition(user: user, to: .page(3))
        // The phone erases the account.
        try await session.eraseUser()
        #expect(try await phone.position(user: user) == nil)
        #expect(try server.row(user) == nil)
        // The tablet returns, signed in again (a token issued after the erasure: the account's old tokens
        // are refused, docs/serve.md §2): its older row is refused as erased, leaves the outbox and the
        // tablet's copy.
        let fresh = try server.tokenAfterErasure(user)
        let back = try await tablet.startSync(server: server.url, user: nil, configuration: ClientSyncTests.quick()) { fresh }
        try await back.flush()
        #expect(back.status.pendingChanges == 0)
        #expect(try await eventually { try await tablet.position(user: user) == nil })
        #expect(try server.row(user) == nil)
        // Written after the erasure: a new user's row, accepted.
        try await tablet.setPosition(user: user, to: .page(1))
        try await back.flush()
        #expect(try server.row(user)?.page == 1)
        await back.stop()
    }

    /// A device away for 400 days (the server's clock moved ahead by libfaketime) returns with a row of a
    /// position cleared and collected meanwhile (docs/erasure.md §4).
    @Test(
        "faketime: a device offline for 400 days returns; its row cleared and collected meanwhile is refused as expired, nothing comes back, it converges",
        .enabled(if: FakeClock.available, "faketime is not installed (scripts/setup)"))
    func offlineFor400Days() async throws {
        let box = try Sandbox()
        let db = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let ahead = FakeClock.environment(daysAhead: 400)
        // libfaketime must reach the catalog binary's clock: the stamp it writes is 400 days ahead.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let faked = try #require(try FakeClock.probe(box, ahead), "catalog under libfaketime did not run")
        try #require(abs(faked - now - 400 * 86_400_000) < 3_600_000, "libfaketime did not move catalog's clock: \(faked) vs \(now)")

        var serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let token = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let url = URL(string: serve.base)!
        let phone = try Catalog(path: box.path("phone.sqlite"))
        let phoneSession = try await phone.startSync(server: url, user: nil, configuration: ClientSyncTests.quick()) { token }
        #expect(try await eventually { try await !phone.featured().isEmpty })
        try await phone.setPosition(user: "ann", to: .page(2))
        try await phoneSession.flush()
        // The tablet goes away with a position written offline.
        let tabletPath = box.path("tablet.sqlite")
        let tablet = try Catalog(path: tabletPath)
        let away = try await tablet.startSync(server: url, user: nil, configuration: ClientSyncTests.quick()) { token }
        #expect(try await eventually { try await tablet.position(user: "ann")?.currentPage == 2 })
        await away.stop()
        try await tablet.setPosition(user: "ann", to: .page(3))
        // Meanwhile the phone clears the position: a tombstone on the server.
        try await phone.clearPosition(user: "ann")
        try await phoneSession.flush()
        await phoneSession.stop()
        #expect(try server(db, "ann")?.deleted == 1)
        #expect(serve.stop().status == 0)

        // 400 days on: the server took other users' writes all along (its newest stamp is its clock's, which
        // gc measures its horizon from: docs/erasure.md §4), collects (default 30-day horizon) and serves again.
        #expect(try box.run(["position", "set", "--user", "bo", "--page", "1"], db: db, environment: ahead).status == 0)
        let gc = try box.run(["gc", "--json"], db: db, environment: ahead)
        #expect(gc.status == 0, "\(gc)")
        #expect(try server(db, "ann") == nil, "the tombstone was not collected: \(gc.stdout)")
        serve = try ServeProcess(box, db: db, keys: [key.publicKey], environment: ahead)
        let later = try box.run(["token", "issue", "--key", key.privateKey, "--user", "ann"], environment: ahead)
        try #require(later.status == 0, "\(later)")
        let laterToken = later.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        // The tablet returns: its old row is refused as expired, leaves its outbox and its copy.
        let back = try await tablet.startSync(server: URL(string: serve.base)!, user: nil, configuration: ClientSyncTests.quick()) {
            laterToken
        }
        try await back.flush()
        #expect(back.status.pendingChanges == 0)
        #expect(try await eventually { try await tablet.position(user: "ann") == nil }, "the tablet kept a row the server refused")
        #expect(try server(db, "ann") == nil, "the cleared position came back")
        // serve writes a request's access-log line once it has answered: wait for it rather than race it.
        #expect(await eventually { !serve.accessLog("POST", "/v1/positions").isEmpty }, "\(serve.log.suffix(2000))")
        let posts = serve.accessLog("POST", "/v1/positions")
        #expect(!posts.isEmpty && posts.allSatisfy { $0["status"] as? Int == 200 }, "\(serve.log.suffix(2000))")
        // It converged: another session on the same database finds nothing to send and nothing new.
        await back.stop()
        let again = try await tablet.startSync(server: URL(string: serve.base)!, user: nil, configuration: ClientSyncTests.quick()) {
            laterToken
        }
        try await again.flush()
        #expect(again.status.pendingChanges == 0)
        #expect(try await tablet.position(user: "ann") == nil && (try server(db, "ann")) == nil)
        await again.stop()
        #expect(serve.stop().status == 0)
    }

    /// The server's row of `user`: page and whether it is a tombstone, nil when there is none.
    func server(_ db: String, _ user: String) throws -> (page: Int64, deleted: Int64)? {
        try StoredPositions.row(db, user).map { ($0.page, $0.deleted) }
    }
}
