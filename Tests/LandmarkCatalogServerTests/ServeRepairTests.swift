import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// `catalog repair catalog+http://…/v1` against a real serve (docs/repair.md §5, docs/protocol.md §6b):
/// the built `catalog` on both sides, tokens from `catalog token issue`.
@Suite("Repair through serve: POST /v1/repair", .serialized)
struct ServeRepairTests {
    /// A serve over `server` with an edge and a user token written to files (mode 0600).
    struct Door {
        let serve: ServeProcess
        let edgeFile: String
        let userFile: String
        let edge: String
        let user: String
        var source: String { "catalog+http://127.0.0.1:\(serve.port)/v1" }
        var url: String { serve.base + "/v1/repair" }

        init(_ box: Sandbox, server: String, extra: [String] = []) throws {
            let key = try ServeKeys.make(box, "k")
            serve = try ServeProcess(box, db: server, keys: [key.publicKey], extra: extra)
            edge = try ServeKeys.issue(box, key: key.privateKey, user: "node-1", extra: ["--scope", "edge"])
            user = try ServeKeys.issue(box, key: key.privateKey, user: "ann")
            edgeFile = box.path("edge.jwt")
            userFile = box.path("user.jwt")
            for (token, file) in [(edge, edgeFile), (user, userFile)] {
                try token.write(toFile: file, atomically: true, encoding: .utf8)
                chmod(file, 0o600)
            }
        }
    }

    /// The stamp text `ageMilliseconds` before now (negative: ahead of now).
    static func ago(_ ageMilliseconds: Int64) -> String {
        Timestamp.format(milliseconds: Int64(Date().timeIntervalSince1970 * 1000) - ageMilliseconds)
    }

    /// Merges a snapshot of `positions` into `db` with `catalog sync FILE`.
    static func deliver(_ box: Sandbox, _ positions: [String], to db: String, name: String, extra: [String] = []) throws {
        let file = try box.write(snapshot(positions: positions), to: name)
        let r = try box.run(["sync", "--quiet", file] + extra, db: db)
        try #require(r.status == 0, "\(r)")
    }

    /// `catalog status --verify-digest --json` of `db`: the digest, and whether the kept one equals its recomputation.
    static func digest(_ box: Sandbox, _ db: String) throws -> (digest: String, verified: Bool) {
        let r = try box.run(["status", "--verify-digest", "--json"], db: db)
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let kept = (object?["kept"] as? String) ?? (object?["digest"] as? String) ?? "?"
        return (kept, r.status == 0 && object?["equal"] as? Bool == true)
    }

    static func json(_ r: BinaryRun) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any]) ?? [:]
    }

    /// Two copies from one history of 300 users that then went apart: changed rows, rows missing on
    /// either side, tombstones on either side, an erasure on the node.
    static func overlapping(_ box: Sandbox) throws -> (server: String, node: String) {
        let server = try box.seededDatabase("server.sqlite")
        let node = box.path("node.sqlite")
        try FileManager.default.copyItem(atPath: server, toPath: node)
        let shared = (0..<300).map { positionRow("user-\($0)", page: $0 % 5, at: ago(120_000), node: "phone") }
        try deliver(box, shared, to: server, name: "shared-s.json")
        try deliver(box, shared, to: node, name: "shared-n.json")
        // The server: newer rows for 0–19, users only it has, tombstones for 40–44.
        try deliver(
            box,
            (0..<20).map { positionRow("user-\($0)", page: 9, at: ago(60_000), node: "phone-s") }
                + (0..<15).map { positionRow("only-server-\($0)", page: 1, at: ago(60_000)) }
                + (40..<45).map { positionRow("user-\($0)", page: 0, at: ago(60_000), deleted: true) },
            to: server, name: "server.json")
        // The node: newer rows for 100–129, users only it has, tombstones for 200–204, an erasure.
        try deliver(
            box,
            (100..<130).map { positionRow("user-\($0)", page: 8, at: ago(50_000), node: "phone-n") }
                + (0..<25).map { positionRow("only-node-\($0)", page: 2, at: ago(50_000)) }
                + (200..<205).map { positionRow("user-\($0)", page: 0, at: ago(50_000), deleted: true) },
            to: node, name: "node.json")
        let erased = try box.run(["user", "erase", "user-250"], db: node)
        try #require(erased.status == 0, "\(erased)")
        return (server, node)
    }

    @Test(
        "a node and a serve from overlapping histories converge through POST /v1/repair: both digests equal and verified, the erasure carried; a dry run changes neither; equal copies take 1 round trip"
    )
    func converges() throws {
        let box = try Sandbox()
        let (server, node) = try Self.overlapping(box)
        let door = try Door(box, server: server)
        let before = try (Self.digest(box, server), Self.digest(box, node))
        #expect(before.0.digest != before.1.digest)

        // A dry run: the rows move and are counted, neither side keeps them.
        let dry = try box.run(["repair", "--json", "--dry-run", door.source, "--token-file", door.edgeFile], db: node)
        #expect(dry.status == 0, "\(dry)")
        let dryReport = Self.json(dry)
        #expect((dryReport["rowsSent"] as? Int ?? 0) >= 30 + 25 + 5 + 1, "\(dry.stdout)")
        #expect((dryReport["rowsReceived"] as? Int ?? 0) >= 20 + 15 + 5, "\(dry.stdout)")
        #expect(dryReport["dryRun"] as? Bool == true)
        #expect(try Self.digest(box, server).digest == before.0.digest)
        #expect(try Self.digest(box, node).digest == before.1.digest)

        let run = try box.run(["repair", "--json", door.source, "--token-file", door.edgeFile], db: node)
        #expect(run.status == 0, "\(run)")
        let report = Self.json(run)
        #expect(report["digest"] as? String == report["sourceDigest"] as? String, "\(run.stdout)")
        let trips = report["roundTrips"] as? Int ?? 0
        #expect(trips >= 2 && trips <= 4, "\(run.stdout)")
        let after = try (Self.digest(box, server), Self.digest(box, node))
        #expect(after.0.digest == after.1.digest)
        #expect(after.0.verified && after.1.verified)
        #expect(report["digest"] as? String == after.1.digest)
        // The node's erasure reached the server; the server's tombstones and rows reached the node.
        #expect(try dumpRows(server, sql: "SELECT count(*) FROM positions WHERE user_id = 'user-250'").first?.first == .integer(0))
        #expect(try dumpRows(server, sql: "SELECT count(*) FROM user_erasures").first?.first == .integer(1))
        #expect(try dumpRows(node, sql: "SELECT page FROM positions WHERE user_id = 'user-3'").first?.first == .integer(9))
        #expect(try dumpRows(server, sql: "SELECT page FROM positions WHERE user_id = 'user-103'").first?.first == .integer(8))

        // Equal copies: one round trip, nothing moved.
        let again = try box.run(["repair", "--json", door.source, "--token-file", door.edgeFile], db: node)
        let againReport = Self.json(again)
        #expect(againReport["roundTrips"] as? Int == 1, "\(again.stdout)")
        #expect(againReport["rowsSent"] as? Int == 0 && againReport["rowsReceived"] as? Int == 0, "\(again.stdout)")
        let log = door.serve.accessLog("POST", "/v1/repair")
        #expect(log.allSatisfy { $0["status"] as? Int == 200 }, "\(log)")
        #expect(door.serve.stop().status == 0)
    }

    @Test(
        "a node that collected at a later horizon than the serve: the serve compares at the node's horizon (the opening message, then the header), the tombstones below it left out on both; the digests at it are equal"
    )
    func acrossHorizons() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let node = box.path("node.sqlite")
        try FileManager.default.copyItem(atPath: server, toPath: node)
        let shared = (0..<200).map { positionRow("user-\($0)", page: 1, at: Self.ago(1_800_000)) }
        let dead = (0..<20).map { positionRow("user-\($0)", page: 0, at: Self.ago(1_200_000), deleted: true) }
        for db in [server, node] {
            try Self.deliver(box, shared, to: db, name: "shared.json")
            try Self.deliver(box, dead, to: db, name: "dead.json")
        }
        let gc = try box.run(["gc", "--horizon", "10m", "--json"], db: node)
        #expect(gc.status == 0, "\(gc)")
        // Differences above the horizon, so the exchange goes on past the opening message.
        try Self.deliver(
            box, (100..<140).map { positionRow("user-\($0)", page: 7, at: Self.ago(60_000)) }, to: server, name: "server.json")
        try Self.deliver(box, (0..<10).map { positionRow("late-\($0)", page: 2, at: Self.ago(30_000)) }, to: node, name: "node.json")
        let door = try Door(box, server: server)
        let run = try box.run(["repair", "--json", door.source, "--token-file", door.edgeFile], db: node)
        #expect(run.status == 0, "\(run)")
        let report = Self.json(run)
        #expect((report["roundTrips"] as? Int ?? 0) >= 2, "\(run.stdout)")
        #expect(report["rowsSent"] as? Int == 10 && report["rowsReceived"] as? Int == 40, "\(run.stdout)")
        #expect(report["digest"] as? String == report["sourceDigest"] as? String, "\(run.stdout)")
        // The serve still holds its tombstones: below the session's horizon, they took no part.
        #expect(try dumpRows(server, sql: "SELECT count(*) FROM positions WHERE deleted = 1").first?.first == .integer(20))
        #expect(try Self.digest(box, node).verified)
        #expect(door.serve.stop().status == 0)
    }

    @Test(
        "POST /v1/repair refuses in the JSON error shape: no token 401, a user token 403 (catalog repair exits 77), garbage 400 malformed_message, a later message without its key 400, JSON 415, over --max-body 413"
    )
    func refusals() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let node = try box.seededDatabase("node.sqlite")
        let door = try Door(box, server: server, extra: ["--max-body", "4096"])
        let binary = "application/octet-stream"

        let none = try ServeCurl.post(door.url, token: nil, body: "x", contentType: binary)
        #expect(none.status == 401 && none.errorCode == "invalid_token", "\(none)")
        let user = try ServeCurl.post(door.url, token: door.user, body: "x", contentType: binary)
        #expect(user.status == 403 && user.errorCode == "insufficient_scope", "\(user)")
        let misplaced = try box.run(["repair", server, "--token-file", door.edgeFile], db: node)
        #expect(misplaced.status == 64 && misplaced.stderr.contains("--token-file"), "\(misplaced)")
        let byUser = try box.run(["repair", door.source, "--token-file", door.userFile], db: node)
        #expect(byUser.status == 77 && byUser.stderr.contains("edge token"), "\(byUser)")

        let garbage = try ServeCurl.post(door.url, token: door.edge, body: "garbage", contentType: binary)
        #expect(garbage.status == 400 && garbage.errorCode == "malformed_message", "\(garbage)")
        // A message after the opening one (no key in it) without the key header.
        let later = box.path("later.bin")
        try Data(RepairMessage().encoded()).write(to: URL(fileURLWithPath: later))
        let keyless = try ServeCurl.run([
            "-H", "Authorization: Bearer \(door.edge)", "-H", "Content-Type: \(binary)", "--data-binary", "@" + later, door.url,
        ])
        #expect(keyless.status == 400 && keyless.errorField == "Catalog-Repair-Key", "\(keyless)")
        let asJSON = try ServeCurl.post(door.url, token: door.edge, body: "{}")
        #expect(asJSON.status == 415 && asJSON.errorCode == "unsupported_media_type", "\(asJSON)")
        let big = try box.write(String(repeating: "x", count: 5000), to: "big.bin")
        let tooBig = try ServeCurl.run([
            "-H", "Authorization: Bearer \(door.edge)", "-H", "Content-Type: \(binary)", "--data-binary", "@" + big, door.url,
        ])
        #expect(tooBig.status == 413 && tooBig.errorCode == "body_too_large", "\(tooBig)")
        #expect(door.serve.stop().status == 0)
    }

    @Test(
        "rows are refused over repair as over sync: the remote's --allow landmarks keeps the serve's positions out of the node; a row stamped past the serve's drift allowance is quarantined there"
    )
    func sameRules() throws {
        let box = try Sandbox()
        let server = try box.seededDatabase("server.sqlite")
        let node = box.path("node.sqlite")
        try FileManager.default.copyItem(atPath: server, toPath: node)
        let door = try Door(box, server: server)
        try Self.deliver(box, [positionRow("srv", page: 4, at: Self.ago(1_000))], to: server, name: "srv.json")
        // A row an hour ahead: the node takes it (its own --max-drift), the serve's 5 min do not.
        try Self.deliver(box, [positionRow("ahead", page: 6, at: Self.ago(-3_600_000))], to: node, name: "ahead.json", extra: ["--max-drift", "2h"])

        // The node's grant for this serve: landmarks only.
        let added = try box.run(["remote", "add", "door", door.source, "--token-file", door.edgeFile, "--allow", "landmarks"], db: node)
        #expect(added.status == 0, "\(added)")
        let run = try box.run(["repair", "--json", door.source], db: node)
        #expect(run.status == 0, "\(run)")
        let report = Self.json(run)
        #expect((report["rowsReceived"] as? Int ?? 0) >= 1, "\(run.stdout)")
        #expect(report["rowsApplied"] as? Int == 0, "\(run.stdout)")
        #expect(try dumpRows(node, sql: "SELECT count(*) FROM positions WHERE user_id = 'srv'").first?.first == .integer(0))
        // The serve quarantined the row ahead instead of applying it, as its POST /v1/positions does.
        #expect(try dumpRows(server, sql: "SELECT count(*) FROM positions WHERE user_id = 'ahead'").first?.first == .integer(0))
        #expect(try dumpRows(server, sql: "SELECT count(*) FROM sync_quarantine WHERE row_key = 'ahead'").first?.first == .integer(1))
        #expect(report["digest"] as? String != report["sourceDigest"] as? String, "\(run.stdout)")
        #expect(door.serve.stop().status == 0)
    }
}
