import Foundation
import LandmarkCatalog

extension CatalogCLI {
    static var logCommand: CommandSpec {
        CommandSpec(
            name: "log",
            abstract: "Show the sync run ledger, newest first, with what each source did.",
            discussion: """
                Every 'catalog sync' run is recorded: when it started and finished, its outcome (ok,
                not-modified, failed, or busy when another sync held the lock), its exit status, the rows it
                saw, applied, found stale, tied and quarantined, and per source the outcome, bytes fetched,
                time taken and error.
                """,
            options: [Options.limit.with(help: "Show the newest N runs (default 20).").spec,
                      Options.json.with(help: "Print the runs as a JSON array.").spec],
            run: runLog)
    }

    static func runLog(_ i: Invocation) throws -> Int32 {
        let runs = try i.openStore(.read).syncRuns(limit: i[Options.limit] ?? 20)
        if i[Options.json] {
            let items = runs.map { run -> JSONObject in
                var o = JSONObject()
                o.set(counts: run.counts)
                o.set("durationMs", run.durationMilliseconds)
                o.set("exitStatus", run.exitStatus)
                o.set("finishedAt", run.finishedAt)
                o.set("id", run.id)
                o.set("message", run.message)
                o.set("outcome", run.outcome)
                o.set("startedAt", run.startedAt)
                o.set("sources", json: JSONObject.array(run.sources.map { s in
                    var o = JSONObject()
                    o.set(counts: s.counts)
                    o.set("bytes", s.bytes)
                    o.set("durationMs", s.durationMilliseconds)
                    o.set("exitStatus", s.exitStatus)
                    o.set("message", s.message)
                    o.set("outcome", s.outcome)
                    o.set("source", s.source)
                    return o
                }))
                return o
            }
            i.stdout.write(JSONObject.array(items) + [0x0A])
            return 0
        }
        var out = ""
        for run in runs {
            out += "run \(run.id)  \(run.finishedAt)  \(run.outcome) (exit \(run.exitStatus))  \(seconds(run.durationMilliseconds))\n"
            if run.outcome != "busy" { out += "  \(describe(run.counts))\n" }
            if let message = run.message { out += "  \(Table.escaped(message))\n" }
            for s in run.sources {
                var line = "  - \(Table.escaped(s.source)): \(s.outcome ?? "not started")"
                if s.exitStatus != 0 && s.outcome != nil { line += " (exit \(s.exitStatus))" }
                if s.outcome != nil {
                    line += ", \(s.bytes) bytes in \(seconds(s.durationMilliseconds))"
                    if s.outcome == "merged" { line += "; \(describe(s.counts))" }
                }
                if let message = s.message { line += "; \(Table.escaped(message))" }
                out += line + "\n"
            }
        }
        i.stdout.write(out)
        return 0
    }

    /// `3 of 5 landmarks and 10 of 12 positions applied, 4 stale, 0 ties, 0 quarantined`
    static func describe(_ c: MergeCounts) -> String {
        "\(c.landmarksApplied) of \(c.landmarksSeen) landmarks and \(c.positionsApplied) of \(c.positionsSeen) positions applied, \(c.stale) stale, \(c.ties) ties, \(c.quarantined) quarantined"
    }

    /// Milliseconds as `1.234 s`.
    static func seconds(_ ms: Int64) -> String { String(format: "%.3f s", Double(ms) / 1000) }
}
