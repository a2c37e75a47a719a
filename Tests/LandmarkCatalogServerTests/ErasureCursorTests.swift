import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// A user token's cursor after that user's erasure was pushed (docs/protocol.md §3): it stays where the
/// erasure put it, never `…:0`, which a node takes as a server that forgot and pushes everything again.
@Suite("A user token's cursor after its erasure", .serialized)
struct ErasureCursorTests {
    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    static func cursor(_ db: String) throws -> [String: Any] {
        guard case .text(let text)? = try dumpRows(db, sql: "SELECT cursor FROM sync_sources").first?.first else { return [:] }
        return try json(text)
    }

    @Test("after a node pushes its user's erasure with the user's token, the cursor is not ':0' and nothing is pushed again")
    func cursorAfterErasure() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("serve.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: server, keys: [key.publicKey])
        let tokenFile = box.path("u.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "cy").write(toFile: tokenFile, atomically: true, encoding: .utf8)
        chmod(tokenFile, 0o600)
        let sync = ["sync", "--json", "catalog+http://127.0.0.1:\(serve.port)/v1", "--token-file", tokenFile]
        let node = try box.seededDatabase("node.sqlite")
        #expect(try box.run(["position", "set", "--user", "cy", "--page", "2"], db: node).status == 0)
        #expect(try box.run(sync, db: node).status == 0)
        #expect(try box.run(["user", "erase", "cy"], db: node).status == 0)
        let pushed = try box.run(sync, db: node)
        try #require(pushed.status == 0, "\(pushed)")
        let sent = (try Self.json(pushed.stdout)["sources"] as? [[String: Any]])?.first?["pushed"] as? [String: Any]
        #expect(sent?["sent"] as? Int == 1, "\(pushed.stdout)")
        let cursor = try Self.cursor(node)
        let positions = try #require(cursor["positions"] as? String, "\(cursor)")
        #expect(!positions.hasSuffix(":0"), "\(cursor)")
        #expect(cursor["pushThrough"] as? String != "0", "\(cursor)")
        // The next sync sends nothing (the token may be refused by then: the account was erased).
        let again = try box.run(sync, db: node)
        if again.status == 0 {
            let second = (try Self.json(again.stdout)["sources"] as? [[String: Any]])?.first?["pushed"]
            #expect(second is NSNull || (second as? [String: Any])?["sent"] as? Int == 0, "\(again.stdout)")
        } else {
            #expect(again.stderr.contains("erased"), "\(again)")
        }
    }
}
