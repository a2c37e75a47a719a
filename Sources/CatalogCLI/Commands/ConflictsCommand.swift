import Foundation
import LandmarkCatalog

extension CatalogCLI {
    static var conflictsCommand: CommandSpec {
        CommandSpec(
            name: "conflicts",
            abstract: "Show the ties settled by the fixed rule, newest first: both versions, the rule, the source, when.",
            discussion: """
                A tie is two versions of one row with equal stamps and different content, possible only when
                two writers share a node id (give each database its own with 'catalog init --node'). The tombstone
                wins, else the greater content. Ties are kept for 30 days, at most the newest 10,000, pruned at
                the end of every sync; one pruned and met again is recorded and reported again.
                """,
            options: [
                Options.json.with(help: "Print the ties as a JSON array (both versions as snapshot rows).").spec,
                Options.limit.with(help: "Show the newest N ties (default: all that are kept).").spec,
            ],
            run: runConflicts)
    }

    static func runConflicts(_ i: Invocation) throws -> Int32 {
        let conflicts = try Conflicts(i.openStore(.read)).conflicts(limit: i[Options.limit])
        if i[Options.json] {
            let items = conflicts.map { c -> JSONObject in
                var o = JSONObject()
                o.set("counter", c.stamp.counter)
                o.set("detectedAt", c.detectedAt)
                o.set("id", c.id)
                o.set("key", c.key)
                o.set("kind", c.kind)
                o.set("loser", json: c.loserJSON)
                o.set("node", c.stamp.node)
                o.set("rule", c.rule)
                o.set("source", c.source)
                o.set("updatedAt", Timestamp.format(milliseconds: c.stamp.wallMilliseconds))
                o.set("winner", json: c.winnerJSON)
                return o
            }
            i.stdout.write(JSONObject.array(items) + [0x0A])
            return 0
        }
        var out = conflicts.isEmpty ? "no conflicts\n" : ""
        for c in conflicts {
            out += """
                tie \(c.id)  \(c.detectedAt)  \(c.kind) \(Table.escaped(c.key)) at \(Table.escaped(c.stamp.description))
                  source: \(Table.escaped(c.source))
                  rule:   \(c.rule)
                  kept:   \(Table.escaped(c.winnerJSON))
                  lost:   \(Table.escaped(c.loserJSON))

                """
        }
        i.stdout.write(out)
        return 0
    }
}
