import Foundation
@_spi(Testing) import LandmarkCatalog

extension CatalogCLI {
    static var exportCommand: CommandSpec {
        CommandSpec(
            name: "export",
            abstract: "Write the whole catalog as a snapshot for peers (landmarks and positions, tombstones included).",
            discussion: "A file is written atomically (temporary file in the same directory, fsync, rename). Default: standard output. The same state always gives the same bytes.",
            options: [Options.output.spec],
            run: runExport)
    }

    static func runExport(_ i: Invocation) throws -> Int32 {
        let store = try i.openStore(.read)
        if let output = i[Options.output], output != "-" {
            try store.exportSnapshot(toFile: output)
        } else {
            try store.exportSnapshot { i.stdout.write($0) }
        }
        return 0
    }

    enum SyncOptionsTable {
        static let publish = Option<String>("--publish", "PATH",
            "After merging, publish the merged state: a snapshot log when PATH is a directory or does not end in .json, else one snapshot file (atomically).",
            completion: .file, parse: Values.nonEmpty)
        static let maxDrift = Option<Double>("--max-drift", "SECONDS", "Quarantine rows stamped further ahead than this (default 300, at most a year).",
                                             parse: Values.seconds(0...31_536_000, "a year at most"))
        static let timeout = Option<Double>("--timeout", "SECONDS",
            "HTTP: give up when connecting, or receiving less than 1 KiB/s, takes longer than this (default 30). Hub: the connect and statement timeout.",
            parse: Values.seconds(0.001...86_400))
        static let deadline = Option<Double>("--deadline", "SECONDS",
            "HTTP: the most one source may take, every attempt, backoff and Retry-After included (default 600). Hub: the most one bulk statement may take.",
            parse: Values.seconds(0.001...604_800))
        static let retries = Option<Int>("--retries", "N", "HTTP: retries on 429 and 5xx, with exponential backoff (default 3).",
                                         parse: Values.integer(0...10))
        static let maxBytes = Option<Int64>("--max-bytes", "BYTES", "HTTP: the largest body accepted, counted as it arrives (default 1073741824).",
                                            parse: Values.int64(1...Int64.max))
    }

    static var syncCommand: CommandSpec {
        CommandSpec(
            name: "sync",
            abstract: "Pull peers' snapshots and logs and merge them with last-writer-wins, each source on its own.",
            discussion: """
                SOURCE is a path, file://, http://, https://, - (standard input), a PostgreSQL hub (postgres://,
                postgresql:// or a libpq keyword string: this node's changes are pushed, then the hub's pulled) or
                a saved remote's name; with none, every saved remote. HTTP sources use conditional GET (ETag /
                Last-Modified): a 304 is success with nothing to do. Each source is merged in its own transaction:
                a source that is unavailable or bad changes nothing and is reported, the others still merge and
                --publish still runs; the exit status is the first failure's. One sync at a time per database: an
                overlapping run exits 75 at once. Rows stamped more than --max-drift ahead of this machine's clock
                are quarantined and reported, never applied.
                """,
            arguments: [ArgumentSpec(name: "source", help: "Sources or remote names (default: every saved remote).", optional: true,
                                     repeating: true, completion: .remote)],
            options: [
                SyncOptionsTable.publish.spec, Options.dryRun.spec, Options.json.with(help: "Print the run's report as JSON.").spec,
                Options.quiet.spec, SyncOptionsTable.maxDrift.spec, SyncOptionsTable.timeout.spec, SyncOptionsTable.deadline.spec,
                SyncOptionsTable.retries.spec, SyncOptionsTable.maxBytes.spec, PublishOptionsTable.grace.spec,
            ],
            run: runSync)
    }

    static func runSync(_ i: Invocation) throws -> Int32 {
        var options = SyncOptions()
        options.dryRun = i[Options.dryRun]
        options.publishPath = i[SyncOptionsTable.publish]
        options.publish = publishOptions(i)
        if let s = i[SyncOptionsTable.maxDrift] { options.maxDriftMilliseconds = Int64(s * 1000) }
        if let s = i[SyncOptionsTable.timeout] { options.timeoutSeconds = s }
        if let s = i[SyncOptionsTable.deadline] { options.deadlineSeconds = s }
        if let n = i[SyncOptionsTable.retries] { options.retries = n }
        if let n = i[SyncOptionsTable.maxBytes] { options.maxBytes = n }
        if let s = i.context.testHooks.backoffSeconds { options.backoffSeconds = s }
        options.pauseBeforeCommitMilliseconds = i.context.testHooks.pauseBeforeCommitMilliseconds

        let store = options.dryRun ? try i.openStoreForDryRun() : try i.openStore()
        let report = try store.sync(sources: i.positionals, options: options, standardInput: i.context.stdinFD, diagnostics: i.report)
        for source in report.sources {
            if let error = source.error { i.reporter.error(error.message, hint: error.hint) }
        }
        if let error = report.publishError { i.reporter.error(error.message, hint: error.hint) }
        let c = report.counts
        if i[Options.json] {
            var w = JSONWriter()
            w.raw("{"); w.key("dryRun"); w.bool(report.dryRun)
            w.raw(","); w.key("exitStatus"); w.int(Int64(report.exitStatus))
            w.raw(","); w.key("landmarksApplied"); w.int(Int64(c.landmarksApplied))
            w.raw(","); w.key("landmarksSeen"); w.int(Int64(c.landmarksSeen))
            w.raw(","); w.key("positionsApplied"); w.int(Int64(c.positionsApplied))
            w.raw(","); w.key("positionsSeen"); w.int(Int64(c.positionsSeen))
            w.raw(","); w.key("publish")
            if let log = report.logPublish { w.bytes += publishJSON(log) } else { w.raw("null") }
            w.raw(","); w.key("published"); w.string(report.published)
            w.raw(","); w.key("quarantined"); w.int(Int64(c.quarantined))
            w.raw(","); w.key("sources"); w.raw("[")
            for (n, s) in report.sources.enumerated() {
                if n > 0 { w.raw(",") }
                w.raw("{"); w.key("bytes"); w.int(s.bytes)
                w.raw(","); w.key("error"); w.string(s.error?.message)
                w.raw(","); w.key("exitStatus"); w.int(Int64(s.error?.exitStatus ?? 0))
                w.raw(","); w.key("outcome"); w.string(s.outcome.rawValue)
                w.raw(","); w.key("source"); w.string(s.source); w.raw("}")
            }
            w.raw("]")
            w.raw(","); w.key("stale"); w.int(Int64(c.stale))
            w.raw(","); w.key("ties"); w.int(Int64(c.ties))
            w.raw("}\n")
            i.stdout.write(w.bytes)
        } else if !i[Options.quiet] {
            let merged = report.sources.filter { $0.outcome == .merged }.count
            let failed = report.sources.filter { $0.outcome == .failed }.count
            let notModified = report.sources.count - merged - failed
            var line = report.dryRun ? "dry run, nothing written: " : ""
            line += "\(report.sources.count) source\(report.sources.count == 1 ? "" : "s") (\(merged) merged, \(notModified) not modified\(failed > 0 ? ", \(failed) failed" : "")): "
            line += "\(c.landmarksApplied) of \(c.landmarksSeen) landmarks and \(c.positionsApplied) of \(c.positionsSeen) positions applied, "
            line += "\(c.stale) stale, \(c.ties) ties, \(c.quarantined) quarantined"
            if let log = report.logPublish {
                line += log.changed ? "; published \(log.directory) through change \(log.manifest.through)" : "; \(log.directory) unchanged"
            } else if let published = report.published {
                line += "; published \(published)"
            }
            i.stdout.line(line)
        }
        return report.exitStatus
    }

    static var remoteCommand: CommandSpec {
        CommandSpec(
            name: "remote",
            abstract: "Manage the saved remotes that 'catalog sync' pulls when given no SOURCE.",
            subcommands: [
                CommandSpec(name: "add", abstract: "Save a remote: a name and an http(s)://, file://, postgres:// URL or absolute path.",
                            arguments: [ArgumentSpec(name: "name", help: "1–64 of A–Z a–z 0–9 . _ -"),
                                        ArgumentSpec(name: "url", help: "http://, https://, file://, postgres:// or an absolute path.", completion: .file)],
                            run: { i in try i.openStore().addRemote(name: i.positionals[0], url: i.positionals[1]); return 0 }),
                CommandSpec(name: "list", abstract: "List the saved remotes (passwords are never shown).",
                            options: [Options.json.spec],
                            run: runRemoteList),
                CommandSpec(name: "remove", abstract: "Forget a saved remote.",
                            arguments: [ArgumentSpec(name: "name", help: "The remote's name.", completion: .remote)],
                            run: { i in try i.openStore().removeRemote(name: i.positionals[0]); return 0 }),
            ])
    }

    static func runRemoteList(_ i: Invocation) throws -> Int32 {
        let remotes = try i.openStore(.read).remotes()
        if i[Options.json] {
            var w = JSONWriter()
            w.raw("[")
            for (n, r) in remotes.enumerated() {
                if n > 0 { w.raw(",") }
                w.raw("{"); w.key("name"); w.string(r.name); w.raw(","); w.key("url"); w.string(redacted(r.url)); w.raw("}")
            }
            w.raw("]\n")
            i.stdout.write(w.bytes)
        } else if !remotes.isEmpty {
            i.stdout.write(Table.render([["NAME", "URL"]] + remotes.map { [$0.name, redacted($0.url)] }))
        }
        return 0
    }

    /// A URL or connection string with its password replaced by `***`.
    static func redacted(_ url: String) -> String { SourceLocator.redacted(url) }

    static var statusCommand: CommandSpec {
        CommandSpec(
            name: "status",
            abstract: "Show node id, schema version, counts, quarantine, and the last good sync per source.",
            options: [Options.json.spec],
            run: runStatus)
    }

    static func runStatus(_ i: Invocation) throws -> Int32 {
        let store = try i.openStore(.read)
        let s = try store.status()
        let digest = try store.stateDigest()
        let hubs = try store.hubStatuses()
        if i[Options.json] {
            var w = JSONWriter()
            w.raw("{"); w.key("changeSequence"); w.int(s.changeSequence)
            w.raw(","); w.key("digest"); w.string(digest.hex)
            w.raw(","); w.key("digestRows"); w.int(digest.rows)
            w.raw(","); w.key("database"); w.string(store.path)
            w.raw(","); w.key("hubs"); w.bytes += hubStatusJSON(hubs, local: digest)
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
            for (n, src) in s.sources.enumerated() {
                if n > 0 { w.raw(",") }
                w.raw("{"); w.key("kind"); w.string(src.kind)
                w.raw(","); w.key("lastAttemptAt"); w.string(src.lastAttempt)
                w.raw(","); w.key("lastError"); w.string(src.lastError)
                w.raw(","); w.key("lastOutcome"); w.string(src.outcome)
                w.raw(","); w.key("lastStatus"); w.int(src.lastStatus.map(Int64.init))
                w.raw(","); w.key("lastSuccessAt"); w.string(src.lastSuccess)
                w.raw(","); w.key("source"); w.string(src.source); w.raw("}")
            }
            w.raw("]}\n")
            i.stdout.write(w.bytes)
            return 0
        }
        var out = """
            database:    \(store.path)
            node:        \(s.node)
            schema:      version \(s.schemaVersion)
            landmarks:   \(s.landmarks) live, \(s.landmarkTombstones) tombstones
            positions:   \(s.positions) live, \(s.positionTombstones) tombstones
            changes:     \(s.changeSequence)
            digest:      \(digest)
            quarantine:  \(s.quarantined) rows

            """
        if let r = s.lastRun {
            out += "last sync:   \(r.finished) \(r.outcome) (exit \(r.status))\(r.message.map { ": \($0)" } ?? "")\n"
        } else {
            out += "last sync:   never\n"
        }
        for src in s.sources {
            out += "source:      \(src.source) last good \(src.lastSuccess ?? "never") (\(src.outcome ?? "-"))"
            if let error = src.lastError { out += "; last error: \(error)" }
            out += "\n"
        }
        out += hubStatusText(hubs, local: digest)
        i.stdout.write(out)
        return 0
    }
}
