import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// `catalog serve` (docs/protocol.md, docs/serve.md) tested as a device would use it: the built binary on
/// 127.0.0.1, real curl, keys from openssl, tokens from `catalog token issue` and from PyJWT.
@Suite("serve", .serialized)
struct ServeTests {
    @Test("partial replication: each user token reads and writes only its own row; an edge token reads all")
    func partialReplication() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        let url = serve.base + "/v1/positions"
        // bob writes his row; ann's row came from the seeded database.
        let wrote = try ServeCurl.post(url, token: bob, body: ServeRows.body(user: "bob", page: 2))
        #expect(wrote.status == 200, "\(wrote)")
        #expect((wrote.json?["results"] as? [[String: Any]])?.first?["outcome"] as? String == "applied")
        let annRows = ServeRows.positions(try ServeCurl.get(url, token: ann))
        #expect(annRows.map { $0["user"] as? String } == ["ann"])
        let bobRows = ServeRows.positions(try ServeCurl.get(url, token: bob))
        #expect(bobRows.map { $0["user"] as? String } == ["bob"])
        #expect(bobRows.first?["page"] as? Int == 2)
        let all = ServeRows.positions(try ServeCurl.get(url, token: edge))
        #expect(Set(all.compactMap { $0["user"] as? String }) == ["ann", "bob"])
        // ann writing bob's row (alone, or after her own) is 403 and writes nothing.
        let before = try dumpPositions(db)
        let foreign = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "bob", page: 5))
        #expect(foreign.status == 403)
        #expect(foreign.errorCode == "insufficient_scope")
        #expect(foreign.errorField == "positions[0].user")
        let two =
            ServeRows.body(user: "ann", page: 3).replacingOccurrences(of: "]}", with: "") + ","
            + ServeRows.body(user: "bob", page: 4).replacingOccurrences(of: #"{"positions":["#, with: "")
        let mixed = try ServeCurl.post(url, token: ann, body: two)
        #expect(mixed.status == 403)
        #expect(mixed.errorField == "positions[1].user")
        #expect(try dumpPositions(db) == before)
        // A user token may not write landmarks.
        let landmarks = try ServeCurl.post(url, token: ann, body: #"{"landmarks":[{"id":1}],"positions":[]}"#)
        #expect(landmarks.status == 403)
        #expect(try dumpPositions(db) == before)
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
        // The access log names users and never a token.
        #expect(run.stderr.contains(#""user":"bob""#))
        for token in [ann, bob, edge] { #expect(!run.stderr.contains(token)) }
    }

    @Test("bad tokens from PyJWT and others: 401 with WWW-Authenticate, nothing written, the server still up")
    func badTokens() throws {
        try #require(ServeKeys.pyjwtAvailable, "PyJWT is missing: scripts/setup installs python3-jwt")
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let other = try ServeKeys.make(box, "other")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let tokens = try ServeKeys.pyjwt(privateKey: key.privateKey, publicKey: key.publicKey, otherKey: other.privateKey, alg: "EdDSA", user: "ann")
        let url = serve.base + "/v1/positions"
        let good = try ServeCurl.post(url, token: tokens["good"], body: ServeRows.body(user: "ann", page: 2))
        #expect(good.status == 200, "PyJWT's good EdDSA token: \(good)")
        let before = try dumpPositions(db)
        let bad = ["expired", "nbf-future", "other-key", "alg-none", "hs256-public-key", "changed-payload", "no-sub", "no-exp", "garbled-header"]
        for name in bad {
            let token = try #require(tokens[name], "\(name)")
            let read = try ServeCurl.get(url, token: token)
            #expect(read.status == 401, "\(name): \(read)")
            #expect(read.headers["www-authenticate"] == #"Bearer realm="catalog", error="invalid_token""#, "\(name)")
            #expect(read.errorCode == "invalid_token", "\(name)")
            let write = try ServeCurl.post(url, token: token, body: ServeRows.body(user: "ann", page: 4))
            #expect(write.status == 401, "\(name): \(write)")
        }
        // A token signed by catalog token issue with the other key; a token issued for another algorithm.
        let foreign = try ServeKeys.issue(box, key: other.privateKey, user: "ann")
        #expect(try ServeCurl.get(url, token: foreign).status == 401)
        let rsa = try ServeKeys.make(box, "rsa", kind: "rsa")
        #expect(try ServeCurl.get(url, token: try ServeKeys.issue(box, key: rsa.privateKey, user: "ann")).status == 401)
        // No header at all: 401 without an error attribute (RFC 6750 §3.1); a malformed one: invalid_token.
        let none = try ServeCurl.get(url)
        #expect(none.status == 401)
        #expect(none.headers["www-authenticate"] == #"Bearer realm="catalog""#)
        for header in ["Authorization: Basic YW5uOnB3", "Authorization: Bearer", "Authorization: Bearer a.b", "Authorization: Bearer ...."] {
            let r = try ServeCurl.get(url, headers: [header])
            #expect(r.status == 401, "\(header): \(r)")
        }
        #expect(try dumpPositions(db) == before)
        #expect(try ServeCurl.get(serve.base + "/v1/healthz").status == 200)
        let run = serve.stop()
        #expect(run.status == 0)
        for (_, token) in tokens { #expect(!run.stderr.contains(token)) }
    }

    /// Regression: a validly signed token with `exp` 2^63−1 crashed serve.
    ///
    /// It trapped on `exp + leeway` (an arithmetic overflow), so any holder of a signing key could stop it.
    /// Each time claim is now a NumericDate within 1970…9999 or refused, and `iat` is checked
    /// (docs/protocol.md §2).
    @Test("time claims at their edges (exp 2^63−1, 1e300, −1; nbf near 2^63; iat a year ahead or a string): 401, serve up")
    func timeClaimEdges() throws {
        try #require(ServeKeys.pyjwtAvailable, "PyJWT is missing: scripts/setup installs python3-jwt")
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let tokens = try ServeKeys.pyjwt(privateKey: key.privateKey, publicKey: key.publicKey, otherKey: key.privateKey, alg: "EdDSA", user: "ann")
        let url = serve.base + "/v1/positions"
        let good = try #require(tokens["good"])
        let refused: [(name: String, reason: String)] = [
            ("exp-int64-max", "the token's exp is out of range: a NumericDate is from 0 to 253402300799 (the year 9999)"),
            ("exp-1e300", "the token's exp is out of range: a NumericDate is from 0 to 253402300799 (the year 9999)"),
            ("exp-negative", "the token's exp is out of range: a NumericDate is from 0 to 253402300799 (the year 9999)"),
            ("nbf-int64-max", "the token's nbf is out of range: a NumericDate is from 0 to 253402300799 (the year 9999)"),
            ("iat-next-year", "the token was issued in the future (iat)"),
            ("iat-string", "the token's iat is not a NumericDate (a JSON number of seconds)"),
        ]
        let before = try dumpPositions(db)
        for (name, reason) in refused {
            let token = try #require(tokens[name], "\(name)")
            // Twice: the second answer comes from the verified-token cache where the claims were sound.
            for method in ["GET", "GET again", "POST"] {
                let r =
                    method == "POST"
                    ? try ServeCurl.post(url, token: token, body: ServeRows.body(user: "ann", page: 9)) : try ServeCurl.get(url, token: token)
                #expect(r.status == 401, "\(name) \(method): \(r)")
                #expect(r.headers["www-authenticate"] == #"Bearer realm="catalog", error="invalid_token""#, "\(name)")
                let error = r.json?["error"] as? [String: Any]
                #expect(error?["status"] as? Int == 401, "\(name): \(r.body)")
                #expect(error?["code"] as? String == "invalid_token", "\(name): \(r.body)")
                #expect(error?["message"] as? String == reason, "\(name): \(r.body)")
            }
            // Still serving: the next request is answered.
            let next = try ServeCurl.get(url, token: good)
            #expect(next.status == 200, "after \(name): \(next)")
        }
        #expect(try dumpPositions(db) == before)
        // Fractions are cut, and an iat within the 60 s leeway is taken.
        for name in ["good-fractions", "iat-within-leeway"] {
            let token: String = try #require(tokens[name], "\(name)")
            let r = try ServeCurl.get(url, token: token)
            #expect(r.status == 200, "\(name): \(r)")
        }
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
        #expect(!run.stderr.contains("Fatal error") && !run.stderr.contains("overflow"), "\(run.stderr.suffix(2000))")
        for (_, token) in tokens { #expect(!run.stderr.contains(token)) }
    }

    @Test("ES256 and RS256: keys from openssl, tokens from token issue and PyJWT; the key's algorithm only")
    func algorithms() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        for (kind, alg) in [("ec", "ES256"), ("rsa", "RS256")] {
            let key = try ServeKeys.make(box, kind, kind: kind)
            let other = try ServeKeys.make(box, kind + "2", kind: kind)
            let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
            let url = serve.base + "/v1/positions"
            let issued = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
            #expect(try ServeCurl.get(url, token: issued).status == 200, "\(alg) from token issue")
            if ServeKeys.pyjwtAvailable {
                let tokens = try ServeKeys.pyjwt(
                    privateKey: key.privateKey, publicKey: key.publicKey, otherKey: other.privateKey, alg: alg, user: "ann")
                #expect(try ServeCurl.get(url, token: tokens["good"]).status == 200, "\(alg) from PyJWT")
                for name in ["other-key", "alg-none", "hs256-public-key", "changed-payload", "expired"] {
                    #expect(try ServeCurl.get(url, token: tokens[name]).status == 401, "\(alg) \(name)")
                }
            }
            #expect(serve.stop().status == 0)
        }
    }

    @Test("two keys at once (rotation): tokens of either verify")
    func keyRotation() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let old = try ServeKeys.make(box, "old")
        let new = try ServeKeys.make(box, "new", kind: "ec")
        let serve = try ServeProcess(box, db: db, keys: [old.publicKey, new.publicKey])
        let url = serve.base + "/v1/positions"
        #expect(try ServeCurl.get(url, token: try ServeKeys.issue(box, key: old.privateKey, user: "ann")).status == 200)
        #expect(try ServeCurl.get(url, token: try ServeKeys.issue(box, key: new.privateKey, user: "ann")).status == 200)
        #expect(serve.stop().status == 0)
    }

    @Test("bad input: a clear 4xx naming the field, nothing written, the server serves on")
    func badInput() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--max-rows", "10"])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let url = serve.base + "/v1/positions"
        let before = try dumpPositions(db)
        let cases: [(String, Int, String, String?)] = [
            (#"{"positions":["#, 400, "malformed_json", nil),
            ("not json", 400, "malformed_json", nil),
            (
                #"{"positions":[{"user":"ann","page":-1,"updatedAt":"2026-01-01T00:00:00.000Z","node":"p"}]}"#, 400, "invalid_field",
                "positions[0].page"
            ),
            (#"{"positions":[{"user":"ann","page":1,"node":"p"}]}"#, 400, "invalid_field", "positions[0].updatedAt"),
            (#"{"positions":[{"user":"ann","page":1,"updatedAt":"yesterday","node":"p"}]}"#, 400, "invalid_field", "positions[0].updatedAt"),
            (#"{"positions":{}}"#, 400, "invalid_field", "positions"),
            (#"[]"#, 400, "malformed_json", nil),
        ]
        for (body, status, code, field) in cases {
            let r = try ServeCurl.post(url, token: ann, body: body)
            #expect(r.status == status, "\(body): \(r)")
            #expect(r.errorCode == code, "\(body): \(r)")
            #expect(r.errorField == field, "\(body): \(r)")
        }
        let row = #"{"user":"ann","page":1,"updatedAt":"2026-01-01T00:00:00.000Z","node":"p"}"#
        let many = try ServeCurl.post(url, token: ann, body: #"{"positions":["# + Array(repeating: row, count: 11).joined(separator: ",") + "]}")
        #expect(many.status == 413)
        #expect(many.errorCode == "too_many_rows")
        let big = try box.write(#"{"positions":[],"pad":""# + String(repeating: "x", count: 1 << 21) + #""}"#, to: "big.json")
        let huge = try ServeCurl.post(url, token: ann, body: "@" + big)
        #expect(huge.status == 413)
        #expect(huge.errorCode == "body_too_large")
        let text = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 2), contentType: "text/plain")
        #expect(text.status == 415)
        let cursor = try ServeCurl.get(url + "?after=nonsense", token: ann)
        #expect(cursor.status == 400)
        #expect(cursor.errorField == "after")
        let wait = try ServeCurl.get(url + "?wait=soon", token: ann)
        #expect(wait.errorField == "wait")
        #expect(try ServeCurl.get(serve.base + "/v2/positions", token: ann).status == 404)
        let delete = try ServeCurl.run(["-X", "DELETE", "-H", "Authorization: Bearer \(ann)", url])
        #expect(delete.status == 405)
        #expect(delete.headers["allow"] == "GET, POST")
        #expect(try dumpPositions(db) == before)
        #expect(try ServeCurl.get(url, token: ann).status == 200)
        #expect(serve.stop().status == 0)
    }

    @Test("long-poll: a POST by device A wakes device B's waiting GET; another process's commit wakes it too")
    func longPollWake() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let url = serve.base + "/v1/positions"
        let first = try ServeCurl.get(url, token: ann)
        let cursor = try #require(first.json?["cursor"] as? String)
        // Nothing new: the wait ends empty after its time, with the same cursor.
        let start = Date()
        let idle = try ServeCurl.get(url + "?after=\(cursor)&wait=1", token: ann)
        #expect(Date().timeIntervalSince(start) >= 0.9)
        #expect(ServeRows.positions(idle).isEmpty)
        #expect(idle.json?["cursor"] as? String == cursor)
        // B waits; bob's POST does not wake it; A's POST does, at once.
        let waiting = DispatchGroup()
        nonisolated(unsafe) var woken: CurlResult?
        nonisolated(unsafe) var wokenAfter = 0.0
        waiting.enter()
        DispatchQueue.global().async {
            let t = Date()
            woken = try? ServeCurl.get(url + "?after=\(cursor)&wait=30", token: ann)
            wokenAfter = Date().timeIntervalSince(t)
            waiting.leave()
        }
        try waitForLongPolls(serve, count: 1)
        #expect(try ServeCurl.post(url, token: bob, body: ServeRows.body(user: "bob", page: 1)).status == 200)
        usleep(300_000)
        #expect(waiting.wait(timeout: .now()) == .timedOut, "bob's write must not wake ann's poll")
        let posted = Date()
        #expect(try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 3, node: "phone-a")).status == 200)
        #expect(waiting.wait(timeout: .now() + 10) == .success)
        #expect(Date().timeIntervalSince(posted) < 2, "woken within \(Date().timeIntervalSince(posted)) s")
        #expect(wokenAfter < 20)
        let rows = ServeRows.positions(try #require(woken))
        #expect(rows.first?["page"] as? Int == 3)
        let next = try #require(woken?.json?["cursor"] as? String)
        // Another process (the CLI) commits ann's row: the poll wakes through PRAGMA data_version.
        waiting.enter()
        DispatchQueue.global().async {
            woken = try? ServeCurl.get(url + "?after=\(next)&wait=30", token: ann)
            waiting.leave()
        }
        try waitForLongPolls(serve, count: 1)
        let set = try box.run(["position", "set", "--user", "ann", "--page", "1"], db: db)
        #expect(set.status == 0, "\(set)")
        #expect(waiting.wait(timeout: .now() + 10) == .success)
        #expect(ServeRows.positions(try #require(woken)).first?["page"] as? Int == 1)
        #expect(serve.stop().status == 0)
    }

    @Test("a POST retried 3 times is stored once and answered alike; a stale and a quarantined row say so")
    func retries() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--max-drift", "1m"])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let url = serve.base + "/v1/positions"
        let body = ServeRows.body(user: "ann", page: 2, node: "phone-a")
        var answers: [String] = []
        var rows: [[[SQLValue]]] = []
        for _ in 0..<3 {
            let r = try ServeCurl.post(url, token: ann, body: body)
            #expect(r.status == 200)
            answers.append(r.body)
            rows.append(try dumpPositions(db))
        }
        #expect(answers.allSatisfy { $0 == answers[0] }, "\(answers)")
        #expect(answers[0].contains(#""outcome":"applied""#))
        #expect(rows[1] == rows[0] && rows[2] == rows[0], "a retry rewrote the row (its seq moved)")
        let stale = try ServeCurl.post(url, token: ann, body: ServeRows.body(user: "ann", page: 5, wall: 1_000_000_000_000, node: "phone-a"))
        #expect(stale.body.contains(#""outcome":"stale""#), "\(stale)")
        let ahead = try ServeCurl.post(
            url, token: ann, body: ServeRows.body(user: "ann", page: 6, wall: Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000))
        #expect(ahead.body.contains(#""outcome":"quarantined""#), "\(ahead)")
        #expect(try dumpPositions(db) == rows[0])
        #expect(serve.stop().status == 0)
    }

    @Test("SIGTERM drains: a waiting long-poll is answered, exit 0; status shows the running serve")
    func drainAndStatus() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], metrics: true)
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let status = try box.run(["status"], db: db)
        #expect(status.stdout.contains("serving:     127.0.0.1:\(serve.port) since"), "\(status.stdout)")
        // Regression (issue 27's breaker): a second serve on the same database overwrote the marker and
        // deleted it when it exited, so status no longer showed the first, still serving.
        let second = try ServeProcess(box, db: db, keys: [key.publicKey])
        #expect(second.log.contains("another serve (pid \(serve.pid)) serves this database"), "\(second.log)")
        #expect(second.stop().status == 0)
        let still = try box.run(["status"], db: db)
        #expect(still.stdout.contains("serving:     127.0.0.1:\(serve.port) since"), "\(still.stdout)")
        let url = serve.base + "/v1/positions"
        let cursor = try #require(try ServeCurl.get(url, token: ann).json?["cursor"] as? String)
        let waiting = DispatchGroup()
        nonisolated(unsafe) var answer: CurlResult?
        waiting.enter()
        DispatchQueue.global().async {
            answer = try? ServeCurl.get(url + "?after=\(cursor)&wait=60", token: ann)
            waiting.leave()
        }
        try waitForLongPolls(serve, count: 1)
        let metrics = try ServeCurl.get("http://127.0.0.1:\(try #require(serve.metricsPort))/metrics")
        #expect(metrics.body.contains("catalog_serve_long_polls 1"), "\(metrics.body)")
        #expect(metrics.body.contains(#"catalog_serve_requests_total{route="/v1/positions",status="200"} 1"#), "\(metrics.body)")
        let started = Date()
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(waiting.wait(timeout: .now() + 5) == .success)
        #expect(answer?.status == 200)
        let after = try box.run(["status"], db: db)
        #expect(!after.stdout.contains("serving:"), "\(after.stdout)")
    }

    @Test("SIGTERM with idle keep-alive connections, a long-poll and a stalled POST body: exit 0 at once, nothing written")
    func drainDoesNotWaitForStalledBodies() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], metrics: true)
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let auth = "Authorization: Bearer \(ann)\r\n"
        var idle: [RawSocket] = []
        for _ in 0..<4 {
            let s = try #require(RawSocket(port: serve.port))
            s.send("GET /v1/positions HTTP/1.1\r\nHost: t\r\n\(auth)\r\n")
            #expect(s.readResponse(within: 5).hasPrefix("HTTP/1.1 200"))
            idle.append(s)
        }
        let cursor = try #require(try ServeCurl.get(serve.base + "/v1/positions", token: ann).json?["cursor"] as? String)
        let poll = try #require(RawSocket(port: serve.port))
        poll.send("GET /v1/positions?after=\(cursor)&wait=60 HTTP/1.1\r\nHost: t\r\n\(auth)\r\n")
        try waitForLongPolls(serve, count: 1)
        let before = try dumpPositions(db)
        let upload = try #require(RawSocket(port: serve.port))
        upload.send(
            "POST /v1/positions HTTP/1.1\r\nHost: t\r\n\(auth)Content-Type: application/json\r\nContent-Length: 400\r\n\r\n"
                + String(ServeRows.body(user: "ann", page: 4).prefix(60)))
        usleep(300_000)  // the headers are in; the body never completes
        let run = serve.stop()
        #expect(run.status == 0, "\(run)")
        #expect(run.seconds < 3, "the drain took \(run.seconds) s")
        #expect(poll.readToClose(within: 5).text.hasPrefix("HTTP/1.1 200"))
        #expect(upload.readToClose(within: 5).closed)
        for s in idle { #expect(s.readToClose(within: 5).closed) }
        #expect(try dumpPositions(db) == before)
        #expect(run.stderr.contains(#""route":"/v1/positions","status":0"#), "the cut upload is logged")
    }

    /// Regression (a new user's run): `serve --db PATH` with a mistyped PATH created an empty database and
    /// served it, so every device saw no landmarks.
    @Test("serve over a database that does not exist: 66 with a hint to import first, nothing created")
    func missingDatabase() throws {
        let box = try Sandbox()
        let key = try ServeKeys.make(box, "k")
        let db = box.path("nothere/catalog.sqlite")
        let run = try box.run(["serve", "--listen", "127.0.0.1:0", "--auth-key", key.publicKey], db: db, limit: 20)
        #expect(run.status == 66, "\(run)")
        #expect(run.stderr.contains("no catalog database, \(db)") && run.stderr.contains("import"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: box.path("nothere")), "nothing created")
    }

    /// Regression (a new user's run): a port in use printed libmicrohttpd's own "Failed to bind to port 0"
    /// line above catalog's error.
    @Test("a port in use: one error naming the address, exit 69, none of libmicrohttpd's text")
    func portInUse() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let other = try box.seededDatabase("other.sqlite")
        let run = try box.run(["serve", "--listen", "127.0.0.1:\(serve.port)", "--auth-key", key.publicKey], db: other, limit: 20)
        #expect(run.status == 69, "\(run)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.first == "catalog: error: cannot listen on 127.0.0.1:\(serve.port) (Address already in use)", "\(run.stderr)")
        #expect(lines.count == 2 && lines[1].hasPrefix("hint: "), "\(run.stderr)")
        #expect(!run.stderr.contains("Failed to bind"))
        #expect(serve.stop().status == 0)
    }

    @Test("serve's usage shows --auth-key as required; without it: 64, saying it is missing")
    func authKeyRequired() throws {
        let help = runCLI(["serve", "--help"])
        #expect(help.stdout.contains("serve --listen ADDR:PORT --auth-key FILE [--public-landmarks]"), "\(help.stdout)")
        let run = runCLI(["serve", "--listen", "127.0.0.1:0"], db: Support.temporaryDatabase())
        #expect(run.status == 64 && run.stderr.hasPrefix("catalog: error: missing --auth-key FILE\n"), "\(run.stderr)")
    }

    /// Waits until the server's metrics (or, without a metrics listener, a short pause) show `count` long-polls.
    func waitForLongPolls(_ serve: ServeProcess, count: Int) throws {
        guard let port = serve.metricsPort else {
            usleep(500_000)
            return
        }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if try ServeCurl.get("http://127.0.0.1:\(port)/metrics").body.contains("catalog_serve_long_polls \(count)\n") { return }
            usleep(20_000)
        }
        Issue.record("no \(count) long-polls after 10 s")
    }
}
