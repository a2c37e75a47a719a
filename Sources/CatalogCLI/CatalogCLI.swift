import Foundation
import LandmarkCatalog

/// The `catalog` command line: parses arguments against the command table, runs the command and
/// returns its exit status (SPEC §9). Writes only through `context`, so tests run it in-process.
public enum CatalogCLI {
    /// The version printed by `--version`.
    public static let version = CatalogVersion.string

    /// Runs one command line.
    /// - Parameters:
    ///   - arguments: the arguments after the program name.
    ///   - context: output streams, environment, clock.
    /// - Returns: the exit status: 0, or a sysexits code (64 usage, 65 data, 66 no input, 69 unavailable,
    ///   70 internal, 73 cannot create, 74 I/O, 75 try again, 76 incompatible snapshot).
    public static func run(_ arguments: [String], context: CLIContext) -> Int32 {
        let status = dispatch(arguments, context: context)
        context.stdout.flush()
        defer { context.stderr.flush() }
        // Data that did not reach stdout is a failure (a full disk), except a reader that went away.
        if let error = context.stdout.writeError, error != EPIPE {
            context.error("cannot write standard output (\(String(cString: strerror(error))))")
            return status == 0 ? 74 : status
        }
        return status
    }

    static func dispatch(_ arguments: [String], context: CLIContext) -> Int32 {
        let root = rootCommand
        do {
            let (command, parsed) = try Parser.parse(arguments, root: root)
            if parsed.has("--help") {
                context.stdout.write(Help.render(command, path: parsed.path, footer: parsed.path.isEmpty ? exitStatusHelp : nil))
                return 0
            }
            if parsed.has("--version") {
                context.stdout.line("catalog \(version)")
                return 0
            }
            guard let run = command.run else { return 64 }
            return try run(parsed, context)
        } catch let error as UsageError {
            let command = resolve(error.path, in: root)
            context.error(error.message)
            context.stderr.line("Usage: \(Help.usageLine(command, path: error.path))")
            context.stderr.line("  See 'catalog \((error.path + ["--help"]).joined(separator: " "))'.")
            return 64
        } catch let error as CatalogError {
            context.error(error.message, hint: error.hint)
            return error.exitStatus
        } catch let error as SQLiteError {
            let mapped = CatalogError(error, path: "")
            context.error(mapped.message, hint: mapped.hint)
            return mapped.exitStatus
        } catch {
            context.error("internal error: \(error)")
            return 70
        }
    }

    static func resolve(_ path: [String], in root: CommandSpec) -> CommandSpec {
        var command = root
        for word in path {
            guard let sub = command.subcommands.first(where: { $0.name == word }) else { break }
            command = sub
        }
        return command
    }

    /// Opens the store named by `--db`, `$CATALOG_DB` or the XDG default.
    ///
    /// - Parameter existing: the command only reads, so a missing database is an error (66) rather than
    ///   a new empty one: a mistyped `--db` in a cron line should fail loudly, not print nothing.
    /// Whether the database file named by `--db`, `$CATALOG_DB` or the default exists.
    static func databaseExists(_ parsed: ParsedArguments, _ context: CLIContext) -> Bool {
        let path = parsed.value("--db") ?? CatalogStore.defaultPath(environment: context.environment)
        return path == ":memory:" || FileManager.default.fileExists(atPath: path)
    }

    static func openStore(_ parsed: ParsedArguments, _ context: CLIContext, existing: Bool = false) throws -> CatalogStore {
        let path = parsed.value("--db") ?? CatalogStore.defaultPath(environment: context.environment)
        if existing, !path.isEmpty, path != ":memory:", !FileManager.default.fileExists(atPath: path) {
            throw CatalogError(.noInput, "no catalog database, \(path)",
                               hint: "create it with 'catalog init' or 'catalog import FILE', or check --db / CATALOG_DB")
        }
        return try CatalogStore.open(path: path, wallClock: context.wallClock)
    }

    static var rootCommand: CommandSpec {
        CommandSpec(
            name: "catalog",
            abstract: "Keep a catalog of landmarks in SQLite and keep many machines' copies of it in agreement.",
            discussion: "Imports Apple's SwiftUI tutorial landmarkData.json, serves the featured carousel, tracks each user's page on it, and merges peers' snapshots with last-writer-wins.",
            subcommands: [
                importCommand, featuredCommand, positionCommand, positionsCommand, exportCommand, syncCommand, remoteCommand,
                statusCommand, migrateCommand, initCommand,
            ])
    }

    static let exitStatusHelp = """
        EXIT STATUS:
          0   success, including "nothing to do"
          64  usage error (bad command line, page out of range, landmark not featured)
          65  bad input data (malformed JSON, invalid field, duplicate id, bad snapshot)
          66  input file missing or unreadable
          69  sync source unavailable (network, 404, 5xx after retries, timeout)
          70  internal error
          73  cannot create or write the database or an output
          74  I/O error (disk full)
          75  temporary failure: lock held or database busy; retry later
          76  incompatible snapshot format or version

        """
}
