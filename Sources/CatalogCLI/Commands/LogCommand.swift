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
            options: [
                Options.limit.with(help: "Show the newest N runs (default 20).").spec,
                Options.json.with(help: "Print the runs as a JSON array.").spec,
            ],
            run: runLog)
    }

    static func runLog(_ i: Invocation) throws -> Int32 {
        let store = try i.openStore(.read)
        let runs = try CatalogMonitor(store).syncRuns(limit: i[Options.limit] ?? 20)
        let remotes = try RemoteBook(store).remoteNames()
        if i[Options.json] {
            let items = runs.map { run -> JSONObject in
                var o = JSONObject()
                o.set(counts: run.counts)
                for detail in run.details { o.set(detail.json, detail.value) }
                o.set("durationMs", run.durationMilliseconds)
                o.set("exitStatus", run.exitStatus)
                o.set("finishedAt", run.finishedAt)
                o.set("id", run.id)
                o.set("message", run.message)
                o.set("outcome", run.outcome)
                o.set("startedAt", run.startedAt)
                o.set(
                    "sources",
                    objects: run.sources.map { s in
                        var o = JSONObject()
                        o.set(counts: s.counts)
                        o.set("bytes", s.bytes)
                        o.set("durationMs", s.durationMilliseconds)
                        o.set("exitStatus", s.exitStatus)
                        o.set("message", s.message)
                        o.set("outcome", s.outcome)
                        o.set("remote", remotes[s.source])
                        o.set("source", s.source)
                        return o
                    })
                return o
            }
            i.stdout.write(JSONObject.array(items) + [0x0A])
            return 0
        }
        var out = runs.isEmpty ? "no sync runs\n" : ""
        for run in runs {
            out += "run \(run.id)  \(run.finishedAt)  \(run.outcome) (exit \(run.exitStatus))  \(seconds(run.durationMilliseconds))\n"
            if run.outcome != RunOutcome.busy.rawValue {
                out += "  \(describe(run.counts))\n"
                for detail in run.details { out += "  \(detail.label): \(detail.value)\n" }
            }
            if let message = run.message { out += "  \(Table.escaped(message))\n" }
            for s in run.sources {
                var line = "  - \(Table.escaped(sourceLabel(s.source, remotes))): \(s.outcome ?? "not started")"
                if s.exitStatus != 0 && s.outcome != nil { line += " (exit \(s.exitStatus))" }
                if s.outcome != nil {
                    line += ", \(s.bytes) bytes in \(seconds(s.durationMilliseconds))"
                    if s.outcome == SourceReport.Outcome.merged.rawValue { line += "; \(describe(s.counts))" }
                }
                if let message = s.message { line += "; \(Table.escaped(message))" }
                out += line + "\n"
            }
        }
        i.stdout.write(out)
        return 0
    }

    /// The counts as `log` shows them: `3 of 5 landmarks and 1 of 1 position applied, 4 stale, 1 tie, 0 quarantined`.
    static func describe(_ c: MergeCounts) -> String {
        "\(c.landmarksApplied) of \(plural(c.landmarksSeen, "landmark")) and \(c.positionsApplied) of \(plural(c.positionsSeen, "position")) applied, "
            + "\(c.stale) stale\(heldErasures(c)), \(plural(c.ties, "tie")), \(c.quarantined) quarantined"
            + (c.notAllowed > 0 ? ", \(c.notAllowed) not allowed" : "")
            // Refused rows of erased users and rows older than the horizon, and erasures applied, when there are any
            // (docs/erasure.md §1, §4): as `--json` counts them.
            + (c.erased > 0 ? ", \(c.erased) erased" : "") + (c.expired > 0 ? ", \(c.expired) expired" : "")
            + (c.erasuresApplied > 0 ? ", \(plural(c.erasuresApplied, "erasure")) applied" : "")
    }

    /// How many of the stale count were erasure records this node already held, or nothing.
    ///
    /// ` (1 erasure already held here)`: its own erasure coming back from a peer, say. Said only when no
    /// row was refused by `--allow` (a not-allowed erasure is also seen and not applied).
    static func heldErasures(_ c: MergeCounts) -> String {
        let held = c.erasuresSeen - c.erasuresApplied
        return held > 0 && c.notAllowed == 0 ? " (\(plural(held, "erasure")) already held here)" : ""
    }

    /// A source as text shows it: by its remote's name where it has one, the URL beside it
    /// (`peer (https://example.org/catalog/)`), else the URL or path alone.
    static func sourceLabel(_ source: String, _ remotes: [String: String]) -> String {
        remotes[source].map { "\($0) (\(source))" } ?? source
    }

    /// Milliseconds as `1.234 s`.
    static func seconds(_ ms: Int64) -> String { String(format: "%.3f s", Double(ms) / 1000) }
}
