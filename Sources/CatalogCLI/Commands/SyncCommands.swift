import Foundation
import LandmarkCatalog

extension CatalogCLI {
    static var exportCommand: CommandSpec {
        CommandSpec(
            name: "export",
            abstract: "Write the whole catalog as a snapshot for peers (landmarks and positions, tombstones included).",
            discussion: "A file is written atomically (temporary file in the same directory, fsync, rename). Default: standard output.",
            options: [.value("--output", "FILE", "Write to FILE instead of standard output (- is standard output).")],
            run: runExport)
    }

    static func runExport(_ p: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let store = try openStore(p, context, existing: true)
        if let output = p.value("--output"), output != "-" {
            try store.exportSnapshot(toFile: output)
        } else {
            try store.exportSnapshot { context.stdout.write($0) }
        }
        return 0
    }

    static var syncCommand: CommandSpec {
        CommandSpec(
            name: "sync",
            abstract: "Pull peers' snapshots and merge them with last-writer-wins, in one transaction.",
            discussion: """
                SOURCE is a path, file://, http://, https://, - (standard input) or a saved remote's name; with
                none, every saved remote.
                HTTP sources use conditional GET (ETag / Last-Modified): a 304 is success with nothing to do.
                Any bad or unavailable source fails the whole run and nothing is merged. One sync at a time
                per database: an overlapping run exits 75 at once. Rows stamped more than --max-drift ahead
                of this machine's clock are quarantined and reported, never applied.
                """,
            arguments: [ArgumentSpec(name: "source", help: "Snapshot sources or remote names (default: every saved remote).", optional: true, repeating: true)],
            options: [
                .value("--publish", "FILE", "After merging, write the merged state as a snapshot to FILE (atomically)."),
                .flag("--dry-run", "Report what would change; change nothing."),
                .flag("--json", "Print the run's report as JSON."),
                .flag("--quiet", "Print nothing on success (warnings and errors still go to stderr)."),
                .value("--max-drift", "SECONDS", "Quarantine rows stamped further ahead than this (default 300, at most a year)."),
                .value("--timeout", "SECONDS", "HTTP: give up on a silent server after this long (default 30)."),
                .value("--retries", "N", "HTTP: retries on 429 and 5xx, with exponential backoff (default 3)."),
                .value("--max-bytes", "BYTES", "HTTP: the largest snapshot accepted (default 1073741824)."),
            ],
            run: runSync)
    }

    static func runSync(_ p: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        var options = SyncOptions()
        options.dryRun = p.has("--dry-run")
        options.publishPath = p.value("--publish")
        if let v = p.value("--max-drift") {
            guard let s = Double(v), s >= 0, s <= 31_536_000 else {
                // A larger allowance would let one far-future stamp drag this node's clock (and every later
                // local write) years ahead, where peers would quarantine it.
                throw UsageError(message: "--max-drift needs 0…31536000 seconds (a year at most), got '\(v)'", path: p.path)
            }
            options.maxDriftMilliseconds = Int64(s * 1000)
        }
        if let v = p.value("--timeout") {
            guard let s = Double(v), s > 0, s.isFinite else { throw UsageError(message: "--timeout needs seconds > 0, got '\(v)'", path: p.path) }
            options.timeoutSeconds = s
        }
        if let v = p.value("--retries") {
            guard let n = Int(v), (0...10).contains(n) else { throw UsageError(message: "--retries needs 0…10, got '\(v)'", path: p.path) }
            options.retries = n
        }
        if let v = p.value("--max-bytes") {
            guard let n = Int64(v), n > 0 else { throw UsageError(message: "--max-bytes needs a positive integer, got '\(v)'", path: p.path) }
            options.maxBytes = n
        }
        if let v = context.environment["CATALOG_TEST_BACKOFF_SECONDS"], let s = Double(v) { options.backoffSeconds = s }
        if let v = context.environment["CATALOG_TEST_PAUSE_BEFORE_COMMIT_MS"], let ms = Int(v) { options.pauseBeforeCommitMilliseconds = ms }

        let store = options.dryRun && !databaseExists(p, context)
            ? try CatalogStore.open(path: ":memory:", wallClock: context.wallClock)  // a dry run creates nothing
            : try openStore(p, context)
        let report = try store.sync(sources: p.positionals, options: options, standardInput: context.stdinFD) { diagnostic in
            context.stderr.line("catalog: \(diagnostic.severity.rawValue): \(diagnostic)")
        }
        let c = report.counts
        if p.has("--json") {
            var w = JSONWriter()
            w.raw("{"); w.key("dryRun"); w.bool(report.dryRun)
            w.raw(","); w.key("landmarksApplied"); w.int(Int64(c.landmarksApplied))
            w.raw(","); w.key("landmarksSeen"); w.int(Int64(c.landmarksSeen))
            w.raw(","); w.key("positionsApplied"); w.int(Int64(c.positionsApplied))
            w.raw(","); w.key("positionsSeen"); w.int(Int64(c.positionsSeen))
            w.raw(","); w.key("published"); w.string(report.published)
            w.raw(","); w.key("quarantined"); w.int(Int64(c.quarantined))
            w.raw(","); w.key("sources"); w.raw("[")
            for (i, s) in report.sources.enumerated() {
                if i > 0 { w.raw(",") }
                w.raw("{"); w.key("bytes"); w.int(s.bytes)
                w.raw(","); w.key("outcome"); w.string(s.outcome.rawValue)
                w.raw(","); w.key("source"); w.string(s.source); w.raw("}")
            }
            w.raw("]")
            w.raw(","); w.key("stale"); w.int(Int64(c.stale))
            w.raw(","); w.key("ties"); w.int(Int64(c.ties))
            w.raw("}\n")
            context.stdout.write(w.bytes)
        } else if !p.has("--quiet") {
            let merged = report.sources.filter { $0.outcome == .merged }.count
            let notModified = report.sources.count - merged
            var line = report.dryRun ? "dry run, nothing written: " : ""
            line += "\(report.sources.count) source\(report.sources.count == 1 ? "" : "s") (\(merged) merged, \(notModified) not modified): "
            line += "\(c.landmarksApplied) of \(c.landmarksSeen) landmarks and \(c.positionsApplied) of \(c.positionsSeen) positions applied, "
            line += "\(c.stale) stale, \(c.ties) ties, \(c.quarantined) quarantined"
            context.stdout.line(line)
        }
        return 0
    }

    static var remoteCommand: CommandSpec {
        CommandSpec(
            name: "remote",
            abstract: "Manage the saved remotes that 'catalog sync' pulls when given no SOURCE.",
            subcommands: [
                CommandSpec(name: "add", abstract: "Save a remote: a name and an http(s)://, file:// URL or absolute path.",
                            arguments: [ArgumentSpec(name: "name", help: "1–64 of A–Z a–z 0–9 . _ -"),
                                        ArgumentSpec(name: "url", help: "http://, https://, file:// or an absolute path.")],
                            run: { p, c in try openStore(p, c).addRemote(name: p.positionals[0], url: p.positionals[1]); return 0 }),
                CommandSpec(name: "list", abstract: "List the saved remotes.",
                            options: [.flag("--json", "Print JSON.")],
                            run: runRemoteList),
                CommandSpec(name: "remove", abstract: "Forget a saved remote.",
                            arguments: [ArgumentSpec(name: "name", help: "The remote's name.")],
                            run: { p, c in try openStore(p, c).removeRemote(name: p.positionals[0]); return 0 }),
            ])
    }

    static func runRemoteList(_ p: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let remotes = try openStore(p, context, existing: true).remotes()
        if p.has("--json") {
            var w = JSONWriter()
            w.raw("[")
            for (i, r) in remotes.enumerated() {
                if i > 0 { w.raw(",") }
                w.raw("{"); w.key("name"); w.string(r.name); w.raw(","); w.key("url"); w.string(r.url); w.raw("}")
            }
            w.raw("]\n")
            context.stdout.write(w.bytes)
        } else if !remotes.isEmpty {
            context.stdout.write(Table.render([["NAME", "URL"]] + remotes.map { [$0.name, $0.url] }))
        }
        return 0
    }

    static var statusCommand: CommandSpec {
        CommandSpec(
            name: "status",
            abstract: "Show node id, schema version, counts, quarantine, and the last good sync per source.",
            options: [.flag("--json", "Print JSON.")],
            run: runStatus)
    }

    static func runStatus(_ p: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let store = try openStore(p, context, existing: true)
        let s = try store.status()
        if p.has("--json") {
            var w = JSONWriter()
            w.raw("{"); w.key("database"); w.string(store.path)
            w.raw(","); w.key("landmarkTombstones"); w.int(Int64(s.landmarkTombstones))
            w.raw(","); w.key("landmarks"); w.int(Int64(s.landmarks))
            w.raw(","); w.key("lastRun")
            if let r = s.lastRun {
                w.raw("{"); w.key("exitStatus"); w.int(Int64(r.status))
                w.raw(","); w.key("finishedAt"); w.string(r.finished)
                w.raw(","); w.key("message"); w.string(r.message)
                w.raw(","); w.key("outcome"); w.string(r.outcome); w.raw("}")
            } else { w.raw("null") }
            w.raw(","); w.key("node"); w.string(s.node)
            w.raw(","); w.key("positionTombstones"); w.int(Int64(s.positionTombstones))
            w.raw(","); w.key("positions"); w.int(Int64(s.positions))
            w.raw(","); w.key("quarantined"); w.int(Int64(s.quarantined))
            w.raw(","); w.key("schemaVersion"); w.int(Int64(s.schemaVersion))
            w.raw(","); w.key("sources"); w.raw("[")
            for (i, src) in s.sources.enumerated() {
                if i > 0 { w.raw(",") }
                w.raw("{"); w.key("lastOutcome"); w.string(src.outcome)
                w.raw(","); w.key("lastSuccessAt"); w.string(src.lastSuccess)
                w.raw(","); w.key("source"); w.string(src.source); w.raw("}")
            }
            w.raw("]}\n")
            context.stdout.write(w.bytes)
            return 0
        }
        var out = """
            database:    \(store.path)
            node:        \(s.node)
            schema:      version \(s.schemaVersion)
            landmarks:   \(s.landmarks) live, \(s.landmarkTombstones) tombstones
            positions:   \(s.positions) live, \(s.positionTombstones) tombstones
            quarantine:  \(s.quarantined) rows

            """
        if let r = s.lastRun {
            out += "last sync:   \(r.finished) \(r.outcome) (exit \(r.status))\(r.message.map { ": \($0)" } ?? "")\n"
        } else {
            out += "last sync:   never\n"
        }
        for src in s.sources {
            out += "source:      \(src.source) last good \(src.lastSuccess ?? "never") (\(src.outcome ?? "-"))\n"
        }
        context.stdout.write(out)
        return 0
    }
}
