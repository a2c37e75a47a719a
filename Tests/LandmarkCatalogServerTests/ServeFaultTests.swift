import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 27's "must show" against the real server: a server killed with -9 mid-POST, 1,000 concurrent
/// connections, and real nginx in front (contrib/nginx/serve.conf).
extension ServeTests {
    /// The rows of `positions` with their change sequence numbers, and the database's change sequence.
    static func stored(_ db: String) throws -> (rows: [[SQLValue]], sequence: [[SQLValue]]) {
        (
            try dumpRows(db, sql: "SELECT user_id, page, updated_ms, counter, node, seq FROM positions ORDER BY user_id"),
            try dumpRows(db, sql: "SELECT max(seq) FROM positions")
        )
    }

    @Test("serve killed with -9 after a POST's commit, before its answer: restarted, the retried POST is answered alike 3 times, the row stored once")
    func killedBetweenCommitAndAnswer() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let marker = box.path("committed")
        let held = try ServeProcess(
            box, db: db, keys: [key.publicKey], binary: Support.harnessBinary,
            environment: ["CATALOG_TEST_SERVE_HOLD_AFTER_POST_COMMIT": marker])
        let dora = try ServeKeys.issue(box, key: key.privateKey, user: "dora")
        let body = ServeRows.body(user: "dora", page: 3, node: "phone-a")
        let before = try Self.stored(db)
        // The device's POST: serve commits, the hook holds the answer; then serve is killed.
        let url = held.base + "/v1/positions"
        let device = try box.start(
            [
                "-s", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(dora)", "-H",
                "Content-Type: application/json", "--data-binary", body, url,
            ],
            binary: URL(fileURLWithPath: "/usr/bin/curl"))
        #expect(Waits.waitFor(15) { FileManager.default.fileExists(atPath: marker) } != nil, "the hook never ran")
        held.kill9()
        let lost = device.finish(limit: 20)
        #expect(lost.stdout == "000", "the device got no answer: \(lost)")  // it will retry
        let committed = try Self.stored(db)
        #expect(committed.rows.count == before.rows.count + 1, "\(committed.rows)")
        // Restarted (the product binary), the device retries 3 times: each answer is the first one's, the row
        // is the one committed before the kill, and the change sequence does not move.
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        var answers: [CurlResult] = []
        for _ in 0..<3 { answers.append(try ServeCurl.post(serve.base + "/v1/positions", token: dora, body: body)) }
        #expect(answers.allSatisfy { $0.status == 200 && $0.body == answers[0].body }, "\(answers)")
        #expect(answers[0].body.contains(#""outcome":"applied""#), "\(answers[0])")
        #expect(try Self.stored(db) == committed)
        let read = try ServeCurl.get(serve.base + "/v1/positions", token: dora)
        #expect(ServeRows.positions(read).map { $0["page"] as? Int } == [3], "\(read)")
        #expect(serve.stop().status == 0)
    }

    @Test("serve killed with -9 while a POST's body is half sent: restarted, nothing of it is written, the database is whole")
    func killedMidBody() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let first = try ServeProcess(box, db: db, keys: [key.publicKey])
        let dora = try ServeKeys.issue(box, key: key.privateKey, user: "dora")
        let before = try Self.stored(db)
        let body = Array(ServeRows.body(user: "dora", page: 4).utf8)
        let socket = try #require(RawSocket(port: first.port))
        let head =
            "POST /v1/positions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(dora)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.count)\r\n\r\n"
        #expect(socket.send(head + String(decoding: body.prefix(body.count / 2), as: UTF8.self)))
        // Another client is answered meanwhile: the half body holds one connection only.
        #expect(try ServeCurl.get(first.base + "/v1/healthz", limit: 5).status == 200)
        first.kill9()
        #expect(try Self.stored(db) == before)
        #expect(try dumpRows(db, sql: "PRAGMA integrity_check") == [[.text("ok")]])
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        #expect(ServeRows.positions(try ServeCurl.get(serve.base + "/v1/positions", token: dora)).isEmpty)
        #expect(try ServeCurl.post(serve.base + "/v1/positions", token: dora, body: ServeRows.body(user: "dora", page: 4)).status == 200)
        #expect(try Self.stored(db).rows.count == before.rows.count + 1)
        #expect(serve.stop().status == 0)
    }

    @Test("1,000 concurrent connections, each a request: every one answered 200, another client served meanwhile, nothing written")
    func thousandConnections() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let before = try Self.stored(db)
        // All 1,000 open at once: connected first, then each sends its GET, then every answer is read.
        var sockets: [RawSocket] = []
        for _ in 0..<1000 { sockets.append(try #require(RawSocket(port: serve.port), "connection \(sockets.count + 1) refused")) }
        for s in sockets {
            #expect(s.send("GET /v1/positions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\n\r\n"))
        }
        // Meanwhile another client, on a connection of its own, is answered.
        #expect(try ServeCurl.get(serve.base + "/v1/landmarks?limit=1", token: ann, limit: 10).status == 200)
        var answered = 0
        for s in sockets where s.readResponse(within: 20).hasPrefix("HTTP/1.1 200") { answered += 1 }
        #expect(answered == 1000)
        sockets = []
        #expect(try Self.stored(db) == before)
        // The server is still up, and counts 1,000 answers in its access log.
        #expect(try ServeCurl.get(serve.base + "/v1/healthz", limit: 5).status == 200)
        #expect(serve.log.components(separatedBy: #""route":"/v1/positions","status":200"#).count - 1 == 1000)
        #expect(serve.stop().status == 0)
    }

    @Test(
        "through real nginx (contrib/nginx/serve.conf): reads, 401 with WWW-Authenticate, a long-poll woken by a POST, 413 over 1 MB",
        .enabled(if: NginxServer.available, "nginx is not installed"))
    func throughNginx() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], metrics: true)
        let nginx = try NginxServer(servePort: serve.port)
        let base = "http://127.0.0.1:\(nginx.port)"
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let landmarks = try ServeCurl.get(base + "/v1/landmarks", token: ann)
        #expect(landmarks.status == 200 && (landmarks.json?["landmarks"] as? [Any])?.count == 16, "\(landmarks)")
        let etag = try #require(landmarks.headers["etag"])
        #expect(try ServeCurl.get(base + "/v1/landmarks", token: ann, headers: ["If-None-Match: \(etag)"]).status == 304)
        let refused = try ServeCurl.get(base + "/v1/positions")
        #expect(refused.status == 401 && refused.headers["www-authenticate"]?.hasPrefix("Bearer") == true, "\(refused)")
        // bob waits through nginx (no buffering on /v1/positions); ann's POST through nginx does not wake him,
        // bob's own from another device does.
        let start = try ServeCurl.get(base + "/v1/positions", token: bob)
        let cursor = try #require(start.json?["cursor"] as? String)
        let waiting = try box.start(
            ["-s", "--max-time", "30", "-H", "Authorization: Bearer \(bob)", base + "/v1/positions?after=\(cursor)&wait=25"],
            binary: URL(fileURLWithPath: "/usr/bin/curl"))
        try waitForLongPolls(serve, count: 1)
        #expect(try ServeCurl.post(base + "/v1/positions", token: ann, body: ServeRows.body(user: "ann", page: 1)).status == 200)
        let posted = Date()
        #expect(try ServeCurl.post(base + "/v1/positions", token: bob, body: ServeRows.body(user: "bob", page: 2)).status == 200)
        let woken = waiting.finish(limit: 30)
        #expect(Date().timeIntervalSince(posted) < 5, "the long-poll was not woken through nginx")
        let rows = (try JSONSerialization.jsonObject(with: Data(woken.stdout.utf8)) as? [String: Any])?["positions"] as? [[String: Any]]
        #expect(rows?.map { $0["user"] as? String } == ["bob"], "\(woken)")
        // nginx's own limit (client_max_body_size 1m) answers 413 before serve sees the body.
        let big = try box.write(#"{"positions":[],"pad":""# + String(repeating: "x", count: 1 << 21) + #""}"#, to: "big.json")
        let tooLarge = try ServeCurl.post(base + "/v1/positions", token: ann, body: "@" + big)
        #expect(tooLarge.status == 413 && tooLarge.errorCode == "body_too_large", "\(tooLarge)")  // JSON, as serve's own
        #expect(tooLarge.headers["content-type"]?.hasPrefix("application/json") == true, "\(tooLarge)")
        // nginx's own refusals of headers too large and of a body it cannot parse: JSON too.
        let pad = "X-Pad: " + String(repeating: "a", count: 40 * 1024)
        let headers = try ServeCurl.get(base + "/v1/positions", token: ann, headers: [pad])
        #expect(headers.status == 431 && headers.errorCode == "headers_too_large", "\(headers)")
        for request in [
            "POST /v1/positions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n"
        ] {
            let raw = try #require(RawSocket(port: nginx.port))
            #expect(raw.send(request))
            let malformed = raw.readToClose(within: 10).text
            #expect(malformed.hasPrefix("HTTP/1.1 400") && malformed.contains(#""code":"malformed_request""#), "\(malformed)")
        }
        #expect(try ServeCurl.get(base + "/v1/healthz").status == 200)
        #expect(serve.stop().status == 0)
    }
}

/// The "nothing new" answer without a read (docs/serve.md §4): what the dispatched changes and earlier
/// reads prove must never hide a row.
extension ServeTests {
    /// One request and its answer on a kept-alive connection: (status, JSON body).
    static func exchange(_ socket: RawSocket, _ request: String) -> (status: Int, json: [String: Any]?) {
        guard socket.send(request) else { return (0, nil) }
        let text = socket.readResponse(within: 10)
        let status = Int(text.dropFirst("HTTP/1.1 ".count).prefix(3)) ?? 0
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
    }

    @Test("a POST then at once a GET on another connection: the GET always has the row (200 rounds); another process's commit is seen")
    func nothingNewNeverHidesARow() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        // 200 POSTs of one user in a row: over the default POST rate (docs/serve.md §3), which is not under test.
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey], extra: ["--post-burst", "1000"])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let writer = try #require(RawSocket(port: serve.port))
        let reader = try #require(RawSocket(port: serve.port))
        func get(_ cursor: String?) -> (status: Int, json: [String: Any]?) {
            Self.exchange(
                reader, "GET /v1/positions\(cursor.map { "?after=\($0)" } ?? "") HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\n\r\n")
        }
        var cursor = try #require(get(nil).json?["cursor"] as? String)
        var missed = 0
        for round in 0..<200 {
            // Two polls that find nothing (the second answered from what the first proved), then a write.
            #expect((get(cursor).json?["positions"] as? [Any])?.isEmpty == true)
            #expect((get(cursor).json?["positions"] as? [Any])?.isEmpty == true)
            let body = ServeRows.body(user: "ann", page: round % 6, counter: round, node: "phone-b")
            let posted = Self.exchange(
                writer,
                "POST /v1/positions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
            #expect(posted.status == 200)
            let read = get(cursor)
            let rows = read.json?["positions"] as? [[String: Any]] ?? []
            if rows.count != 1 { missed += 1 }
            cursor = read.json?["cursor"] as? String ?? cursor
        }
        #expect(missed == 0, "\(missed) of 200 reads right after a POST did not have it")
        // Another process's commit: seen within the probe's interval, whatever the polls before proved.
        #expect((get(cursor).json?["positions"] as? [Any])?.isEmpty == true)
        let set = try box.run(["position", "set", "--user", "ann", "--page", "0"], db: db)
        #expect(set.status == 0, "\(set)")
        let seen = Waits.waitFor(5) { ((get(cursor).json?["positions"] as? [[String: Any]])?.first?["page"] as? Int) == 0 }
        #expect(seen != nil, "another process's commit never reached the poll")
        #expect(serve.stop().status == 0)
    }

    @Test("a cursor older than the server's start: nothing new is learned from a read, and a later commit still reaches it")
    func nothingNewAcrossARestart() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let first = try ServeProcess(box, db: db, keys: [key.publicKey])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let cursor = try #require(try ServeCurl.get(first.base + "/v1/positions", token: ann).json?["cursor"] as? String)
        #expect(first.stop().status == 0)
        // Others write while ann's device is away; then a new server starts.
        for user in ["bob", "carol", "dave"] { #expect(try box.run(["position", "set", "--user", user, "--page", "2"], db: db).status == 0) }
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let reader = try #require(RawSocket(port: serve.port))
        func rows() -> [[String: Any]] {
            Self.exchange(reader, "GET /v1/positions?after=\(cursor) HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(ann)\r\n\r\n")
                .json?["positions"] as? [[String: Any]] ?? []
        }
        #expect(rows().isEmpty && rows().isEmpty)
        #expect(try box.run(["position", "set", "--user", "ann", "--page", "0"], db: db).status == 0)
        #expect(Waits.waitFor(5) { rows().first?["page"] as? Int == 0 } != nil, "the commit never reached the old cursor")
        #expect(serve.stop().status == 0)
    }
}

/// The landmarks ETag answered from memory (docs/serve.md §4): a change to the landmarks by any writer makes
/// the next conditional GET read.
extension ServeTests {
    @Test("a landmarks 304 from memory: another process's import makes the very next conditional GET 200 with the new ETag")
    func landmarksTagFollowsAnotherProcess() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        // The dispatcher probes every 10 minutes: only the check each conditional GET makes can see the import.
        let serve = try ServeProcess(
            box, db: db, keys: [key.publicKey], binary: Support.harnessBinary, environment: ["CATALOG_TEST_SERVE_PROBE_MS": "600000"])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let full = try ServeCurl.get(serve.base + "/v1/landmarks", token: ann)
        let etag = try #require(full.headers["etag"])
        let cursor = try #require(full.json?["cursor"] as? String)
        #expect(etag == "\"\(cursor)\"", "\(full.headers)")
        func conditional(_ query: String, _ tag: String) throws -> CurlResult {
            try ServeCurl.get(serve.base + "/v1/landmarks" + query, token: ann, headers: ["If-None-Match: \(tag)"])
        }
        // The whole catalog's page and the page after its cursor (what sync asks), three times each: the first
        // reads, the others are answered from what it found.
        for _ in 0..<3 {
            let whole = try conditional("", etag)
            #expect(whole.status == 304 && whole.headers["etag"] == etag && whole.body.isEmpty, "\(whole)")
            let after = try conditional("?after=\(cursor)", etag)
            #expect(after.status == 304 && after.headers["etag"] == etag, "\(after)")
        }
        let seeds = try String(contentsOf: Support.root.appending(path: "Seeds/landmarkData.json"), encoding: .utf8)
        let renamed = try box.write(seeds.replacingOccurrences(of: "\"Half Dome\"", with: "\"Half Dome (renamed)\""), to: "renamed.json")
        #expect(try box.run(["import", "--quiet", renamed], db: db).status == 0)
        // At once, without waiting for the dispatcher: both pages read again, with the renamed row.
        let whole = try conditional("", etag)
        #expect(whole.status == 200 && whole.body.contains("Half Dome (renamed)"), "\(whole)")
        let newTag = try #require(whole.headers["etag"])
        #expect(newTag != etag)
        let after = try conditional("?after=\(cursor)", etag)
        #expect(after.status == 200 && (after.json?["landmarks"] as? [Any])?.count == 1, "\(after)")
        #expect(after.headers["etag"] == newTag, "\(after.headers)")
        // The new ETag is 304 again, and the old one stays 200.
        for _ in 0..<3 { #expect(try conditional("", newTag).status == 304) }
        #expect(try conditional("", etag).status == 200)
        #expect(serve.stop().status == 0)
    }
}

/// Issue 27's breaker: a server database restored from a backup kept its id, so the cursors handed out after
/// the backup stayed valid and the rows written over their sequence numbers never reached the devices.
extension ServeTests {
    @Test("a database restored from a backup: serve takes a new id at start, and a device's newer cursor reads from the start")
    func restoredDatabaseTakesANewID() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let first = try ServeProcess(box, db: db, keys: [key.publicKey])
        // The backup is taken while it serves: it holds the database's serve id.
        let backup = box.path("backup.sqlite")
        try Connection(path: db).execute(sql: "VACUUM INTO '\(backup)'")
        #expect(try box.run(["position", "set", "--user", "ann", "--page", "2"], db: db).status == 0)
        // The device reads page 2 and keeps its cursor; the server is stopped (the mark is written at the stop).
        let read = try ServeCurl.get(first.base + "/v1/positions", token: ann)
        #expect(ServeRows.positions(read).first?["page"] as? Int == 2, "\(read)")
        let cursor = try #require(read.json?["cursor"] as? String)
        #expect(first.stop().status == 0)
        // Restore: the backup (before page 2) replaces the database; a new write reuses the sequence number.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
        try FileManager.default.copyItem(atPath: backup, toPath: db)
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        #expect(serve.log.contains(#""event":"restored""#), "\(serve.log)")
        #expect(try box.run(["position", "set", "--user", "ann", "--page", "0"], db: db).status == 0)
        let again = try ServeCurl.get(serve.base + "/v1/positions?after=\(cursor)", token: ann)
        #expect(ServeRows.positions(again).first?["page"] as? Int == 0, "the restored database's new row was hidden: \(again)")
        let newID = (again.json?["cursor"] as? String)?.split(separator: ":").first
        #expect(newID != nil && newID != cursor.split(separator: ":").first, "\(again)")
        #expect(serve.stop().status == 0)
        // A plain restart (no restore) keeps the id: cursors survive it.
        let restarted = try ServeProcess(box, db: db, keys: [key.publicKey])
        let kept = try ServeCurl.get(restarted.base + "/v1/positions", token: ann)
        #expect((kept.json?["cursor"] as? String)?.split(separator: ":").first == newID, "\(kept)")
        #expect(!restarted.log.contains(#""event":"restored""#))
        #expect(restarted.stop().status == 0)
    }
}
