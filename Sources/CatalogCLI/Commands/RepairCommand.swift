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
                rowsSent, rowsReceived, and both digests after. --dry-run finds and counts the differing rows
                and changes neither copy. See docs/repair.md.
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
        let source = i[RepairArguments.source]
        if ServeRepair.names(source) {
            var options = SyncOptions()
            options.tokenFile = i[SyncOptionsTable.tokenFile].map { CatalogFiles.absolutePath($0, in: FileManager.default.currentDirectoryPath) }
            let report = try ServeRepair.run(
                store: try i.openStore(), source: source, options: options, dryRun: i[Options.dryRun], diagnostics: i.report)
            printRepair(report, i)
            return 0
        }
        if i[SyncOptionsTable.tokenFile] != nil {
            throw CatalogError(.usage, "--token-file is for a catalog serve SOURCE (catalog+https://HOST/v1), not a database file or a hub")
        }
        if HubRepair.names(source) {
            let run = try HubRepair.run(
                store: try i.openStore(), source: source, options: SyncOptions(), dryRun: i[Options.dryRun], diagnostics: i.report)
            if run.peer.expired + run.peer.quarantined > 0 {
                i.report(
                    Diagnostic(
                        severity: .warning,
                        message:
                            "the hub refused \(run.peer.expired) rows as expired and quarantined \(run.peer.quarantined) (stamped ahead of its clock); the digests after show them",
                        file: SourceLocator.redacted(source), kind: "hub-refused"))
            }
            printRepair(run.report, i)
            return 0
        }
        guard RepairSourceKind.isDatabase(path: source) else {
            if FileManager.default.fileExists(atPath: source) {
                throw CatalogError(
                    .usage, "not a catalog database: \(source)",
                    hint: "repair takes another catalog database by its file path; a snapshot file goes to 'catalog sync'")
            }
            throw CatalogError(.noInput, "no such database: \(source)")
        }
        let store = try i.openStore()
        let report = try Repairer(store).repair(withDatabase: source, dryRun: i[Options.dryRun])
        printRepair(report, i)
        return 0
    }

    /// What a repair did as `repair --json` and `sync --repair --json` print it (docs/repair.md §5), keys sorted.
    static func repairJSON(_ report: RepairReport) -> JSONObject {
        var o = JSONObject()
        o.set("bytesReceived", report.bytesReceived)
        o.set("bytesSent", report.bytesSent)
        o.set("digest", report.localDigest.hex)
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
            var o = repairJSON(report)
            o.set("dryRun", i[Options.dryRun])
            i.stdout.write(o.bytes + [0x0A])
        } else {
            let verb = i[Options.dryRun] ? "would move" : "moved"
            i.stdout.write(
                "\(report.roundTrips) round trips, \(report.bytesSent + report.bytesReceived) bytes: \(verb) \(report.rowsSent) rows to the source and \(report.rowsReceived) from it\n"
                    + "digest \(report.localDigest), source \(report.peerDigest)\n")
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
