import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

/// The `catalog` command line: parses arguments against the command table, runs the command and
/// returns its exit status (docs/exit-statuses.md §1).
///
/// Writes only through `context`, so tests run it in-process.
public enum CatalogCLI {
    /// The version printed by `--version`.
    public static let version = CatalogVersion.string

    /// Runs one command line.
    /// - Parameters:
    ///   - arguments: the arguments after the program name.
    ///   - context: output streams, environment, clock.
    /// - Returns: the exit status: 0, or a sysexits code (64 usage, 65 data, 66 no input, 69 unavailable
    ///   or, for `status --check`, not healthy, 70 internal, 73 cannot create, 74 I/O, 75 try again,
    ///   76 incompatible snapshot, 77 not trusted).
    public static func run(_ arguments: [String], context: CLIContext) -> Int32 {
        // The command line syncs over HTTP and with PostgreSQL hubs too (LandmarkCatalogSync).
        NetworkSources.register()
        // The one reading of the command line; it says how diagnostics are written, usage errors included.
        let root = rootCommand
        let reading = Parser.read(arguments, root: root)
        let reporter = Reporter(
            stderr: context.stderr, format: reading.logFormat == "json" ? .json : .text, limit: reading.diagnosticLimit)
        let status = dispatch(reading, root: root, context: context, reporter: reporter)
        context.stdout.flush()
        defer { context.stderr.flush() }
        reporter.finish()
        // Data that did not reach stdout is a failure (a full disk), except a reader that went away.
        if let error = context.stdout.writeError, error != EPIPE {
            reporter.error("cannot write standard output (\(String(cString: strerror(error))))")
            return status == 0 ? 74 : status
        }
        return status
    }

    /// Runs what `reading` found, or reports its usage error; returns the exit status.
    static func dispatch(_ reading: CommandLineReading, root: CommandSpec, context: CLIContext, reporter: Reporter) -> Int32 {
        do {
            let (command, parsed) = try reading.outcome.get()
            if parsed[GlobalOptions.help] {
                context.stdout.write(Help.render(command, path: parsed.path, footer: parsed.path.isEmpty ? exitStatusHelp : nil))
                return 0
            }
            if parsed[GlobalOptions.version] {
                context.stdout.line("catalog \(version)")
                return 0
            }
            guard let run = command.run else { return 64 }
            let invocation = Invocation(parsed: parsed, context: context, reporter: reporter)
            let created = CreatedDatabase(path: invocation.databasePath)
            var status: Int32 = 70
            defer { if status != 0 { created.removeIfEmpty() } }
            do {
                status = try run(invocation)
            } catch let error as CatalogError {
                status = error.exitStatus
                throw error
            } catch let error as UsageError {
                status = 64
                throw error
            }
            return status
        } catch let error as UsageError {
            let command = resolve(error.path, in: root)
            reporter.usageError(
                error.message, usage: Help.usageLine(command, path: error.path),
                see: "catalog \((error.path + ["--help"]).joined(separator: " "))")
            return 64
        } catch let error as CatalogError {
            reporter.error(error.message, hint: error.hint)
            return error.exitStatus
        } catch {
            reporter.error("internal error: \(error)")
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

    static var rootCommand: CommandSpec {
        CommandSpec(
            name: "catalog",
            abstract: "Keep a catalog of landmarks in SQLite and keep many machines' copies of it in agreement.",
            discussion:
                "Imports Apple's SwiftUI tutorial landmarkData.json, serves the featured carousel, tracks each user's page on it, and merges peers' snapshots with last-writer-wins.",
            subcommands: [
                importCommand, featuredCommand, positionCommand, positionsCommand, watchCommand, exportCommand, publishCommand, syncCommand,
                remoteCommand,
                userCommand, gcCommand,
                keyCommand, tokenCommand, serveCommand, statusCommand, repairCommand, backupCommand, logCommand, quarantineCommand, conflictsCommand,
                migrateCommand,
                initCommand,
                completionsCommand,
                manCommand,
            ])
    }

    static let exitStatusHelp = """
        EXIT STATUS:
          0   success, including "nothing to do"
          64  usage error (bad command line, page out of range, landmark not featured,
              a hub connection string with a mistake)
          65  bad input data (malformed JSON, invalid field, duplicate id, bad snapshot)
          66  input file or database missing or unreadable
          69  sync source unavailable (network, 404, 5xx after retries, timeout; a hub down,
              refusing the login or holding its push lock too long); status --check: not
              healthy (no run yet; without --max-age, the last run failed; with it, a
              source's last good sync too old)
          70  internal error
          73  cannot create or write the database or an output (or it is not a catalog
              database, or newer than this binary)
          74  I/O error (disk full)
          75  temporary failure: lock held or database busy; retry later
          76  incompatible snapshot format or version; a hub schema newer, changed or foreign
          77  not trusted or not permitted: a source that must be signed is unsigned,
              wrongly signed or signed by a key it does not trust; a hub role lacking a
              GRANT; a serve refusing the token (401, 403)

        """
}

/// One run of a command: what was parsed, where output goes, and the helpers every command uses.
struct Invocation {
    let parsed: ParsedArguments
    let context: CLIContext
    let reporter: Reporter

    subscript(flag: Flag) -> Bool { parsed[flag] }
    subscript<V>(option: Option<V>) -> V? { parsed[option] }
    subscript<V>(option: RequiredOption<V>) -> V { parsed[option] }
    subscript<V>(argument: Argument<V>) -> V { parsed[argument] }
    subscript<V>(argument: RepeatingArgument<V>) -> [V] { parsed[argument] }
    var stdout: any OutputSink { context.stdout }

    /// The database path: `--db`, `$CATALOG_DB` or the XDG default.
    var databasePath: String { parsed[GlobalOptions.db] ?? CatalogFiles.defaultPath(environment: context.environment) }

    /// Whether the database file exists.
    var databaseExists: Bool { databasePath == ":memory:" || FileManager.default.fileExists(atPath: databasePath) }

    /// Opens the store: `.write` creates and migrates; `.read` needs an existing database (66 otherwise:
    /// a mistyped `--db` in a cron line should fail loudly, not print nothing) and opens it read-only.
    func openStore(_ access: CatalogStore.Access = .write) throws -> CatalogStore {
        try CatalogStore.open(path: databasePath, access: access, wallClock: context.wallClock)
    }

    /// A store for a dry run: the database if it exists, else an empty one in memory (nothing is created).
    func openStoreForDryRun() throws -> CatalogStore {
        databaseExists ? try openStore() : try CatalogStore.open(path: ":memory:", wallClock: context.wallClock)
    }

    /// Passes a diagnostic to the reporter.
    func report(_ d: Diagnostic) { reporter.report(d) }
}

/// A database this invocation may create: a command that fails leaves none behind when it wrote no data
/// into it (a refused import, a sync whose only source failed), so a mistyped `--db` does not turn into
/// an empty catalog that later commands read as "nothing featured" (docs/exit-statuses.md).
struct CreatedDatabase {
    let path: String
    /// Whether the file was there before the command ran.
    let existed: Bool
    /// The directories on its path that did not exist, outermost first.
    let missingDirectories: [String]

    init(path: String) {
        self.path = path
        let fm = FileManager.default
        existed = path == ":memory:" || fm.fileExists(atPath: path)
        var missing: [String] = []
        // Not NSString.deletingLastPathComponent: it traps on a one-character path (`--db b`).
        var directory = CatalogFiles.directory(of: path)
        while !directory.isEmpty, directory != "/", !fm.fileExists(atPath: directory) {
            missing.insert(directory, at: 0)
            directory = CatalogFiles.directory(of: directory)
        }
        missingDirectories = existed ? [] : missing
    }

    /// Removes the database (and its WAL, shared-memory and lock files) when this command created it and
    /// it holds no landmark, position, remote or quarantined row; then the directories made for it, if empty.
    func removeIfEmpty() {
        let fm = FileManager.default
        guard !existed else { return }
        // A first import builds the database beside its path (NewDatabaseBuild): refused, it left none.
        if fm.fileExists(atPath: path) {
            guard (try? CatalogFiles.holdsNoData(path: path)) == true else { return }
            for suffix in ["", "-wal", "-shm", "-journal", ".sync-lock", ".sync-skipped", ".sync-skipped.taking"] {
                try? fm.removeItem(atPath: path + suffix)
            }
        }
        for directory in missingDirectories.reversed() {
            guard (try? fm.contentsOfDirectory(atPath: directory))?.isEmpty == true else { break }
            try? fm.removeItem(atPath: directory)
        }
    }
}
