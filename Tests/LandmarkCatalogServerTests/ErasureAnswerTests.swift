import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogServer

/// What serve answers about an erasure, and what it keeps afterwards (docs/protocol.md §6a, docs/erasure.md §3).
@Suite("Erasure answers through serve", .serialized)
struct ErasureAnswerTests {
    static let noRow = "no row of this user was stored in this database: check the id; the erasure is recorded all the same"

    /// `DELETE` at `url` with `token`.
    static func delete(_ url: String, token: String) throws -> CurlResult {
        try ServeCurl.run(["-X", "DELETE", "-H", "Authorization: Bearer \(token)", url])
    }

    /// Whether `db` holds an erasure record of `user`.
    static func isErased(_ db: String, _ user: String) throws -> Bool {
        try UserErasure(try CatalogStore.open(path: db, access: .read)).isErased(user)
    }

    @Test("serve: /v1/users/me with an edge token is a 400 naming /v1/users/ID; a user named me erases itself there")
    func edgeTokenCannotEraseMe() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        for path in ["/v1/users/me", "/v1/users/%6De"] {
            let refused = try Self.delete(serve.base + path, token: edge)
            #expect(refused.status == 400 && refused.errorCode == "invalid_parameter", "\(path): \(refused)")
            #expect(refused.body.contains("DELETE /v1/users/ID"), "\(refused)")
        }
        #expect(try !Self.isErased(db, "node-2"), "the edge node's own id was erased")
        // A user whose id is literally `me` erases itself with its own token at /me.
        let me = try ServeKeys.issue(box, key: key.privateKey, user: "me")
        let erased = try Self.delete(serve.base + "/v1/users/me", token: me)
        #expect(erased.status == 200 && erased.json?["userHash"] as? String == ErasureRule.userHash("me"), "\(erased)")
        #expect(try Self.isErased(db, "me"))
        #expect(serve.stop().status == 0)
    }

    @Test("serve: an erasure with no row warns as the CLI does; erasing again says when the first was; a row's does not")
    func deleteAnswerWarns() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        #expect(try ServeCurl.post(serve.base + "/v1/positions", token: ann, body: ServeRows.body(user: "ann", page: 2)).status == 200)

        let typo = try Self.delete(serve.base + "/v1/users/bob-77", token: edge)
        #expect(typo.status == 200 && typo.json?["removedRow"] as? Bool == false, "\(typo)")
        #expect(typo.json?["warning"] as? String == Self.noRow, "\(typo)")
        let first = try #require(typo.json?["updatedAt"] as? String)
        let again = try Self.delete(serve.base + "/v1/users/bob-77", token: edge)
        #expect(again.status == 200, "\(again)")
        #expect(
            again.json?["warning"] as? String
                == "this user was already erased in this database at \(first); the erasure is recorded again with a new stamp", "\(again)")
        let withRow = try Self.delete(serve.base + "/v1/users/ann", token: edge)
        #expect(withRow.status == 200 && withRow.json?["removedRow"] as? Bool == true, "\(withRow)")
        #expect(withRow.json?.keys.contains("warning") == false, "\(withRow)")
        #expect(serve.stop().status == 0)
    }

    @Test("serve: an erased user's token gets account_erased even when a revocation of the user covers it too")
    func erasureWinsOverRevocation() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let url = serve.base + "/v1/positions"
        let bob = try ServeKeys.issue(key: key.privateKey, user: "bob-7", issuedIn: -5)
        let carol = try ServeKeys.issue(key: key.privateKey, user: "carol", issuedIn: -5)
        #expect(try ServeCurl.get(url, token: bob).status == 200)
        #expect(try Self.delete(serve.base + "/v1/users/me", token: bob).status == 200)
        #expect(try ServeCurl.get(url, token: bob).errorCode == "account_erased")
        // Revoke bob's tokens and carol's; carol's refusal shows the revocations are in force.
        #expect(try box.run(["token", "revoke", "--user", "bob-7"], db: db).status == 0)
        #expect(try box.run(["token", "revoke", "--user", "carol"], db: db).status == 0)
        let revoked = Waits.waitFor(10, every: 100_000) { (try? ServeCurl.get(url, token: carol))?.body.contains("revoked") == true }
        #expect(revoked != nil, "the revocation never reached serve")
        let told = try ServeCurl.get(url, token: bob)
        #expect(told.status == 401 && told.errorCode == "account_erased", "\(told)")
        #expect(serve.stop().status == 0)
    }

    @Test("serve's operator page forgets an erased user's requests, its own erasure or another process's")
    func operatorPageForgetsErasedUsers() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], admin: true)
        let admin = "http://127.0.0.1:\(try #require(serve.adminPort))"
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        let url = serve.base + "/v1/positions"
        for user in ["ann", "bob", "carol"] {
            let token = try ServeKeys.issue(box, key: key.privateKey, user: user)
            #expect(try ServeCurl.get(url, token: token, headers: ["User-Agent: Phone/1 (\(user))"]).status == 200)
            #expect(try ServeCurl.post(url, token: token, body: ServeRows.body(user: user, page: 2)).status == 200)
        }
        func recorded() throws -> Int? { try ServeCurl.get(admin + "/api/summary").json?["usersRecorded"] as? Int }
        #expect(try recorded() == 3)
        let before = try #require(try ServeCurl.get(admin + "/api/users/ann").json)
        #expect(before["lastPull"] is [String: Any] && before["erasedAt"] is NSNull, "\(before)")

        // serve's own DELETE: forgotten before the answer.
        let erased = try Self.delete(serve.base + "/v1/users/ann", token: edge)
        #expect(erased.status == 200, "\(erased)")
        let page = try ServeCurl.get(admin + "/api/users/ann")
        let after = try #require(page.json)
        #expect(after["lastPull"] is NSNull && after["lastPush"] is NSNull && after["row"] is NSNull, "\(after)")
        #expect(after["erasedAt"] as? String == erased.json?["updatedAt"] as? String, "\(after)")
        #expect(!page.body.contains("Phone/1"), "\(page.body)")
        #expect((after["why"] as? [String])?.first?.hasPrefix("ann was erased at ") == true, "\(after)")
        #expect(try recorded() == 2)

        // An erasure written by another process (as a merge or a pushed one is): forgotten within the watch's second.
        #expect(try box.run(["user", "erase", "bob"], db: db).status == 0)
        let gone = Waits.waitFor(10, every: 100_000) { (try? recorded()) == 1 }
        #expect(gone != nil, "the operator page still holds bob")
        #expect(try ServeCurl.get(admin + "/api/users/bob").json?["lastPull"] is NSNull)
        #expect(try ServeCurl.get(admin + "/api/users/carol").json?["lastPull"] is [String: Any], "carol was forgotten too")
        #expect(serve.stop().status == 0)
    }
}

extension ErasureAnswerTests {
    @Test("the rule: an erasure held wins over the horizon for a token issued before both")
    func erasureWinsOverHorizon() {
        let erased = ErasedAccounts()
        erased.merge(ErasureTimes(erasedAt: [ErasureRule.userHash("cy"): 30_000], through: 3, horizonMilliseconds: 20_000))
        let old = TokenIdentity(user: "cy", isEdge: false, expires: 99_999, issuedAt: 19)
        #expect(erased.refusal(old)?.cause == .accountErased)
        let other = TokenIdentity(user: "dee", isEdge: false, expires: 99_999, issuedAt: 19)
        #expect(erased.refusal(other)?.cause == .beforeHorizon)
    }
}
