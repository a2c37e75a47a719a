import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogClient
@testable import LandmarkCatalogSync

/// Erasure through a real serve (docs/erasure.md, docs/protocol.md §6a).
@Suite("Erasure through serve", .serialized)
struct ErasureServeTests {
    @Test("serve: DELETE /v1/users/me erases; a device's older row is refused as erased, a later one is a new user")
    func serveErasesAndRefusesOldRows() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let token = try ServeKeys.issue(box, key: key.privateKey, user: ErasureTraces.user)
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        let url = serve.base + "/v1/positions"
        let old = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        let wrote = try ServeCurl.post(url, token: token, body: ServeRows.body(user: ErasureTraces.user, page: 2, wall: old))
        #expect((wrote.json?["results"] as? [[String: Any]])?.first?["outcome"] as? String == "applied")
        // A user token may erase only itself; a wrong method is 405.
        let foreign = try ServeCurl.run(["-X", "DELETE", "-H", "Authorization: Bearer \(ann)", serve.base + "/v1/users/\(ErasureTraces.user)"])
        #expect(foreign.status == 403 && foreign.errorCode == "insufficient_scope")
        #expect(try ServeCurl.get(serve.base + "/v1/users/me", token: token).status == 405)
        let erased = try ServeCurl.run(["-X", "DELETE", "-H", "Authorization: Bearer \(token)", serve.base + "/v1/users/me"])
        #expect(erased.status == 200, "\(erased)")
        #expect(erased.json?["erased"] as? Bool == true)
        #expect(erased.json?["removedRow"] as? Bool == true)
        #expect(ServeRows.positions(try ServeCurl.get(url, token: token)).isEmpty)
        // The offline device comes back with its old row: refused as erased, nothing stored.
        let late = try ServeCurl.post(url, token: token, body: ServeRows.body(user: ErasureTraces.user, page: 4, wall: old + 1))
        #expect((late.json?["results"] as? [[String: Any]])?.first?["outcome"] as? String == "erased", "\(late)")
        #expect(ServeRows.positions(try ServeCurl.get(url, token: token)).isEmpty)
        #expect(ErasureTraces.traces(db) == [0, 0, 0], "the server's files still hold the id")
        // An edge token erases another user by id; ann's row goes.
        let byEdge = try ServeCurl.run(["-X", "DELETE", "-H", "Authorization: Bearer \(edge)", serve.base + "/v1/users/ann"])
        #expect(byEdge.status == 200, "\(byEdge)")
        #expect(ServeRows.positions(try ServeCurl.get(url, token: ann)).isEmpty)
        // Written after the erasure: a new user, accepted.
        let fresh = try ServeCurl.post(url, token: token, body: ServeRows.body(user: ErasureTraces.user, page: 1))
        #expect((fresh.json?["results"] as? [[String: Any]])?.first?["outcome"] as? String == "applied")
        #expect(ServeRows.positions(try ServeCurl.get(url, token: token)).first?["page"] as? Int == 1)
        let run = serve.stop()
        #expect(run.status == 0)
        #expect(run.stderr.contains(#""route":"/v1/users""#))
    }
}
