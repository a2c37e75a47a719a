import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// One user never starves another, every refusal is in the protocol's JSON shape, and a user's cursor moves
/// with that user's row alone (docs/serve.md §3, docs/protocol.md §1, §3), against the real server.
extension ServeTests {
    @Test("300 long-polls of one user: 64 held, 236 refused 429 with Retry-After; another user's GET and POST answered")
    func requestsPerUserAreBounded() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], metrics: true)
        let mallory = try ServeKeys.issue(box, key: key.privateKey, user: "mallory")
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let url = serve.base + "/v1/positions"
        let cursor = try #require(try ServeCurl.get(url, token: mallory).json?["cursor"] as? String)
        var sockets: [RawSocket] = []
        for _ in 0..<300 {
            let s = try #require(RawSocket(port: serve.port))
            #expect(s.send("GET /v1/positions?after=\(cursor)&wait=55 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(mallory)\r\n\r\n"))
            sockets.append(s)
        }
        // Every one of the 300 is either held or refused: the access log has the refusals, the metrics the
        // long-polls held.
        try waitForLongPolls(serve, count: 64)
        let deadline = Date().addingTimeInterval(60)
        while serve.accessLog("GET", "/v1/positions").filter({ $0["status"] as? Int == 429 }).count < 236, Date() < deadline {
            usleep(50_000)
        }
        var refused = 0
        var held = 0
        for s in sockets {
            let answer = s.readResponse(within: 0.2)
            if answer.isEmpty {
                held += 1
                continue
            }
            refused += 1
            if refused == 1 {
                #expect(answer.hasPrefix("HTTP/1.1 429"), "\(answer)")
                #expect(answer.lowercased().contains("retry-after: 1\r\n"), "\(answer)")
                #expect(answer.contains(#"{"error":{"status":429,"code":"too_many_requests","#), "\(answer)")
            }
            #expect(answer.hasPrefix("HTTP/1.1 429"), "\(answer.prefix(200))")
        }
        #expect(held == 64 && refused == 236, "\(held) held, \(refused) refused")
        // Another user is answered at once meanwhile, read and write.
        var start = Date()
        let read = try ServeCurl.get(url, token: ann, limit: 20)
        #expect(read.status == 200 && ServeRows.positions(read).count == 1, "\(read)")
        #expect(Date().timeIntervalSince(start) < 5, "ann's GET took \(Date().timeIntervalSince(start)) s")
        start = Date()
        let write = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 6, node: "phone-a"))
        #expect(write.status == 200 && write.body.contains(#""outcome":"applied""#), "\(write)")
        #expect(Date().timeIntervalSince(start) < 5, "ann's POST took \(Date().timeIntervalSince(start)) s")
        // mallory's next request is refused too, until one of the 64 ends.
        let more = try ServeCurl.get(url, token: mallory)
        #expect(more.status == 429 && more.errorCode == "too_many_requests" && more.headers["retry-after"] == "1", "\(more)")
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
    }

    /// A breaker held --max-connections with one token's idle kept-alive connections (one request each, then
    /// silence): another user went unanswered.
    @Test("--max-connections-per-user 2: a user's third and fourth kept-alive connections are closed once answered; others are not")
    func idleConnectionsPerUserAreBounded() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--max-connections-per-user", "2"])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        func request(_ token: String) -> String {
            "GET /v1/positions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n"
        }
        var kept: [RawSocket] = []
        for i in 0..<4 {
            let socket = try #require(RawSocket(port: serve.port))
            #expect(socket.send(request(ann)))
            let answer = socket.readToClose(within: 1.5)
            #expect(answer.text.hasPrefix("HTTP/1.1 200"), "\(i): \(answer.text)")
            // The first two stay open between requests; past the cap, each is answered, then closed.
            #expect(answer.closed == (i >= 2), "\(i): \(answer.text)")
            #expect(answer.text.lowercased().contains("connection: close") == (i >= 2), "\(i): \(answer.text)")
            if !answer.closed { kept.append(socket) }
        }
        let other = try #require(RawSocket(port: serve.port))
        #expect(other.send(request(bob)))
        #expect(other.readToClose(within: 1.5).closed == false, "another user's connection is kept")
        // One of ann's closes: a new one of hers is kept again.
        kept.removeFirst()
        // The server learns of the close from its event loop: a few tries, each a new connection.
        var keptAgain: RawSocket?
        for _ in 0..<10 where keptAgain == nil {
            guard let socket = RawSocket(port: serve.port), socket.send(request(ann)) else { continue }
            if !socket.readToClose(within: 1).closed { keptAgain = socket }
        }
        #expect(keptAgain != nil, "ann's count went down when one of her connections closed")
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
    }

    @Test("--max-connections-per-user 2: a slot comes back when its request ends, a 429 included")
    func userSlotsAreGivenBack() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(
            box, db: db, keys: [key.publicKey], extra: ["--max-connections-per-user", "2", "--post-burst", "1"], metrics: true)
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let url = serve.base + "/v1/positions"
        let cursor = try #require(try ServeCurl.get(url, token: ann).json?["cursor"] as? String)
        let polls = (0..<2).compactMap { _ in RawSocket(port: serve.port) }
        for p in polls {
            #expect(p.send("GET /v1/positions?after=\(cursor)&wait=2 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\n\r\n"))
        }
        try waitForLongPolls(serve, count: 2)
        #expect(try ServeCurl.get(url, token: ann).status == 429)
        // The two waits end (empty answers): their slots are free again.
        for p in polls { #expect(p.readResponse(within: 20).hasPrefix("HTTP/1.1 200")) }
        #expect(try ServeCurl.get(url, token: ann).status == 200)
        // A POST over the rate is refused, and its slot let go too: two GETs after it still fit.
        #expect(try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 2)).status == 200)
        #expect(try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 3)).errorCode == "rate_limited")
        let held = try #require(RawSocket(port: serve.port))
        let cursorNow = try #require(try ServeCurl.get(url, token: ann).json?["cursor"] as? String)
        #expect(held.send("GET /v1/positions?after=\(cursorNow)&wait=30 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\n\r\n"))
        try waitForLongPolls(serve, count: 1)
        #expect(try ServeCurl.get(url, token: ann).status == 200)
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
    }

    @Test("--post-burst 3 --post-rate 1: a 4th POST at once is 429 rate_limited, Retry-After 1; another user's is applied")
    func postsPerUserAreRateLimited() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--post-burst", "3", "--post-rate", "1"])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let url = serve.base + "/v1/positions"
        for page in 2...4 {
            let r = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: page, node: "phone-a"))
            #expect(r.status == 200, "\(r)")
        }
        let before = try dumpPositions(db)
        let over = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 5, node: "phone-a"))
        #expect(over.status == 429 && over.errorCode == "rate_limited", "\(over)")
        #expect((over.json?["error"] as? [String: Any])?["status"] as? Int == 429, "\(over)")
        let wait = try #require(over.headers["retry-after"].flatMap { Int($0) }, "\(over)")
        #expect(wait == 1, "\(over)")
        #expect(try dumpPositions(db) == before, "nothing of a refused POST is written")
        let other = try ServeCurl.post(url, token: bob, body: ServeRows.body(user: "bob", page: 3, node: "phone-b"))
        #expect(other.status == 200 && other.body.contains(#""outcome":"applied""#), "\(other)")
        // GETs are not counted against the POST allowance.
        #expect(try ServeCurl.get(url, token: ann).status == 200)
        // After the Retry-After, a token has come back.
        usleep(UInt32(wait) * 1_000_000 + 100_000)
        let again = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 5, node: "phone-a"))
        #expect(again.status == 200 && again.body.contains(#""outcome":"applied""#), "\(again)")
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
        #expect(run.stderr.contains(#""route":"/v1/positions","status":429"#))
    }

    @Test("a 40 KiB header: JSON 431 headers_too_large; 30 KiB passes; the connection's next request is served")
    func largeHeadersAreJSON() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let big = try #require(RawSocket(port: serve.port))
        #expect(
            big.send(
                "GET /v1/positions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\nX-Pad: \(String(repeating: "a", count: 40 * 1024))\r\n\r\n")
        )
        let answer = big.readToClose(within: 10)
        #expect(answer.text.hasPrefix("HTTP/1.1 431"), "\(answer.text.prefix(300))")
        #expect(answer.text.contains("Content-Type: application/json; charset=utf-8"), "\(answer.text.prefix(300))")
        let body = answer.text.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], "\(body)")
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["status"] as? Int == 431 && error["code"] as? String == "headers_too_large", "\(body)")
        // Under the bound: answered as usual, and the connection goes on.
        let fine = try #require(RawSocket(port: serve.port))
        #expect(
            fine.send(
                "GET /v1/positions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\nX-Pad: \(String(repeating: "a", count: 30 * 1024))\r\n\r\n")
        )
        #expect(fine.readResponse(within: 10).hasPrefix("HTTP/1.1 200"))
        #expect(fine.send("GET /v1/healthz HTTP/1.1\r\nHost: t\r\n\r\n"))
        #expect(fine.readResponse(within: 10).hasPrefix("HTTP/1.1 200"))
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
    }

    @Test("a user's cursor moves with its own row only: bob's 5 writes leave ann's cursor and long-poll as they were")
    func cursorsSayNothingOfOtherUsers() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], metrics: true)
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-1", extra: ["--scope", "edge"])
        let url = serve.base + "/v1/positions"
        let posted = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 2, node: "phone-a"))
        let postCursor = try #require(posted.json?["cursor"] as? String, "\(posted)")
        let first = try ServeCurl.get(url, token: ann)
        let cursor = try #require(first.json?["cursor"] as? String)
        #expect(cursor == postCursor, "the POST's cursor is the user's row's, as a GET's")
        let edgeBefore = try #require(try ServeCurl.get(url, token: edge).json?["cursor"] as? String)
        let bobWrites = { (base: Int) in
            for i in 0..<5 {
                let r = try ServeCurl.post(url, token: bob, body: ServeRows.body(user: "bob", page: base + i, node: "phone-b"))
                #expect(r.status == 200, "\(r)")
                // bob's own cursor moves with bob's row.
                #expect(r.json?["cursor"] as? String != cursor)
            }
        }
        try bobWrites(10)
        // ann's cursor, from the start or from where she was, is where it was.
        let again = try ServeCurl.get(url, token: ann)
        #expect(again.json?["cursor"] as? String == cursor && ServeRows.positions(again).count == 1, "\(again)")
        // A POST of ann's that changes nothing (an older row: stale) answers ann's cursor, not the database's.
        let stale = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 1, wall: 1000, node: "phone-a"))
        #expect(stale.body.contains(#""outcome":"stale""#) && stale.json?["cursor"] as? String == cursor, "\(stale)")
        let nothing = try ServeCurl.get(url + "?after=\(cursor)", token: ann)
        #expect(nothing.json?["cursor"] as? String == cursor && ServeRows.positions(nothing).isEmpty, "\(nothing)")
        // An edge token's cursor is the database's: it moved.
        let edgeAfter = try #require(try ServeCurl.get(url, token: edge).json?["cursor"] as? String)
        #expect(ServerCursor.sequence(edgeAfter) ?? 0 >= (ServerCursor.sequence(edgeBefore) ?? 0) + 5, "\(edgeBefore) → \(edgeAfter)")
        // A cursor past ann's row is answered at once from the start, whether or not the database has reached
        // it: nothing about bob's writes can be probed with it.
        let base = ServerCursor.database(cursor)
        let seq = try #require(ServerCursor.sequence(cursor))
        for probe in [seq + 1, seq + 1_000_000] {
            let t = Date()
            let r = try ServeCurl.get(url + "?after=\(base):\(probe)&wait=30", token: ann)
            #expect(Date().timeIntervalSince(t) < 10, "answered after \(Date().timeIntervalSince(t)) s")
            #expect(r.json?["cursor"] as? String == cursor && ServeRows.positions(r).count == 1, "\(r)")
        }
        // Nor with a landmarks cursor: one past the newest landmark is answered from the start however far
        // bob's writes moved the database (a breaker found the sequence by bisection, and by If-None-Match).
        let landmarks = try ServeCurl.get(serve.base + "/v1/landmarks", token: ann)
        let landmarksCursor = try #require(landmarks.json?["cursor"] as? String)
        let newest = try #require(ServerCursor.sequence(landmarksCursor))
        for probe in [newest + 1, newest + 3] {
            let r = try ServeCurl.get(serve.base + "/v1/landmarks?after=\(base):\(probe)", token: ann)
            #expect(r.json?["cursor"] as? String == landmarksCursor && (r.json?["landmarks"] as? [Any])?.isEmpty == false, "\(r)")
        }
        // ann's long-poll stays open through bob's writes, and answers ann's next row.
        let poll = try #require(RawSocket(port: serve.port))
        #expect(poll.send("GET /v1/positions?after=\(cursor)&wait=30 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\n\r\n"))
        try waitForLongPolls(serve, count: 1)
        try bobWrites(20)
        #expect(poll.readResponse(within: 0.5).isEmpty, "bob's writes answered ann's long-poll")
        let annNext = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 7, node: "phone-a"))
        let annCursor = try #require(annNext.json?["cursor"] as? String)
        let woken = poll.readResponse(within: 10)
        let body = woken.components(separatedBy: "\r\n\r\n").dropFirst().joined()
        let page = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], "\(woken)")
        let rows = page["positions"] as? [[String: Any]] ?? []
        #expect(rows.count == 1 && rows.first?["user"] as? String == "ann" && rows.first?["page"] as? Int == 7, "\(body)")
        #expect(page["cursor"] as? String == annCursor, "\(body)")
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
    }
}
