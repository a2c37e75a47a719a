import CatalogTestSupport
import Foundation
import Synchronization
import Testing

@testable import LandmarkCatalog
@_spi(Testing) @testable import LandmarkCatalogSync

@Suite("Trust: signed logs and write grants", .serialized)
struct TrustTests {
    @Test("Ed25519 through libcrypto: RFC 8032 test vector 1; BLAKE2b-512 of \"abc\" (RFC 7693 appendix A)")
    func primitives() throws {
        func hex(_ s: String) -> [UInt8] {
            var out: [UInt8] = []
            var it = s.makeIterator()
            while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
            return out
        }
        let seed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
        #expect(Ed25519.publicKey(seed: seed) == hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
        let signature = try #require(Ed25519.sign([], seed: seed))
        #expect(
            signature
                == hex(
                    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
                ))
        #expect(Ed25519.verify(signature, of: [], publicKey: hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")))
        #expect(!Ed25519.verify(signature, of: [0], publicKey: hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")))
        #expect(
            BLAKE2b512.hash(Array("abc".utf8))
                == hex(
                    "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
                ))
    }

    @Test("key generate: secret key 0600, FILE.pub 0644, the public key printed and nothing secret; an existing key is never replaced")
    func keyGenerate() throws {
        let dir = Support.temporaryDirectory()
        let path = dir.appending(path: "signing.key").path
        let r = runCLI(["key", "generate", "--output", path])
        #expect(r.status == 0 && r.stderr.isEmpty)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(path + ".pub", &info) == 0 && info.st_mode & 0o777 == 0o644)
        let pub = try String(contentsOfFile: path + ".pub", encoding: .utf8)
        #expect(r.stdout == pub)
        let key = try MinisignSecretKey.load(path: path)
        #expect(pub == "untrusted comment: minisign public key \(key.publicKey.id)\n\(key.publicKey.line)\n")
        let secretLine = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")[1]
        #expect(!r.stdout.contains(secretLine) && !r.stdout.contains(String(secretLine.dropFirst(80).prefix(40))))
        // Run again: refused (73), the old pair kept.
        let again = runCLI(["key", "generate", "--output", path])
        #expect(again.status == 73 && again.stderr.contains("refusing to replace a key"))
        #expect(try String(contentsOfFile: path + ".pub", encoding: .utf8) == pub)
        #expect(runCLI(["key", "generate"]).status == 64)
    }

    @Test("a secret key others may read is refused (66), nothing published; secrets never in any output")
    func secretKeyPermissions() throws {
        let dir = Support.temporaryDirectory()
        let (secret, _) = try Trust.generate(dir, "k")
        let db = dir.appending(path: "a.sqlite").path
        #expect(runCLI(["import", Support.fixture("valid.json"), "--quiet"], db: db).status == 0)
        let log = dir.appending(path: "log").path
        for mode in [0o644, 0o640, 0o604] as [mode_t] {
            chmod(secret, mode)
            let r = runCLI(["publish", log, "--sign", secret], db: db)
            #expect(r.status == 66, "mode \(String(mode, radix: 8)): \(r.stderr)")
            #expect(r.stderr.contains("may be read by others") && r.stderr.contains("chmod 600"))
            #expect(!FileManager.default.fileExists(atPath: log + "/manifest.json"))
            let s = runCLI(["sync", "--publish", log, "--sign", secret], db: db)
            #expect(s.status == 66)
        }
        chmod(secret, 0o600)
        let secretText = try String(contentsOfFile: secret, encoding: .utf8)
        let secretLine = secretText.components(separatedBy: "\n")[1]
        var outputs: [CLIResult] = []
        outputs.append(runCLI(["publish", log, "--sign", secret], db: db))
        outputs.append(runCLI(["publish", log, "--sign", secret, "--json"], db: db))
        outputs.append(runCLI(["sync", "--publish", log, "--sign", secret, "--json"], db: db))
        outputs.append(runCLI(["status", "--json"], db: db))
        outputs.append(runCLI(["log", "--json"], db: db))
        // A damaged key is refused naming the file, not its content.
        let damaged = dir.appending(path: "damaged.key").path
        var line = Array(secretLine)
        line[100] = line[100] == "A" ? "B" : "A"
        try ("untrusted comment: x\n" + String(line) + "\n").write(toFile: damaged, atomically: false, encoding: .utf8)
        chmod(damaged, 0o600)
        let bad = runCLI(["publish", log, "--sign", damaged], db: db)
        #expect(bad.status == 65 && bad.stderr.contains("damaged"))
        outputs.append(bad)
        for (n, o) in outputs.enumerated() {
            #expect(o.status == 0 || n == outputs.count - 1, "\(o.stderr)")
            for text in [o.stdout, o.stderr] {
                #expect(!text.contains(secretLine) && !text.contains(String(secretLine.dropFirst(90).prefix(30))) && !text.contains(String(line)))
            }
        }
    }

    @Test("--sign: the signature is written before the manifest; an unchanged manifest keeps its signature; publishing unsigned removes it")
    func signingPublisher() throws {
        let dir = Support.temporaryDirectory()
        let (secret, line) = try Trust.generate(dir, "k")
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        let first = try Trust.publish(a, log, key: secret)
        #expect(first.written.suffix(2) == ["manifest.json.minisig", "manifest.json"])
        #expect(first.signedBy == (try MinisignPublicKey(text: line, source: "")).id)
        let sigURL = log.appending(path: "manifest.json.minisig")
        let sig = try Data(contentsOf: sigURL)
        let sigTime = try LogFixtures.mtime(sigURL)
        let signature = try MinisignSignature(text: String(decoding: sig, as: UTF8.self), source: "")
        let manifest = try LogFixtures.manifest(log)
        #expect(signature.trustedComment == "landmark-catalog-log node:node-a generation:\(manifest.generation) through:\(manifest.through)")
        let unchanged = try Trust.publish(a, log, key: secret)
        #expect(!unchanged.changed && unchanged.written.isEmpty)
        #expect(try Data(contentsOf: sigURL) == sig)
        let t = try LogFixtures.mtime(sigURL)
        #expect(t.tv_sec == sigTime.tv_sec && t.tv_nsec == sigTime.tv_nsec)
        // A manifest this key did not sign (unsigned, changed by someone else, another key's) is never
        // continued or signed over: a new generation starts.
        try FileManager.default.removeItem(at: sigURL)
        let resigned = try Trust.publish(a, log, key: secret)
        #expect(resigned.changed && resigned.newGeneration && resigned.manifest.generation != manifest.generation)
        // Someone who can write the directory changes the manifest: the publisher does not sign over it.
        let url = log.appending(path: "manifest.json")
        let tampered = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "\"node\":\"node-a\"", with: "\"node\":\"node-a\" ")
        try tampered.write(to: url, atomically: false, encoding: .utf8)
        let after = try Trust.publish(a, log, key: secret)
        #expect(after.newGeneration && after.manifest.generation != resigned.manifest.generation)
        #expect(try String(contentsOf: url, encoding: .utf8) != tampered)
        // Publishing a change unsigned removes the signature that no longer matches.
        _ = try Positions(a).setPosition(user: "bob", to: .page(0))
        _ = try Trust.publish(a, log)
        #expect(!FileManager.default.fileExists(atPath: sigURL.path))
        // --sign without a log to publish is a usage error.
        #expect(runCLI(["sync", "--sign", secret], db: a.path).status == 64)
    }

    /// Issue 25: a leftover `publish --sign old.key` beside a follower signing with the new key started a new
    /// generation over the follower's, 0.5 s later the follower one over it, and so on, without a word.
    @Test("two signers on one directory: a publish with another key than the manifest's exits 73, nothing written; --rotate-key switches keys")
    func twoSigners() throws {
        let dir = Support.temporaryDirectory()
        let (old, _) = try Trust.generate(dir, "old")
        let (new, newLine) = try Trust.generate(dir, "new")
        let newID = try MinisignPublicKey(text: newLine, source: "").id
        let oldID = try MinisignSecretKey.load(path: old).publicKey.id
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try Trust.publish(a, log, key: new)
        func files() throws -> [String: Data] {
            var all: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: log.path) where !name.hasPrefix(".") {
                all[name] = try Data(contentsOf: log.appending(path: name))
            }
            return all
        }
        // The leftover signer, with a change to publish: refused, and the directory is as the follower left it.
        _ = try Positions(a).setPosition(user: "bob", to: .page(0))
        let before = try files()
        let leftover = runCLI(["publish", log.path, "--sign", old], db: a.path)
        #expect(leftover.status == 73, "\(leftover)")
        #expect(leftover.stderr.contains("signed by key \(newID), and this publish signs with key \(oldID)"), "\(leftover.stderr)")
        #expect(leftover.stderr.contains("--rotate-key"), "\(leftover.stderr)")
        #expect(try files() == before)
        let json = runCLI(["sync", "--publish", log.path, "--sign", old, "--json"], db: a.path)
        #expect(json.status == 73, "\(json)")
        #expect(try files() == before)
        // The signer of the manifest goes on with a delta, as before: nothing was taken from it.
        let going = try Trust.publish(a, log, key: new)
        #expect(going.changed && !going.newGeneration)
        // A rotation on purpose: a new generation signed by the other key; then the first key is the second signer.
        _ = try Positions(a).setPosition(user: "bob", to: .page(1))
        let rotated = runCLI(["publish", log.path, "--sign", old, "--rotate-key", "--json"], db: a.path)
        #expect(rotated.status == 0, "\(rotated)")
        #expect(rotated.stdout.contains("\"newGeneration\":true"), "\(rotated.stdout)")
        #expect(FollowInProcessTests.signer(log) == oldID)
        _ = try Positions(a).setPosition(user: "bob", to: .page(0))
        #expect(runCLI(["publish", log.path, "--sign", new], db: a.path).status == 73)
        #expect(FollowInProcessTests.signer(log) == oldID)
        // An unsigned manifest is no signer's: the first --sign needs no --rotate-key (§2); --rotate-key needs --sign.
        #expect(runCLI(["publish", log.path, "--rotate-key"], db: a.path).status == 64)
        #expect(runCLI(["publish", log.path], db: a.path).status == 0)
        #expect(runCLI(["publish", log.path, "--sign", new], db: a.path).status == 0)
        #expect(FollowInProcessTests.signer(log) == newID)
    }

    @Test(
        "trusted remote: a flipped byte in the manifest, in the signature, or another key's signature → 77; nothing merged, cursor kept; the good source merges"
    )
    func tampering() throws {
        let dir = Support.temporaryDirectory()
        let (secret, line) = try Trust.generate(dir, "k")
        let (other, _) = try Trust.generate(dir, "other")
        let a = try Trust.publisher(dir, "a")
        let c = try Trust.publisher(dir, "c")
        let signedLog = dir.appending(path: "signed")
        let goodLog = dir.appending(path: "good")
        _ = try Trust.publish(c, goodLog)
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(runCLI(["remote", "add", "signed", signedLog.path, "--trust", line], db: consumer).status == 0)
        #expect(runCLI(["remote", "add", "good", goodLog.path], db: consumer).status == 0)
        let key = signedLog.path + "/manifest.json"
        // First a good signed sync, so the cursor is somewhere.
        _ = try Trust.publish(a, signedLog, key: secret)
        let first = Trust.sync(["--json"], db: consumer)
        #expect(first.status == 0, "\(first.stderr)")
        _ = try Positions(a).setPosition(user: "ann-a", to: .page(0))

        typealias Tamper = (URL) throws -> Void
        let cases: [(String, Tamper, String)] = [
            (
                "manifest",
                { log in
                    let url = log.appending(path: "manifest.json")
                    var text = try String(contentsOf: url, encoding: .utf8)
                    let range = try #require(text.range(of: "\"sha256\":\""))
                    let digit = text[range.upperBound]
                    text.replaceSubrange(range.upperBound...range.upperBound, with: digit == "0" ? "1" : "0")
                    try text.write(to: url, atomically: false, encoding: .utf8)
                }, "does not verify"
            ),
            ("signature", { log in try Trust.flipSignature(log.appending(path: "manifest.json.minisig").path, line: 1) }, "does not verify"),
            ("comment signature", { log in try Trust.flipSignature(log.appending(path: "manifest.json.minisig").path, line: 3) }, "does not verify"),
            (
                "trusted comment",
                { log in
                    let url = log.appending(path: "manifest.json.minisig")
                    let text = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "through:", with: "through:9")
                    try text.write(to: url, atomically: false, encoding: .utf8)
                }, "does not verify"
            ),
            (
                "another key",
                { log in
                    let store = try CatalogStore.open(path: a.path)
                    _ = try Trust.publish(store, log, key: other, rotate: true)
                }, "which this source does not trust"
            ),
        ]
        for (what, tamper, message) in cases {
            _ = try Trust.publish(a, signedLog, key: secret)
            try tamper(signedLog)
            _ = try Positions(c).setPosition(user: "carol-\(what.count)", to: .page(0))
            _ = try Trust.publish(c, goodLog)
            let before = try Trust.cursor(consumer, source: key)
            let landmarks = try dumpLandmarks(consumer)
            let r = Trust.sync(["--json"], db: consumer)
            #expect(r.status == 77, "\(what): \(r.stderr)")
            #expect(r.stderr.contains(message), "\(what): \(r.stderr)")
            #expect(try Trust.cursor(consumer, source: key) == before, "\(what): cursor moved")
            #expect(try dumpLandmarks(consumer) == landmarks, "\(what)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let sources = try #require(json["sources"] as? [[String: Any]])
            let bySource = Dictionary(uniqueKeysWithValues: sources.map { ($0["remote"] as? String ?? "", $0) })
            #expect(bySource["signed"]?["exitStatus"] as? Int == 77)
            #expect(bySource["good"]?["outcome"] as? String == "merged", "\(what)")
            // Nothing of the tampered source is in the consumer: ann-a is still on page 1.
            #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'ann-a'") == [[.integer(1)]], "\(what)")
        }
        // The message names the key that signed and the one trusted.
        let ids = (try MinisignSecretKey.load(path: other).publicKey.id, try MinisignPublicKey(text: line, source: "").id)
        let r = Trust.sync(["signed"], db: consumer)
        #expect(r.status == 77 && r.stderr.contains("signed by key \(ids.0)") && r.stderr.contains("trusts \(ids.1)"))
        // Signed properly again: merged.
        _ = try Trust.publish(a, signedLog, key: secret, rotate: true)
        #expect(Trust.sync(["signed"], db: consumer).status == 0)
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'ann-a'") == [[.integer(0)]])
    }

    @Test("trusted source unsigned → 77; a single snapshot or stdin with --trust → 77; a replayed older signed manifest changes nothing")
    func unsignedAndReplay() throws {
        let dir = Support.temporaryDirectory()
        let (secret, line) = try Trust.generate(dir, "k")
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try Trust.publish(a, log)
        let consumer = dir.appending(path: "consumer.sqlite").path
        let r = Trust.sync([log.path, "--trust", line], db: consumer)
        #expect(r.status == 77 && r.stderr.contains("not signed"), "\(r.stderr)")
        #expect(try dumpLandmarks(consumer) == [] && dumpPositions(consumer) == [])
        // No cursor stored (and, the database being new and empty, none left behind at all).
        #expect(try Trust.cursor(consumer, source: log.path + "/manifest.json").allSatisfy { $0 == [.null] })
        let snapshot = dir.appending(path: "snap.json").path
        try SnapshotExporter(a).exportSnapshot(toFile: snapshot)
        let s = Trust.sync([snapshot, "--trust", line], db: consumer)
        #expect(s.status == 77 && s.stderr.contains("a single snapshot file cannot be signed"))
        #expect(try dumpLandmarks(consumer) == [])

        // Replay: v1 signed and read, v2 signed and read, then v1 (and its signature) served again.
        _ = try Trust.publish(a, log, key: secret)
        #expect(Trust.sync([log.path, "--trust", line], db: consumer).status == 0)
        let v1 = (try Data(contentsOf: log.appending(path: "manifest.json")), try Data(contentsOf: log.appending(path: "manifest.json.minisig")))
        _ = try Positions(a).setPosition(user: "ann-a", to: .page(0))
        _ = try Trust.publish(a, log, key: secret)
        #expect(Trust.sync([log.path, "--trust", line], db: consumer).status == 0)
        let before = try Trust.state(consumer, source: log.path + "/manifest.json")
        try v1.0.write(to: log.appending(path: "manifest.json"))
        try v1.1.write(to: log.appending(path: "manifest.json.minisig"))
        let replay = Trust.sync([log.path, "--trust", line, "--json"], db: consumer)
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(replay.stdout.contains("\"outcome\":\"not-modified\"") && replay.stderr.contains("behind"))
        #expect(try Trust.state(consumer, source: log.path + "/manifest.json") == before)
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'ann-a'") == [[.integer(0)]])
    }

    /// Issue 25: a symbolic link to a trusted remote's directory escaped its trust and grant.
    @Test("a trusted remote's log however it is named (DIR/, DIR/manifest.json, a symbolic link): unsigned is 77, nothing merged")
    func trustBindsToIdentity() throws {
        let dir = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (_, line) = try Trust.generate(dir, "peer")
        let log = dir.appending(path: "log")
        let publisher = try Trust.publisher(dir, "a")
        _ = try Trust.publish(publisher, log)
        let link = dir.appending(path: "link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: log.path)
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(runCLI(["remote", "add", "peer", log.path, "--trust", line], db: consumer).status == 0)
        for name in [log.path, log.path + "/", log.path + "/manifest.json", link, link + "/", link + "/manifest.json"] {
            let r = Trust.sync([name], db: consumer)
            #expect(r.status == 77, "\(name): \(r.stderr)")
        }
        #expect(try dumpLandmarks(consumer).isEmpty && dumpPositions(consumer).isEmpty)
        #expect(SourceLocator.identity(ofKey: link + "/manifest.json") == SourceLocator.identity(ofKey: log.path))
        #expect(SourceLocator.identity(ofKey: dir.path + "/not-yet/manifest.json") == SourceLocator.identity(ofKey: log.path).dropLast(3) + "not-yet")
        #expect(SourceLocator.identity(ofKey: "https://h.example/log/manifest.json") == "https://h.example/log/manifest.json")
    }

    @Test("key rotation: trust old and new, switch the publisher, drop the old")
    func rotation() throws {
        let dir = Support.temporaryDirectory()
        let (old, oldLine) = try Trust.generate(dir, "old")
        let (new, newLine) = try Trust.generate(dir, "new")
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(
            runCLI(["remote", "add", "peer", log.path, "--trust", oldLine, "--trust", dir.appending(path: "new.key.pub").path], db: consumer).status
                == 0)
        let list = runCLI(["remote", "list"], db: consumer)
        let ids = try MinisignPublicKey(text: oldLine, source: "").id + "," + MinisignPublicKey(text: newLine, source: "").id
        #expect(list.stdout.contains("ALLOW") && list.stdout.contains(ids), "\(list.stdout)")
        _ = try Trust.publish(a, log, key: old)
        #expect(Trust.sync([], db: consumer).status == 0)
        _ = try Positions(a).setPosition(user: "ann-a", to: .page(0))
        _ = try Trust.publish(a, log, key: new, rotate: true)
        #expect(Trust.sync([], db: consumer).status == 0)
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'ann-a'") == [[.integer(0)]])
        // Drop the old key in place (issue 25: remove + add lost the cursor and made the URL be typed again):
        // the remote trusts the new one only, its cursor is kept; a manifest signed by the old one is refused.
        let cursorBefore = try dumpRows(consumer, sql: "SELECT * FROM sync_sources")
        let set = runCLI(["remote", "set", "peer", "--trust", newLine], db: consumer)
        #expect(set.status == 0 && set.stdout.isEmpty && set.stderr.isEmpty, "\(set)")
        #expect(try dumpRows(consumer, sql: "SELECT * FROM sync_sources") == cursorBefore)
        #expect(runCLI(["remote", "list"], db: consumer).stdout.contains(try MinisignPublicKey(text: newLine, source: "").id + "\n"))
        #expect(runCLI(["remote", "set", "peer"], db: consumer).status == 64)
        #expect(runCLI(["remote", "set", "nobody", "--allow", "positions"], db: consumer).status == 64)
        #expect(runCLI(["remote", "set", "peer", "--no-trust", "--trust", newLine], db: consumer).status == 64)
        _ = try Positions(a).setPosition(user: "ann-a", to: .page(1))
        _ = try Trust.publish(a, log, key: new)
        #expect(Trust.sync([], db: consumer).status == 0)
        _ = try Positions(a).setPosition(user: "ann-a", to: .page(0))
        _ = try Trust.publish(a, log, key: old, rotate: true)
        let r = Trust.sync([], db: consumer)
        #expect(r.status == 77)
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'ann-a'") == [[.integer(1)]])
        // Bad keys are refused when the remote is saved.
        #expect(runCLI(["remote", "add", "x", log.path, "--trust", "RWQnotakey"], db: consumer).status == 64)
        #expect(runCLI(["remote", "add", "x", "postgres://hub.example/catalog", "--trust", newLine], db: consumer).status == 64)
        #expect(runCLI(["remote", "add", "h", "postgres://hub.example/catalog"], db: consumer).status == 0)
        #expect(runCLI(["remote", "set", "h", "--trust", newLine], db: consumer).status == 64)
    }

    @Test("--allow positions against a source carrying landmark changes: landmarks untouched, positions merged, counts right (json and ledger)")
    func writeGrants() throws {
        let dir = Support.temporaryDirectory()
        let a = try Trust.publisher(dir, "a")
        _ = try Positions(a).setPosition(user: "bob", to: .page(0))
        let log = dir.appending(path: "log")
        _ = try Trust.publish(a, log)
        // The consumer has its own copy of the landmarks (older stamps), which the source would overwrite.
        let own = try LogFixtures.store(dir, "own", clock: ManualClock(testNow - 60_000))
        _ = try Importer(own).importLandmarks(from: .file(Support.fixture("valid.json")))
        let consumer = own.path
        let landmarksBefore = try dumpLandmarks(consumer)
        #expect(runCLI(["remote", "add", "pages", log.path, "--allow", "positions"], db: consumer).status == 0)
        let r = Trust.sync(["--json"], db: consumer)
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(json["notAllowed"] as? Int == 5)
        #expect(json["landmarksSeen"] as? Int == 5 && json["landmarksApplied"] as? Int == 0)
        #expect(json["positionsApplied"] as? Int == 2)
        #expect((json["sources"] as? [[String: Any]])?.first?["notAllowed"] as? Int == 5)
        #expect(try dumpLandmarks(consumer) == landmarksBefore)
        #expect(try dumpRows(consumer, sql: "SELECT user_id FROM positions ORDER BY user_id") == [[.text("ann-a")], [.text("bob")]])
        #expect(r.stderr.contains("not applied: landmark 1001") && r.stderr.contains("may write positions only"))
        #expect(try dumpRows(consumer, sql: "SELECT not_allowed FROM sync_runs ORDER BY id DESC LIMIT 1") == [[.integer(5)]])
        #expect(try dumpRows(consumer, sql: "SELECT not_allowed FROM sync_run_sources ORDER BY run_id DESC LIMIT 1") == [[.integer(5)]])
        let text = runCLI(["log"], db: consumer)
        #expect(text.stdout.contains("5 not allowed"))
        // --allow landmarks: the positions are the ones refused.
        let other = dir.appending(path: "other.sqlite").path
        #expect(runCLI(["remote", "add", "curated", log.path, "--allow", "landmarks"], db: other).status == 0)
        let l = Trust.sync(["--json"], db: other)
        let lj = try #require(try JSONSerialization.jsonObject(with: Data(l.stdout.utf8)) as? [String: Any])
        #expect(lj["notAllowed"] as? Int == 2 && lj["landmarksApplied"] as? Int == 5 && lj["positionsApplied"] as? Int == 0)
        #expect(try dumpPositions(other) == [])
        #expect(runCLI(["remote", "add", "x", log.path, "--allow", "everything"], db: other).status == 64)
    }

    /// Issue 25: moving a publisher to another host or path took `remote remove` + `remote add`, which lost the
    /// cursor (the log read again whole).
    @Test("remote edit --url: a moved log keeps its cursor (nothing read again); another kind starts afresh; a serve URL needs a token file")
    func editURLKeepsTheCursor() throws {
        let dir = Support.temporaryDirectory()
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try Trust.publish(a, log)
        let consumer = dir.appending(path: "consumer.sqlite").path
        #expect(runCLI(["remote", "add", "peer", log.path, "--allow", "positions"], db: consumer).status == 0)
        #expect(Trust.sync(["--quiet"], db: consumer).status == 0)
        let cursor = try dumpRows(consumer, sql: "SELECT kind, cursor, last_success_at FROM sync_sources WHERE source = '\(log.path)/manifest.json'")
        #expect(cursor.count == 1)
        // The publisher's directory moves (a mirror with the same files): the remote follows it.
        let moved = dir.appending(path: "moved-log")
        try FileManager.default.copyItem(at: log, to: moved)
        let edit = runCLI(["remote", "edit", "peer", "--url", moved.path], db: consumer)
        #expect(edit.status == 0 && edit.stdout.isEmpty && edit.stderr.isEmpty, "\(edit)")
        #expect(
            try dumpRows(consumer, sql: "SELECT kind, cursor, last_success_at FROM sync_sources WHERE source = '\(moved.path)/manifest.json'")
                == cursor)
        #expect(try dumpRows(consumer, sql: "SELECT count(*) FROM sync_sources WHERE source = '\(log.path)/manifest.json'") == [[.integer(0)]])
        let list = runCLI(["remote", "list", "--json"], db: consumer)
        #expect(list.stdout.contains(moved.path) && list.stdout.contains(#""allow":"positions""#), "\(list.stdout)")
        let again = Trust.sync(["--json"], db: consumer)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])
        #expect(json["landmarksSeen"] as? Int == 0 && json["positionsSeen"] as? Int == 0, "read again: \(again.stdout)")
        // A new change at the new place merges as usual.
        _ = try Positions(a).setPosition(user: "ann-a", to: .page(0))
        _ = try Trust.publish(a, moved)
        #expect(Trust.sync(["--quiet"], db: consumer).status == 0)
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'ann-a'") == [[.integer(0)]])
        // Another kind (a hub): no cursor carried, the old state dropped; a serve URL needs a token file.
        #expect(runCLI(["remote", "edit", "peer", "--url", "postgres://hub.example/catalog"], db: consumer).status == 0)
        #expect(try dumpRows(consumer, sql: "SELECT count(*) FROM sync_sources") == [[.integer(0)]])
        let serve = runCLI(["remote", "edit", "peer", "--url", "catalog+http://127.0.0.1:9/v1"], db: consumer)
        #expect(serve.status == 64 && serve.stderr.contains("--token-file"), "\(serve)")
        #expect(runCLI(["remote", "edit", "peer", "--url", "ftp://x/y"], db: consumer).status == 64)
        #expect(runCLI(["remote", "list", "--json"], db: consumer).stdout.contains("postgres://hub.example/catalog"))
    }

    /// Issue 25: with `--allow positions`, a peer that echoed back this node's own landmarks warned
    /// "not applied" for each of them at every cycle, though a row held with the same stamp changes nothing.
    @Test("--allow positions against a peer echoing this node's own landmarks: stale, not 'not allowed'; its positions merge")
    func echoIsNotAViolation() throws {
        let dir = Support.temporaryDirectory()
        let a = try Trust.publisher(dir, "a")
        let aLog = dir.appending(path: "a-log")
        _ = try Trust.publish(a, aLog)
        // b copies a's landmarks (a's stamps), sets a page of its own, and publishes all of it.
        let b = try LogFixtures.store(dir, "b")
        #expect(runCLI(["sync", aLog.path, "--quiet"], db: b.path, clock: ManualClock(testNow)).status == 0)
        #expect(runCLI(["position", "set", "--user", "carol", "--page", "1"], db: b.path, clock: ManualClock(testNow)).status == 0)
        let bLog = dir.appending(path: "b-log")
        #expect(runCLI(["publish", bLog.path], db: b.path, clock: ManualClock(testNow)).status == 0)
        #expect(runCLI(["remote", "add", "b", bLog.path, "--allow", "positions"], db: a.path, clock: ManualClock(testNow)).status == 0)
        let landmarksBefore = try dumpLandmarks(a.path)
        let r = Trust.sync(["--json"], db: a.path)
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let seen = json["landmarksSeen"] as? Int ?? 0
        #expect(seen >= 5, "\(r.stdout)")
        #expect(json["notAllowed"] as? Int == 0, "\(r.stdout)")
        #expect(json["landmarksApplied"] as? Int == 0 && (json["stale"] as? Int ?? 0) >= seen, "\(r.stdout)")
        #expect(!r.stderr.contains("not applied"), "\(r.stderr)")
        #expect(try dumpLandmarks(a.path) == landmarksBefore)
        #expect(try dumpRows(a.path, sql: "SELECT page FROM positions WHERE user_id = 'carol'") == [[.integer(1)]])
        // A landmark b changed itself is still refused, and named.
        #expect(runCLI(["import", Support.fixture("valid-one-change.json"), "--quiet"], db: b.path, clock: ManualClock(testNow)).status == 0)
        #expect(runCLI(["publish", bLog.path], db: b.path, clock: ManualClock(testNow)).status == 0)
        let changed = Trust.sync(["--json"], db: a.path)
        let cj = try #require(try JSONSerialization.jsonObject(with: Data(changed.stdout.utf8)) as? [String: Any])
        #expect(cj["notAllowed"] as? Int == 1, "\(changed.stdout)")
        #expect(changed.stderr.contains("not applied: landmark"), "\(changed.stderr)")
        #expect(try dumpLandmarks(a.path) == landmarksBefore)
    }

    @Test(
        "a reader that meets the signature of another version looks again (one fresh look; a few while the signed comment names another version), then 77"
    )
    func versionRace() throws {
        let dir = Support.temporaryDirectory()
        let key = MinisignSecretKey.generate()
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try LogPublisher(a).publishLog(to: log.path)
        let v1 = Array(try Data(contentsOf: log.appending(path: "manifest.json")))
        _ = try Positions(a).setPosition(user: "ann-a", to: .page(0))
        _ = try LogPublisher(a).publishLog(to: log.path)
        let v2 = Array(try Data(contentsOf: log.appending(path: "manifest.json")))
        /// Serves v2 as the manifest, and first the signature of v1 (the publisher mid-publish), then `later`.
        final class Racing: LogFileFetcher {
            let inner: DirectoryLogFetcher
            var signatures: [[UInt8]]
            var manifestFetches = 0
            init(_ inner: DirectoryLogFetcher, signatures: [[UInt8]]) {
                self.inner = inner
                self.signatures = signatures
            }
            var maxBytes: Int64 { inner.maxBytes }
            var manifestName: String { inner.manifestName }
            var bytesFetched: Int64 { inner.bytesFetched }
            func fetchManifest(validators: HTTPValidators?) throws -> (bytes: [UInt8], validators: HTTPValidators?)? {
                manifestFetches += 1
                return try inner.fetchManifest(validators: validators)
            }
            func fetchFile(_ file: LogManifest.File) throws -> any ChangeFeed { try inner.fetchFile(file) }
            func fetchSignature() throws -> [UInt8]? { signatures.count > 1 ? signatures.removeFirst() : signatures.first }
        }
        let old = Array(key.sign(v1, trustedComment: "v1").fileText.utf8)
        let good = Array(key.sign(v2, trustedComment: "v2").fileText.utf8)
        let once = Racing(DirectoryLogFetcher(directory: log.path), signatures: [old, good])
        let fetched = try LogReader(fetcher: once, trusted: [key.publicKey]).fetch(since: nil)
        #expect(fetched.feeds?.isEmpty == false && once.manifestFetches == 2)
        // A signature whose (authentic) trusted comment names this very version but does not verify: not a
        // race, so one fresh look, then 77.
        let m2 = try LogFixtures.manifest(log)
        let forged = Array(
            key.sign(v1, trustedComment: "landmark-catalog-log node:node-a generation:\(m2.generation) through:\(m2.through)").fileText.utf8)
        let twice = Racing(DirectoryLogFetcher(directory: log.path), signatures: [forged])
        let error = #expect(throws: CatalogError.self) {
            _ = try LogReader(fetcher: twice, trusted: [key.publicKey]).fetch(since: nil)
        }
        #expect(error?.kind == .untrusted && error?.message.contains("also after a fresh look") == true, "\(String(describing: error))")
        #expect(twice.manifestFetches == 2)
        // A signature of another version that stays (a host serving a stale signature): a few more looks, then 77.
        let stale = Racing(DirectoryLogFetcher(directory: log.path), signatures: [old])
        #expect(throws: CatalogError.self) { _ = try LogReader(fetcher: stale, trusted: [key.publicKey]).fetch(since: nil) }
        #expect(stale.manifestFetches == 6)
    }

    @Test("a publisher signing in a loop while a peer syncs with --trust: never a false 77")
    func publisherRacingReaders() throws {
        let dir = Support.temporaryDirectory()
        let (secret, line) = try Trust.generate(dir, "k")
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try Trust.publish(a, log, key: secret)
        let consumer = try LogFixtures.store(dir, "consumer")
        var options = SyncOptions()
        options.trustedKeys = [try MinisignPublicKey(text: line, source: "")]
        let stop = Atomic(false)
        let publisherPath = a.path
        let publisher = Thread {
            let store = try! CatalogStore.open(path: publisherPath, wallClock: ManualClock(testNow))
            var n = 0
            while !stop.load(ordering: .relaxed) {
                n += 1
                _ = try! Positions(store).setPosition(user: "ann-a", to: .page(n % 2))
                _ = try! Trust.publish(store, log, key: secret)
            }
        }
        publisher.start()
        var failures: [String] = []
        for _ in 0..<150 {
            let r = try SyncRunner(store: consumer).sync(sources: [log.path], options: options)
            if let error = r.firstError { failures.append("\(error.exitStatus): \(error.message)") }
        }
        stop.store(true, ordering: .relaxed)
        #expect(failures.isEmpty, "\(failures.prefix(3))")
    }
}

@Suite(
    "Trust: interop with minisign", .serialized,
    .enabled(if: Trust.minisign != nil, "minisign is not installed (apt-get install minisign): the interop tests are skipped"))
struct MinisignInteropTests {
    @Test("our signature verified by 'minisign -Vm manifest.json -P KEY'; minisign signs with our secret key")
    func ourSignatureVerifiedByMinisign() throws {
        let minisign = try #require(Trust.minisign)
        let dir = Support.temporaryDirectory()
        let (secret, line) = try Trust.generate(dir, "k")
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        let db = a.path
        let r = runCLI(["publish", log.path, "--sign", secret], db: db)
        #expect(r.status == 0 && r.stdout.contains("signed by key"))
        let v = try runProcess(minisign, ["-Vm", log.appending(path: "manifest.json").path, "-P", line])
        #expect(v.status == 0, "\(v.stderr)")
        #expect(v.stdout.contains("Signature and comment signature verified") && v.stdout.contains("through:"))
        // With the .pub file too, and a manifest changed by one byte fails minisign as well.
        #expect(try runProcess(minisign, ["-Vm", log.appending(path: "manifest.json").path, "-p", secret + ".pub"]).status == 0)
        // minisign reads our secret key file (unencrypted) and signs; we verify its signature.
        let file = dir.appending(path: "f.txt")
        try Data("hello\n".utf8).write(to: file)
        let s = try runProcess(minisign, ["-S", "-s", secret, "-m", file.path, "-t", "from minisign"])
        #expect(s.status == 0, "\(s.stderr)")
        let signature = try MinisignSignature(text: try String(contentsOfFile: file.path + ".minisig", encoding: .utf8), source: "")
        #expect(signature.trustedComment == "from minisign")
        #expect(signature.verifies(Array("hello\n".utf8), with: try MinisignPublicKey(text: line, source: "")))
        #expect(!signature.verifies(Array("hellO\n".utf8), with: try MinisignPublicKey(text: line, source: "")))

        // A trusted comment ending in blanks (issue 25: refused with 77 though `minisign -V` verifies it):
        // minisign signs the comment as given and strips only the line ending when it verifies.
        let s2 = try runProcess(minisign, ["-S", "-s", secret, "-m", file.path, "-t", "ends in blanks \t  "])
        #expect(s2.status == 0, "\(s2.stderr)")
        #expect(try runProcess(minisign, ["-Vm", file.path, "-P", line]).status == 0)
        let blanks = try MinisignSignature(text: try String(contentsOfFile: file.path + ".minisig", encoding: .utf8), source: "")
        #expect(blanks.trustedComment == "ends in blanks \t  ")
        #expect(blanks.verifies(Array("hello\n".utf8), with: try MinisignPublicKey(text: line, source: "")))
    }

    @Test("a manifest signed by 'minisign -S' with a 'minisign -G -W' key is accepted by sync --trust and signs for publish --sign")
    func minisignKeyAccepted() throws {
        let minisign = try #require(Trust.minisign)
        let dir = Support.temporaryDirectory()
        let pub = dir.appending(path: "ms.pub").path
        let key = dir.appending(path: "ms.key").path
        let g = try runProcess(minisign, ["-G", "-W", "-p", pub, "-s", key])
        #expect(g.status == 0, "\(g.stderr)")
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "log")
        _ = try LogPublisher(a).publishLog(to: log.path)
        let s = try runProcess(minisign, ["-S", "-s", key, "-m", log.appending(path: "manifest.json").path])
        #expect(s.status == 0, "\(s.stderr)")
        let consumer = dir.appending(path: "consumer.sqlite").path
        let line = try String(contentsOfFile: pub, encoding: .utf8).components(separatedBy: "\n")[1]
        let r = Trust.sync([log.path, "--trust", line], db: consumer)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try dumpLandmarks(consumer).count == 5)
        // Its key file works for publish --sign (after chmod: minisign writes it 0600 already).
        _ = try Positions(a).setPosition(user: "ann-a", to: .page(0))
        let p = runCLI(["publish", log.path, "--sign", key], db: a.path)
        #expect(p.status == 0, "\(p.stderr)")
        #expect(try runProcess(minisign, ["-Vm", log.appending(path: "manifest.json").path, "-p", pub]).status == 0)
        #expect(Trust.sync([log.path, "--trust", pub], db: consumer).status == 0)
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'ann-a'") == [[.integer(0)]])
    }
}

@Suite("Trust: over HTTP", .serialized)
struct TrustHTTPTests {
    @Test("a signed log over HTTP: the signature is fetched beside the manifest; 404 on it → 77")
    func signedOverHTTP() throws {
        let dir = Support.temporaryDirectory()
        let (secret, line) = try Trust.generate(dir, "k")
        let a = try Trust.publisher(dir, "a")
        let log = dir.appending(path: "www")
        _ = try Trust.publish(a, log, key: secret)
        let server = try TestHTTPServer(directory: log)
        let consumer = dir.appending(path: "consumer.sqlite").path
        let url = server.url("/files/manifest.json")
        let r = Trust.sync([url, "--trust", line], db: consumer)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try dumpLandmarks(consumer).count == 5)
        #expect(try server.log().contains { $0["path"] == "/files/manifest.json.minisig" })
        _ = try Positions(a).setPosition(user: "ann-a", to: .page(0))
        _ = try Trust.publish(a, log)  // unsigned: the signature is removed
        let u = Trust.sync([url, "--trust", line], db: consumer)
        #expect(u.status == 77 && u.stderr.contains("not signed"), "\(u.stderr)")
        #expect(try dumpRows(consumer, sql: "SELECT page FROM positions WHERE user_id = 'ann-a'") == [[.integer(1)]])
    }
}

@Suite(
    "Trust: a pull-only hub role", .serialized,
    .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries (scripts/setup installs them)"))
struct PullOnlyHubTests {
    @Test("an edge whose role may only SELECT syncs pull-only: said once, exit 0, the hub's rows pulled, nothing pushed")
    func pullOnlyRole() throws {
        let server = try PostgresServer.running()
        let hub = try server.createDatabaseName()
        let writerURI = server.uri(database: hub)
        // A writer edge fills the hub.
        let writer = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path, "--quiet"], db: writer).status == 0)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "1"], db: writer).status == 0)
        let w = runCLI(["sync", writerURI], db: writer)
        #expect(w.status == 0, "\(w.stderr)")
        // A role that may only read it.
        let role = "reader_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try HubSupport.admin(server).executeScript(sql: "CREATE ROLE \(role) LOGIN PASSWORD 'Read-Only-9c1e'")
        try HubSupport.connect(server, hub).executeScript(
            sql: """
                GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(role);
                GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO \(role);
                """)
        let readerURI = server.uri(database: hub, user: role, password: "Read-Only-9c1e")
        let before = try HubSupport.hubPositions(server, hub)
        let edge = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path, "--quiet"], db: edge).status == 0)
        #expect(runCLI(["position", "set", "--user", "bob", "--page", "0"], db: edge).status == 0)
        for _ in 0..<2 {
            let r = runCLI(["sync", "--json", readerURI], db: edge)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.components(separatedBy: "pull-only").count == 2, "said once: \(r.stderr)")
            #expect(r.stdout.contains("\"pushed\":null"))
            #expect(!r.stderr.contains("Read-Only-9c1e") && !r.stdout.contains("Read-Only-9c1e"))
        }
        #expect(
            try dumpRows(edge, sql: "SELECT user_id, page FROM positions ORDER BY user_id") == [
                [.text("ann"), .integer(1)], [.text("bob"), .integer(0)],
            ])
        #expect(try HubSupport.hubPositions(server, hub) == before)
        // The same edge with a role that may write pushes what waited.
        let p = runCLI(["sync", writerURI], db: edge)
        #expect(p.status == 0 && !p.stderr.contains("pull-only"), "\(p.stderr)")
        #expect(try HubSupport.hubPositions(server, hub).count == before.count + 1)
    }

    /// Issue 25: a follower with a pull-only role warned at every poll.
    ///
    /// The hook commits on the edge at the end of each cycle, so the next cycle polls the hub (this
    /// database changed: its push is due).
    @Test("a follower with a pull-only role warns once; not again while it stays so; again after the role could write for a poll")
    func pullOnlyFollowerWarnsOnce() throws {
        let server = try PostgresServer.running()
        let hub = try server.createDatabaseName()
        let writer = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path, "--quiet"], db: writer).status == 0)
        #expect(runCLI(["sync", server.uri(database: hub)], db: writer).status == 0)
        let role = "reader_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try HubSupport.admin(server).executeScript(sql: "CREATE ROLE \(role) LOGIN PASSWORD 'Read-Only-4d7f'")
        // Used on the follower's thread only (the hook runs there, one call at a time).
        nonisolated(unsafe) let admin = try HubSupport.connect(server, hub)
        try admin.executeScript(
            sql: "GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(role); GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO \(role);")
        let edge = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path, "--quiet"], db: edge).status == 0)
        #expect(runCLI(["position", "set", "--user", "bob", "--page", "0"], db: edge).status == 0)
        var options = FollowOptions()
        options.intervalSeconds = 30
        let cycles = Mutex(0)
        let warnedAt = Mutex<[Int]>([])
        options.cycleEndHook = { control in
            let cycle = cycles.withLock { n in
                n += 1
                return n
            }
            do {
                switch cycle {
                case 3:
                    // The role may write for one poll (hub.md §4's GRANTs), then only read again.
                    try admin.executeScript(
                        sql: """
                            GRANT SELECT, INSERT, UPDATE, DELETE ON landmarks, positions, hub_edges, hub_quarantine TO \(role);
                            GRANT SELECT, INSERT ON hub_history TO \(role);
                            GRANT SELECT, USAGE ON SEQUENCE hub_change_seq TO \(role);
                            """)
                case 4:
                    try admin.executeScript(sql: "REVOKE INSERT, UPDATE ON landmarks, positions FROM \(role)")
                case 6:
                    control.stop()
                    return
                default: break
                }
                _ = try Positions(CatalogStore.open(path: edge)).setPosition(user: "bob", to: .page(cycle % 2))
            } catch {
                Issue.record("\(error)")
                control.stop()
            }
        }
        let store = try CatalogStore.open(path: edge)
        let other = Mutex<[Diagnostic]>([])
        try SyncRunner(store: store).follow(
            sources: [server.uri(database: hub, user: role, password: "Read-Only-4d7f")], options: options, control: try FollowControl(),
            diagnostics: { d in
                if d.kind == "pull-only" {
                    warnedAt.withLock { $0.append(cycles.withLock { $0 } + 1) }
                } else {
                    other.withLock { $0.append(d) }
                }
            })
        // Cycles 1–3 pull-only (said at 1), 4 pushes, 5–6 pull-only again (said at 5).
        #expect(warnedAt.withLock { $0 } == [1, 5], "\(warnedAt.withLock { $0 })")
        #expect(cycles.withLock { $0 } == 6)
        #expect(other.withLock { $0 }.isEmpty, "\(other.withLock { $0 })")
        #expect(try HubSupport.hubPositions(server, hub).contains { $0.hasPrefix("bob|") })
    }

    /// Issue 25: a hub role missing its GRANTs exited 70 ("internal error", a raw "permission denied", no hint).
    @Test("a hub role with no GRANT at all: 77 with a hint naming docs/hub.md §4, not 70; nothing written; no password shown")
    func roleWithoutGrants() throws {
        let server = try PostgresServer.running()
        let hub = try server.createDatabaseName()
        let writer = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path, "--quiet"], db: writer).status == 0)
        #expect(runCLI(["sync", server.uri(database: hub)], db: writer).status == 0)
        let role = "nogrant_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try HubSupport.admin(server).executeScript(sql: "CREATE ROLE \(role) LOGIN PASSWORD 'No-Grant-5e2a'")
        let edge = Support.temporaryDatabase()
        #expect(runCLI(["position", "set", "--user", "bob", "--page", "0"], db: writer).status == 0)
        let r = runCLI(["sync", server.uri(database: hub, user: role, password: "No-Grant-5e2a")], db: edge)
        #expect(r.status == 77, "\(r.stderr)")
        #expect(r.stderr.contains("permission denied") && r.stderr.contains("docs/hub.md §4"), "\(r.stderr)")
        #expect(!r.stderr.contains("internal error") && !r.stderr.contains("No-Grant-5e2a"), "\(r.stderr)")
        let rows = FileManager.default.fileExists(atPath: edge) ? try dumpRows(edge, sql: "SELECT count(*) FROM landmarks") : [[.integer(0)]]
        #expect(rows == [[.integer(0)]], "\(rows)")
    }
}

@Suite("Trust: a signed log over real nginx", .serialized, .enabled(if: NginxServer.available, "nginx is not installed"))
struct TrustNginxTests {
    @Test("contrib/nginx/catalog-log.conf serves the signature: sync --trust merges, a 304 on the manifest fetches nothing more")
    func signedLogOverNginx() throws {
        let nginx = try NginxServer()
        let dir = Support.temporaryDirectory()
        let (secret, line) = try Trust.generate(dir, "k")
        let a = try Trust.publisher(dir, "a")
        _ = try Trust.publish(a, nginx.logDirectory, key: secret)
        let consumer = dir.appending(path: "consumer.sqlite").path
        let r = Trust.sync([nginx.url("manifest.json"), "--trust", line], db: consumer)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try dumpLandmarks(consumer).count == 5)
        var log = try nginx.requests(atLeast: 3)
        #expect(log.map(\.uri).contains("/catalog/manifest.json.minisig"))
        #expect(log.allSatisfy { $0.status == 200 })
        sleep(1)
        let again = Trust.sync([nginx.url("manifest.json"), "--trust", line, "--json"], db: consumer)
        #expect(again.status == 0 && again.stdout.contains("\"outcome\":\"not-modified\""), "\(again.stderr)")
        log = try nginx.requests(atLeast: log.count + 1)
        #expect(log.last?.uri == "/catalog/manifest.json" && log.last?.status == 304)
    }
}
