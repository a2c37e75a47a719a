import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogServer

/// An erased user's tokens stop at serve (docs/serve.md §2, docs/erasure.md §6).
@Suite("Tokens of erased users", .serialized)
struct ErasedTokenTests {
    @Test("serve: an erased user's tokens get 401 account_erased at once, without the id; one issued after is a new user's")
    func erasedUsersTokensAreRefused() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let user = ErasureTraces.user
        let phone = try ServeKeys.issue(box, key: key.privateKey, user: user)
        let tablet = try ServeKeys.issue(key: key.privateKey, user: user, issuedIn: -5)
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        let url = serve.base + "/v1/positions"
        #expect(try ServeCurl.post(url, token: tablet, body: ServeRows.body(user: user, page: 2)).status == 200)

        let erased = try ServeCurl.run(["-X", "DELETE", "-H", "Authorization: Bearer \(phone)", serve.base + "/v1/users/me"])
        #expect(erased.status == 200, "\(erased)")
        // The answer names what was erased: the id's hash and the erasure's stamp.
        #expect(erased.json?["userHash"] as? String == ErasureRule.userHash(user), "\(erased)")
        #expect(erased.json?["updatedAt"] is String && erased.json?["node"] is String)

        // The tablet's next request, read or write, is refused with the distinct code; nothing is stored.
        let read = try ServeCurl.get(url, token: tablet)
        #expect(read.status == 401 && read.errorCode == "account_erased", "\(read)")
        #expect(read.headers["www-authenticate"]?.contains("invalid_token") == true)
        #expect(!read.body.contains(user), "the id is in the answer: \(read.body)")
        let write = try ServeCurl.post(url, token: tablet, body: ServeRows.body(user: user, page: 4))
        #expect(write.status == 401 && write.errorCode == "account_erased", "\(write)")
        #expect(try StoredPositions.row(db, user) == nil, "a refused token's row was stored")
        // The erasing token itself is done too; an edge token is never an erased user's.
        #expect(try ServeCurl.get(url, token: phone).errorCode == "account_erased")
        #expect(try ServeCurl.get(url, token: edge).status == 200)

        // A token issued after the erasure is a new user's: accepted, and its row stored.
        let fresh = try ServeKeys.issue(key: key.privateKey, user: user, issuedIn: 2)
        let wrote = try ServeCurl.post(url, token: fresh, body: ServeRows.body(user: user, page: 1))
        #expect((wrote.json?["results"] as? [[String: Any]])?.first?["outcome"] as? String == "applied", "\(wrote)")

        // An erasure by another process (`catalog user erase` beside serve) is in force within the watch's second.
        let bob = try ServeKeys.issue(key: key.privateKey, user: "bob", issuedIn: -5)
        #expect(try ServeCurl.get(url, token: bob).status == 200)
        #expect(try box.run(["user", "erase", "bob"], db: db).status == 0)
        let refused = Waits.waitFor(10, every: 100_000) { (try? ServeCurl.get(url, token: bob))?.errorCode == "account_erased" }
        #expect(refused != nil, "the CLI's erasure never reached serve")

        let run = serve.stop()
        #expect(run.status == 0)
        // The refused requests' access-log lines name no user; no log line says why with the id.
        let refusedLines = ServeProcess.accessLog(run.stderr, "GET", "/v1/positions").filter { $0["status"] as? Int == 401 }
        #expect(refusedLines.count >= 3 && refusedLines.allSatisfy { $0["user"] is NSNull }, "\(refusedLines)")
        #expect(!run.stderr.split(separator: "\n").contains { $0.contains("erased") && $0.contains(user) })
    }

    @Test("serve refuses a user token issued before its collection horizon: an erasure collected by gc cannot bring it back")
    func tokensOlderThanTheHorizonAreRefused() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let user = "carol"
        let old = try ServeKeys.issue(key: key.privateKey, user: user, issuedIn: -30)
        #expect(try box.run(["position", "set", "--user", user, "--page", "2"], db: db).status == 0)
        #expect(try box.run(["user", "erase", user], db: db).status == 0)
        // Collected at once: no erasure record is left to say the token's account is gone.
        let gc = try box.run(["gc", "--horizon", "0s", "--json"], db: db)
        #expect(gc.status == 0 && gc.stdout.contains(#""erasures":1"#), "\(gc)")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let url = serve.base + "/v1/positions"
        let refused = try ServeCurl.get(url, token: old)
        #expect(refused.status == 401 && refused.errorCode == "invalid_token", "\(refused)")
        #expect(refused.body.contains("collection horizon"), "\(refused)")
        #expect(try ServeCurl.post(url, token: old, body: ServeRows.body(user: user, page: 5)).status == 401)
        #expect(try StoredPositions.row(db, user) == nil, "the erased user came back")
        let fresh = try ServeKeys.issue(key: key.privateKey, user: user, issuedIn: 2)
        #expect(try ServeCurl.get(url, token: fresh).status == 200)
        let run = serve.stop()
        #expect(run.status == 0)
    }

    @Test("the rule: refused when erased at or after iat (same second included) or without iat; edge tokens never")
    func erasedAccountsRule() {
        let erased = ErasedAccounts()
        let hash = ErasureRule.userHash("ann")
        erased.merge(ErasureTimes(erasedAt: [hash: 10_500], through: 7, horizonMilliseconds: 0))
        #expect(erased.readThrough == 7)
        func id(_ user: String, iat: Int64?, edge: Bool = false) -> TokenIdentity {
            TokenIdentity(user: user, isEdge: edge, expires: 99_999, issuedAt: iat)
        }
        #expect(erased.refusal(id("ann", iat: 9))?.cause == .accountErased)
        #expect(erased.refusal(id("ann", iat: 10))?.cause == .accountErased, "issued in the erasure's second")
        #expect(erased.refusal(id("ann", iat: 11)) == nil, "issued after: a new user")
        #expect(erased.refusal(id("ann", iat: nil))?.cause == .accountErased, "no iat: cannot be after")
        #expect(erased.refusal(id("bob", iat: 9)) == nil)
        #expect(erased.refusal(id("ann", iat: 9, edge: true)) == nil)
        // The horizon moves past the erasure: its entry goes, and tokens issued before the horizon are refused.
        erased.merge(ErasureTimes(erasedAt: [:], through: 8, horizonMilliseconds: 20_000))
        #expect(erased.count == 0)
        #expect(erased.refusal(id("ann", iat: 19))?.cause == .beforeHorizon)
        #expect(erased.refusal(id("bob", iat: 19))?.cause == .beforeHorizon)
        #expect(erased.refusal(id("bob", iat: 20)) == nil)
        #expect(erased.refusal(id("bob", iat: nil)) == nil, "no iat: not checked against the horizon")
    }
}
