import Foundation
import LandmarkCatalog

extension CatalogCLI {
    enum QuarantineOptions {
        static let force = Flag(
            "--force", "Apply the named rows even though they are still beyond the allowance (this node's clock then moves to their stamp).")
        static let all = Flag("--all", "Drop every quarantined row.")
        static let maxDrift = SyncOptionsTable.maxDrift.with(
            help: "The allowance: rows stamped at most this far ahead of this machine's clock are released (default 5m, as for sync).")
    }

    /// `quarantine release` and `drop`'s arguments: row ids, checked by the parser before the command's own checks.
    enum QuarantineArguments {
        static let rows = Argument<Int64>(
            "row", "Quarantine row ids, as 'catalog quarantine list' shows them (the ROW column).", parse: rowID
        ).repeating

        /// A quarantine row id: a positive integer.
        static func rowID(_ text: String) throws -> Int64 {
            guard let id = Int64(text), id > 0 else {
                throw ValueError(
                    expected: "a positive integer", message: "a row is named by its quarantine row id (a positive integer), got '\(text)'")
            }
            return id
        }
    }

    static var quarantineCommand: CommandSpec {
        CommandSpec(
            name: "quarantine",
            abstract: "List, release or drop the rows held back for being stamped too far ahead of this machine's clock.",
            discussion: """
                A row stamped more than --max-drift ahead of this machine's clock is held in quarantine and
                never applied silently. Rows are named by their quarantine row id (the ROW column of 'list',
                also printed by sync when it holds a row), which stays the same while the row is held. Each
                sync run applies the held rows that have come within the allowance; 'release' does it now.
                """,
            subcommands: [
                CommandSpec(
                    name: "list", abstract: "List the quarantined rows, oldest first.",
                    options: [
                        Options.json.with(help: "Print the rows as a JSON array (each with its snapshot row).").spec,
                        Options.limit.with(help: "Show at most N rows (default: all).").spec,
                    ],
                    run: runQuarantineList),
                CommandSpec(
                    name: "release",
                    abstract: "Apply held rows by the merge rule (last-writer-wins) in one transaction, and take them out of quarantine.",
                    discussion: """
                        With no ROW: every row now within the allowance. With ROW...: those rows; one still
                        beyond the allowance is refused (65, nothing released) unless --force. A released row
                        older than the stored one changes nothing (it is counted as stale), as in a sync.
                        """,
                    arguments: [QuarantineArguments.rows.spec],
                    options: [QuarantineOptions.force.spec, QuarantineOptions.maxDrift.spec],
                    validate: { p in
                        if p[QuarantineOptions.force] && p[QuarantineArguments.rows].isEmpty {
                            throw UsageError(message: "--force needs the rows to apply, by id (catalog quarantine list shows them)", path: p.path)
                        }
                    },
                    run: runQuarantineRelease),
                CommandSpec(
                    name: "drop", abstract: "Remove held rows without applying them.",
                    arguments: [QuarantineArguments.rows.spec],
                    options: [QuarantineOptions.all.spec],
                    validate: { p in
                        if p[QuarantineOptions.all] == !p[QuarantineArguments.rows].isEmpty {
                            throw UsageError(message: "give the rows to drop, by id, or --all", path: p.path)
                        }
                    },
                    run: runQuarantineDrop),
            ])
    }

    static func runQuarantineList(_ i: Invocation) throws -> Int32 {
        let rows = try Quarantine(i.openStore(.read)).quarantinedRows(limit: i[Options.limit])
        let now = i.context.wallClock.nowMilliseconds()
        if i[Options.json] {
            let items = rows.map { r -> JSONObject in
                var o = JSONObject()
                o.set("aheadMs", r.stamp.wallMilliseconds - now)
                o.set("counter", r.stamp.counter)
                o.set("id", r.id)
                o.set("key", r.key)
                o.set("kind", r.kind)
                o.set("node", r.stamp.node)
                o.set("reason", r.reason)
                o.set("receivedAt", r.receivedAt)
                o.set("row", json: r.rowJSON)
                o.set("source", r.source)
                o.set("updatedAt", Timestamp.format(milliseconds: r.stamp.wallMilliseconds))
                return o
            }
            i.stdout.write(JSONObject.array(items) + [0x0A])
            return 0
        }
        guard !rows.isEmpty else {
            i.stdout.line("no quarantined rows")
            return 0
        }
        var table = [["ROW", "KIND", "KEY", "STAMP", "AHEAD", "SOURCE", "RECEIVED (UTC)"]]
        for r in rows {
            let ahead = r.stamp.wallMilliseconds - now
            table.append([
                String(r.id), r.kind, r.key, r.stamp.description,
                ahead > 0 ? Durations.describe(milliseconds: ahead) : "due", r.source, r.receivedAt,
            ])
        }
        i.stdout.write(Table.render(table))
        return 0
    }

    /// The store for `release` and `drop`, which write but never create a database (a mistyped `--db`
    /// fails with 66, as the reading commands do).
    static func existingStore(_ i: Invocation) throws -> CatalogStore {
        guard i.databaseExists else {
            throw CatalogError(.noInput, "no catalog database, \(i.databasePath)", hint: "check --db / CATALOG_DB")
        }
        return try i.openStore()
    }

    static func runQuarantineRelease(_ i: Invocation) throws -> Int32 {
        let ids = i[QuarantineArguments.rows]
        let drift = i[QuarantineOptions.maxDrift].map { Int64($0 * 1000) } ?? SyncOptions().maxDriftMilliseconds
        let result = try Quarantine(existingStore(i)).releaseQuarantine(
            rows: ids.isEmpty ? nil : ids, force: i[QuarantineOptions.force],
            maxDriftMilliseconds: drift, diagnostics: i.report)
        var line = "released \(plural(result.released, "row"))"
        if result.released > 0 {
            line += ": \(describe(result.counts))"
        } else if ids.isEmpty {
            line += " (none is within the allowance yet)"
        }
        i.stdout.line(line + "; \(result.remaining) still quarantined")
        return 0
    }

    static func runQuarantineDrop(_ i: Invocation) throws -> Int32 {
        let ids = i[QuarantineArguments.rows]
        let dropped = try Quarantine(existingStore(i)).dropQuarantine(rows: i[QuarantineOptions.all] ? nil : ids)
        i.stdout.line("dropped \(plural(dropped, "row"))")
        return 0
    }
}
