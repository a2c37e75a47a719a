import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// What `user erase` and `sync` say about erasures, from the built binary (docs/cli.md §14, docs/erasure.md).
@Suite("Erasure on the command line")
struct ErasureCLITests {
    @Test("user erase of an id with no row: recorded, exit 0, but a warning on stderr and in --json; a stored row: no warning")
    func eraseWithoutARowWarns() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let typo = try box.run(["user", "erase", "annn"], db: db)
        #expect(typo.status == 0, "\(typo)")
        #expect(typo.stdout.contains("(no row was stored)"), "\(typo)")
        #expect(typo.stderr.contains("no row of this user was stored in this database: check the id"), "\(typo)")
        let json = try box.run(["user", "erase", "annm", "--json"], db: db)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        #expect(json.status == 0 && object["removedRow"] as? Bool == false)
        #expect((object["warning"] as? String)?.contains("check the id") == true, "\(object)")
        #expect(object["userHash"] as? String == ErasureRule.userHash("annm"))
        // Erasing again is harmless, and says the record is already held rather than "check the id".
        let again = try box.run(["user", "erase", "annn"], db: db)
        #expect(again.status == 0 && again.stdout.contains("again (already erased here)"), "\(again)")
        #expect(again.stderr.contains("already erased in this database at 20") && !again.stderr.contains("check the id"), "\(again)")
        let againJSON = try box.run(["user", "erase", "annn", "--json"], db: db)
        let repeated = try #require(try JSONSerialization.jsonObject(with: Data(againJSON.stdout.utf8)) as? [String: Any], "\(againJSON)")
        #expect((repeated["warning"] as? String)?.hasPrefix("this user was already erased in this database at 20") == true, "\(repeated)")
        #expect(repeated["previouslyErasedAt"] as? String != nil && object["previouslyErasedAt"] is NSNull, "\(repeated)")

        #expect(try box.run(["position", "set", "--user", "ann", "--page", "1"], db: db).status == 0)
        let real = try box.run(["user", "erase", "ann", "--json"], db: db)
        let erased = try #require(try JSONSerialization.jsonObject(with: Data(real.stdout.utf8)) as? [String: Any], "\(real)")
        #expect(real.status == 0 && erased["removedRow"] as? Bool == true && erased["warning"] is NSNull, "\(real)")
        #expect(!real.stderr.contains("no row"), "\(real)")
    }

    @Test("user erase --hash erases by the id's hash; user status prints the hash and whether it is erased here")
    func eraseByHashAndStatus() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        #expect(try box.run(["position", "set", "--user", "bo", "--page", "1"], db: db).status == 0)
        let hash = ErasureRule.userHash("bo")
        let before = try box.run(["user", "status", "bo", "--json"], db: db)
        #expect(before.status == 0 && before.stdout == #"{"erased":false,"erasedAt":null,"userHash":"\#(hash)"}"# + "\n", "\(before)")
        let text = try box.run(["user", "status", "bo"], db: db)
        #expect(text.stdout.contains("user \(hash): no erasure record here"), "\(text)")
        let erased = try box.run(["user", "erase", "--hash", hash], db: db)
        #expect(erased.status == 0 && erased.stdout.contains(": their row removed"), "\(erased)")
        #expect(try box.run(["export", "--output", box.path("after.json")], db: db).status == 0)
        #expect(!(try String(contentsOfFile: box.path("after.json"), encoding: .utf8)).contains(#""bo""#))
        let after = try box.run(["user", "status", "--hash", hash], db: db)
        #expect(after.status == 0 && after.stdout.contains("user \(hash): erased here at 20"), "\(after)")
        for bad in [["user", "erase"], ["user", "erase", "bo", "--hash", hash], ["user", "erase", "--hash", hash.uppercased()]] {
            let r = try box.run(bad, db: db)
            #expect(r.status == 64, "\(bad): \(r)")
        }
    }

    @Test("gc: a horizon under the default warns that serve refuses older tokens; the output says whether it vacuumed")
    func gcWarnsAndSaysVacuum() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let plain = try box.run(["gc"], db: db)
        #expect(plain.status == 0 && plain.stderr.isEmpty, "\(plain)")
        #expect(plain.stdout.contains("the older of now and the newest stamp here") && plain.stdout.contains("not vacuumed"), "\(plain)")
        #expect(try box.run(["position", "set", "--user", "ann", "--page", "1"], db: db).status == 0)
        #expect(try box.run(["position", "clear", "--user", "ann"], db: db).status == 0)
        let short = try box.run(["gc", "--horizon", "0s", "--json"], db: db)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(short.stdout.utf8)) as? [String: Any], "\(short)")
        #expect(short.status == 0 && object["vacuumed"] as? Bool == true && object["positionTombstones"] as? Int == 1, "\(object)")
        #expect((object["warning"] as? String)?.contains("refuses every user token issued before") == true, "\(object)")
        #expect(short.stderr.contains("warning: a horizon shorter than the default 30d"), "\(short)")
        let long = try box.run(["gc", "--horizon", "30d", "--json"], db: db)
        #expect(long.stdout.contains(#""vacuumed":false"#) && long.stdout.contains(#""warning":null"#) && long.stderr.isEmpty, "\(long)")
    }

    @Test("status shows the erasure records, the gc horizon and the last gc in text, --json and --prometheus")
    func statusShowsCollection() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let before = try box.run(["status", "--json"], db: db)
        #expect(before.stdout.contains(#""erasureRecords":0"#) && before.stdout.contains(#""gcHorizon":null,"gcLastRunAt":null"#), "\(before)")
        #expect(try box.run(["status"], db: db).stdout.contains("gc:          never collected"))
        #expect(!(try box.run(["status", "--prometheus"], db: db).stdout.contains("catalog_gc_last_run_timestamp_seconds ")))
        #expect(try box.run(["user", "erase", "ann"], db: db).status == 0)
        let gc = try box.run(["gc", "--json"], db: db)
        let horizon = try #require(
            (try JSONSerialization.jsonObject(with: Data(gc.stdout.utf8)) as? [String: Any])?["horizon"] as? String, "\(gc)")
        let after = try box.run(["status", "--json"], db: db)
        #expect(after.stdout.contains(#""erasureRecords":1"#) && after.stdout.contains(#""gcHorizon":"\#(horizon)","gcLastRunAt":"20"#), "\(after)")
        let text = try box.run(["status"], db: db).stdout
        #expect(text.contains("erasures:    1 record") && text.contains("gc:          collected up to \(horizon), last run 20"), "\(text)")
        let metrics = try box.run(["status", "--prometheus"], db: db).stdout
        let seconds = try #require(Timestamp.parse(horizon)) / 1000
        #expect(
            metrics.contains("\ncatalog_erasure_records 1\n") && metrics.contains("\ncatalog_gc_horizon_timestamp_seconds \(seconds)"), "\(metrics)")
        #expect(metrics.contains("\ncatalog_gc_last_run_timestamp_seconds 1"), "\(metrics)")
    }

    @Test("sync in text mode names the rows refused as erased and the erasures applied, as --json counts them")
    func syncTextCountsErasures() throws {
        let box = try Sandbox()
        let a = try box.seededDatabase("a.sqlite")
        let b = try box.seededDatabase("b.sqlite")
        #expect(try box.run(["position", "set", "--user", "ann", "--page", "2"], db: a).status == 0)
        #expect(try box.run(["export", "--output", box.path("a.json")], db: a).status == 0)
        // b erases ann after a's row was stamped: a's row is refused as erased there.
        #expect(try box.run(["user", "erase", "ann"], db: b).status == 0)
        let refused = try box.run(["sync", box.path("a.json")], db: b)
        #expect(refused.status == 0 && refused.stdout.contains(", 1 erased"), "\(refused)")
        let quiet = try box.run(["sync", box.path("a.json")], db: a)
        #expect(!quiet.stdout.contains("erased") && !quiet.stdout.contains("erasure"), "nothing to say: \(quiet)")
        // a merges b's erasure: ann's row goes there too.
        #expect(try box.run(["export", "--output", box.path("b.json")], db: b).status == 0)
        let applied = try box.run(["sync", box.path("b.json")], db: a)
        #expect(applied.status == 0 && applied.stdout.contains(", 1 erasure applied"), "\(applied)")
        #expect(try StoredPositions.row(a, "ann") == nil)
        // The same erasure again (a new file: the old one is not modified): stale, and the line says what it is.
        #expect(try box.run(["export", "--output", box.path("b2.json")], db: b).status == 0)
        let held = try box.run(["sync", box.path("b2.json")], db: a)
        #expect(held.status == 0 && held.stdout.contains(" stale (1 erasure already held here)"), "\(held)")
        #expect(!applied.stdout.contains("already held"), "\(applied)")
    }
}
