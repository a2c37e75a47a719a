import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// Erasures pushed to serve (docs/protocol.md §6, §9; docs/erasure.md §6): a node that syncs through a serve
/// sends its erasure records in its POST, and serve applies them by the one erasure rule.
@Suite("Erasures pushed through serve", .serialized)
struct ErasurePushTests {
    /// A POST body of erasure records: `{"positions":[],"erasures":[…]}`, each record `(userHash, updatedAt)`.
    static func erasures(_ records: [(hash: String, at: String)], positions: String = "") -> String {
        let objects = records.map { #"{"userHash":"\#($0.hash)","updatedAt":"\#($0.at)","counter":0,"node":"node-e"}"# }
        return #"{"positions":[\#(positions)],"erasures":[\#(objects.joined(separator: ","))]}"#
    }

    /// The stamp text of now plus `offset` ms.
    static func at(_ offset: Int64 = 0) -> String { Timestamp.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000) + offset) }

    static func rows(_ db: String, _ user: String) throws -> Int {
        guard case .integer(let n)? = try dumpRows(db, sql: "SELECT count(*) FROM positions WHERE user_id = '\(user)'").first?.first else {
            return -1
        }
        return Int(n)
    }

    static func erasureRecords(_ db: String) throws -> Int {
        guard case .integer(let n)? = try dumpRows(db, sql: "SELECT count(*) FROM user_erasures").first?.first else { return -1 }
        return Int(n)
    }

    static func outcomes(_ r: CurlResult, _ key: String = "results") -> [String] {
        ((r.json?[key] as? [[String: Any]]) ?? []).map { $0["outcome"] as? String ?? "?" }
    }

    @Test("a user token pushes only its own erasure: another user's is 403 naming erasures[i], a malformed one 400; nothing is written")
    func scopeAndShape() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let user = ErasureTraces.user
        let mine = try ServeKeys.issue(box, key: key.privateKey, user: user)
        let cy = try ServeKeys.issue(box, key: key.privateKey, user: "cy")
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        let url = serve.base + "/v1/positions"
        let old = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        #expect(Self.outcomes(try ServeCurl.post(url, token: mine, body: ServeRows.body(user: user, page: 2, wall: old))) == ["applied"])
        let userHash = ErasureRule.userHash(user)
        let cyHash = ErasureRule.userHash("cy")

        // cy's token: its own row and erasure with the other user's erasure. Refused whole: cy's row is not
        // written either.
        let cyRow = #"{"user":"cy","page":3,"landmarkId":1006,"updatedAt":"\#(Self.at())","counter":0,"node":"phone-c","deleted":false}"#
        let foreign = try ServeCurl.post(
            url, token: cy, body: Self.erasures([(cyHash, Self.at(-1)), (userHash, Self.at())], positions: cyRow))
        #expect(foreign.status == 403 && foreign.errorCode == "insufficient_scope", "\(foreign)")
        #expect(foreign.errorField == "erasures[1].userHash", "\(foreign)")
        #expect(try Self.rows(db, user) == 1 && Self.rows(db, "cy") == 0 && Self.erasureRecords(db) == 0)

        // Malformed records: 400 naming the field, nothing written, whatever the token.
        let cases: [(String, String)] = [
            (#"{"positions":[],"erasures":[{"userHash":"XYZ","updatedAt":"\#(Self.at())","node":"n"}]}"#, "erasures[0].userHash"),
            (Self.erasures([(cyHash, Self.at()), (userHash, "yesterday")]), "erasures[1].updatedAt"),
            (#"{"positions":[],"erasures":[{"userHash":"\#(userHash)","updatedAt":"\#(Self.at())"}]}"#, "erasures[0].node"),
            (#"{"positions":[],"erasures":{}}"#, "erasures"),
        ]
        for (body, field) in cases {
            let bad = try ServeCurl.post(url, token: edge, body: body)
            #expect(bad.status == 400 && bad.errorCode == "invalid_field" && bad.errorField == field, "\(body): \(bad)")
        }
        // Rows and records together are bounded by --max-rows (1,000).
        let manyBody = try box.write(Self.erasures((0..<1001).map { (ErasureRule.userHash("u\($0)"), Self.at()) }), to: "many.json")
        let many = try ServeCurl.run([
            "-H", "Authorization: Bearer \(edge)", "-H", "Content-Type: application/json", "--data-binary", "@" + manyBody, url,
        ])
        #expect(many.status == 413 && many.errorCode == "too_many_rows" && many.errorField == "erasures", "\(many)")
        #expect(try Self.rows(db, user) == 1 && Self.erasureRecords(db) == 0)

        // Its own erasure: applied; the row is gone, and no file of the server holds the id.
        let own = try ServeCurl.post(url, token: mine, body: Self.erasures([(userHash, Self.at())]))
        #expect(own.status == 200 && Self.outcomes(own) == [] && Self.outcomes(own, "erasureResults") == ["applied"], "\(own)")
        #expect(try Self.rows(db, user) == 0 && Self.erasureRecords(db) == 1)
        #expect(ErasureTraces.traces(db) == [0, 0, 0], "the server's files still hold the id")
        // The device's old row, pushed again: refused as erased.
        let late = try ServeCurl.post(url, token: mine, body: ServeRows.body(user: user, page: 4, wall: old + 1))
        #expect(Self.outcomes(late) == ["erased"], "\(late)")
        // An edge token may send any user's; an older erasure than the stored one is stale.
        let byEdge = try ServeCurl.post(url, token: edge, body: Self.erasures([(cyHash, Self.at()), (userHash, Self.at(-120_000))]))
        #expect(byEdge.status == 200 && Self.outcomes(byEdge, "erasureResults") == ["applied", "stale"], "\(byEdge)")
        #expect(try Self.erasureRecords(db) == 2)
        #expect(serve.stop().status == 0)
    }

    @Test("a node with a user token pushes that user's erasure and no other")
    func userTokenNode() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: server, keys: [key.publicKey])
        let user = ErasureTraces.user
        let tokenFile = box.path("user.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: user).write(toFile: tokenFile, atomically: true, encoding: .utf8)
        chmod(tokenFile, 0o600)
        let source = "catalog+http://127.0.0.1:\(serve.port)/v1"
        let node = try box.seededDatabase("node.sqlite")
        #expect(try box.run(["position", "set", "--user", user, "--page", "2"], db: node).status == 0)
        #expect(try box.run(["sync", "--quiet", source, "--token-file", tokenFile], db: node).status == 0)
        #expect(try Self.rows(server, user) == 1)
        #expect(try box.run(["user", "erase", "ann"], db: node).status == 0)
        #expect(try box.run(["user", "erase", user], db: node).status == 0)
        let synced = try box.run(["sync", "--json", source, "--token-file", tokenFile], db: node)
        #expect(synced.status == 0, "\(synced)")
        #expect(synced.stdout.contains(#""pushed":{"erasures":1,"expired":0,"quarantined":0,"sent":1,"written":1}"#), "\(synced.stdout)")
        // ann's erasure is not this token's to send: not pushed, and ann's row stays on the server.
        #expect(try Self.rows(server, user) == 0 && Self.erasureRecords(server) == 1 && Self.rows(server, "ann") == 1)
        #expect(ErasureTraces.traces(server) == [0, 0, 0])
        // The node's own files keep no id either: its cursor records the reader by the user's hash.
        #expect(ErasureTraces.traces(node) == [0, 0, 0], "the node's files still hold the id")
        #expect(serve.stop().status == 0)
    }

    @Test("a page of 1,000 rows with erasure records numbered among them is pushed in two POSTs, none over --max-rows")
    func fullPageWithErasures() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: server, keys: [key.publicKey])
        let tokenFile = box.path("edge.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"]).write(
            toFile: tokenFile, atomically: true, encoding: .utf8)
        chmod(tokenFile, 0o600)
        // 600 rows, two of their users erased, 600 more: the first 1,000 rows by change sequence hold the
        // two erasure records in their span.
        let node = try box.seededDatabase("node.sqlite")
        #expect(
            try box.run(["sync", "--quiet", try writeTemporary(positionsSnapshot(600, at: CatalogTestSupport.at(0), prefix: "a"))], db: node).status
                == 0)
        for user in ["a0", "a1"] { #expect(try box.run(["user", "erase", user], db: node).status == 0) }
        #expect(
            try box.run(["sync", "--quiet", try writeTemporary(positionsSnapshot(600, at: CatalogTestSupport.at(0), prefix: "b"))], db: node).status
                == 0)
        let synced = try box.run(["sync", "--json", "catalog+http://127.0.0.1:\(serve.port)/v1", "--token-file", tokenFile], db: node)
        #expect(synced.status == 0, "\(synced)")
        #expect(synced.stdout.contains(#""sent":1201"#), "\(synced.stdout)")
        let posts = serve.accessLog("POST", "/v1/positions").map { $0["status"] as? Int ?? 0 }
        #expect(posts == [200, 200, 200], "\(posts)")
        #expect(try Self.erasureRecords(server) == 2 && Self.rows(server, "a2") == 1 && Self.rows(server, "b599") == 1)
        #expect(serve.stop().status == 0)
    }

    @Test("a serve that answers no erasureResults ignored the records: one warning, and they are not sent again")
    func serverThatIgnoresErasures() throws {
        let box = try Sandbox()
        // A serve from before erasures were taken: it answers each POST's rows and skips `erasures`.
        let script = """
            import http.server, json
            class H(http.server.BaseHTTPRequestHandler):
                def answer(self, doc):
                    body = json.dumps(doc).encode()
                    self.send_response(200); self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
                def do_GET(self):
                    self.answer({"format": "landmark-catalog-snapshot", "version": 1, "landmarks": [], "positions": [],
                                 "cursor": "old:1", "more": False})
                def do_POST(self):
                    sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    print("POST", len(sent.get("positions", [])), len(sent.get("erasures", [])), flush=True)
                    self.answer({"results": [{"user": r["user"], "outcome": "applied"} for r in sent.get("positions", [])],
                                 "cursor": "old:1"})
                def log_message(self, *a): pass
            s = http.server.HTTPServer(("127.0.0.1", 0), H)
            print(s.server_address[1], flush=True)
            s.serve_forever()
            """
        let fake = try box.start(["-c", script], binary: URL(fileURLWithPath: "/usr/bin/python3"))
        defer { fake.stop() }
        var lines: [String] = []
        _ = Waits.waitFor(10) {
            lines = String(decoding: (try? Data(contentsOf: fake.stdout)) ?? Data(), as: UTF8.self).split(separator: "\n").map(String.init)
            return !lines.isEmpty
        }
        let port = try #require(lines.first)
        let tokenFile = box.path("t.jwt")
        try "a.b.c".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        chmod(tokenFile, 0o600)
        let node = try box.seededDatabase("node.sqlite")
        #expect(try box.run(["user", "erase", ErasureTraces.user], db: node).status == 0)
        let sync = ["sync", "catalog+http://127.0.0.1:\(port)/v1", "--token-file", tokenFile]
        let first = try box.run(sync, db: node)
        #expect(first.status == 0, "\(first)")
        #expect(first.stderr.contains("the server ignored 1 erasure record pushed"), "\(first.stderr)")
        let second = try box.run(sync, db: node)
        #expect(second.status == 0 && !second.stderr.contains("ignored"), "\(second)")
        let posts = String(decoding: (try? Data(contentsOf: fake.stdout)) ?? Data(), as: UTF8.self).split(separator: "\n").dropFirst()
        #expect(posts == ["POST 1 1"], "\(posts)")
    }
}

/// A node's erasure through a serve over a hub (docs/erasure.md §6): to the serve, the hub, another serve,
/// another node, and refused rows from the devices.
@Suite(
    "Erasures pushed through serve to the hub", .serialized,
    .enabled(if: PostgresServer.isAvailable, "needs PostgreSQL server binaries"))
struct ErasurePushHubTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.running() }

    @Test("catalog user erase on a node behind serve: serve, the hub, the other serve and node lose the user; the device's old row is erased")
    func nodeErasureReachesTheFleet() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let box = try Sandbox()
        let user = ErasureTraces.user
        let key = try ServeKeys.make(box, "k")
        let oneDB = try box.seededDatabase("one.sqlite")
        let twoDB = box.path("two.sqlite")
        let one = try ServeProcess(box, db: oneDB, keys: [key.publicKey], extra: ["--hub", uri])
        let two = try ServeProcess(box, db: twoDB, keys: [key.publicKey], extra: ["--hub", uri])
        let device = try ServeKeys.issue(box, key: key.privateKey, user: user)
        let edgeFile = box.path("edge.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"]).write(
            toFile: edgeFile, atomically: true, encoding: .utf8)
        chmod(edgeFile, 0o600)
        let node = box.path("node.sqlite")
        let other = box.path("other.sqlite")
        let viaOne = ["catalog+http://127.0.0.1:\(one.port)/v1", "--token-file", edgeFile]
        let viaTwo = ["catalog+http://127.0.0.1:\(two.port)/v1", "--token-file", edgeFile]

        // The user's device writes on serve two; the hub carries it to serve one, and both nodes pull it.
        let old = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        let wrote = try ServeCurl.post(two.base + "/v1/positions", token: device, body: ServeRows.body(user: user, page: 2, wall: old))
        #expect(ErasurePushTests.outcomes(wrote) == ["applied"], "\(wrote)")
        let hasUser = "SELECT count(*) FROM positions WHERE user_id = '\(user)'"
        #expect(HubSupport.wait { Waits.page(oneDB, user) == 2 }, "serve one never got the row")
        #expect(try box.run(["sync", "--quiet"] + viaOne, db: node).status == 0)
        #expect(try box.run(["sync", "--quiet"] + viaTwo, db: other).status == 0)
        #expect(Waits.page(node, user) == 2 && Waits.page(other, user) == 2)

        // The node erases the user and syncs through serve one: the erasure is pushed.
        #expect(try box.run(["user", "erase", user], db: node).status == 0)
        let synced = try box.run(["sync", "--json"] + viaOne, db: node)
        #expect(synced.status == 0, "\(synced)")
        #expect(synced.stdout.contains(#""pushed":{"erasures":1,"expired":0,"quarantined":0,"sent":1,"written":1}"#), "\(synced.stdout)")
        #expect(try ErasurePushTests.rows(oneDB, user) == 0)
        #expect(ErasureTraces.traces(oneDB) == [0, 0, 0], "serve one's files still hold the id")
        // On to the hub and serve two (its replica follows the hub), and the other node through serve two.
        #expect(try HubSupport.wait { try HubSupport.scalar(server, name, hasUser) == "0" }, "the hub still holds the user")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_erasures") == "1")
        #expect(HubSupport.wait { (try? ErasurePushTests.rows(twoDB, user)) == 0 }, "serve two still holds the user")
        #expect(HubSupport.wait { ErasureTraces.traces(twoDB) == [0, 0, 0] }, "serve two's files still hold the id")
        #expect(try box.run(["sync", "--quiet"] + viaTwo, db: other).status == 0)
        #expect(try ErasurePushTests.rows(other, user) == 0)
        // The device's old token is the erased account's: 401 account_erased once serve's watch read the pushed
        // erasure (within its second). Signed in again, the device pushes its old row to either serve: refused
        // as erased, stored nowhere.
        let refused = Waits.waitFor(10, every: 100_000) {
            (try? ServeCurl.get(one.base + "/v1/positions", token: device))?.errorCode == "account_erased"
        }
        #expect(refused != nil, "the old token was not refused as the erased account's")
        let renewed = try ServeKeys.issue(key: key.privateKey, user: user, issuedIn: 2)
        for serve in [one, two] {
            let late = try ServeCurl.post(serve.base + "/v1/positions", token: renewed, body: ServeRows.body(user: user, page: 5, wall: old + 1))
            #expect(ErasurePushTests.outcomes(late) == ["erased"], "\(late)")
        }
        #expect(try ErasurePushTests.rows(oneDB, user) == 0 && ErasurePushTests.rows(twoDB, user) == 0)
        // Pushed once: the next sync sends nothing again.
        let idle = try box.run(["sync", "--json"] + viaOne, db: node)
        #expect(idle.status == 0 && idle.stdout.contains(#""pushed":null"#), "\(idle.stdout)")
        #expect(one.stop().status == 0)
        #expect(two.stop().status == 0)
    }
}
