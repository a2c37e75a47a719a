import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogClient
@testable import LandmarkCatalogSync

/// The hub carries erasures (docs/erasure.md): pushed, applied in PostgreSQL, pulled by every edge.
@Suite("Erasure through a PostgreSQL hub", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"), .serialized)
struct ErasureHubTests {
    @Test("an erasure pushed to the hub deletes the user's row there and on every edge; an old row pushed later is refused")
    func throughHub() throws {
        let server = try PostgresServer.running()
        let (uri, name) = try HubSupport.makeHub(server)
        let box = try Sandbox()
        let user = ErasureTraces.user
        let a = try box.seededDatabase("a.sqlite")
        let b = box.path("b.sqlite")
        #expect(try box.run(["position", "set", "--user", user, "--page", "2"], db: a).status == 0)
        #expect(try box.run(["sync", uri], db: a).status == 0)
        #expect(try box.run(["sync", uri], db: b).status == 0)
        let old = box.path("old.json")
        #expect(try box.run(["export", "--output", old], db: b).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = $1", [.text(user)]) == "1")
        // A erases and pushes: the hub's row goes, the erasure is there by hash.
        #expect(try box.run(["user", "erase", user], db: a).status == 0)
        #expect(try box.run(["sync", uri], db: a).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = $1", [.text(user)]) == "0")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_erasures") == "1")
        // B pulls it: its row goes.
        #expect(try box.run(["sync", uri], db: b).status == 0)
        #expect(try box.run(["position", "get", "--user", user], db: b).stdout.contains("no position"))
        // C was offline with the old row: it pushes it, the hub refuses it, and C's own copy is erased on the pull.
        let c = box.path("c.sqlite")
        #expect(try box.run(["sync", old], db: c).status == 0)
        #expect(try box.run(["sync", uri], db: c).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = $1", [.text(user)]) == "0")
        #expect(try box.run(["position", "get", "--user", user], db: c).stdout.contains("no position"))
        // Every edge and the hub agree.
        let store = try CatalogStore.open(path: a)
        let hub = try HubConnection(conninfo: uri, name: name, limits: HubLimits(options: SyncOptions()))
        let digest = try StateDigest(of: store)
        #expect(try hub.digest() == digest)
        #expect(try StateDigest(of: CatalogStore.open(path: b)) == digest)
        #expect(try StateDigest(of: CatalogStore.open(path: c)) == digest)
        // Written after the erasure: a new user, accepted everywhere.
        #expect(try box.run(["position", "set", "--user", user, "--page", "1"], db: c).status == 0)
        #expect(try box.run(["sync", uri], db: c).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = $1", [.text(user)]) == "1")
    }
}
