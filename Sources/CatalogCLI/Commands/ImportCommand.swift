import Foundation
import LandmarkCatalog

extension CatalogCLI {
    static var importCommand: CommandSpec {
        CommandSpec(
            name: "import",
            abstract: "Validate a landmarkData.json file and upsert its landmarks by id.",
            discussion: """
                Accepts Apple's known quirks with a warning (a trailing comma, 'isFavourite', legacy files where
                category "Featured" meant featured); --strict makes them errors. Keys absent from a record keep
                the stored value; null clears it. Any error: exit 65 and nothing is written.
                """,
            arguments: [ArgumentSpec(name: "file", help: "The landmarkData.json file, or - for standard input.")],
            options: [
                .flag("--strict", "Treat every warning as an error."),
                .flag("--prune", "Tombstone stored landmarks that are missing from the file."),
                .flag("--dry-run", "Validate and report the counts; write nothing."),
                .flag("--json", "Print the summary as JSON."),
            ],
            run: runImport)
    }

    static func runImport(_ parsed: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let argument = parsed.positionals[0]
        let source: ImportSource = argument == "-" ? .descriptor(context.stdinFD, name: "<stdin>") : .file(argument)
        // A dry run against a database that does not exist yet runs against an empty one in memory, so a
        // mistyped path leaves nothing behind.
        let store = parsed.has("--dry-run") && !databaseExists(parsed, context)
            ? try CatalogStore.open(path: ":memory:", wallClock: context.wallClock)
            : try openStore(parsed, context)
        let options = ImportOptions(strict: parsed.has("--strict"), prune: parsed.has("--prune"), dryRun: parsed.has("--dry-run"))
        let showProgress = context.stderrIsTerminal
        var lastProgress = Date()
        let progressLine = ProgressLine()
        let summary = try store.importLandmarks(
            from: source, options: options,
            diagnostics: { diagnostic in
                if progressLine.shown { context.stderr.write("\r\u{1B}[K") }
                context.stderr.line("catalog: \(diagnostic.severity.rawValue): \(diagnostic)")
            },
            progress: { count in
                guard showProgress, Date().timeIntervalSince(lastProgress) > 0.5 else { return }
                lastProgress = Date()
                progressLine.shown = true
                context.stderr.write("\rimporting: \(count) records")
            })
        if progressLine.shown { context.stderr.write("\r\u{1B}[K") }
        if parsed.has("--json") {
            var w = JSONWriter()
            w.raw("{"); w.key("dryRun"); w.bool(summary.dryRun)
            w.raw(","); w.key("file"); w.string(source.displayName)
            w.raw(","); w.key("inserted"); w.int(Int64(summary.inserted))
            w.raw(","); w.key("pruned"); w.int(Int64(summary.pruned))
            w.raw(","); w.key("records"); w.int(Int64(summary.records))
            w.raw(","); w.key("unchanged"); w.int(Int64(summary.unchanged))
            w.raw(","); w.key("updated"); w.int(Int64(summary.updated))
            w.raw(","); w.key("warnings"); w.int(Int64(summary.warnings))
            w.raw("}\n")
            context.stdout.write(w.bytes)
        } else {
            let prefix = summary.dryRun ? "dry run, nothing written: " : ""
            let nothing = summary.inserted + summary.updated + summary.pruned == 0 ? " (nothing to do)" : ""
            context.stdout.line("\(prefix)\(plural(summary.records, "record")): \(summary.inserted) inserted, \(summary.updated) updated, \(summary.unchanged) unchanged, \(summary.pruned) pruned, \(plural(summary.warnings, "warning"))\(nothing)")
        }
        return 0
    }
}

/// `1 record`, `2 records`.
func plural(_ count: Int, _ noun: String) -> String { count == 1 ? "1 \(noun)" : "\(count) \(noun)s" }

/// Whether a progress line is on the terminal (cleared before any other message).
final class ProgressLine {
    var shown = false
}
