import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogClient

/// A user's other device learns that the account was erased (docs/protocol.md §2, docs/erasure.md §6),
/// against a real `catalog serve`.
@Suite("The account erased on another device", .serialized)
struct AccountErasedClientTests {
    @Test("device B of an erased user: its next sync yields accountErased, its rows and outbox are gone, nothing it held reaches the server")
    func otherDeviceLearnsTheAccountIsGone() async throws {
        let server = try DeviceServe()
        let user = "ann"
        let (phone, phoneSession) = try await ClientSyncTests.device(server, user: user)
        try await phone.setPosition(user: user, to: .page(2))
        try await phoneSession.flush()

        // The tablet syncs as the same user; its token closure counts the asks (a refresh would ask again).
        let tablet = try Catalog(path: Support.temporaryDatabase())
        let token = try server.token(user)
        let asks = Locked(0)
        let session = try await tablet.startSync(server: server.url, user: nil, configuration: ClientSyncTests.quick()) {
            asks.update { $0 += 1 }
            return token
        }
        #expect(try await eventually { try await tablet.position(user: user)?.currentPage == 2 })
        // Its requests are held from here on, so it holds a write the server has not seen while the phone erases.
        let held = Locked(0)
        let open = Locked(false)
        session.endpoint.beforeRequest.withLock {
            $0 = {
                held.update { $0 += 1 }
                while !open.current && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(2)) }
            }
        }
        try await tablet.setPosition(user: user, to: .page(3))
        #expect(await waitTurns { held.current >= 1 })
        try await phoneSession.eraseUser()
        #expect(try server.row(user) == nil)
        let refusedBefore = server.accessLog("POST", "/v1/positions").filter { $0["status"] as? Int == 401 }.count

        // The tablet's next exchange: 401 account_erased.
        open.set(true)
        let states = try await bounded(30, "the tablet's session to end") {
            var seen: [SyncStatus.State] = []
            for await status in session.statusUpdates { seen.append(status.state) }
            return seen
        }
        let final = session.status
        #expect(final.state == .accountErased && final.isAccountErased, "\(states) \(final)")
        #expect(!final.isRunning)
        #expect(final.lastError?.reason == .accountErased && final.lastError?.httpStatus == 401, "\(String(describing: final.lastError))")
        #expect(final.pendingChanges == 0)
        // Cleared as an erasing sign-out clears: the row, the outbox, the session's cursors.
        #expect(try await tablet.position(user: user) == nil)
        #expect(try await tablet.read { try DeviceSync(store: $0).pendingPositions(user: user, key: session.key) }.isEmpty)
        #expect(try await tablet.read { try DeviceSync(store: $0).state(key: session.key) }.positionsCursor == nil)
        #expect(try await !tablet.featured().isEmpty, "the landmarks stay")
        // Not refreshed, not retried: the closure was asked once, and the tablet's write never reached the server.
        #expect(asks.current == 1)
        #expect(try dumpRows(server.db, sql: "SELECT count(*) FROM test_writes WHERE page = 3") == [[.integer(0)]])
        #expect(try server.row(user) == nil)
        let refused = server.accessLog("POST", "/v1/positions").filter { $0["status"] as? Int == 401 }.count - refusedBefore
        #expect(refused <= 1, "the push was sent \(refused) times")
        // flush says why the session ended; stopping it again is harmless.
        await #expect(throws: CatalogError.self) { try await session.flush() }
        do {
            try await session.flush()
        } catch let error as CatalogError {
            #expect(error.reason == .accountErased)
        }
        await session.stop()

        // Signed in again (a new account with the same id): a new session starts clean and syncs.
        let fresh = try server.tokenAfterErasure(user)
        let again = try await tablet.startSync(server: server.url, user: nil, configuration: ClientSyncTests.quick()) { fresh }
        #expect(await eventually { again.status.state == .connected }, "\(again.status)")
        try await tablet.setPosition(user: user, to: .page(1))
        try await again.flush()
        #expect(try server.row(user)?.page == 1)
        await again.stop()
        #expect(server.stop()?.status == 0)
    }
}
