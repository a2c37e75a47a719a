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
        // The tablet returns: its older row is refused as erased, leaves the outbox and the tablet's copy.
        let back = try await tablet.startSync(server: server.url, user: nil, configuration: ClientSyncTests.quick()) {
            try server.token(user)
        }
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
}
