import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

extension CatalogCLI {
    /// `user erase` and `user status`'s argument and option, declared once: the table lists them, the run reads them typed.
    enum UserArguments {
        static let id = Argument<String>("id", "The user id (as the positions and tokens name it); or give --hash.")
        static let hash = Option<String>(
            "--hash", "HEX",
            "The user by the SHA-256 of their id instead (64 lowercase hex digits, as `user status` and `user erase --json` print it).",
            parse: { text in
                let hex = text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
                guard text.utf8.count == 64, hex else { throw ValueError(expected: "64 lowercase hex digits (the SHA-256 of a user id)") }
                return text
            })
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
        static let rebuildDigest = Flag(
            "--rebuild-digest",
            "With --hub: collect nothing; rebuild the hub's kept state digest from its rows instead (after a data-only restore of the hub).")
    }

    /// `user erase ID|--hash HEX` and `user status ID|--hash HEX` (docs/erasure.md §6).
    static var userCommand: CommandSpec {
        CommandSpec(
            name: "user",
            abstract: "Erase a user from this catalog and, through sync, from every copy of it; or ask whether one is erased here.",
            subcommands: [
                CommandSpec(
                    name: "erase",
                    abstract: "Erase user ID: an erasure that wins over every row of ID stamped before it, on every node it reaches.",
                    discussion: """
                        Stores an erasure record (the user id's SHA-256 and a fresh stamp), removes the user's row, their
                        quarantined rows, recorded ties and ledger messages naming them, zeroes the freed space and
                        truncates the WAL. Sync carries the erasure to every peer (snapshots, logs, the hub, serve); an
                        older row of the user arriving later is refused as erased. A row written after it is a new user's.
                        --hash HEX erases by the id's hash, for a list of erasures kept without ids (to erase again after
                        restoring a backup).
                        """,
                    arguments: [UserArguments.id.optional.spec],
                    options: [UserArguments.hash.spec, Options.json.with(help: "Print what was erased as JSON.").spec],
                    run: runUserErase),
                CommandSpec(
                    name: "status",
                    abstract: "Print user ID's hash and whether this database holds an erasure of them, and when it was stamped.",
                    discussion: """
                        Exit 0 either way. No record means never erased here, or erased and collected after the gc
                        horizon (docs/erasure.md §4).
                        """,
                    arguments: [UserArguments.id.optional.spec],
                    options: [UserArguments.hash.spec, Options.json.with(help: "Print the hash and the erasure as JSON.").spec],
                    run: runUserStatus),
            ])
    }

    /// The user hash named by `ID` or `--hash`: exactly one of them (64 otherwise).
    static func userHash(_ i: Invocation) throws -> (hash: String, id: String?) {
        switch (i.parsed.optional(UserArguments.id), i[UserArguments.hash]) {
        case (let id?, nil): return (ErasureRule.userHash(try UserID.normalize(id)), id)
        case (nil, let hash?): return (hash, nil)
        case (_?, _?): throw UsageError(message: "give the user as ID or as --hash HEX, not both", path: i.parsed.path)
        case (nil, nil): throw UsageError(message: "give the user as ID or as --hash HEX", path: i.parsed.path)
        }
    }

    static func runUserErase(_ i: Invocation) throws -> Int32 {
        let (hash, id) = try userHash(i)
        // As `position clear`: a missing database is refused (66), not created to hold one erasure.
        let erasure = UserErasure(try i.openStore(i.databaseExists ? .write : .read))
        let summary = try id.map { try erasure.eraseUser($0) } ?? erasure.eraseUser(hash: hash)
        // Exit 0 all the same: the erasure is recorded and reaches peers that may hold the user, and erasing
        // again is harmless; but a mistyped id must not pass for a success unseen (docs/cli.md §14).
        let previous = summary.previouslyErased.map { Timestamp.format(milliseconds: $0.wallMilliseconds) }
        let warning = summary.warning(namedBy: id == nil ? "hash" : "id")
        if let warning, let kind = summary.warningKind { i.reporter.warn(warning, kind: kind) }
        if i[Options.json] {
            var o = JSONObject()
            o.set("counter", summary.stamp.counter)
            o.set("node", summary.stamp.node)
            if let previous { o.set("previouslyErasedAt", previous) } else { o.setNull("previouslyErasedAt") }
            o.set("removedRecords", summary.removedRecords)
            o.set("removedRow", summary.removedRow)
            o.set("updatedAt", Timestamp.format(milliseconds: summary.stamp.wallMilliseconds))
            o.set("userHash", hash)
            if let warning { o.set("warning", warning) } else { o.setNull("warning") }
            i.stdout.write(o.bytes + [0x0A])
        } else {
            let what = summary.removedRow ? ": their row removed" : previous != nil ? " again (already erased here)" : " (no row was stored)"
            i.stdout.line(
                "erased the user at \(summary.stamp)\(what)"
                    + (summary.removedRecords > 0 ? ", \(plural(summary.removedRecords, "record")) about them removed" : ""))
        }
        return 0
    }

    static func runUserStatus(_ i: Invocation) throws -> Int32 {
        let (hash, _) = try userHash(i)
        guard i.databaseExists else {
            throw CatalogError(.noInput, "no catalog database, \(i.databasePath)", hint: "check --db / CATALOG_DB")
        }
        let stamp = try UserErasure(i.openStore(.read)).erasureStamp(hash: hash)
        if i[Options.json] {
            var o = JSONObject()
            o.set("erased", stamp != nil)
            if let stamp { o.set("erasedAt", Timestamp.format(milliseconds: stamp.wallMilliseconds)) } else { o.setNull("erasedAt") }
            o.set("userHash", hash)
            i.stdout.write(o.bytes + [0x0A])
        } else if let stamp {
            i.stdout.line("user \(hash): erased here at \(Timestamp.format(milliseconds: stamp.wallMilliseconds)) (\(stamp))")
        } else {
            i.stdout.line("user \(hash): no erasure record here (never erased here, or collected after the gc horizon)")
        }
        return 0
    }

    /// `gc [--horizon DURATION]` (docs/erasure.md §4).
    static var gcCommand: CommandSpec {
        CommandSpec(
            name: "gc",
            abstract: "Collect tombstones and erasure records older than the horizon (default 30 days), then vacuum if any went.",
            discussion: """
                The node remembers the horizon it collected up to and never moves it back: afterwards a row stamped
                before it for a key that has no row is refused as expired, so nothing deleted comes back however long
                a device or peer was away (such a device re-reads its state). Every node should collect with the same
                horizon, longer than any peer stays out of sync. --hub collects a hub the same way, in one PostgreSQL
                transaction, and records the hub's horizon there; its upserts then refuse older rows for collected keys.
                --hub with --rebuild-digest replaces the hub's kept digest totals by the sums of its rows, under the push
                lock, when status --verify-digest finds them apart (a data-only pg_restore that restored them too).
                """,
            options: [
                GCOptionsTable.horizon.spec, GCOptionsTable.hub.spec, GCOptionsTable.rebuildDigest.spec,
                Options.json.with(help: "Print what was collected as JSON.").spec,
            ],
            validate: { p in
                guard p[GCOptionsTable.rebuildDigest] else { return }
                if !p.given(GCOptionsTable.hub) { throw UsageError(message: "--rebuild-digest goes with --hub", path: p.path) }
                if p.given(GCOptionsTable.horizon) { throw UsageError(message: "--rebuild-digest and --horizon cannot be combined", path: p.path) }
            },
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
        // Serve refuses user tokens issued before the horizon it collected up to (docs/serve.md §2): a horizon
        // shorter than the tokens' usual life signs every device out (docs/cli.md §14).
        let short =
            age < ErasureRule.defaultHorizonAge
            ? "a horizon shorter than the default 30d: a serve of this database refuses every user token issued before \(Timestamp.format(milliseconds: s.horizonMilliseconds)) (401 invalid_token), so every device signs in again; and a peer that has not synced since then keeps what this node collected"
            : nil
        if let short { i.reporter.warn(short, kind: "short_horizon") }
        // Vacuumed only when something was collected (`Collector.collect`).
        let vacuumed = s.removed > 0
        if i[Options.json] {
            var o = JSONObject()
            o.set("bytesAfter", s.bytesAfter)
            o.set("bytesBefore", s.bytesBefore)
            o.set("erasures", s.erasures)
            o.set("horizon", Timestamp.format(milliseconds: s.horizonMilliseconds))
            o.set("landmarkTombstones", s.landmarkTombstones)
            o.set("positionTombstones", s.positionTombstones)
            o.set("vacuumed", vacuumed)
            if let short { o.set("warning", short) } else { o.setNull("warning") }
            i.stdout.write(o.bytes + [0x0A])
        } else {
            let file =
                vacuumed
                ? "vacuumed, database \(s.bytesBefore) → \(s.bytesAfter) bytes" : "nothing collected, not vacuumed, database \(s.bytesAfter) bytes"
            i.stdout.line(
                "collected up to \(Timestamp.format(milliseconds: s.horizonMilliseconds)) (the horizon, measured back from the older of now and the newest stamp here; never moved back): \(plural(s.landmarkTombstones, "landmark tombstone")), \(plural(s.positionTombstones, "position tombstone")), \(plural(s.erasures, "erasure record")); \(file)"
            )
        }
        return 0
    }

    /// `gc --hub URL`: the hub's collection (docs/erasure.md §7), measured from this machine's wall clock.
    static func runHubGC(_ i: Invocation, hub: String, age: Int64) throws -> Int32 {
        // A saved remote may name the hub: read from the local database when there is one.
        let remotes = i.databaseExists ? try RemoteBook(i.openStore(.read)).remotes() : []
        // A bare word names a saved remote: say so when this database has none by that name.
        if !hub.contains("://"), !hub.hasPrefix("/"), !remotes.contains(where: { $0.name == hub }) {
            throw CatalogError(
                .usage,
                "--hub '\(hub)': there is no remote named '\(hub)' in this database, \(i.databasePath)\(i.databaseExists ? "" : " (no such file)")",
                hint:
                    "pass the hub's postgresql:// URL, or save it first: catalog --db \(i.databasePath) remote add \(hub) postgresql://USER@HOST/DATABASE"
            )
        }
        if i[GCOptionsTable.rebuildDigest] { return try runHubDigestRebuild(i, hub: hub, remotes: remotes) }
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
                "collected the hub \(collector.name) up to \(Timestamp.format(milliseconds: s.horizonMilliseconds)) (measured back from the older of now and the hub's newest stamp): \(plural(s.landmarkTombstones, "landmark tombstone")), \(plural(s.positionTombstones, "position tombstone")), \(plural(s.erasures, "erasure record")); not vacuumed (PostgreSQL's autovacuum reclaims the space)"
            )
        }
        return 0
    }

    /// `gc --hub URL --rebuild-digest`: the hub's kept digest rebuilt from its rows (docs/hub.md §9).
    static func runHubDigestRebuild(_ i: Invocation, hub: String, remotes: [Remote]) throws -> Int32 {
        let rebuild = try HubDigestRebuild(hub: hub, remotes: remotes)
        let s = try rebuild.rebuild()
        if i[Options.json] {
            var o = JSONObject()
            o.set("hub", rebuild.name)
            o.set("landmarks", s.landmarks)
            o.set("positions", s.positions)
            o.set("relanedRows", s.relaned)
            i.stdout.write(o.bytes + [0x0A])
        } else {
            i.stdout.line(
                "rebuilt the kept digest of the hub \(rebuild.name) from its rows: \(plural(s.landmarks, "landmark row")), \(plural(s.positions, "position row"))\(s.relaned > 0 ? "; \(plural(s.relaned, "row")) with stale lanes rehashed" : "")"
            )
        }
        return 0
    }
}
