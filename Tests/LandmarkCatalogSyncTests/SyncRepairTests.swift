import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

#if canImport(Glibc)
    import Glibc
#endif

/// `catalog sync --repair` and a repair's large rounds over serve (docs/repair.md §4, §7): the built
/// `catalog` against a real `catalog serve` with an edge token.
@Suite("sync --repair", .serialized)
struct SyncRepairTests {
    /// The stamp text `ageMilliseconds` before now.
    static func ago(_ ageMilliseconds: Int64) -> String {
        Timestamp.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000) - ageMilliseconds)
    }

    /// Merges `count` positions `PREFIX0…` into `db` with `catalog sync FILE`.
    static func deliver(_ box: Sandbox, _ count: Int, prefix: String, to db: String) throws {
        let rows = (0..<count).map { positionRow("\(prefix)\($0)", page: $0 % 4, at: ago(120_000), node: "phone") }
        let file = try box.write(snapshot(positions: rows), to: "\(prefix)\(UUID().uuidString).json")
        let r = try box.run(["sync", "--quiet", file], db: db)
        try #require(r.status == 0, "\(r)")
    }

    static func digest(_ db: String) throws -> String { try #require(HubSupport.status(db)["digest"] as? String) }

    /// A serve over `db` (on `port`, or one it picks) and a file holding an edge token.
    static func door(_ box: Sandbox, db: String, key: (privateKey: String, publicKey: String), port: Int? = nil, extra: [String] = [])
        throws -> ServeProcess
    {
        try ServeProcess(box, db: db, keys: [key.publicKey], extra: extra, listen: "127.0.0.1:\(port ?? 0)")
    }

    static func edgeToken(_ box: Sandbox, key: String) throws -> String {
        let file = box.path("edge.jwt")
        try ServeKeys.issue(box, key: key, user: "node-1", extra: ["--scope", "edge"]).write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        return file
    }

    /// The statuses the serve answered `POST /v1/repair` with, in order (its access log).
    static func repairStatuses(_ serve: ServeProcess) -> [Int] {
        serve.log.split(separator: "\n").filter { $0.contains(#""route":"/v1/repair""#) }.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["status"] as? Int
        }
    }

    @Test("a message split under a bound: rows-only parts first, the ranges last, every row once and unchanged (quotes and brackets in ids)")
    func splitKeepsRows() throws {
        // In the JSON text: a backslash, a quote, brackets and braces inside each id (escaped as JSON escapes them).
        let texts = (0..<300).map { #"u\\\"]}[{,\#($0)"# } + ["plain", "ü-ß"]
        let users = texts.map { $0.replacingOccurrences(of: #"\\"#, with: "\\").replacingOccurrences(of: #"\""#, with: "\"") }
        let rows = Array(snapshot(positions: texts.map { positionRow($0, page: 1, at: "2026-11-30T00:00:00.000Z") }).utf8)
        var message = RepairMessage()
        message.horizon = 7
        message.items[1] = [RepairItem(lower: [], upper: nil, payload: .fingerprint([1, 2, 3, 4]))]
        message.rows = rows
        let parts = try message.split(maxBytes: 4096)
        #expect(parts.count > 5)
        #expect(parts.allSatisfy { $0.encoded().count <= 4096 && $0.horizon == 7 })
        #expect(parts.dropLast().allSatisfy(\.isFinal) && parts.last?.items == message.items)
        var seen: [String] = []
        for part in parts where !part.rows.isEmpty {
            seen += try DevicePositionsBody.decode(part.rows, maxRows: .max).positions.map(\.user)
        }
        #expect(seen == users)
        #expect(try message.split(maxBytes: 1 << 20) == [message])
    }

    @Test("ranges alone split in key order under a bound and their answers joined back; one row or one range alone is not divided")
    func splitRanges() throws {
        var message = RepairMessage()
        message.horizon = 7
        let bound = { (n: Int) in [UInt8(n >> 8), UInt8(n & 255)] }
        message.items[1] = (0..<600).map { n in
            RepairItem(lower: bound(n), upper: bound(n + 1), payload: .ids([UInt32(n), UInt32(n) + 1, UInt32(n) + 2]))
        }
        message.items[2] = [RepairItem(lower: [], upper: nil, payload: .fingerprint([1, 2, 3, 4, 5, 6, 7, 8]))]
        let parts = try message.split(maxBytes: 1024)
        #expect(parts.count >= 10 && parts.allSatisfy { $0.encoded().count <= 1024 && $0.horizon == 7 && $0.rows.isEmpty })
        #expect(parts.flatMap { $0.items[1] } == message.items[1] && parts.flatMap { $0.items[2] } == message.items[2])
        // Answers, each with rows, joined: ranges in order, every row once in one document.
        let answers = (0..<3).map { n -> RepairMessage in
            var answer = RepairMessage()
            answer.items[1] = [message.items[1][n]]
            answer.rows = Array(snapshot(positions: [positionRow("u\(n)", page: 1, at: "2026-11-30T00:00:00.000Z")]).utf8)
            if n == 1 { answer.horizon = 9 }
            return answer
        }
        let joined = try RepairMessage.combined(answers)
        #expect(joined.items[1] == Array(message.items[1].prefix(3)) && joined.horizon == 9)
        #expect(try DevicePositionsBody.decode(joined.rows, maxRows: .max).positions.map(\.user) == ["u0", "u1", "u2"])
        // One row over the bound, and one range over it: each travels whole.
        var row = RepairMessage()
        row.rows = Array(snapshot(positions: [positionRow(String(repeating: "u", count: 200), page: 1, at: "2026-11-30T00:00:00.000Z")]).utf8)
        #expect(try row.split(maxBytes: 100) == [row])
        var range = RepairMessage()
        range.items[1] = [RepairItem(lower: [], upper: nil, payload: .ids(Array(0..<100)))]
        #expect(try range.split(maxBytes: 100) == [range])
    }

    @Test("a repair sending 9,000 rows to a serve splits them over POSTs under its 1 MiB body limit: no 413, both digests equal")
    func splitsUnderDefaultLimit() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let node = box.path("node.sqlite")
        try FileManager.default.copyItem(atPath: server, toPath: node)
        try Self.deliver(box, 9000, prefix: "only-node-", to: node)
        let key = try ServeKeys.make(box, "k")
        let serve = try Self.door(box, db: server, key: key)
        let tokenFile = try Self.edgeToken(box, key: key.privateKey)
        let run = try box.run(["repair", "--json", "catalog+http://127.0.0.1:\(serve.port)/v1", "--token-file", tokenFile], db: node)
        #expect(run.status == 0, "\(run)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(report["rowsSent"] as? Int == 9000, "\(run.stdout)")
        #expect(report["roundTrips"] as? Int == 2, "\(run.stdout)")
        #expect(try Self.digest(node) == Self.digest(server))
        // The round that sends the rows went as more than one POST, each taken.
        let statuses = Self.repairStatuses(serve)
        #expect(statuses.count >= 3 && statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(serve.stop().status == 0)
    }

    @Test("a serve with a lower --max-body: the client halves its bound after each 413 (nothing written by it) and converges")
    func halvesAfterTooLarge() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let node = box.path("node.sqlite")
        try FileManager.default.copyItem(atPath: server, toPath: node)
        try Self.deliver(box, 1500, prefix: "only-node-", to: node)
        try Self.deliver(box, 40, prefix: "only-server-", to: server)
        let key = try ServeKeys.make(box, "k")
        let serve = try Self.door(box, db: server, key: key, extra: ["--max-body", "32768"])
        let tokenFile = try Self.edgeToken(box, key: key.privateKey)
        let run = try box.run(["repair", "--json", "catalog+http://127.0.0.1:\(serve.port)/v1", "--token-file", tokenFile], db: node)
        #expect(run.status == 0, "\(run)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(report["rowsSent"] as? Int == 1500 && report["rowsReceived"] as? Int == 40, "\(run.stdout)")
        #expect(try Self.digest(node) == Self.digest(server))
        let statuses = Self.repairStatuses(serve)
        // The rows' round (about 200 KB) refused at half and a quarter of it and more, then sent in parts
        // of under 32 KiB, about 200 rows each; a refused request wrote nothing, and every row arrived once.
        let refused = statuses.filter { $0 == 413 }.count
        #expect(refused >= 1 && refused <= 5, "\(statuses)")
        #expect(statuses.filter { $0 == 200 }.count >= 1500 / 250 + 2, "\(statuses)")
        #expect(serve.stop().status == 0)
    }

    @Test("a round whose ranges alone exceed --max-body: the ranges go over several POSTs, the answers joined, and it converges")
    func splitsRanges() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let node = box.path("node.sqlite")
        try FileManager.default.copyItem(atPath: server, toPath: node)
        // The same users on both, stamped apart: every row differs, so a round lists and asks for about
        // 2,000 ids (over 8 KB of ranges, no rows to move out of the message).
        let users = (0..<2000).map { "same-\($0)" }
        let older = users.map { positionRow($0, page: 1, at: Self.ago(120_000), node: "phone") }
        let newer = users.map { positionRow($0, page: 2, at: Self.ago(60_000), node: "tablet") }
        for (db, rows) in [(node, older), (server, newer)] {
            let file = try box.write(snapshot(positions: rows), to: "\(UUID().uuidString).json")
            try #require(try box.run(["sync", "--quiet", file], db: db).status == 0)
        }
        let key = try ServeKeys.make(box, "k")
        let serve = try Self.door(box, db: server, key: key, extra: ["--max-body", "4096"])
        let tokenFile = try Self.edgeToken(box, key: key.privateKey)
        let run = try box.run(["repair", "--json", "catalog+http://127.0.0.1:\(serve.port)/v1", "--token-file", tokenFile], db: node)
        #expect(run.status == 0, "\(run)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
        #expect(report["rowsReceived"] as? Int == 2000 && report["rowsApplied"] as? Int == 2000, "\(run.stdout)")
        #expect(report["equal"] as? Bool == true, "\(run.stdout)")
        #expect(try Self.digest(node) == Self.digest(server))
        // Every ranges round of over 4 KiB went as several requests: many more than its round trips.
        let statuses = Self.repairStatuses(serve)
        #expect(statuses.filter { $0 == 200 }.count > (report["roundTrips"] as? Int ?? 0) + (report["bytesSent"] as? Int ?? 0) / 4096, "\(statuses)")
        #expect(serve.stop().status == 0)
    }

    @Test("a landmark row larger than --max-body is not sent to a serve (it takes none): the repair ends at once, the copies left apart")
    func largeLandmarkStays() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let node = box.path("node.sqlite")
        try FileManager.default.copyItem(atPath: server, toPath: node)
        let long = String(repeating: "a long description ", count: 1600)
        let row = landmarkRow(9001, name: "Long", at: Self.ago(60_000), node: "phone")
            .replacingOccurrences(of: #""description": null"#, with: #""description": "\#(long)""#)
        let file = try box.write(snapshot(landmarks: [row]), to: "long.json")
        try #require(try box.run(["sync", "--quiet", file], db: node).status == 0)
        let key = try ServeKeys.make(box, "k")
        let serve = try Self.door(box, db: server, key: key, extra: ["--max-body", "16384"])
        let tokenFile = try Self.edgeToken(box, key: key.privateKey)
        let started = ContinuousClock.now
        let run = try box.run(
            ["repair", "--json", "catalog+http://127.0.0.1:\(serve.port)/v1", "--token-file", tokenFile], db: node, limit: 20)
        #expect(ContinuousClock.now - started < .seconds(15), "\(run)")
        #expect(run.status == 0 && run.stderr.contains("still differ"), "\(run)")
        #expect(Self.repairStatuses(serve).allSatisfy { $0 == 200 }, "\(serve.log)")
        #expect(serve.stop().status == 0)
    }

    @Test("a part that cannot be divided, refused with 413: 65 at once, naming its row and the size refused")
    func undividedPartRefused() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try Self.door(box, db: server, key: key, extra: ["--max-body", "1024"])
        let token = try ServeKeys.issue(box, key: key.privateKey, user: "node-1", extra: ["--scope", "edge"])
        let peer = ServeRepairPeer(
            client: ServeHTTP(token: token, name: "the-serve", options: SyncOptions()), base: "http://127.0.0.1:\(serve.port)/v1",
            dryRun: false)
        // One position row of about 5 KB (an unknown key the serve would skip): no part of it is smaller.
        let padding = String(repeating: "x", count: 5000)
        var message = RepairMessage(key: Reconciler.makeKey())
        message.horizon = 0
        message.rows = Array(
            snapshot(positions: [positionRow("big", page: 1, at: Self.ago(1000)).replacingOccurrences(of: "}", with: #", "pad": "\#(padding)"}"#)])
                .utf8)
        let size = message.encoded().count
        let error = #expect(throws: CatalogError.self) { try peer.exchange(message.encoded()) }
        #expect(error?.exitStatus == 65, "\(String(describing: error))")
        #expect(
            error?.message.contains("one row of positions (user big)") == true && error?.message.contains("\(size) bytes") == true,
            "\(String(describing: error))")
        #expect(error?.hint?.contains("below \(size) bytes") == true, "\(String(describing: error))")
        // One request at the first bound's split (the whole row), then the bound halved once at most.
        #expect(Self.repairStatuses(serve).count <= 2, "\(serve.log)")
        #expect(serve.stop().status == 0)
    }

    @Test(
        "sync --repair: equal copies cost one round trip under 64 bytes each way; a snapshot file gets one warning and syncs; another database is repaired"
    )
    func repairAfterSync() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let key = try ServeKeys.make(box, "k")
        let serve = try Self.door(box, db: server, key: key)
        let tokenFile = try Self.edgeToken(box, key: key.privateKey)
        let source = "catalog+http://127.0.0.1:\(serve.port)/v1"
        let node = box.path("node.sqlite")
        let run = try box.run(["sync", "--json", "--repair", source, "--token-file", tokenFile], db: node)
        #expect(run.status == 0, "\(run)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let repair = try #require((object["sources"] as? [[String: Any]])?.first?["repair"] as? [String: Any], "\(run.stdout)")
        #expect(repair["roundTrips"] as? Int == 1, "\(repair)")
        #expect((repair["bytesSent"] as? Int ?? 99) <= 64 && (repair["bytesReceived"] as? Int ?? 99) <= 64, "\(repair)")
        #expect(repair["digest"] as? String == repair["sourceDigest"] as? String)
        // Silent on success, as sync is: the one summary line, no warning.
        let quiet = try box.run(["sync", "--quiet", "--repair", source, "--token-file", tokenFile], db: node)
        #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet)")

        // A user token: the serve answers it no repair; one warning, and its sync stands (probe or not).
        let userFile = box.path("ann.jwt")
        try ServeKeys.issue(box, key: key.privateKey, user: "ann").write(toFile: userFile, atomically: true, encoding: .utf8)
        chmod(userFile, 0o600)
        let user = try box.run(["sync", "--repair", source, "--token-file", userFile], db: box.path("phone.sqlite"))
        #expect(user.status == 0 && user.stderr.contains("cannot answer a repair"), "\(user)")
        #expect(!Self.repairStatuses(serve).contains(403), "\(serve.log)")

        // A snapshot file cannot answer a repair: one warning naming it, and the sync stands.
        let file = try box.write(snapshot(positions: [positionRow("dee", page: 1, at: Self.ago(1000))]), to: "one.json")
        let snap = try box.run(["sync", "--json", "--repair", file], db: node)
        #expect(snap.status == 0, "\(snap)")
        #expect(snap.stderr.contains("cannot answer a repair") && snap.stderr.contains("one.json"), "\(snap.stderr)")
        #expect(!snap.stdout.contains(#""repair""#) && snap.stdout.contains(#""positionsApplied":1"#), "\(snap.stdout)")

        // Another catalog database is repaired both ways (it has no feed to sync from).
        let other = try box.seededDatabase("other.sqlite")
        try Self.deliver(box, 30, prefix: "other-", to: other)
        let db = try box.run(["sync", "--json", "--repair", other], db: node)
        #expect(db.status == 0, "\(db)")
        let received = (try JSONSerialization.jsonObject(with: Data(db.stdout.utf8)) as? [String: Any]).flatMap {
            ($0["sources"] as? [[String: Any]])?.first?["repair"] as? [String: Any]
        }
        // Its 30 rows, and its landmarks and ann, imported later than this node's.
        #expect((received?["rowsReceived"] as? Int ?? 0) >= 30, "\(db.stdout)")
        #expect(try Self.digest(node) == Self.digest(other))
        #expect(serve.stop().status == 0)
    }

    /// The positions each recorded cycle of `sync --follow --json` read, summed, and the repairs it ran.
    static func followed(_ stdout: String) -> (positionsSeen: Int, repairs: [[String: Any]]) {
        let cycles = jsonLines(stdout)
        let seen = cycles.reduce(0) { $0 + ($1["positionsSeen"] as? Int ?? 0) }
        let repairs = cycles.flatMap { ($0["sources"] as? [[String: Any]] ?? []).compactMap { $0["repair"] as? [String: Any] } }
        return (seen, repairs)
    }

    @Test(
        "a serve restored from an old backup: sync --follow --repair converges by the repair's rows, not a full re-read (which a plain sync does)"
    )
    func serveRestored() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        try Self.deliver(box, 2000, prefix: "u-", to: server)
        let key = try ServeKeys.make(box, "k")
        var serve = try Self.door(box, db: server, key: key)
        let port = serve.port
        let tokenFile = try Self.edgeToken(box, key: key.privateKey)
        let source = "catalog+http://127.0.0.1:\(port)/v1"
        let node = box.path("node.sqlite")
        #expect(try box.run(["sync", "--quiet", source, "--token-file", tokenFile], db: node).status == 0)
        let backup = box.path("server-backup.sqlite")
        #expect(try box.run(["backup", "--output", backup], db: server).status == 0)
        // After the backup: rows written on both sides and synced, which the restored serve lacks.
        for u in ["a", "b", "c", "d", "e"] {
            #expect(try box.run(["position", "set", "--user", "node-\(u)", "--page", "2"], db: node).status == 0)
            #expect(try box.run(["position", "set", "--user", "srv-\(u)", "--page", "3"], db: server).status == 0)
        }
        // Serve sees another process's commits at its next probe of the file: sync until the node has them.
        let caughtUp = try Waits.waitFor(20) {
            try box.run(["sync", "--quiet", source, "--token-file", tokenFile], db: node).status == 0
                && Self.digest(node) == Self.digest(server)
        }
        #expect(caughtUp != nil)

        func restore() throws {
            #expect(serve.stop().status == 0)
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: server + suffix) }
            try FileManager.default.copyItem(atPath: backup, toPath: server)
            // The node's cursor is past the restored sequence (or names the new id serve takes when its
            // mark says so): either way the serve forgot it.
            serve = try Self.door(box, db: server, key: key, port: port)
        }
        try restore()
        let follower = try FollowTests.follower(box, db: node, [source, "--token-file", tokenFile, "--repair", "--json", "--interval", "30s"])
        defer { follower.stop() }
        // Converged, and the cycle that ran the repair (or its check) printed.
        let converged = try Waits.waitFor(30) {
            try Self.digest(node) == Self.digest(server)
                && String(decoding: (try? Data(contentsOf: follower.stdout)) ?? Data(), as: UTF8.self).contains(#""repair":{"#)
        }
        let run = FollowTests.terminate(follower)
        #expect(converged != nil, "\(run)")
        #expect(run.status == 0, "\(run)")
        #expect(run.stderr.contains("the server no longer holds what this database last saw"), "\(run.stderr)")
        let (seen, repairs) = Self.followed(run.stdout)
        // The ten rows the restored serve lacked went by the repair; nothing of the 2,016 was read again.
        #expect(seen < 100, "\(run.stdout)")
        #expect(repairs.first?["rowsSent"] as? Int == 10, "\(repairs)")
        #expect((repairs.first?["roundTrips"] as? Int ?? 99) <= 4, "\(repairs)")
        // It goes on incrementally: a write here is pushed alone, and the pull reads at most the ten rows the
        // repair sent there, once, as stale (the node writes, not another process on the serve's database,
        // which the serve notices only at its next probe of the file).
        #expect(try box.run(["position", "set", "--user", "node-f", "--page", "1"], db: node).status == 0)
        let next = try box.run(["sync", "--json", source, "--token-file", tokenFile], db: node)
        #expect(next.status == 0 && next.stdout.contains(#""sent":1,"written":1"#), "\(next.stdout)")
        #expect(((try JSONSerialization.jsonObject(with: Data(next.stdout.utf8)) as? [String: Any])?["positionsSeen"] as? Int ?? 9999) <= 11)
        #expect(try HubSupport.edgePositions(server).contains { $0.hasPrefix("node-f|1|") })
        #expect(try Self.digest(node) == Self.digest(server))

        // The same restore without --repair: everything is read again.
        try restore()
        let plain = try box.run(["sync", "--json", source, "--token-file", tokenFile], db: node)
        #expect(plain.status == 0, "\(plain)")
        #expect(((try JSONSerialization.jsonObject(with: Data(plain.stdout.utf8)) as? [String: Any])?["positionsSeen"] as? Int ?? 0) >= 2000)
        #expect(serve.stop().status == 0)
    }

    @Test("a node restored from an old backup: sync --follow --repair converges reading only what changed since, and the check costs one round trip")
    func nodeRestored() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        try Self.deliver(box, 2000, prefix: "u-", to: server)
        let key = try ServeKeys.make(box, "k")
        let serve = try Self.door(box, db: server, key: key)
        let tokenFile = try Self.edgeToken(box, key: key.privateKey)
        let source = "catalog+http://127.0.0.1:\(serve.port)/v1"
        let node = box.path("node.sqlite")
        #expect(try box.run(["sync", "--quiet", source, "--token-file", tokenFile], db: node).status == 0)
        let backup = box.path("node-backup.sqlite")
        #expect(try box.run(["backup", "--output", backup], db: node).status == 0)
        for u in ["a", "b", "c", "d", "e"] {
            #expect(try box.run(["position", "set", "--user", "node-\(u)", "--page", "2"], db: node).status == 0)
            #expect(try box.run(["position", "set", "--user", "srv-\(u)", "--page", "3"], db: server).status == 0)
        }
        #expect(try box.run(["sync", "--quiet", source, "--token-file", tokenFile], db: node).status == 0)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: node + suffix) }
        try FileManager.default.copyItem(atPath: backup, toPath: node)
        #expect(try Self.digest(node) != Self.digest(server))

        let follower = try FollowTests.follower(box, db: node, [source, "--token-file", tokenFile, "--repair", "--json", "--interval", "30s"])
        defer { follower.stop() }
        // Converged, and the cycle that ran the repair (or its check) printed.
        let converged = try Waits.waitFor(30) {
            try Self.digest(node) == Self.digest(server)
                && String(decoding: (try? Data(contentsOf: follower.stdout)) ?? Data(), as: UTF8.self).contains(#""repair":{"#)
        }
        let run = FollowTests.terminate(follower)
        #expect(converged != nil, "\(run)")
        #expect(run.status == 0, "\(run)")
        let (seen, repairs) = Self.followed(run.stdout)
        // The ten rows written since the backup, read once; then the check finds the copies equal.
        #expect(seen == 10, "\(run.stdout)")
        #expect(repairs.count == 1 && repairs.first?["roundTrips"] as? Int == 1, "\(repairs)")
        #expect((repairs.first?["bytesSent"] as? Int ?? 99) + (repairs.first?["bytesReceived"] as? Int ?? 99) <= 64, "\(repairs)")
        #expect(serve.stop().status == 0)
    }
}
