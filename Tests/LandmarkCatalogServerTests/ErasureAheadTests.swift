import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// Erasure records pushed to a real serve stamped far ahead of its clock (docs/protocol.md §6,
/// docs/erasure.md §1): a user token's is refused where it enters, an edge's is applied with a warning.
@Suite("Erasures stamped ahead, pushed to serve", .serialized)
struct ErasureAheadTests {
    static func erasure(_ user: String, at: String) -> String {
        #"{"positions":[],"erasures":[{"userHash":"\#(ErasureRule.userHash(user))","updatedAt":"\#(at)","counter":0,"node":"x"}]}"#
    }

    static func count(_ db: String, _ sql: String) throws -> Int64 {
        guard case .integer(let n)? = try dumpRows(db, sql: sql).first?.first else { return -1 }
        return n
    }

    @Test("a user token's own erasure stamped 2100-01-01 is 400 naming erasures[0].updatedAt; an edge's is applied")
    func userTokenErasureAheadIsRefused() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let mallory = try ServeKeys.issue(box, key: key.privateKey, user: "mallory")
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        let url = serve.base + "/v1/positions"
        let refused = try ServeCurl.post(url, token: mallory, body: Self.erasure("mallory", at: "2100-01-01T00:00:00.000Z"))
        #expect(refused.status == 400 && refused.errorCode == "invalid_field", "\(refused)")
        #expect(refused.errorField == "erasures[0].updatedAt", "\(refused)")
        #expect(try Self.count(db, "SELECT count(*) FROM user_erasures") == 0)
        // Within the drift allowance (5 min by default) it is taken.
        let soon = Timestamp.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 60_000)
        let taken = try ServeCurl.post(url, token: mallory, body: Self.erasure("mallory", at: soon))
        #expect(taken.status == 200, "\(taken)")
        #expect(((taken.json?["erasureResults"] as? [[String: Any]])?.first?["outcome"] as? String) == "applied", "\(taken)")
        // An edge's erasure stamped 2100 is applied with a warning, as every path applies it.
        let byEdge = try ServeCurl.post(url, token: edge, body: Self.erasure("someone", at: "2100-01-01T00:00:00.000Z"))
        #expect(byEdge.status == 200, "\(byEdge)")
        #expect(try Self.count(db, "SELECT count(*) FROM user_erasures") == 2)
    }
}
