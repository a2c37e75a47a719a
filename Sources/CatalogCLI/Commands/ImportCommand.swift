import Foundation
import LandmarkCatalog

extension CatalogCLI {
    enum ImportOptions {
        static let strict = Flag("--strict", "Treat every warning as an error.")
        static let prune = Flag("--prune", "Tombstone stored landmarks that are missing from the file.")
    }

    /// `import`'s argument, declared once: the table lists it, the run reads it typed.
    enum ImportArguments {
        static let file = Argument<String>("file", "The landmarkData.json file, or - for standard input.", completion: .file)
    }

    static var importCommand: CommandSpec {
        CommandSpec(
            name: "import",
            abstract: "Validate a landmarkData.json file and upsert its landmarks by id.",
            discussion: """
                Accepts Apple's known quirks with a warning (a trailing comma, 'isFavourite', legacy files where
                category "Featured" meant featured); --strict makes them errors. Keys absent from a record keep
                the stored value; null clears it. Any error: exit 65 and nothing is written.
                """,
            arguments: [ImportArguments.file.spec],
            options: [
                ImportOptions.strict.spec, ImportOptions.prune.spec,
                Options.dryRun.with(help: "Validate and report the counts; write nothing.").spec,
                Options.json.with(help: "Print the summary as JSON.").spec,
                Options.quiet.with(help: "Print no summary (warnings and errors still go to stderr).").spec,
            ],
            run: runImport)
    }

    static func runImport(_ i: Invocation) throws -> Int32 {
        let argument = i[ImportArguments.file]
        // The file is opened before the database: a missing or unreadable FILE (66) creates nothing.
        let file = argument == "-" ? nil : try CatalogFiles.openForReading(argument)
        defer { if let file { close(file) } }
        let source: LandmarkCatalog.ImportSource = .descriptor(file ?? i.context.stdinFD, name: file == nil ? "<stdin>" : argument)
        // A dry run against a database that does not exist yet runs against an empty one in memory, so a
        // mistyped path leaves nothing behind.
        let options = LandmarkCatalog.ImportOptions(strict: i[ImportOptions.strict], prune: i[ImportOptions.prune], dryRun: i[Options.dryRun])
        let progress = i.makeProgressLine(label: "importing")
        let run = { (store: CatalogStore) in
            try Importer(store).importLandmarks(from: source, options: options, diagnostics: i.report) { p in
                progress.update(records: p.records, bytes: p.bytes, total: p.totalBytes)
            }
        }
        // A first import builds the database beside its path and moves it into place: every page written
        // once, not twice (docs/performance.md §2).
        // Only a file can be read again, should another command create the database meanwhile.
        var built: LandmarkCatalog.ImportSummary?
        if !i[Options.dryRun], let file, CatalogFiles.regularFileSize(file) != nil {
            do {
                built = try NewDatabaseBuild.build(path: i.databasePath, wallClock: i.context.wallClock, run)
            } catch is NewDatabaseBuild.Appeared {
                lseek(file, 0, SEEK_SET)
            }
        }
        let summary = try built ?? run(i[Options.dryRun] ? try i.openStoreForDryRun() : try i.openStore())
        progress.clear()
        if i[Options.json] {
            var o = JSONObject()
            o.set("dryRun", summary.dryRun)
            o.set("file", source.displayName)
            o.set("inserted", summary.inserted)
            o.set("pruned", summary.pruned)
            o.set("records", summary.records)
            o.set("unchanged", summary.unchanged)
            o.set("updated", summary.updated)
            o.set("warnings", summary.warnings)
            i.stdout.write(o.bytes + [0x0A])
        } else if !i[Options.quiet] {
            let prefix = summary.dryRun ? "dry run, nothing written: " : ""
            let nothing = summary.inserted + summary.updated + summary.pruned == 0 ? " (nothing to do)" : ""
            i.stdout.line(
                "\(prefix)\(plural(summary.records, "record")): \(summary.inserted) inserted, \(summary.updated) updated, \(summary.unchanged) unchanged, \(summary.pruned) pruned, \(plural(summary.warnings, "warning"))\(nothing)"
            )
        }
        return 0
    }
}
