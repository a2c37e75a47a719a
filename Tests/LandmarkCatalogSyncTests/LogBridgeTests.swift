import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// A reader of a snapshot log crossing the new generation an erasure starts over its bridge, without the
/// base (docs/log-format.md §4), with the built binary on real files.
@Suite("Log bridge: across an erasure without the base", .serialized)
struct LogBridgeTests {
    /// The publisher: the seed landmarks, ann, the erasable user and a keeper on page 1.
    static func publisher(_ box: Sandbox) throws -> String {
        let db = try box.seededDatabase("publisher.sqlite")
        for user in [ErasureTraces.user, "keeper"] {
            let set = try box.run(["position", "set", "--user", user, "--page", "1"], db: db)
            try #require(set.status == 0, "\(set)")
        }
        return db
    }

    /// `sync --json`'s object.
    static func json(_ run: BinaryRun) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
    }

    /// The bytes `sync --json` fetched from its only source.
    static func fetched(_ run: BinaryRun) throws -> Int? {
        let sources = try #require(try json(run)["sources"] as? [[String: Any]], "\(run)")
        return sources.first?["bytes"] as? Int
    }

    /// `status --json`'s digest.
    static func digest(_ box: Sandbox, _ db: String) throws -> String? {
        try json(try box.run(["status", "--json"], db: db))["digest"] as? String
    }

    /// The manifest in `log`, parsed, with its size in bytes.
    static func manifest(_ log: String) throws -> (LogManifest, Int) {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: log + "/manifest.json")))
        return (try LogManifest.parse(bytes, source: log), bytes.count)
    }

    /// Runs `arguments` and requires exit 0.
    @discardableResult
    static func ok(_ box: Sandbox, _ arguments: [String], db: String) throws -> BinaryRun {
        let run = try box.run(arguments, db: db)
        try #require(run.status == 0, "\(arguments): \(run)")
        return run
    }

    @Test("a reader one delta behind follows the log across an erasure over the bridge: no base, the publisher's digest, no trace of the user")
    func acrossTheErasure() throws {
        let box = try Sandbox()
        let publisher = try Self.publisher(box)
        let reader = box.path("reader.sqlite")
        let log = box.path("log")
        try Self.ok(box, ["publish", log], db: publisher)
        try Self.ok(box, ["sync", log], db: reader)
        #expect(ErasureTraces.traces(reader).reduce(0, +) > 0, "the reader held the user before the erasure")
        // A delta the reader does not read: its cursor stays one delta behind the old generation's end.
        try Self.ok(box, ["position", "set", "--user", "keeper", "--page", "0"], db: publisher)
        try Self.ok(box, ["publish", log], db: publisher)
        let (old, _) = try Self.manifest(log)
        try Self.ok(box, ["user", "erase", ErasureTraces.user], db: publisher)
        try Self.ok(box, ["position", "set", "--user", "later", "--page", "1"], db: publisher)
        let published = try Self.ok(box, ["publish", log, "--json"], db: publisher)
        let (new, manifestBytes) = try Self.manifest(log)
        let bridge = try #require(new.bridge, "an erasure alone started the generation: \(new)")
        let said = try #require(try Self.json(published)["bridge"] as? [String: Any], "\(published)")
        #expect(said["from"] as? String == old.generation && said["name"] as? String == bridge.file.name, "\(said)")
        #expect(new.generation != old.generation && bridge.generation == old.generation)
        #expect(bridge.file.from == old.base.through && bridge.file.through == new.base.through)
        #expect(bridge.file.bytes < new.base.bytes)
        #expect(ErasureTraces.occurrences(of: ErasureTraces.user, in: log + "/" + bridge.file.name) == 0)

        let crossed = try Self.ok(box, ["sync", log, "--json"], db: reader)
        #expect(try Self.fetched(crossed) == manifestBytes + Int(bridge.file.bytes), "the manifest and the bridge, no base: \(crossed)")
        #expect(try Self.json(crossed)["erasuresApplied"] as? Int == 1, "\(crossed)")
        #expect(try Self.digest(box, reader) == Self.digest(box, publisher))
        #expect(ErasureTraces.traces(reader) == [0, 0, 0])
        // The cursor is the new generation's: the next delta of it is all the next sync fetches.
        try Self.ok(box, ["position", "set", "--user", "keeper", "--page", "1"], db: publisher)
        try Self.ok(box, ["publish", log], db: publisher)
        let (next, nextBytes) = try Self.manifest(log)
        #expect(next.generation == new.generation && next.bridge == new.bridge && next.deltas.count == 1)
        let after = try Self.ok(box, ["sync", log, "--json"], db: reader)
        #expect(try Self.fetched(after) == nextBytes + Int(next.deltas[0].bytes), "\(after)")
        #expect(try Self.digest(box, reader) == Self.digest(box, publisher))
    }

    @Test("a reader two generations behind (the bridge leads from a generation it never read) fetches the base, and ends the same")
    func tooFarBehind() throws {
        let box = try Sandbox()
        let publisher = try Self.publisher(box)
        let reader = box.path("reader.sqlite")
        let log = box.path("log")
        try Self.ok(box, ["publish", log], db: publisher)
        try Self.ok(box, ["sync", log], db: reader)
        try Self.ok(box, ["user", "erase", ErasureTraces.user], db: publisher)
        try Self.ok(box, ["publish", log], db: publisher)
        try Self.ok(box, ["user", "erase", "keeper"], db: publisher)
        try Self.ok(box, ["publish", log], db: publisher)
        let (manifest, manifestBytes) = try Self.manifest(log)
        #expect(manifest.bridge != nil)
        let run = try Self.ok(box, ["sync", log, "--json"], db: reader)
        #expect(try Self.fetched(run) == manifestBytes + Int(manifest.base.bytes), "\(run)")
        #expect(try Self.digest(box, reader) == Self.digest(box, publisher))
        #expect(ErasureTraces.traces(reader) == [0, 0, 0])
    }

    @Test("a signed log: a tampered bridge is refused (65) and a changed link fails the signature (77); nothing merged, the cursor kept")
    func signedTamperedBridge() throws {
        let box = try Sandbox()
        let publisher = try Self.publisher(box)
        let reader = box.path("reader.sqlite")
        let log = box.path("log")
        let keys = try Self.ok(box, ["key", "generate", "--output", box.path("k.key")], db: publisher)
        let line = try #require(keys.stdout.split(separator: "\n").last.map(String.init))
        try Self.ok(box, ["publish", log, "--sign", box.path("k.key")], db: publisher)
        try Self.ok(box, ["remote", "add", "signed", log, "--trust", line], db: reader)
        try Self.ok(box, ["sync"], db: reader)
        try Self.ok(box, ["user", "erase", ErasureTraces.user], db: publisher)
        try Self.ok(box, ["publish", log, "--sign", box.path("k.key")], db: publisher)
        let (manifest, _) = try Self.manifest(log)
        let bridge = try #require(manifest.bridge)
        let path = log + "/" + bridge.file.name
        let good = try Data(contentsOf: URL(fileURLWithPath: path))
        var bad = good
        bad[bad.count / 2] ^= 0x01
        try bad.write(to: URL(fileURLWithPath: path))
        let before = (try Self.digest(box, reader), try Trust.cursor(reader, source: log + "/manifest.json"))
        #expect(before.1.count == 1)
        let refused = try box.run(["sync"], db: reader)
        #expect(refused.status == 65 && refused.stderr.contains("SHA-256"), "\(refused)")
        #expect(try Self.digest(box, reader) == before.0, "nothing merged")
        #expect(try Trust.cursor(reader, source: log + "/manifest.json") == before.1, "the cursor kept")
        #expect(ErasureTraces.traces(reader).reduce(0, +) > 0)
        try good.write(to: URL(fileURLWithPath: path))
        // The link is in the signed bytes: moving it makes the signature fail.
        let manifestURL = URL(fileURLWithPath: log + "/manifest.json")
        let signed = try Data(contentsOf: manifestURL)
        let text = String(decoding: signed, as: UTF8.self)
        let moved = text.replacingOccurrences(of: "\"from\":\(bridge.file.from),\"generation\"", with: "\"from\":0,\"generation\"")
        #expect(moved != text)
        try Data(moved.utf8).write(to: manifestURL)
        let forged = try box.run(["sync"], db: reader)
        #expect(forged.status == 77, "\(forged)")
        #expect(try Trust.cursor(reader, source: log + "/manifest.json") == before.1, "the cursor kept")
        try signed.write(to: manifestURL)
        let crossed = try Self.ok(box, ["sync", "--json"], db: reader)
        #expect(try Self.fetched(crossed).map { $0 < Int(manifest.base.bytes) } == true, "\(crossed)")
        #expect(try Self.digest(box, reader) == Self.digest(box, publisher))
        #expect(ErasureTraces.traces(reader) == [0, 0, 0])
    }

    @Test(
        "over real nginx: the reader's requests across the erasure are the manifest and the bridge, never the new base",
        .enabled(if: NginxServer.available, "nginx is not installed"))
    func overNginx() throws {
        let box = try Sandbox()
        let nginx = try NginxServer()
        let publisher = try Self.publisher(box)
        let reader = box.path("reader.sqlite")
        let log = nginx.logDirectory.path
        try Self.ok(box, ["publish", log], db: publisher)
        try Self.ok(box, ["sync", nginx.url("manifest.json")], db: reader)
        try Self.ok(box, ["user", "erase", ErasureTraces.user], db: publisher)
        try Self.ok(box, ["publish", log], db: publisher)
        let (manifest, _) = try Self.manifest(log)
        let bridge = try #require(manifest.bridge)
        let before = try nginx.requests(atLeast: 2).count
        try Self.ok(box, ["sync", nginx.url("manifest.json")], db: reader)
        let uris = try nginx.requests(atLeast: before + 2).dropFirst(before).map(\.uri)
        #expect(uris.contains("/catalog/" + bridge.file.name), "\(uris)")
        #expect(!uris.contains { $0.contains("base-") }, "\(uris)")
        #expect(try Self.digest(box, reader) == Self.digest(box, publisher))
        #expect(ErasureTraces.traces(reader) == [0, 0, 0])
    }

    @Test("the manifest's bridge: written and read back the same; one not ending at the base (65) or misnamed (refused) is not taken")
    func manifestShape() throws {
        let sha = String(repeating: "ab", count: 32)
        let g = "g20261207T010000Z-000002"
        let base = LogManifest.File(name: "base-\(g)-9-\(sha.prefix(12)).json", bytes: 900, sha256: sha, from: 0, through: 9)
        let file = LogManifest.File(name: "delta-\(g)-4-9-\(sha.prefix(12)).json", bytes: 90, sha256: sha, from: 4, through: 9)
        var manifest = LogManifest(node: "n-1", generation: g, through: 9, base: base, deltas: [])
        manifest.bridge = .init(generation: "g20261207T000000Z-000001", file: file)
        let bytes = manifest.bytes
        #expect(try LogManifest.parse(bytes, source: "m") == manifest)
        #expect(LogReader.unproven(manifest, source: "m") == nil)
        var misnamed = manifest
        misnamed.bridge?.file.name = "delta-\(g)-0-9-\(sha.prefix(12)).json"
        #expect(LogReader.unproven(misnamed, source: "m") != nil)
        let short = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "-4-9-", with: "-4-8-")
            .replacingOccurrences(of: "\"through\":9},\n\"deltas", with: "\"through\":8},\n\"deltas")
        #expect(short != String(decoding: bytes, as: UTF8.self))
        #expect(throws: CatalogError.self) { try LogManifest.parse(Array(short.utf8), source: "m") }
    }
}
