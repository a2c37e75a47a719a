import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// A server node syncing through `catalog serve` (SPEC §16, docs/protocol.md §9): `catalog sync
/// catalog+http://127.0.0.1:PORT/v1 --token-file FILE` with the built binary against a real serve.
@Suite("sync through serve", .serialized)
struct ServeSourceTests {
    static func digest(_ db: String) throws -> String {
        try #require(HubSupport.status(db)["digest"] as? String)
    }

    @Test("an edge token syncs every row both ways: the digests agree, an idle sync is not modified and pushes nothing back")
    func edgeSync() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: server, keys: [key.publicKey])
        let tokenFile = box.path("edge.jwt")
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        try (edge + "\n").write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let source = "catalog+http://127.0.0.1:\(serve.port)/v1"
        let node = box.path("node.sqlite")
        let first = try box.run(["sync", "--json", source, "--token-file", tokenFile], db: node)
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.contains(#""landmarksApplied":16"#) && first.stdout.contains(#""positionsApplied":1"#), "\(first.stdout)")
        #expect(try Self.digest(node) == Self.digest(server))

        // This node's write is pushed; the server's is pulled; then both hold the same rows.
        #expect(try box.run(["position", "set", "--user", "bob", "--page", "2"], db: node).status == 0)
        #expect(try box.run(["position", "set", "--user", "ann", "--page", "3"], db: server).status == 0)
        let second = try box.run(["sync", "--json", source, "--token-file", tokenFile], db: node)
        #expect(second.status == 0, "\(second)")
        #expect(second.stdout.contains(#""pushed":{"erasures":0,"expired":0,"quarantined":0,"sent":1,"written":1}"#), "\(second.stdout)")
        let serverRows = try HubSupport.edgePositions(server)
        #expect(serverRows.contains { $0.hasPrefix("bob|2|") }, "\(serverRows)")
        #expect(try Self.digest(node) == Self.digest(server))
        // Nothing new on either side: not modified, and the rows this node pulled are not pushed back.
        let idle = try box.run(["sync", "--json", source, "--token-file", tokenFile], db: node)
        #expect(idle.status == 0)
        #expect(idle.stdout.contains(#""outcome":"not-modified""#) && idle.stdout.contains(#""pushed":null"#), "\(idle.stdout)")
        // Once a landmarks cursor is held, sync sends If-None-Match: the server, with no landmark changed since,
        // answered the second and the idle sync 304 (its access log); the first, with no cursor, 200.
        let landmarkStatuses = serve.log.split(separator: "\n").filter { $0.contains(#""route":"/v1/landmarks""#) }
            .map { $0.contains(#""status":304"#) ? 304 : $0.contains(#""status":200"#) ? 200 : 0 }
        #expect(landmarkStatuses == [200, 304, 304], "\(serve.log)")
        // A landmark changed on the server: the ETag no longer matches, and the change is pulled.
        let seeds = try String(contentsOf: Support.root.appending(path: "Seeds/landmarkData.json"), encoding: .utf8)
        let renamed = try box.write(seeds.replacingOccurrences(of: "\"Half Dome\"", with: "\"Half Dome (renamed)\""), to: "renamed.json")
        #expect(try box.run(["import", "--quiet", renamed], db: server).status == 0)
        let changed = try box.run(["sync", "--json", source, "--token-file", tokenFile], db: node)
        #expect(changed.status == 0 && changed.stdout.contains(#""landmarksApplied":1"#), "\(changed.stdout)")
        #expect(try Self.digest(node) == Self.digest(server))
        for run in [first, second, idle] { #expect(!run.stdout.contains(edge) && !run.stderr.contains(edge)) }
        #expect(!serve.log.contains(edge))

        // Saved as a remote with its token file, `sync` alone syncs it.
        #expect(try box.run(["remote", "add", "srv", source, "--token-file", tokenFile], db: node).status == 0)
        let listed = try box.run(["remote", "list", "--json"], db: node)
        #expect(listed.stdout.contains(#""tokenFile":"\#(tokenFile)""#) && !listed.stdout.contains(edge), "\(listed.stdout)")
        // The text list shows the token file's path too, never the token.
        let text = try box.run(["remote", "list"], db: node).stdout
        #expect(text.hasPrefix("NAME  URL") && text.contains("TOKEN FILE") && text.contains(tokenFile) && !text.contains(edge), "\(text)")
        #expect(try box.run(["position", "set", "--user", "cy", "--page", "1"], db: node).status == 0)
        let saved = try box.run(["sync", "--quiet"], db: node)
        #expect(saved.status == 0, "\(saved)")
        #expect(try HubSupport.edgePositions(server).contains { $0.hasPrefix("cy|1|") })
        #expect(serve.stop().status == 0)
    }

    /// Regression (issue 27's breaker): a server answering "more" with the same cursor kept sync asking
    /// for the same page forever (13,145 GETs in 30 s), past --deadline.
    @Test("a server that says more follow without moving its cursor: 65 at once, not a loop")
    func moreWithoutProgress() throws {
        let box = try Sandbox()
        let script = """
            import http.server, sys
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    body = b'{"format":"landmark-catalog-snapshot","version":1,"landmarks":[],"cursor":"x:1","more":true}'
                    self.send_response(200); self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
                def log_message(self, *a): pass
            s = http.server.HTTPServer(("127.0.0.1", 0), H)
            print(s.server_address[1], flush=True)
            s.timeout = 60
            s.serve_forever()
            """
        let fake = try box.start(["-c", script], binary: URL(fileURLWithPath: "/usr/bin/python3"))
        defer { fake.stop() }
        var port = ""
        _ = Waits.waitFor(10) {
            port = String(decoding: (try? Data(contentsOf: fake.stdout)) ?? Data(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return !port.isEmpty
        }
        try #require(!port.isEmpty)
        let tokenFile = box.path("t.jwt")
        try "a.b.c".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let run = try box.run(["sync", "catalog+http://127.0.0.1:\(port)/v1", "--token-file", tokenFile], db: box.path("n.sqlite"), limit: 20)
        #expect(run.status == 65 && run.stderr.contains("without moving its cursor"), "\(run)")
    }

    /// Regression (a new user's run): a serve remote saved without --token-file, or with a file that is not
    /// there, was accepted and failed only at its first sync.
    @Test("remote add of a serve: no --token-file is 64 with a hint, a token file that cannot be read 66, nothing created")
    func remoteAddChecksTokenFile() throws {
        let box = try Sandbox()
        let db = box.path("new/node.sqlite")
        let url = "catalog+http://127.0.0.1:9/v1"
        let none = try box.run(["remote", "add", "door", url], db: db)
        #expect(none.status == 64 && none.stderr.contains("needs --token-file") && none.stderr.contains("hint: catalog remote add door"), "\(none)")
        let missing = try box.run(["remote", "add", "door", url, "--token-file", box.path("nothing.jwt")], db: db)
        #expect(missing.status == 66 && missing.stderr.contains("cannot read the token file \(box.path("nothing.jwt"))"), "\(missing)")
        let directory = try box.run(["remote", "add", "door", url, "--token-file", box.root.path], db: db)
        #expect(directory.status == 66, "\(directory)")
        #expect(!FileManager.default.fileExists(atPath: box.path("new")), "nothing created")
        let tokenFile = try box.write("a.b.c\n", to: "t.jwt")
        #expect(try box.run(["remote", "add", "door", url, "--token-file", tokenFile], db: db).status == 0)
        let set = try box.run(["remote", "set", "door", "--token-file", box.path("nothing.jwt")], db: db)
        #expect(set.status == 66, "\(set)")
    }

    /// Regression (a new user's run): a token file anyone on the machine could read was used without a word.
    @Test("a token file open to group or others: one warning a run (as ssh does), still used; none at 0600")
    func openTokenFileWarns() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: server, keys: [key.publicKey])
        let tokenFile = box.path("edge.jwt")
        let edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"])
        try edge.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        #expect(chmod(tokenFile, 0o644) == 0)
        let node = box.path("node.sqlite")
        // Two sources with one token file, in one run: one warning.
        let sources = ["catalog+http://127.0.0.1:\(serve.port)/v1", "catalog+http://localhost:\(serve.port)/v1"]
        let open = try box.run(["sync"] + sources + ["--token-file", tokenFile], db: node)
        #expect(open.status == 0, "\(open)")
        let warnings = open.stderr.split(separator: "\n").filter { $0.contains("open to group or others") }
        #expect(warnings.count == 1 && warnings[0].contains("(mode 0644)") && warnings[0].contains("chmod 600"), "\(open.stderr)")
        #expect(!open.stderr.contains(edge))
        #expect(chmod(tokenFile, 0o600) == 0)
        let closed = try box.run(["sync", sources[0], "--token-file", tokenFile], db: node)
        #expect(closed.status == 0 && !closed.stderr.contains("open to group or others"), "\(closed)")
        #expect(serve.stop().status == 0)
    }

    @Test("sync --follow through serve pushes a local commit at once, not at the next --interval poll; SIGTERM exits 0")
    func followPushesAtOnce() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: server, keys: [key.publicKey])
        let tokenFile = box.path("edge.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"]).write(
            toFile: tokenFile, atomically: true, encoding: .utf8)
        let node = try box.seededDatabase("node.sqlite")
        let source = "catalog+http://127.0.0.1:\(serve.port)/v1"
        let follower = try FollowTests.follower(box, db: node, [source, "--token-file", tokenFile, "--interval", "30s", "--quiet"])
        defer { follower.stop() }
        #expect(try box.run(["position", "set", "--user", "cy", "--page", "2"], db: node).status == 0)
        let pushed = Waits.waitFor(10) { Waits.page(server, "cy") == 2 }
        #expect(pushed != nil && pushed! < 5, "pushed after \(String(describing: pushed)) s")
        let run = FollowTests.terminate(follower)
        #expect(run.status == 0, "\(run)")
        #expect(serve.stop().status == 0)
    }

    /// Regression (a new user's run): a database holding another user's row failed every sync with a user
    /// token (403 → 77, the message naming no row); now that token pushes its own user's row alone.
    @Test("a user token pushes only its user's row, says once how many others' rows it left, and is quiet when none")
    func userTokenPushesOwnRow() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: server, keys: [key.publicKey])
        let source = "catalog+http://127.0.0.1:\(serve.port)/v1"
        // The node's own ann (seeded) and cy are other users' rows for bob's token.
        let node = try box.seededDatabase("node.sqlite")
        #expect(try box.run(["position", "set", "--user", "cy", "--page", "1"], db: node).status == 0)
        #expect(try box.run(["position", "set", "--user", "bob", "--page", "2"], db: node).status == 0)
        let serverAnn = try HubSupport.edgePositions(server).filter { $0.hasPrefix("ann|") }
        let bob = box.path("bob.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "bob").write(toFile: bob, atomically: true, encoding: .utf8)
        let first = try box.run(["sync", "--json", source, "--token-file", bob], db: node)
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.contains(#""pushed":{"erasures":0,"expired":0,"quarantined":0,"sent":1,"written":1}"#), "\(first.stdout)")
        let warnings = first.stderr.split(separator: "\n").filter { $0.contains("not pushed") }
        #expect(warnings.count == 1 && warnings[0].contains("2 position rows of other users not pushed"), "\(first.stderr)")
        let rows = try HubSupport.edgePositions(server)
        #expect(rows.contains { $0.hasPrefix("bob|2|") } && !rows.contains { $0.hasPrefix("cy|") }, "\(rows)")
        #expect(rows.filter { $0.hasPrefix("ann|") } == serverAnn)
        // Nothing new here: no warning; a new row of another user: the warning counts that one.
        let idle = try box.run(["sync", source, "--token-file", bob], db: node)
        #expect(idle.status == 0 && !idle.stderr.contains("not pushed"), "\(idle)")
        #expect(try box.run(["position", "set", "--user", "cy", "--page", "3"], db: node).status == 0)
        let again = try box.run(["sync", source, "--token-file", bob], db: node)
        #expect(again.status == 0 && again.stderr.contains("1 position row of other users not pushed"), "\(again)")
        #expect(!serve.log.contains(#""status":403"#), "\(serve.log)")
        // The token file now holds an edge token (issue 27's breaker: the node kept bob's cursor, never read
        // the other users' rows and never pushed cy's): it reads and pushes every row, and both sides agree.
        try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"]).write(
            toFile: bob, atomically: true, encoding: .utf8)
        let edge = try box.run(["sync", source, "--token-file", bob], db: node)
        #expect(edge.status == 0, "\(edge)")
        #expect(try HubSupport.edgePositions(server) == HubSupport.edgePositions(node))
        #expect(try HubSupport.edgePositions(node).contains { $0.hasPrefix("cy|3|") })
        #expect(serve.stop().status == 0)
    }

    /// Issue 27: `--follow` polled a serve only at `--interval`, so the server's changes waited up to it.
    @Test("sync --follow long-polls serve: a commit on the server reaches the node in seconds with --interval 30s; SIGTERM within 2 s")
    func followLongPolls() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try ServeProcess(box, db: server, keys: [key.publicKey])
        let tokenFile = box.path("edge.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"]).write(
            toFile: tokenFile, atomically: true, encoding: .utf8)
        let node = box.path("node.sqlite")
        let source = "catalog+http://127.0.0.1:\(serve.port)/v1"
        let follower = try FollowTests.follower(box, db: node, [source, "--token-file", tokenFile, "--interval", "30s", "--quiet"])
        defer { follower.stop() }
        #expect(FollowTests.count(node, "SELECT count(*) FROM landmarks") == 16)
        // Twice: the second after the long-poll was armed again with the cursor of the first.
        for (user, page) in [("dy", 3), ("ed", 1)] {
            let set = try box.run(["position", "set", "--user", user, "--page", "\(page)"], db: server)
            #expect(set.status == 0, "\(set)")
            let pulled = Waits.waitFor(10) { Waits.page(node, user) == Int64(page) }
            #expect(pulled != nil && pulled! < 3, "\(user) pulled after \(String(describing: pulled)) s")
        }
        let stopping = ContinuousClock.now
        let run = FollowTests.terminate(follower)
        #expect(run.status == 0, "\(run)")
        #expect(ContinuousClock.now - stopping < .seconds(2), "SIGTERM took \(ContinuousClock.now - stopping)")
        #expect(serve.stop().status == 0)
    }

    /// Regression (issue 25's breaker): a serve put on another database at the same URL never got this
    /// node's rows: the pull cursors moved to the new database, `pushThrough` stayed, the copies diverged.
    @Test("a serve restarted over another database gets every row of this node again: the next sync pushes them")
    func serverDatabaseReplaced() throws {
        let box = try Sandbox()
        let key = try ServeKeys.make(box, "k")
        let first = try ServeProcess(box, db: try box.seededDatabase("server.sqlite"), keys: [key.publicKey])
        let port = first.port
        let tokenFile = box.path("edge.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "node-2", extra: ["--scope", "edge"]).write(
            toFile: tokenFile, atomically: true, encoding: .utf8)
        let node = try box.seededDatabase("node.sqlite")
        #expect(try box.run(["position", "set", "--user", "cy", "--page", "2"], db: node).status == 0)
        let sync = ["sync", "catalog+http://127.0.0.1:\(port)/v1", "--token-file", tokenFile, "--quiet"]
        #expect(try box.run(sync, db: node).status == 0)
        #expect(first.stop().status == 0)
        let replaced = try box.seededDatabase("server2.sqlite")
        let second = try ServeProcess(box, db: replaced, keys: [key.publicKey], listen: "127.0.0.1:\(port)")
        // The first sync meets the other database (its cursors); the next pushes every row again.
        #expect(try box.run(sync, db: node).status == 0)
        #expect(try box.run(sync, db: node).status == 0)
        #expect(Waits.page(replaced, "cy") == 2)
        #expect(second.stop().status == 0)
    }

    @Test("a refused token is 77, none is 64, an unreadable file 66: nothing written either side")
    func refusals() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let other = try ServeKeys.make(box, "other")
        let serve = try ServeProcess(box, db: server, keys: [key.publicKey])
        let source = "catalog+http://127.0.0.1:\(serve.port)/v1"
        // A node of its own (seeded like the server, by another node id) with a row the server lacks.
        let node = try box.seededDatabase("node.sqlite")
        #expect(try box.run(["position", "set", "--user", "cy", "--page", "1"], db: node).status == 0)
        let before = try dumpPositions(server)
        let nodeBefore = try dumpPositions(node)
        let forged = box.path("forged.jwt")
        let forgedToken = try ServeKeys.issue(box, key: other.privateKey, user: "node-2", extra: ["--scope", "edge"])
        try forgedToken.write(toFile: forged, atomically: true, encoding: .utf8)
        let refused = try box.run(["sync", source, "--token-file", forged], db: node)
        #expect(refused.status == 77 && refused.stderr.contains("HTTP 401"), "\(refused)")
        #expect(!refused.stderr.contains(forgedToken))
        let none = try box.run(["sync", source], db: node)
        #expect(none.status == 64 && none.stderr.contains("--token-file"), "\(none)")
        let missing = try box.run(["sync", source, "--token-file", box.path("nothing.jwt")], db: node)
        #expect(missing.status == 66, "\(missing)")
        let bob = box.path("bob.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "bob").write(toFile: bob, atomically: true, encoding: .utf8)
        #expect(try dumpPositions(server) == before)
        #expect(try dumpPositions(node) == nodeBefore, "nothing was pulled by the refused syncs")
        // Found by a breaker (issue 27): a token in clear text to another host, a fragment, and two remotes of
        // one URL with different token files (one ran with the other's token).
        let far = try box.run(["remote", "add", "far", "catalog+http://example.org/v1", "--token-file", bob], db: node)
        #expect(far.status == 64 && far.stderr.contains("clear text"), "\(far)")
        #expect(try box.run(["sync", source + "#frag", "--token-file", bob], db: node).status == 64)
        #expect(try box.run(["remote", "add", "door", source, "--token-file", bob], db: node).status == 0)
        let bobCopy = box.path("bob-copy.jwt")
        try FileManager.default.copyItem(atPath: bob, toPath: bobCopy)
        #expect(try box.run(["remote", "add", "door2", source, "--token-file", bobCopy], db: node).status == 0)
        let ambiguous = try box.run(["sync", "door2"], db: node)
        #expect(ambiguous.status == 64 && ambiguous.stderr.contains("different token files"), "\(ambiguous)")
        #expect(try dumpPositions(server) == before)
        let notServe = try box.run(["remote", "add", "x", "https://example.org/log/", "--token-file", bob], db: node)
        #expect(notServe.status == 64 && notServe.stderr.contains("--token-file goes with"), "\(notServe)")
        #expect(serve.stop().status == 0)
    }
}
