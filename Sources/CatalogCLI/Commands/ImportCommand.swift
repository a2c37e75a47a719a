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
        let file = argument == "-" ? nil : try CatalogStore.openForReading(argument)
        defer { if let file { close(file) } }
        let source: LandmarkCatalog.ImportSource = .descriptor(file ?? i.context.stdinFD, name: file == nil ? "<stdin>" : argument)
        // A dry run against a database that does not exist yet runs against an empty one in memory, so a
        // mistyped path leaves nothing behind.
        let store = i[Options.dryRun] ? try i.openStoreForDryRun() : try i.openStore()
        let options = LandmarkCatalog.ImportOptions(strict: i[ImportOptions.strict], prune: i[ImportOptions.prune], dryRun: i[Options.dryRun])
        let progress = i.makeProgressLine(label: "importing")
        let summary = try store.importLandmarks(from: source, options: options, diagnostics: i.report) { p in
            progress.update(records: p.records, bytes: p.bytes, total: p.totalBytes)
        }
        progress.clear()
        if i[Options.json] {
            var w = JSONWriter()
            w.raw("{")
            w.key("dryRun")
            w.bool(summary.dryRun)
            w.raw(",")
            w.key("file")
            w.string(source.displayName)
            w.raw(",")
            w.key("inserted")
            w.int(Int64(summary.inserted))
            w.raw(",")
            w.key("pruned")
            w.int(Int64(summary.pruned))
            w.raw(",")
            w.key("records")
            w.int(Int64(summary.records))
            w.raw(",")
            w.key("unchanged")
            w.int(Int64(summary.unchanged))
            w.raw(",")
            w.key("updated")
            w.int(Int64(summary.updated))
            w.raw(",")
            w.key("warnings")
            w.int(Int64(summary.warnings))
            w.raw("}\n")
            i.stdout.write(w.bytes)
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
