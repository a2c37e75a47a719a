import CatalogTestSupport
import Dispatch
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogServer
@testable import LandmarkCatalogSync

#if canImport(Glibc)
    import Glibc
#endif

/// Operating `catalog serve` (docs/serve.md §10, §11; docs/operations.md §3, §12): token revocation, readiness,
/// `status --check` on a node that only serves, and `catalog backup` while devices write, against the real
/// binary, curl and (for `--hub`) a PostgreSQL of the test's own.
@Suite("serve operations", .serialized)
struct ServeOperationsTests {
    /// Asks `url` with `token` until it answers `status`; the seconds it took, or nil after `limit`.
    static func secondsUntil(_ status: Int, _ url: String, token: String, limit: Double = 20) throws -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < limit {
            if try ServeCurl.get(url, token: token).status == status { return Date().timeIntervalSince(start) }
            usleep(100_000)
        }
        return nil
    }

    @Test("token revoke: a user's tokens are refused within 5 s (cached ones too), another user's served; --before, --id, --lift")
    func revokeOnOneServe() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let url = serve.base + "/v1/positions"
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let carolOne = try ServeKeys.issue(box, key: key.privateKey, user: "carol", extra: ["--id", "carol-phone"])
        let carolTwo = try ServeKeys.issue(box, key: key.privateKey, user: "carol", extra: ["--id", "carol-tablet"])
        // Each verified once: from here on they are served from the verifier's cache.
        for token in [ann, bob, carolOne, carolTwo] { #expect(try ServeCurl.get(url, token: token).status == 200) }

        let revoked = try box.run(["token", "revoke", "--user", "ann"], db: db)
        #expect(revoked.status == 0, "\(revoked)")
        #expect(revoked.stdout.hasPrefix("revoked the tokens of user ann issued before "), "\(revoked)")
        let took = try Self.secondsUntil(401, url, token: ann)
        #expect(took != nil && took! < 5, "refused after \(String(describing: took)) s")
        let refusal = try ServeCurl.get(url, token: ann)
        #expect(refusal.errorCode == "invalid_token", "\(refusal)")
        #expect(refusal.body.contains("revoked"), "\(refusal)")
        #expect(refusal.headers["www-authenticate"]?.contains(#"error="invalid_token""#) == true)
        #expect(try ServeCurl.get(url, token: bob).status == 200, "another user's token is still served")
        // Landmarks need a token too: refused alike.
        #expect(try ServeCurl.get(serve.base + "/v1/landmarks", token: ann).status == 401)
        // A node syncing with the revoked token is told so (serve's body was dropped and the hint said "expired").
        let tokenFile = box.path("ann.jwt")
        try ann.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        chmod(tokenFile, 0o600)
        let node = try box.run(["sync", "catalog+http://127.0.0.1:\(serve.port)/v1", "--token-file", tokenFile], db: box.path("node.sqlite"))
        #expect(node.status == 77 && node.stderr.contains("the token was revoked"), "\(node)")
        // A token issued once the command returned is good (iat counts whole seconds: the command waits out
        // the second its cut-off falls in; a new operator's script got a token refused as revoked).
        let fresh = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        #expect(try ServeCurl.get(url, token: fresh).status == 200, "a token issued after the revocation is served")

        // --before a time past: tokens issued after it (ann's) are good again.
        let past = try box.run(["token", "revoke", "--user", "ann", "--before", "2001-01-01T00:00:00Z"], db: db)
        #expect(past.status == 0, "\(past)")
        #expect(try Self.secondsUntil(200, url, token: ann).map { $0 < 5 } == true)

        // --id: that one token, not the user's other one.
        #expect(try box.run(["token", "revoke", "--id", "carol-phone"], db: db).status == 0)
        #expect(try Self.secondsUntil(401, url, token: carolOne).map { $0 < 5 } == true)
        #expect(try ServeCurl.get(url, token: carolTwo).status == 200)

        let listed = try box.run(["token", "revocations", "--json"], db: db)
        #expect(listed.status == 0, "\(listed)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(
            rows.map { "\($0["kind"] ?? "")/\($0["subject"] ?? "")/\($0["before"] ?? "")/\($0["source"] ?? "")" } == [
                "jti/carol-phone/<null>/database", "user/\(ErasureRule.userHash("ann"))/2001-01-01T00:00:00.000Z/database",
            ])
        // The user is kept by the hash an erasure keeps, never the id (docs/serve.md §10).
        #expect(try dumpRows(db, sql: "SELECT count(*) FROM token_revocations WHERE subject = 'ann'") == [[.integer(0)]])

        // prune: ann's revocation (a time long past) can refuse no token that lives at most 30 days; carol's jti,
        // recorded now, may still.
        let pruned = try box.run(["token", "prune", "--max-ttl", "30d"], db: db)
        #expect(pruned.stdout == "removed 1 revocation that can refuse no token any more\n", "\(pruned)")
        #expect(try box.run(["token", "revocations"], db: db).stdout.contains("user") == false)
        #expect(try box.run(["token", "prune"], db: db).status == 64, "--max-ttl is required")

        // --lift: served again.
        let lifted = try box.run(["token", "revoke", "--id", "carol-phone", "--lift"], db: db)
        #expect(lifted.stdout == "lifted the revocation of the token with jti carol-phone\n", "\(lifted)")
        #expect(try Self.secondsUntil(200, url, token: carolOne).map { $0 < 5 } == true)

        // Bad input names the field, exit 64.
        let both = try box.run(["token", "revoke", "--user", "ann", "--id", "x"], db: db)
        #expect(both.status == 64 && both.stderr.contains("--user ID and --id JTI"), "\(both)")
        let badTime = try box.run(["token", "revoke", "--user", "ann", "--before", "yesterday"], db: db)
        #expect(badTime.status == 64 && badTime.stderr.contains("--before needs an RFC 3339 date-time"), "\(badTime)")
        let noDatabase = try box.run(["token", "revoke", "--user", "ann"], db: box.path("nothere.sqlite"))
        #expect(noDatabase.status == 66, "\(noDatabase)")

        #expect(serve.stop().status == 0)
        for token in [ann, bob, carolOne, carolTwo] { #expect(!serve.log.contains(token), "no token in the log") }
    }

    @Test("a revoked user's token without iat is refused; one issued after --before is not")
    func revocationRules() throws {
        let revoked = RevokedTokens()
        revoked.replace([
            TokenRevocation(kind: .user, subject: "ann", before: 1000, revokedAt: ""),
            TokenRevocation(kind: .jti, subject: "j", before: 0, revokedAt: ""),
        ])
        #expect(revoked.refusal(TokenIdentity(user: "ann", isEdge: false, expires: 5000))?.cause == .revoked, "no iat: revoked")
        #expect(revoked.refusal(TokenIdentity(user: "ann", isEdge: false, expires: 5000, issuedAt: 999)) != nil)
        #expect(revoked.refusal(TokenIdentity(user: "ann", isEdge: false, expires: 5000, issuedAt: 1000)) == nil)
        #expect(revoked.refusal(TokenIdentity(user: "bob", isEdge: false, expires: 5000, tokenID: "j")) != nil)
        #expect(revoked.refusal(TokenIdentity(user: "bob", isEdge: false, expires: 5000, tokenID: "k")) == nil)
        // The verifier checks after its cache: a cached token is refused once its user is revoked.
        let sandbox = try Sandbox()
        let (privatePath, publicPath) = try ServeKeys.make(sandbox, "k")
        let verifier = TokenVerifier(keys: [try TokenKey.loadPublic(path: publicPath)])
        let token = try TokenIssuer.issue(key: try TokenKey.loadPrivate(path: privatePath), user: "dora", ttl: 600, scope: nil, now: 2000)
        #expect(try verifier.verify(token, now: 2000).get().user == "dora")
        verifier.revoked.replace([TokenRevocation(kind: .user, subject: "dora", before: 2001, revokedAt: "")])
        guard case .failure(let refusal) = verifier.verify(token, now: 2000) else {
            Issue.record("a cached revoked token was served")
            return
        }
        #expect(refusal.reason.contains("revoked") && !refusal.reason.contains(token))
    }

    @Test("/v1/readyz: 200 ready; 503 with the reason and Retry-After while the database is read-only, and while draining")
    func readiness() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let ready = try ServeCurl.get(serve.base + "/v1/readyz")
        #expect(ready.status == 200 && ready.body == "{\"status\":\"ready\"}\n", "\(ready)")
        #expect(try ServeCurl.run(["-I", serve.base + "/v1/readyz"]).status == 200, "HEAD")
        #expect(try ServeCurl.post(serve.base + "/v1/readyz", token: nil, body: "{}").status == 405)
        chmod(db, 0o444)
        let readOnly = try ServeCurl.get(serve.base + "/v1/readyz")
        chmod(db, 0o644)
        #expect(readOnly.status == 503, "\(readOnly)")
        #expect(readOnly.json?["status"] as? String == "not_ready")
        #expect((readOnly.json?["reason"] as? String)?.contains("read-only") == true, "\(readOnly)")
        #expect(readOnly.headers["retry-after"] != nil)
        #expect(try ServeCurl.get(serve.base + "/v1/readyz").status == 200)
        #expect(serve.stop().status == 0)
        #expect(serve.accessLog("GET", "/v1/readyz").count == 3)

        // Draining, in process: a POST held after its commit keeps the drain waiting; meanwhile readiness
        // says draining (the listener is closed then, so only a request on an open connection could ask).
        let held = DispatchSemaphore(value: 0)
        let committed = DispatchSemaphore(value: 0)
        var options = ServeOptions(databasePath: db, keys: [try TokenKey.loadPublic(path: key.publicKey)])
        options.port = 0
        options.log = { _ in }
        options.logBytes = { _ in }
        options.afterPostCommit = {
            committed.signal()
            held.wait()
        }
        let server = try ServeServer(options: options)
        try server.start()
        #expect(server.notReadyReason() == nil)
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        let base = "http://127.0.0.1:\(server.port)"
        let posted = DispatchGroup()
        posted.enter()
        DispatchQueue.global().async {
            _ = try? ServeCurl.post(base + "/v1/positions", token: bob, body: ServeRows.body(user: "bob", page: 2))
            posted.leave()
        }
        #expect(committed.wait(timeout: .now() + 20) == .success)
        let drained = DispatchGroup()
        drained.enter()
        DispatchQueue.global().async {
            server.drain(timeoutSeconds: 30)
            drained.leave()
        }
        #expect(HubSupport.wait { server.notReadyReason()?.hasPrefix("draining") == true })
        held.signal()
        #expect(drained.wait(timeout: .now() + 40) == .success)
        #expect(posted.wait(timeout: .now() + 20) == .success)
    }

    /// A breaker's: the second serve of a database never wrote the marker, so once the first stopped,
    /// `status --check` said unhealthy while the second served and was ready.
    @Test("two serves of one database: once the first stops, the second's heartbeat takes the marker and status --check is healthy")
    func secondServeTakesTheMarker() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let first = try ServeProcess(box, db: db, keys: [key.publicKey])
        let second = try ServeProcess(box, db: db, keys: [key.publicKey])
        #expect(try box.run(["status", "--check"], db: db).stdout.contains("127.0.0.1:\(first.port) "))
        #expect(first.stop().status == 0)
        // The next heartbeat (every 5 s) writes the second's marker.
        let healthy = try HubSupport.wait(seconds: 30) {
            let r = try box.run(["status", "--check"], db: db)
            return r.status == 0 && r.stdout.contains("127.0.0.1:\(second.port) ") && r.stdout.contains("(pid \(second.pid))")
        }
        let last = try box.run(["status", "--check"], db: db)
        #expect(healthy, "\(last)")
        #expect(second.stop().status == 0)
    }

    @Test("status --check on a node that only serves: healthy while serve runs and is ready; not when read-only, stale, killed or stopped")
    func statusCheckWhileServing() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let before = try box.run(["status", "--check"], db: db)
        #expect(before.status == 69 && before.stderr.contains("no sync run is recorded yet"), "\(before)")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let serving = try box.run(["status", "--check"], db: db)
        #expect(serving.status == 0, "\(serving)")
        #expect(serving.stdout.hasPrefix("healthy: serving 127.0.0.1:\(serve.port) since "), "\(serving)")
        #expect(serving.stdout.contains("(pid \(serve.pid)), ready at "), "\(serving)")
        let shown = try box.run(["status"], db: db)
        #expect(shown.stdout.contains(#/serving: +127\.0\.0\.1:\d+ since .*; checked at .*: ready\n/#), "\(shown)")
        // Read-only: the next heartbeat (every 5 s) says so.
        chmod(db, 0o444)
        let notReady = try HubSupport.wait(seconds: 30) { try box.run(["status", "--check"], db: db).status == 69 }
        let said = try box.run(["status", "--check"], db: db)
        chmod(db, 0o644)
        #expect(notReady, "\(said)")
        #expect(said.stderr.contains("is not ready: the database file is read-only"), "\(said)")
        #expect(try HubSupport.wait(seconds: 30) { try box.run(["status", "--check"], db: db).status == 0 })
        #expect(serve.stop().status == 0)
        // Stopped: its marker is gone, and no sync ever ran.
        let stopped = try box.run(["status", "--check"], db: db)
        #expect(stopped.status == 69 && stopped.stderr.contains("no sync run is recorded yet"), "\(stopped)")

        // A heartbeat long ago from a live process (this one): a serve that stopped checking itself.
        let marker = db + ".serve"
        try "\(getpid())\n\(ProcessInfo.processInfo.hostName)\n2020-01-01T00:00:00.000Z\n127.0.0.1:9\n2020-01-01T00:00:05.000Z\nready\n"
            .write(toFile: marker, atomically: true, encoding: .utf8)
        let stale = try box.run(["status", "--check"], db: db)
        #expect(stale.status == 69 && stale.stderr.contains("has not checked itself since 2020-01-01T00:00:05.000Z"), "\(stale)")
        // Killed: the marker stays, its pid is gone.
        unlink(marker)
        let killed = try ServeProcess(box, db: db, keys: [key.publicKey])
        killed.kill9()
        let dead = try box.run(["status", "--check"], db: db)
        #expect(dead.status == 69 && dead.stderr.contains("(pid \(killed.pid)) is not running"), "\(dead)")
    }

    @Test("catalog backup while 3 clients POST: whole, every acknowledged row, a new serve id; refuses to overwrite")
    func backupWhileWriting() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "ops", extra: ["--scope", "edge"])
        let url = serve.base + "/v1/positions"
        let acknowledged = Locked<[String]>([])
        let stop = Locked(false)
        let clients = DispatchGroup()
        for client in 0..<3 {
            clients.enter()
            DispatchQueue.global().async {
                var n = 0
                while !stop.current {
                    let user = "c\(client)-\(n)"
                    if (try? ServeCurl.post(url, token: edge, body: ServeRows.body(user: user, page: 1 + n % 3)))?.status == 200 {
                        acknowledged.update { $0.append(user) }
                    }
                    n += 1
                }
                clients.leave()
            }
        }
        #expect(HubSupport.wait(seconds: 60) { acknowledged.current.count >= 9 })
        let before = acknowledged.current
        let output = box.path("copy.sqlite")
        let backup = try box.run(["backup", "--output", output], db: db)
        let during = acknowledged.current.count
        #expect(HubSupport.wait(seconds: 60) { acknowledged.current.count >= during + 3 }, "the clients kept writing")
        stop.set(true)
        #expect(clients.wait(timeout: .now() + 60) == .success)
        #expect(backup.status == 0, "\(backup)")
        #expect(try dumpRows(output, sql: "PRAGMA integrity_check") == [[.text("ok")]])
        let copied = Set(
            try dumpRows(output, sql: "SELECT user_id FROM positions").compactMap { row -> String? in
                if case .text(let user) = row.first { user } else { nil }
            })
        let missing = before.filter { !copied.contains($0) }
        #expect(missing.isEmpty, "acknowledged before the backup, missing from it: \(missing)")
        #expect(
            !FileManager.default.fileExists(atPath: output + "-wal")
                || (try? Data(contentsOf: URL(fileURLWithPath: output + "-wal")))?.isEmpty == true)

        // A serve on the copy hands out cursors of another database.
        func serveID(_ path: String) throws -> String? {
            if case .text(let id) = try dumpRows(path, sql: "SELECT value FROM catalog_meta WHERE key = 'serve-id'").first?.first { id } else { nil }
        }
        let original = try #require(try serveID(db))
        #expect(try serveID(output) != original)
        let cursor = try #require(try ServeCurl.get(url, token: edge).json?["cursor"] as? String)
        #expect(serve.stop().status == 0)
        let restored = try ServeProcess(box, db: output, keys: [key.publicKey])
        let answer = try ServeCurl.get(restored.base + "/v1/positions?after=\(cursor)", token: edge)
        #expect(answer.status == 200, "\(answer)")
        let newCursor = try #require(answer.json?["cursor"] as? String)
        #expect(ServerCursor.database(newCursor) != ServerCursor.database(cursor), "another database's cursor: \(cursor) → \(newCursor)")
        #expect(ServerCursor.serverForgot(held: cursor, answered: newCursor), "\(cursor) → \(newCursor)")
        #expect(restored.stop().status == 0)

        // An existing file is kept unless --force; standard output is refused.
        let again = try box.run(["backup", "--output", output], db: db)
        #expect(again.status == 73 && again.stderr.contains("exists; refusing to replace it"), "\(again)")
        #expect(try box.run(["backup", "--output", output, "--force"], db: db).status == 0)
        #expect(try box.run(["backup", "--output", "-"], db: db).status == 64)
        #expect(try box.run(["backup", "--output", db], db: db).status == 73)
        // Never over the database's own WAL (a breaker's --force lost acknowledged writes), nor over a device.
        #expect(try box.run(["backup", "--output", db + "-wal", "--force"], db: db).status == 73)
        #expect(try box.run(["backup", "--output", "/dev/null", "--force"], db: db).status == 73)
        // A directory not there: said so, with the --output given (it named a temporary file and blamed
        // permissions to a new operator).
        let noDirectory = try box.run(["backup", "--output", box.path("no-such-dir/copy.sqlite")], db: db)
        #expect(
            noDirectory.status == 73 && noDirectory.stderr.contains("does not exist") && noDirectory.stderr.contains("no-such-dir/copy.sqlite"),
            "\(noDirectory)")
    }
}

/// `serve --hub` revocations and readiness on a PostgreSQL of this suite's own, which it stops.
@Suite("serve operations with a hub", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"), .serialized)
struct ServeHubOperationsTests {
    @Test("token revoke --hub: both serves of the hub refuse the token within 5 s, another user's served; readyz 503 once PostgreSQL stops")
    func revokeAcrossAHub() throws {
        let server = try PostgresServer.throwaway()
        defer { server.stop() }
        let (uri, hubName) = try HubSupport.makeHub(server)
        let box = try Sandbox()
        let key = try ServeKeys.make(box, "k")
        let one = try ServeProcess(box, db: try box.seededDatabase("one.sqlite"), keys: [key.publicKey], extra: ["--hub", uri])
        let two = try ServeProcess(box, db: box.path("two.sqlite"), keys: [key.publicKey], extra: ["--hub", uri])
        let ann = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
        let bob = try ServeKeys.issue(box, key: key.privateKey, user: "bob")
        for serve in [one, two] {
            #expect(try ServeCurl.get(serve.base + "/v1/readyz").status == 200)
            for token in [ann, bob] { #expect(try ServeCurl.get(serve.base + "/v1/positions", token: token).status == 200) }
        }
        // Recorded in the hub only (no database here): every serve of the hub reads it.
        let revoked = try box.run(["token", "revoke", "--user", "ann", "--hub", uri], db: box.path("operator.sqlite"))
        #expect(revoked.status == 0, "\(revoked)")
        let start = Date()
        for serve in [one, two] {
            let took = try ServeOperationsTests.secondsUntil(401, serve.base + "/v1/positions", token: ann)
            #expect(took != nil, "\(serve.log.suffix(1500))")
        }
        #expect(Date().timeIntervalSince(start) < 5, "both refused within \(Date().timeIntervalSince(start)) s")
        for serve in [one, two] { #expect(try ServeCurl.get(serve.base + "/v1/positions", token: bob).status == 200) }
        let listed = try box.run(["token", "revocations", "--hub", uri, "--json"], db: box.path("operator.sqlite"))
        #expect(
            listed.status == 0 && listed.stdout.contains(#""kind":"user","revokedAt":"#)
                && listed.stdout.contains(#""source":"hub","subject":"\#(ErasureRule.userHash("ann"))""#), "\(listed)")

        // A revocation an older binary put in the hub keeps the id in clear: still refused, and hub migration 6's
        // SQL turns it into the very hash this binary computes.
        let dave = try ServeKeys.issue(box, key: key.privateKey, user: "dave")
        _ = try HubSupport.scalar(
            server, hubName, "INSERT INTO hub_token_revocations (kind, subject, before_s) VALUES ('user', 'dave', $1) RETURNING 1",
            [.integer(Int64(Date().timeIntervalSince1970) + 1)])
        for serve in [one, two] { #expect(try ServeOperationsTests.secondsUntil(401, serve.base + "/v1/positions", token: dave) != nil) }
        let migration = try String(
            contentsOfFile: Support.root.appending(path: "Migrations/hub/0006_hashed_user_revocations.sql").path, encoding: .utf8)
        try HubSupport.connect(server, hubName).executeScript(sql: migration)
        #expect(
            try HubSupport.scalar(
                server, hubName, "SELECT subject FROM hub_token_revocations WHERE before_s > 1000000000 AND subject <> $1",
                [.text(ErasureRule.userHash("ann"))])
                == ErasureRule.userHash("dave"))
        #expect(try box.run(["token", "revoke", "--user", "dave", "--lift", "--hub", uri], db: box.path("operator.sqlite")).status == 0)

        // Revoked from one node and lifted from another (a breaker's: the first node kept a row of its own and
        // went on refusing what the fleet had lifted), then revoked again.
        #expect(try box.run(["token", "revoke", "--user", "carl", "--hub", uri], db: one.db).status == 0)
        #expect(try box.run(["token", "revoke", "--user", "carl", "--lift", "--hub", uri], db: two.db).status == 0)
        #expect(try dumpRows(one.db, sql: "SELECT count(*) FROM token_revocations WHERE source = 'database'") == [[.integer(0)]])

        // prune --hub: a revocation long past goes, ann's stays.
        #expect(try box.run(["token", "revoke", "--user", "old", "--before", "2001-01-01T00:00:00Z", "--hub", uri]).status == 0)
        let pruned = try box.run(["token", "prune", "--max-ttl", "1d", "--hub", uri], db: box.path("operator.sqlite"))
        #expect(pruned.stdout == "removed 1 revocation that can refuse no token any more\n", "\(pruned)")
        // Each serve's copy of the hub's follows it (read every second): ann's alone, before the hub stops.
        let mirrored = try HubSupport.wait(seconds: 15) {
            try dumpRows(one.db, sql: "SELECT source, kind, subject FROM token_revocations") == [
                [.text("hub"), .text("user"), .text(ErasureRule.userHash("ann"))]
            ]
        }
        let copy = try dumpRows(one.db, sql: "SELECT source, kind, subject FROM token_revocations")
        #expect(mirrored, "\(copy)")

        server.stop()
        for serve in [one, two] {
            #expect(
                try HubSupport.wait(seconds: 30) {
                    let r = try ServeCurl.get(serve.base + "/v1/readyz")
                    return r.status == 503 && (r.json?["reason"] as? String)?.contains("hub") == true && r.headers["retry-after"] != nil
                }, "\(serve.log.suffix(1500))")
            // What was revoked stays in force while the hub is down.
            #expect(try ServeCurl.get(serve.base + "/v1/positions", token: ann).status == 401)
        }
        #expect(one.stop(limit: 60).status == 0)
        #expect(two.stop(limit: 60).status == 0)
        // Restarted while the hub is down: the copy of the hub's revocations kept in its database is in force
        // from the first request.
        #expect(
            try dumpRows(one.db, sql: "SELECT source, kind, subject FROM token_revocations") == [
                [.text("hub"), .text("user"), .text(ErasureRule.userHash("ann"))]
            ])
        let again = try ServeProcess(box, db: one.db, keys: [key.publicKey], extra: ["--hub", uri])
        #expect(try ServeCurl.get(again.base + "/v1/positions", token: ann).status == 401)
        #expect(try ServeCurl.get(again.base + "/v1/positions", token: bob).status == 200)
        #expect(again.stop(limit: 60).status == 0)
        for log in [one.log, two.log, again.log] { #expect(!log.contains(ann) && !log.contains(bob), "no token in the log") }
    }
}
