import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// The slowloris limits (docs/serve.md §3) against the real server over 127.0.0.1, with raw sockets: a stalled
/// header, a stalled body, and one connection over --max-connections.
extension ServeTests {
    @Test("--header-timeout 1s: half a header line and a stall is cut within 5 s; another connection gets 200 meanwhile")
    func headerTimeout() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--header-timeout", "1s"])
        let slow = try #require(RawSocket(port: serve.port))
        let start = Date()
        #expect(slow.send("GET /v1/posi"))
        #expect(try ServeCurl.get(serve.base + "/v1/healthz").status == 200)
        let cut = slow.readToClose(within: 5)
        let after = Date().timeIntervalSince(start)
        #expect(cut.closed, "still open after \(after) s")
        #expect(cut.text == "")  // MHD cannot answer headers it has not parsed: closed, no 408 (docs/serve.md §3)
        #expect(after >= 0.9 && after < 5, "closed after \(after) s")
        #expect(try ServeCurl.get(serve.base + "/v1/healthz").status == 200)
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
    }

    @Test("--body-timeout 1s: a POST whose body stalls is cut within 5 s and nothing is written")
    func bodyTimeout() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--body-timeout", "1s"])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let before = try dumpPositions(db)
        let body = ServeRows.body(user: "ann", page: 4)
        let slow = try #require(RawSocket(port: serve.port))
        let start = Date()
        #expect(
            slow.send(
                "POST /v1/positions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n" + String(body.dropLast(10))))
        let cut = slow.readToClose(within: 5)
        let after = Date().timeIntervalSince(start)
        #expect(cut.closed, "still open after \(after) s")
        #expect(after >= 0.9 && after < 5, "closed after \(after) s")
        #expect(!cut.text.contains("200 OK"), "\(cut.text)")
        #expect(try dumpPositions(db) == before)
        // The same body sent whole is taken.
        #expect(try ServeCurl.post(serve.base + "/v1/positions", token: ann, body: body).status == 200)
        #expect(try dumpPositions(db) != before)
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
        #expect(run.stderr.contains(#""route":"/v1/positions","status":0"#), "the cut POST is logged as aborted")
    }

    @Test("--max-connections 3: a fourth connection is not served while three are open, then is")
    func maxConnections() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--max-connections", "3"])
        var held: [RawSocket] = []
        for _ in 0..<3 {
            let s = try #require(RawSocket(port: serve.port))
            #expect(s.send("GET /v1/healthz HTTP/1.1\r\nHost: t\r\n\r\n"))
            #expect(s.readResponse(within: 5).hasPrefix("HTTP/1.1 200"))  // accepted and kept alive
            held.append(s)
        }
        // The kernel completes the handshake, but MHD at its limit stops accepting: the fourth waits in the
        // listen backlog, unanswered, for as long as the three stay open.
        let extra = try #require(RawSocket(port: serve.port))
        #expect(extra.send("GET /v1/healthz HTTP/1.1\r\nHost: t\r\n\r\n"))
        let waiting = extra.readToClose(within: 2)
        #expect(waiting.text == "" && !waiting.closed, "\(waiting)")
        #expect(try ServeCurl.get(serve.base + "/v1/healthz", limit: 2).status == 0)  // curl gives up: no answer
        held = []  // closes the three
        #expect(extra.readResponse(within: 5).hasPrefix("HTTP/1.1 200"))
        #expect(try ServeCurl.get(serve.base + "/v1/healthz", limit: 5).status == 200)
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
    }
}
