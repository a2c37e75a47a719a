import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

extension CatalogCLI {
    /// `user erase`'s argument, declared once: the table lists it, the run reads it typed.
    enum UserArguments {
        static let id = Argument<String>("id", "The user id to erase (as the positions and tokens name it).")
    }

    enum GCOptionsTable {
        static let horizon = Option<Double>(
            "--horizon", "DURATION",
            "Collect tombstones and erasure records stamped more than DURATION ago (default 30d; 0s, 90s, 15m, 2h, 1d or seconds).",
            parse: Values.duration(zeroAllowed: true))
        static let hub = Option<String>(
            "--hub", "URL",
            "Collect this PostgreSQL hub (a postgresql:// URL or a saved remote) instead of the local database: run by one node, on a timer.",
            parse: Values.nonEmpty)
    }

    /// `user erase ID` (docs/erasure.md §6).
    static var userCommand: CommandSpec {
        CommandSpec(
            name: "user",
            abstract: "Erase a user from this catalog and, through sync, from every copy of it.",
            subcommands: [
                CommandSpec(
                    name: "erase",
                    abstract: "Erase user ID: an erasure that wins over every row of ID stamped before it, on every node it reaches.",
                    discussion: """
                        Stores an erasure record (the user id's SHA-256 and a fresh stamp), removes the user's row, their
                        quarantined rows, recorded ties and ledger messages naming them, zeroes the freed space and
                        truncates the WAL. Sync carries the erasure to every peer (snapshots, logs, the hub, serve); an
                        older row of the user arriving later is refused as erased. A row written after it is a new user's.
                        """,
                    arguments: [UserArguments.id.spec],
                    options: [Options.json.with(help: "Print what was erased as JSON.").spec],
                    run: runUserErase)
            ])
    }

    static func runUserErase(_ i: Invocation) throws -> Int32 {
        // As `position clear`: a missing database is refused (66), not created to hold one erasure.
        let summary = try UserErasure(i.openStore(i.databaseExists ? .write : .read)).eraseUser(i[UserArguments.id])
        // Exit 0 all the same: the erasure is recorded and reaches peers that may hold the user, and erasing
        // again is harmless; but a mistyped id must not pass for a success unseen (docs/cli.md §14).
        let noRow = "no row of this user was stored in this database: check the id; the erasure is recorded all the same"
        if !summary.removedRow { i.reporter.warn(noRow, kind: "no_row") }
        if i[Options.json] {
            var o = JSONObject()
            o.set("counter", summary.stamp.counter)
            o.set("node", summary.stamp.node)
            o.set("removedRecords", summary.removedRecords)
            o.set("removedRow", summary.removedRow)
            o.set("updatedAt", Timestamp.format(milliseconds: summary.stamp.wallMilliseconds))
            o.set("userHash", ErasureRule.userHash(try UserID.normalize(i[UserArguments.id])))
            if summary.removedRow { o.setNull("warning") } else { o.set("warning", noRow) }
            i.stdout.write(o.bytes + [0x0A])
        } else {
            i.stdout.line(
                "erased the user at \(summary.stamp)\(summary.removedRow ? ": their row removed" : " (no row was stored)")"
                    + (summary.removedRecords > 0 ? ", \(plural(summary.removedRecords, "record")) about them removed" : ""))
        }
        return 0
    }

    /// `gc [--horizon DURATION]` (docs/erasure.md §4).
    static var gcCommand: CommandSpec {
        CommandSpec(
            name: "gc",
            abstract: "Collect tombstones and erasure records older than the horizon (default 30 days), then vacuum.",
            discussion: """
                The node remembers the horizon it collected up to and never moves it back: afterwards a row stamped
                before it for a key that has no row is refused as expired, so nothing deleted comes back however long
                a device or peer was away (such a device re-reads its state). Every node should collect with the same
                horizon, longer than any peer stays out of sync. --hub collects a hub the same way, in one PostgreSQL
                transaction, and records the hub's horizon there; its upserts then refuse older rows for collected keys.
                """,
            options: [GCOptionsTable.horizon.spec, GCOptionsTable.hub.spec, Options.json.with(help: "Print what was collected as JSON.").spec],
            run: runGC)
    }

    static func runGC(_ i: Invocation) throws -> Int32 {
        let hub = i[GCOptionsTable.hub]
        guard i.databaseExists || hub != nil else {
            throw CatalogError(.noInput, "no catalog database, \(i.databasePath)", hint: "check --db / CATALOG_DB")
        }
        let seconds = i[GCOptionsTable.horizon] ?? Double(ErasureRule.defaultHorizonAge) / 1000
        // Past 10,000 years nothing was ever stamped (docs/cli.md §14): a larger horizon is a typo.
        guard seconds <= 10_000 * 366 * 86_400 else {
            throw UsageError(message: "--horizon is more than 10,000 years", path: i.parsed.path)
        }
        let age = Int64((seconds * 1000).rounded())
        if let hub { return try runHubGC(i, hub: hub, age: age) }
        let s = try Collector(i.openStore()).collect(olderThan: age)
        if i[Options.json] {
            var o = JSONObject()
            o.set("bytesAfter", s.bytesAfter)
            o.set("bytesBefore", s.bytesBefore)
            o.set("erasures", s.erasures)
            o.set("horizon", Timestamp.format(milliseconds: s.horizonMilliseconds))
            o.set("landmarkTombstones", s.landmarkTombstones)
            o.set("positionTombstones", s.positionTombstones)
            i.stdout.write(o.bytes + [0x0A])
        } else {
            i.stdout.line(
                "collected up to \(Timestamp.format(milliseconds: s.horizonMilliseconds)): \(plural(s.landmarkTombstones, "landmark tombstone")), \(plural(s.positionTombstones, "position tombstone")), \(plural(s.erasures, "erasure record")); database \(s.bytesBefore) → \(s.bytesAfter) bytes"
            )
        }
        return 0
    }

    /// `gc --hub URL`: the hub's collection (docs/erasure.md §7), measured from this machine's wall clock.
    static func runHubGC(_ i: Invocation, hub: String, age: Int64) throws -> Int32 {
        // A saved remote may name the hub: read from the local database when there is one.
        let remotes = i.databaseExists ? try RemoteBook(i.openStore(.read)).remotes() : []
        let collector = try HubCollector(hub: hub, remotes: remotes)
        let s = try collector.collect(olderThan: age, nowMilliseconds: SystemClock().nowMilliseconds())
        if i[Options.json] {
            var o = JSONObject()
            o.set("erasures", s.erasures)
            o.set("horizon", Timestamp.format(milliseconds: s.horizonMilliseconds))
            o.set("hub", collector.name)
            o.set("landmarkTombstones", s.landmarkTombstones)
            o.set("positionTombstones", s.positionTombstones)
            i.stdout.write(o.bytes + [0x0A])
        } else {
            i.stdout.line(
                "collected the hub \(collector.name) up to \(Timestamp.format(milliseconds: s.horizonMilliseconds)): \(plural(s.landmarkTombstones, "landmark tombstone")), \(plural(s.positionTombstones, "position tombstone")), \(plural(s.erasures, "erasure record"))"
            )
        }
        return 0
    }
}
