import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

extension CatalogCLI {
    /// `repair`'s argument, declared once.
    enum RepairArguments {
        static let source = Argument<String>(
            "source",
            "Another catalog database (its file path), a PostgreSQL hub (postgres://, postgresql://), or a catalog serve (catalog+https://HOST/v1; catalog+http:// for loopback only).",
            completion: .file)
    }

    static var repairCommand: CommandSpec {
        CommandSpec(
            name: "repair",
            abstract: "Find the rows that differ from another copy by range fingerprints and move only those, both ways.",
            discussion: """
                SOURCE is another catalog database, by its file path (a file that starts with SQLite's header),
                or a catalog serve, catalog+https://HOST/v1 (catalog+http:// for loopback only) with an edge
                token from --token-file or the saved remote, as catalog sync takes it (POST /v1/repair), or a
                PostgreSQL hub, postgres://USER@HOST/DB, its password as catalog sync takes it (the URL, the saved
                remote, ~/.pgpass); the hub's side runs here, and rows it takes go in as a push.
                Both copies compare keyed fingerprints of key ranges, split the ranges that differ 16 ways until
                they are small, then exchange only the rows that differ; each is merged by the merge rule, like
                any row from a sync. Equal copies take one round trip of under 64 bytes each way. --json
                reports roundTrips, bytesSent and bytesReceived (the repair's own messages, rows excluded),
                rowsSent, rowsReceived, rowsApplied, both digests after, equal and dryRun; copies left apart
                (a row one side would not take) get one warning. --dry-run finds and counts the differing
                rows and changes neither copy. SOURCE may be a saved remote's name. See docs/repair.md.
                """,
            arguments: [RepairArguments.source.spec],
            options: [
                Options.dryRun.spec, Options.json.spec,
                SyncOptionsTable.tokenFile.with(
                    help: "A catalog+https:// SOURCE (catalog+http:// for loopback only): the file holding its edge token (a JWT)."
                ).spec,
            ],
            run: runRepair)
    }

    static func runRepair(_ i: Invocation) throws -> Int32 {
        let source = try savedRemoteURL(i[RepairArguments.source], i)
        if ServeRepair.names(source) {
            var options = SyncOptions()
            options.tokenFile = i[SyncOptionsTable.tokenFile].map { CatalogFiles.absolutePath($0, in: FileManager.default.currentDirectoryPath) }
            let report = try ServeRepair.run(
                store: try i.openStore(), source: source, options: options, dryRun: i[Options.dryRun], diagnostics: i.report)
            return finishRepair(report, source: source, i)
        }
        if i[SyncOptionsTable.tokenFile] != nil {
            throw CatalogError(.usage, "--token-file is for a catalog serve SOURCE (catalog+https://HOST/v1), not a database file or a hub")
        }
        if HubRepair.names(source) {
            let run = try HubRepair.run(
                store: try i.openStore(), source: source, options: SyncOptions(), dryRun: i[Options.dryRun], diagnostics: i.report)
            let name = SourceLocator.redacted(source)
            if run.peer.pullOnly {
                i.report(
                    Diagnostic(
                        severity: .warning,
                        message: "this role may only read the hub: repaired one way, the hub's rows here; rows the hub lacks stay here",
                        file: name, kind: "pull-only"))
            }
            if run.peer.expired + run.peer.quarantined > 0 {
                i.report(
                    Diagnostic(
                        severity: .warning,
                        message:
                            "the hub refused \(plural(run.peer.expired, "row")) as expired and quarantined \(run.peer.quarantined) (stamped ahead of its clock); the digests after show them",
                        file: name, kind: "hub-refused"))
            }
            return finishRepair(run.report, source: name, i)
        }
        guard RepairSourceKind.isDatabase(path: source) else {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory) {
                if isDirectory.boolValue { throw CatalogError(.noInput, "a directory, not a catalog database: \(source)") }
                throw CatalogError(
                    .usage, "not a catalog database: \(source)",
                    hint: "repair takes another catalog database by its file path; a snapshot file goes to 'catalog sync'")
            }
            if source.contains("://") {
                throw CatalogError(
                    .usage, "not a source repair can ask: \(SourceLocator.redacted(source))",
                    hint:
                        "repair takes another catalog database, a PostgreSQL hub (postgres://) or a catalog serve (catalog+https://HOST/v1); a snapshot or log URL goes to 'catalog sync'"
                )
            }
            throw CatalogError(.noInput, "no such database: \(source)")
        }
        let store = try i.openStore()
        let report = try Repairer(store).repair(withDatabase: source, dryRun: i[Options.dryRun])
        return finishRepair(report, source: source, i)
    }

    /// A saved remote's URL when `source` is its name and no file of that name exists, else `source`.
    static func savedRemoteURL(_ source: String, _ i: Invocation) throws -> String {
        guard !source.contains("/"), !FileManager.default.fileExists(atPath: source) else { return source }
        return try RemoteBook(try i.openStore()).remotes().first { $0.name == source }?.url ?? source
    }

    /// Prints the report and warns when the copies stay apart (not in a dry run, where no row moves).
    static func finishRepair(_ report: RepairReport, source: String, _ i: Invocation) -> Int32 {
        if !i[Options.dryRun], let warning = report.apartWarning(source: source) { i.report(warning) }
        printRepair(report, i)
        return 0
    }

    /// What a repair did as `repair --json` and `sync --repair --json` print it (docs/repair.md §5), keys sorted.
    static func repairJSON(_ report: RepairReport, dryRun: Bool) -> JSONObject {
        var o = JSONObject()
        o.set("bytesReceived", report.bytesReceived)
        o.set("bytesSent", report.bytesSent)
        o.set("digest", report.localDigest.hex)
        o.set("dryRun", dryRun)
        o.set("equal", report.agrees)
        o.set("roundTrips", report.roundTrips)
        o.set("rowsApplied", report.rowsApplied)
        o.set("rowsReceived", report.rowsReceived)
        o.set("rowsSent", report.rowsSent)
        o.set("sourceDigest", report.peerDigest.hex)
        return o
    }

    /// Prints what a repair did: one JSON object with `--json`, else two lines.
    static func printRepair(_ report: RepairReport, _ i: Invocation) {
        if i[Options.json] {
            i.stdout.write(repairJSON(report, dryRun: i[Options.dryRun]).bytes + [0x0A])
        } else {
            let dry = i[Options.dryRun]
            i.stdout.write(
                "\(plural(report.roundTrips, "round trip")), \(report.bytesSent + report.bytesReceived) bytes: \(dry ? "would send" : "sent") \(plural(report.rowsSent, "row")) to the source, received \(report.rowsReceived) (\(report.rowsApplied) \(dry ? "would apply" : "applied") here)\n"
                    + "digest \(report.localDigest), source \(report.peerDigest)\(report.agrees ? "" : " (apart)")\n")
        }
    }
}

/// What a repair SOURCE is.
enum RepairSourceKind {
    /// Whether the file at `path` starts with SQLite's header, "SQLite format 3\0"
    /// (https://sqlite.org/fileformat.html#the_database_header).
    static func isDatabase(path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        return header == Data("SQLite format 3\0".utf8)
    }
}
