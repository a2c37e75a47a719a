import Foundation
@_spi(Testing) import LandmarkCatalog
import LandmarkCatalogSync

extension CatalogCLI {
    static var exportCommand: CommandSpec {
        CommandSpec(
            name: "export",
            abstract: "Write the whole catalog as a snapshot for peers (landmarks and positions, tombstones included).",
            discussion:
                "A file is written atomically (temporary file in the same directory, fsync, rename). Default: standard output. The same state always gives the same bytes.",
            options: [Options.output.spec],
            run: runExport)
    }

    static func runExport(_ i: Invocation) throws -> Int32 {
        let store = try i.openStore(.read)
        if let output = i[Options.output], let scheme = SourceLocator.scheme(of: output) {
            throw UsageError(message: "--output writes a local file, not \(scheme):// (\(redacted(output)))", path: i.parsed.path)
        }
        if let output = i[Options.output], output != "-" {
            let progress = i.makeProgressLine(label: "writing")
            try SnapshotExporter(store).exportSnapshot(toFile: output) { progress.update($0) }
            progress.clear()
        } else {
            try SnapshotExporter(store).exportSnapshot { i.stdout.write($0) }
        }
        return 0
    }

    enum SyncOptionsTable {
        static let publish = Option<String>(
            "--publish", "PATH",
            "After merging, publish the merged state: a snapshot log when PATH is a directory or does not end in .json, else one snapshot file (atomically).",
            completion: .file, parse: Values.nonEmpty)
        static let maxDrift = Option<Double>(
            "--max-drift", "DURATION", "Quarantine rows stamped further ahead than this (default 5m, at most 365d; 90s, 10m, 1h or seconds).",
            parse: Values.duration(zeroAllowed: true, atMost: 31_536_000))
        static let timeout = Option<Double>(
            "--timeout", "DURATION",
            "HTTP: give up when connecting, or receiving less than 1 KiB/s, takes longer than this (default 30s, at most 1d). Hub: the connect and statement timeout.",
            parse: Values.duration(atMost: 86_400))
        static let deadline = Option<Double>(
            "--deadline", "DURATION",
            "HTTP: the most one source may take, every attempt, backoff and Retry-After included (default 10m, at most 7d). Hub: the most one bulk statement may take.",
            parse: Values.duration(atMost: 604_800))
        static let retries = Option<Int>(
            "--retries", "N", "HTTP: retries on 429, 5xx and a connection broken before the body, with exponential backoff (default 3).",
            parse: Values.integer(0...10))
        static let follow = Flag(
            "--follow",
            "Keep running: sync each source as it changes (inotify for local logs, conditional GET every --interval for URLs, hubs every --interval) and publish this database's commits, until SIGTERM or SIGINT (exit 0); SIGHUP reads the saved remotes again."
        )
        static let interval = Option<Double>(
            "--interval", "DURATION",
            "With --follow: how often URLs and hubs are polled and other processes' commits published (default 1s, at most 1h).",
            parse: Values.duration(atMost: 3600))
        static let resetCursor = Flag(
            "--reset-cursor",
            "Forget each SOURCE's stored cursor and read it from its start (a log's base and every delta); the cursor its merge stores replaces the old one."
        )
        static let repair = Flag(
            "--repair",
            "After each source's sync, repair against it (another catalog database, a hub, or a serve with an edge token): one round trip when the copies agree; a hub or serve that forgot this node is repaired instead of re-read (docs/repair.md §7)."
        )
        static let tokenFile = Option<String>(
            "--token-file", "FILE",
            "catalog+https:// sources (catalog+http:// for loopback only): the file holding the bearer token (a JWT; an edge token syncs every row, docs/protocol.md §9).",
            completion: .file, parse: Values.nonEmpty)
        static let maxBytes = Option<Int64>(
            "--max-bytes", "BYTES", "HTTP: the largest body accepted, counted as it arrives (default 4294967296, 4 GiB).",
            parse: Values.int64(1...Int64.max))
    }

    /// The SOURCEs `sync` and `remote add` list in their help, from the declarations of the kinds the
    /// CLI registers (``NetworkSources/kinds``), so a new kind is listed without an edit here; the same in
    /// any process, so the help stays golden whatever else a test registers.
    enum SourceHelp {
        /// `sync`'s list: the core's own forms, then each kind's ``SourceKind/help`` phrase.
        static var sources: String {
            (["a path", "file://", "- (standard input)"] + NetworkSources.kinds.map(\.help)).joined(separator: ", ")
        }

        /// `remote add`'s URL: `file://`, each kind's ``SourceKind/forms``, or a path.
        static var remoteURL: String {
            (["file://"] + NetworkSources.kinds.flatMap(\.forms)).joined(separator: ", ") + " or a path (made absolute)."
        }

        /// `text` broken into lines of at most `width` characters at spaces, as the help prints discussions.
        static func wrapped(_ text: String, width: Int = 104) -> String {
            var lines: [String] = []
            var line = ""
            for word in text.split(separator: " ") {
                if !line.isEmpty && line.count + 1 + word.count > width {
                    lines.append(line)
                    line = ""
                }
                line += (line.isEmpty ? "" : " ") + word
            }
            return (lines + [line]).joined(separator: "\n")
        }
    }

    /// `sync`'s arguments (also read by `sync --follow`), declared once.
    enum SyncArguments {
        static let sources = Argument<String>("source", "Sources or remote names (default: every saved remote).", completion: .remote).repeating
    }

    static var syncCommand: CommandSpec {
        CommandSpec(
            name: "sync",
            abstract: "Pull peers' snapshots and logs and merge them with last-writer-wins, each source on its own.",
            discussion: SourceHelp.wrapped(
                "SOURCE is \(SourceHelp.sources) or a saved remote's name; with none, every saved remote. HTTP sources use"
                    + " conditional GET (ETag / Last-Modified): a 304 is success with nothing to do. Each source is merged in"
                    + " its own transaction: a source that is unavailable or bad changes nothing and is reported, the others"
                    + " still merge and --publish still runs; the exit status is the first failure's. One sync at a time per"
                    + " database: an overlapping run exits 75 at once. Rows stamped more than --max-drift ahead of this"
                    + " machine's clock are quarantined and reported, never applied. With --follow it keeps running and"
                    + " holds the lock (a timer's sync meanwhile exits 75): the ledger gets a run for each cycle that"
                    + " changed something or in which a source failed anew or recovered; a failing source is retried after"
                    + " the interval, doubling up to 1m."),
            arguments: [SyncArguments.sources.spec],
            options: [
                SyncOptionsTable.publish.spec, Options.dryRun.spec, Options.json.with(help: "Print the run's report as JSON.").spec,
                Options.quiet.spec, SyncOptionsTable.maxDrift.spec, SyncOptionsTable.timeout.spec, SyncOptionsTable.deadline.spec,
                SyncOptionsTable.retries.spec, SyncOptionsTable.maxBytes.spec, PublishOptionsTable.grace.spec,
                TrustOptionsTable.trust.with(
                    help: "For this run, take only snapshot logs signed by this minisign public key (its base64 line or a .pub file); repeatable."
                ).spec,
                TrustOptionsTable.sign.with(help: "Sign what --publish writes with this secret key (manifest.json.minisig).").spec,
                SyncOptionsTable.resetCursor.spec, SyncOptionsTable.follow.spec, SyncOptionsTable.interval.spec,
                SyncOptionsTable.repair.spec, SyncOptionsTable.tokenFile.spec,
            ],
            validate: validateFollow,
            run: runSync)
    }

    static func runSync(_ i: Invocation) throws -> Int32 {
        let options = try syncOptions(i)
        if i[SyncOptionsTable.follow] { return try runFollow(i, options: options) }
        let (report, remotes) = try syncOnce(i, options: options)
        for source in report.sources {
            if let error = source.error {
                i.reporter.error(error.message, hint: error.hint, kind: "source-failed", source: source.source, bounded: true)
            }
        }
        if let error = report.publishError { i.reporter.error(error.message, hint: error.hint) }
        if i[Options.json] {
            i.stdout.write(reportJSON(report, remotes: remotes))
        } else if !i[Options.quiet] {
            i.stdout.line(syncSummary(report))
        }
        return report.exitStatus
    }

    /// `sync`'s options from the command line (and the test hooks); a usage error for `--sign` without a
    /// log to sign or a `--publish` that is not local.
    static func syncOptions(_ i: Invocation) throws -> SyncOptions {
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
        options.resetCursor = i[SyncOptionsTable.resetCursor]
        options.repair = i[SyncOptionsTable.repair]
        options.tokenFile = i[SyncOptionsTable.tokenFile].map { CatalogFiles.absolutePath($0, in: FileManager.default.currentDirectoryPath) }
        options.trustedKeys = try trustedKeys(i)
        options.publish.signingKey = try signingKey(i)
        if options.publish.signingKey != nil, options.publishPath.map(SyncRunner.publishesLog) != true {
            throw UsageError(message: "--sign signs a snapshot log: give --publish DIR too", path: i.parsed.path)
        }
        if let target = options.publishPath, let scheme = SourceLocator.scheme(of: target) {
            throw UsageError(message: "--publish writes a local file or directory, not \(scheme):// (\(redacted(target)))", path: i.parsed.path)
        }
        return options
    }

    /// One sync run: the report, and the saved remotes' names by source.
    ///
    /// With `--json`, a run that could not start (the lock held, the database unusable, a SOURCE that is
    /// not one) still prints one object before its error is thrown.
    static func syncOnce(_ i: Invocation, options: SyncOptions) throws -> (SyncReport, remotes: [String: String]) {
        let report: SyncReport
        var remotes: [String: String] = [:]
        do {
            if !options.dryRun && !i.databaseExists { try checkSyncCreatesSomething(i, options: options) }
            let store = options.dryRun ? try i.openStoreForDryRun() : try i.openStore()
            let progress = i.makeProgressLine(label: "syncing")
            defer { progress.clear() }
            report = try SyncRunner(store: store).sync(
                sources: i[SyncArguments.sources], options: options, standardInput: i.context.stdinFD, diagnostics: i.report
            ) {
                progress.update($0)
            }
            remotes = (try? RemoteBook(store).remoteNames()) ?? [:]
        } catch let error as CatalogError where i[Options.json] {
            // No run happened (the lock is held, the database cannot be opened, a SOURCE is not one):
            // --json still prints one object, so a script reading it always has something to read.
            i.stdout.write(reportJSON(SyncReport(dryRun: options.dryRun), stoppedBy: error))
            throw error
        }
        return (report, remotes)
    }

    /// What a run's repairs moved, for its line: empty when they moved nothing (docs/repair.md §7).
    static func repairedPhrase(_ repairs: [String: RepairReport]) -> String {
        let moved = repairs.values.filter { $0.rowsSent + $0.rowsApplied > 0 }
        guard !moved.isEmpty else { return "" }
        let sent = moved.map(\.rowsSent).reduce(0, +)
        let applied = moved.map(\.rowsApplied).reduce(0, +)
        return "; repaired: \(plural(sent, "row")) sent, \(applied) applied here"
    }

    /// `sync`'s one line: sources by outcome, the counts, then what was pushed, released and published.
    static func syncSummary(_ report: SyncReport) -> String {
        let merged = report.sources.filter { $0.outcome == .merged }.count
        let failed = report.sources.filter { $0.outcome == .failed }.count
        let notModified = report.sources.count - merged - failed
        var line = report.dryRun ? "dry run, nothing written: " : ""
        line +=
            "\(plural(report.sources.count, "source")) (\(merged) merged, \(notModified) not modified\(failed > 0 ? ", \(failed) failed" : "")): "
        line += describe(report.counts)
        let pushing = report.sources.filter { $0.pushed != nil }
        if !pushing.isEmpty {
            let pushes = pushing.compactMap(\.pushed)
            let sent = pushes.map(\.sent).reduce(0, +)
            let written = pushes.map(\.written).reduce(0, +)
            let serves = pushing.filter { $0.source.hasPrefix("catalog+") }.count
            let target =
                pushing.count == 1
                ? (serves == 1 ? "the server" : "the hub")
                : serves == 0 ? "\(pushing.count) hubs" : "\(pushing.count) hubs and servers"
            let expired = pushes.map(\.expired).reduce(0, +)
            let erasures = pushes.map(\.erasures).reduce(0, +)
            line +=
                "; pushed \(pushedThings(rows: sent - erasures, erasures: erasures)) to \(target) (\(written) written\(expired > 0 ? ", \(expired) refused as expired" : ""))"
        }
        line += repairedPhrase(report.repairs)
        if report.released.released > 0 {
            line += "; \(plural(report.released.released, "held row")) released from quarantine (\(report.released.counts.applied) applied)"
        }
        if let log = report.logPublish {
            line += log.changed ? "; published \(log.directory) through change \(log.manifest.through)" : "; \(log.directory) unchanged"
        } else if let published = report.published {
            line += "; published \(published)"
        }
        return line
    }

    /// What a push sent, rows and erasure records named apart: `3 rows`, `1 erasure`, `2 rows and 1 erasure`.
    static func pushedThings(rows: Int, erasures: Int) -> String {
        erasures == 0 ? plural(rows, "row") : rows == 0 ? plural(erasures, "erasure") : "\(plural(rows, "row")) and \(plural(erasures, "erasure"))"
    }

    /// Before a sync creates a database: a run that could only fail creates nothing.
    ///
    /// With no SOURCE (there are no saved remotes without a database) and no `--publish` it is the usual
    /// "nothing to sync" (64); when every SOURCE is a local file that cannot be opened, the first one's
    /// error (66). Any other source may bring rows, so the database is created and the run recorded as
    /// usual.
    static func checkSyncCreatesSomething(_ i: Invocation, options: SyncOptions) throws {
        guard options.publishPath == nil else { return }
        let sources = i[SyncArguments.sources]
        guard !sources.isEmpty else {
            throw CatalogError(
                .usage, "nothing to sync: no SOURCE given and no remotes saved",
                hint: "catalog remote add NAME URL, or catalog sync FILE|URL|-, or --publish PATH to only publish")
        }
        var first: CatalogError?
        var firstWord: String?
        for text in sources {
            guard case .file(let path) = try SourceLocator.parse(text) else { return }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return }
            do {
                close(try CatalogFiles.openForReading(path))
                return
            } catch let error as CatalogError {
                if first == nil { (first, firstWord) = (error, text) }
            }
        }
        if var error = first, let word = firstWord {
            // A bare word was most likely meant as a remote's name, and without a database there is none.
            let bare = !word.contains("/") && SourceLocator.scheme(of: word) == nil
            error.hint =
                (bare ? "no remote is named '\(word)' either; " : "")
                + "nothing was created: there is no database at \(i.databasePath) yet"
            throw error
        }
    }

    /// `sync --json`'s report, keys sorted; `remotes` names each source's remote beside it (source key →
    /// name, from ``CatalogStore/remoteNames()``).
    ///
    /// `stoppedBy`: the error that stopped the run before it began (the lock held, the database unusable),
    /// given with an empty report: its message is `error` and its status `exitStatus`, so a script always
    /// reads one object of one shape.
    static func reportJSON(_ report: SyncReport, stoppedBy error: CatalogError? = nil, remotes: [String: String] = [:]) -> [UInt8] {
        var o = JSONObject()
        o.set("dryRun", report.dryRun)
        if let error { o.set("error", error.message) }
        o.set("exitStatus", Int(error?.exitStatus ?? report.exitStatus))
        o.set(counts: report.counts)
        o.set("publish", report.logPublish.map(publishJSON))
        o.set("publishError", report.publishError?.message)
        o.set("published", report.published)
        o.set("released", report.released.released)
        o.set("releasedApplied", report.released.counts.applied)
        o.set(
            "sources",
            objects: report.sources.map { s in
                var source = JSONObject()
                source.set("bytes", s.bytes)
                source.set("error", s.error?.message)
                source.set("exitStatus", Int(s.error?.exitStatus ?? 0))
                source.set("notAllowed", s.counts.notAllowed)
                source.set("note", s.note)
                source.set("outcome", s.outcome.rawValue)
                source.set(
                    "pushed",
                    s.pushed.map { p in
                        var pushed = JSONObject()
                        pushed.set("erasures", p.erasures)
                        pushed.set("expired", p.expired)
                        pushed.set("quarantined", p.quarantined)
                        pushed.set("sent", p.sent)
                        pushed.set("written", p.written)
                        return pushed
                    })
                source.set("remote", remotes[s.source])
                // Only where a repair ran (sync --repair): other runs print what they always did.
                if let repaired = report.repairs[s.source] { source.set("repair", repairJSON(repaired, dryRun: report.dryRun)) }
                source.set("source", s.source)
                return source
            })
        return o.bytes + [0x0A]
    }

    enum RemoteOptionsTable {
        static let noTrust = Flag("--no-trust", "Stop requiring a signature of this remote's snapshot log.")
        static let url = Option<String>(
            "--url", "URL",
            "Its new URL (a log moved to another host or path, a hub or serve under another address): its cursor goes with it.",
            completion: .file, parse: Values.nonEmpty)
    }

    /// Refuses a token file that cannot be read when a remote is saved, rather than at its first sync
    /// (docs/protocol.md §9); the token itself is read at each sync.
    ///
    /// - Parameter path: the file, as given (relative to the working directory).
    /// - Throws: `CatalogError` 66 when it is missing, a directory, or not readable.
    static func checkTokenFile(_ path: String) throws {
        let absolute = CatalogFiles.absolutePath(path, in: FileManager.default.currentDirectoryPath)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory), !isDirectory.boolValue,
            FileManager.default.isReadableFile(atPath: absolute)
        else {
            throw CatalogError(
                .noInput, "cannot read the token file \(absolute)", hint: "a file holding one JWT (catalog token issue, or the app's login service)")
        }
    }

    /// `remote edit` (and its earlier name `remote set`): URL, keys, grant or token file changed in place, the
    /// cursor kept.
    static func runRemoteEdit(_ i: Invocation) throws -> Int32 {
        let keys = try trustedKeys(i).map(\.line)
        if !keys.isEmpty && i[RemoteOptionsTable.noTrust] {
            throw UsageError(message: "--trust and --no-trust cannot be combined", path: i.parsed.path)
        }
        let allow = i[TrustOptionsTable.allow].flatMap(WriteGrant.init(rawValue:))
        let tokenFile = i[SyncOptionsTable.tokenFile]
        let url = i[RemoteOptionsTable.url]
        guard url != nil || !keys.isEmpty || i[RemoteOptionsTable.noTrust] || allow != nil || tokenFile != nil else {
            throw UsageError(
                message: "remote \(i.parsed.path.last ?? "edit") needs --url, --trust, --no-trust, --allow or --token-file", path: i.parsed.path)
        }
        if let tokenFile { try checkTokenFile(tokenFile) }
        let store = try existingStore(i)
        if !keys.isEmpty, let remote = try RemoteBook(store).remotes().first(where: { $0.name == i[RemoteArguments.saved] }) {
            try checkTrustApplies(url ?? remote.url, path: i.parsed.path)
        }
        try RemoteBook(store).updateRemote(
            name: i[RemoteArguments.saved], url: url, trustedKeys: i[RemoteOptionsTable.noTrust] ? [] : (keys.isEmpty ? nil : keys), allow: allow,
            tokenFile: tokenFile)
        return 0
    }

    /// Refuses `--trust` for a remote whose kind cannot carry a signed log (``SourceKind/trustRefusal``).
    /// - Throws: `UsageError` with the kind's reason.
    static func checkTrustApplies(_ url: String, path: [String]) throws {
        if let refusal = try SourceLocator.parse(url).kind?.trustRefusal {
            throw UsageError(message: "--trust applies to snapshot logs; \(refusal)", path: path)
        }
    }

    /// `remote add` and `remote remove`'s arguments, declared once.
    enum RemoteArguments {
        static let name = Argument<String>("name", "1–64 of A–Z a–z 0–9 . _ -")
        static let url = Argument<String>("url", SourceHelp.remoteURL, completion: .file)
        /// `remote remove`'s: an existing remote (completed from the saved ones).
        static let saved = Argument<String>("name", "The remote's name.", completion: .remote)
    }

    static var remoteCommand: CommandSpec {
        CommandSpec(
            name: "remote",
            abstract: "Manage the saved remotes that 'catalog sync' pulls when given no SOURCE.",
            subcommands: [
                CommandSpec(
                    name: "add", abstract: "Save a remote: a name and a SOURCE's URL, connection string or path.",
                    discussion:
                        "With --trust, the remote's snapshot log is merged only when its manifest is signed by one of the keys (else 77, nothing merged); with --allow, only rows of that kind are applied.",
                    arguments: [RemoteArguments.name.spec, RemoteArguments.url.spec],
                    options: [
                        TrustOptionsTable.trust.spec, TrustOptionsTable.allow.spec,
                        SyncOptionsTable.tokenFile.with(
                            help:
                                "A catalog+https:// remote (catalog+http:// for loopback only): the file holding its bearer token (its path is saved)."
                        )
                        .spec,
                    ],
                    run: { i in
                        // A bad name or URL is refused before the database is opened: it creates nothing.
                        let (name, url) = (i[RemoteArguments.name], i[RemoteArguments.url])
                        let saved = try RemoteBook.checkedRemote(name: name, url: url)
                        let locator = try SourceLocator.parse(saved)
                        if locator.capabilities.contains(.bearerToken) {
                            guard let tokenFile = i[SyncOptionsTable.tokenFile] else {
                                throw CatalogError(
                                    .usage, "a \(locator.kindName) remote needs --token-file, \(SourceLocator.redacted(saved))",
                                    hint: "catalog remote add \(name) \(SourceLocator.redacted(saved)) --token-file FILE (a file holding one JWT)")
                            }
                            try checkTokenFile(tokenFile)
                        }
                        let keys = try trustedKeys(i).map(\.line)
                        if !keys.isEmpty { try checkTrustApplies(url, path: i.parsed.path) }
                        let allow = i[TrustOptionsTable.allow].flatMap(WriteGrant.init(rawValue:)) ?? .all
                        try RemoteBook(i.openStore()).addRemote(
                            name: name, url: url, trustedKeys: keys, allow: allow, tokenFile: i[SyncOptionsTable.tokenFile])
                        return 0
                    }),
                remoteEditSpec(
                    name: "edit", abstract: "Change a saved remote's URL, trusted keys, write grant or token file, keeping its cursor."),
                remoteEditSpec(name: "set", abstract: "The same as 'remote edit' (its earlier name)."),
                CommandSpec(
                    name: "list", abstract: "List the saved remotes (passwords are never shown).",
                    options: [Options.json.spec],
                    run: runRemoteList),
                CommandSpec(
                    name: "remove", abstract: "Forget a saved remote.",
                    arguments: [RemoteArguments.saved.spec],
                    run: { i in
                        try RemoteBook(existingStore(i)).removeRemote(name: i[RemoteArguments.saved])
                        return 0
                    }),
            ])
    }

    /// `remote edit`, and `remote set` by its earlier name.
    static func remoteEditSpec(name: String, abstract: String) -> CommandSpec {
        CommandSpec(
            name: name, abstract: abstract,
            discussion:
                "Rotating a publisher's key (docs/trust.md §5): 'remote edit NAME --trust OLD --trust NEW', then '--trust NEW' alone once the publisher signs with it; the log is not read again. --url moves the remote (its cursor goes with it when the new URL is of the same kind). --trust replaces the keys; --no-trust stops requiring a signature; what is not given stays.",
            arguments: [RemoteArguments.saved.spec],
            options: [
                RemoteOptionsTable.url.spec,
                TrustOptionsTable.trust.with(help: "Trust this minisign public key instead of the saved ones (repeatable).").spec,
                RemoteOptionsTable.noTrust.spec, TrustOptionsTable.allow.spec,
                SyncOptionsTable.tokenFile.with(help: "A catalog+https:// remote (catalog+http:// for loopback only): its new token file.").spec,
            ],
            run: runRemoteEdit)
    }

    static func runRemoteList(_ i: Invocation) throws -> Int32 {
        let remotes = try RemoteBook(i.openStore(.read)).remotes()
        if i[Options.json] {
            let items = remotes.map { r in
                var o = JSONObject()
                o.set("allow", r.allow.rawValue)
                o.set("name", r.name)
                // The token file's path (never the token), for a catalog+https:// remote.
                if let tokenFile = r.tokenFile { o.set("tokenFile", tokenFile) }
                o.set("trustedKeys", strings: r.trustedKeys.map { (try? MinisignPublicKey(text: $0, source: "").id) ?? "?" })
                o.set("url", redacted(r.url))
                return o
            }
            i.stdout.write(JSONObject.array(items) + [0x0A])
        } else if remotes.isEmpty {
            i.stdout.line("no remotes")
        } else {
            // The trust columns appear once a remote has trusted keys or a grant narrower than all; the token
            // file's (its path, never the token) once a remote has one.
            let trust = remotes.contains(where: { !$0.trustedKeys.isEmpty || $0.allow != .all })
            let tokens = remotes.contains(where: { $0.tokenFile != nil })
            let keys = { (r: Remote) in r.trustedKeys.compactMap { try? MinisignPublicKey(text: $0, source: "").id }.joined(separator: ",") }
            let header = ["NAME", "URL"] + (trust ? ["ALLOW", "TRUSTS"] : []) + (tokens ? ["TOKEN FILE"] : [])
            let rows = remotes.map { r in
                [r.name, redacted(r.url)] + (trust ? [r.allow.rawValue, r.trustedKeys.isEmpty ? "-" : keys(r)] : [])
                    + (tokens ? [r.tokenFile ?? "-"] : [])
            }
            i.stdout.write(Table.render([header] + rows))
        }
        return 0
    }

    /// A URL or connection string with its password replaced by `***`.
    static func redacted(_ url: String) -> String { SourceLocator.redacted(url) }
}
