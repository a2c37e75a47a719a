import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// One user cannot fill the disk through the quarantine (docs/limits.md): of one user's rows stamped far
/// ahead, the server holds the greatest stamps only, however many are posted.
extension ServeTests {
    @Test("21,000 rows of one user stamped a year ahead, in 21 POSTs: at most 8 held; another user's POST still applied")
    func quarantineIsBoundedPerUser() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let (mallory, bob) = (
            try ServeKeys.issue(box, key: key.privateKey, user: "mallory"), try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        )
        let ahead = Int64(Date().timeIntervalSince1970 * 1000) + 365 * 86_400_000
        for post in 0..<21 {
            let rows = (0..<1000).map { i in
                let at = Timestamp.format(milliseconds: ahead + Int64(post * 1000 + i))
                return #"{"user":"mallory","page":1,"landmarkId":1003,"updatedAt":"\#(at)","counter":0,"node":"phone-m","deleted":false}"#
            }
            let answer = try ServeCurl.post(serve.base + "/v1/positions", token: mallory, body: #"{"positions":[\#(rows.joined(separator: ","))]}"#)
            #expect(answer.status == 200, "\(answer)")
        }
        // The greatest stamps are the ones kept: the last POST's last 8 rows.
        let held = try dumpRows(db, sql: "SELECT updated_ms FROM sync_quarantine WHERE row_key = 'mallory' ORDER BY updated_ms")
        #expect(held.count == 8, "\(held.count) rows held")
        #expect(held.last == [.integer(ahead + 20_999)] && held.first == [.integer(ahead + 20_992)], "\(held)")
        let other = try ServeCurl.post(serve.base + "/v1/positions", token: bob, body: ServeRows.body(user: "bob", page: 3, node: "phone-b"))
        #expect(other.status == 200 && other.body.contains(#""outcome":"applied""#), "\(other)")
        #expect(serve.stop().status == 0)
    }
}
