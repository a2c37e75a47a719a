import CatalogTestSupport
import Foundation
import Testing

@_spi(Testing) @testable import CatalogCLI
@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// Tools found on this machine, for the suites that drive real shells and man page linters.
enum Tools {
    /// The absolute path of `name` in the usual directories, or nil.
    static func path(_ name: String) -> String? {
        ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin"].map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// A minimal environment: the built `catalog` first on PATH, HOME in a temporary directory.
    static func environment(database: String? = nil) -> [String: String] {
        var environment = [
            "PATH": Support.catalogBinary.deletingLastPathComponent().path + ":/usr/bin:/bin",
            "HOME": Support.temporaryDirectory().path,
        ]
        if let database { environment["CATALOG_DB"] = database }
        return environment
    }

    /// Writes what `catalog completions SHELL` (or `catalog man`) prints to a file in a new directory.
    static func generated(_ arguments: [String], name: String) throws -> String {
        let result = runCLI(arguments)
        #expect(result.status == 0)
        #expect(result.stderr == "")
        let path = Support.temporaryDirectory().appending(path: name).path
        try result.stdout.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

/// What bash completes for `line`, from the completion script at `script` sourced in a real bash, its
/// function called the way readline calls it: COMP_WORDS split on blanks (a trailing blank starts an
/// empty word), COMP_CWORD the last word, in `directory` (for file names).
func bashCompletions(_ line: String, script: String, database: String? = nil, directory: URL? = nil) throws -> [String] {
    let driver = #"""
        cd "$3" || exit 91
        source "$1" || exit 90
        read -r -a COMP_WORDS <<<"$2"
        [[ $2 == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE=$2
        COMP_POINT=${#2}
        _catalog catalog "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" || exit 92
        ((${#COMPREPLY[@]} == 0)) || printf '%s\n' "${COMPREPLY[@]}"
        """#
    let result = try runProcess(
        URL(fileURLWithPath: Tools.path("bash") ?? "/bin/bash"),
        ["--norc", "--noprofile", "-c", driver, "bash", script, line, (directory ?? Support.temporaryDirectory()).path],
        environment: Tools.environment(database: database))
    #expect(result.status == 0, "bash completion of '\(line)' failed: \(result.stderr)")
    #expect(result.stderr == "")
    return result.stdout.split(separator: "\n").map(String.init)
}

@Suite("Shell completions and the manual page, from the command table")
struct CompletionTests {
    static let bashScript = Result { try Tools.generated(["completions", "bash"], name: "catalog") }
    static let hasZsh = Tools.path("zsh") != nil
    static let hasFish = Tools.path("fish") != nil
    static let hasMandoc = Tools.path("mandoc") != nil

    @Test("each script names every command, subcommand and option (short ones too) of the table", arguments: Completions.shells)
    func complete(_ shell: String) {
        let script = runCLI(["completions", shell]).stdout
        for node in CommandTree(root: CatalogCLI.rootCommand).nodes {
            for sub in node.command.subcommands { #expect(script.contains(sub.name), "\(shell): no \(sub.name)") }
            for option in node.command.options + GlobalOptions.all {
                let long = shell == "fish" ? "-l " + option.name.dropFirst(2) : option.name
                #expect(script.contains(long), "\(shell): no \(option.name) for \(node.key)")
                if let short = option.short {
                    #expect(script.contains(shell == "fish" ? "-s \(short)" : "-\(short)"), "\(shell): no -\(short)")
                }
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var line: String
        var expected: [String]
        var testDescription: String { "'\(line)' → \(expected)" }
    }

    @Test(
        "bash completes commands, subcommands, options and fixed words",
        arguments: [
            Case(line: "catalog imp", expected: ["import"]),
            Case(line: "catalog sync --pub", expected: ["--publish"]),
            Case(line: "catalog position ", expected: ["set", "get", "clear"]),
            Case(line: "catalog remote l", expected: ["list"]),
            Case(line: "catalog position set --user ann --p", expected: ["--page"]),
            Case(line: "catalog import -n --j", expected: ["--json"]),
            Case(line: "catalog export -", expected: ["-o", "--output", "--db", "--log-format", "--max-diagnostics", "-h", "--help", "--version"]),
            Case(line: "catalog --log-format ", expected: ["text", "json"]),
            Case(line: "catalog featured --log-format j", expected: ["json"]),
            Case(line: "catalog completions ", expected: ["bash", "zsh", "fish"]),
            Case(line: "catalog help pos", expected: ["position", "positions"]),
            Case(line: "catalog help position s", expected: ["set"]),
            Case(line: "catalog status --json ", expected: []),
        ])
    func bash(_ c: Case) throws {
        #expect(try bashCompletions(c.line, script: Self.bashScript.get()) == c.expected)
    }

    @Test("bash completes file names for files, and saved remotes (read with 'catalog remote list') for sync")
    func bashValues() throws {
        let script = try Self.bashScript.get()
        let directory = Support.temporaryDirectory()
        try Data("[]".utf8).write(to: directory.appending(path: "landmarks.json"))
        try FileManager.default.createDirectory(at: directory.appending(path: "logdir"), withIntermediateDirectories: true)
        #expect(try bashCompletions("catalog import land", script: script, directory: directory) == ["landmarks.json"])
        #expect(try bashCompletions("catalog export --output l", script: script, directory: directory).sorted() == ["landmarks.json", "logdir"])
        #expect(try bashCompletions("catalog publish l", script: script, directory: directory) == ["logdir"])

        let db = Support.temporaryDatabase()
        #expect(runCLI(["remote", "add", "peer-a", "https://a.example.org/catalog.json"], db: db).status == 0)
        #expect(runCLI(["remote", "add", "peer-b", "/srv/exchange/b.json"], db: db).status == 0)
        // From CATALOG_DB, and from a --db on the line (which wins).
        #expect(try bashCompletions("catalog sync pe", script: script, database: db, directory: directory) == ["peer-a", "peer-b"])
        #expect(try bashCompletions("catalog --db \(db) remote remove p", script: script, directory: directory) == ["peer-a", "peer-b"])
        #expect(
            try bashCompletions("catalog sync --db \(db) l", script: script, database: Support.temporaryDatabase(), directory: directory).sorted()
                == ["landmarks.json", "logdir"])
        #expect(try bashCompletions("catalog --db=\(db) sync peer-", script: script, directory: directory) == ["peer-a", "peer-b"])
    }

    @Test("sourcing the bash script registers the function with complete(1)")
    func bashRegisters() throws {
        let result = try runProcess(
            URL(fileURLWithPath: Tools.path("bash") ?? "/bin/bash"),
            ["--norc", "--noprofile", "-c", #"source "$1" && complete -p catalog"#, "bash", try Self.bashScript.get()])
        #expect(result.status == 0)
        #expect(result.stdout == "complete -F _catalog catalog\n")
    }

    @Test("the zsh script loads without error, sourced and from $fpath", .enabled(if: hasZsh, "zsh is not installed (scripts/setup installs it)"))
    func zsh() throws {
        let script = try Tools.generated(["completions", "zsh"], name: "_catalog")
        let syntax = try runProcess(URL(fileURLWithPath: Tools.path("zsh")!), ["-n", script])
        #expect(syntax.status == 0 && syntax.stderr == "")
        let dump = Support.temporaryDirectory().appending(path: "zcompdump").path
        let sourced = try runProcess(
            URL(fileURLWithPath: Tools.path("zsh")!),
            [
                "-f", "-c",
                """
                autoload -Uz compinit && compinit -u -d '\(dump)' && source '\(script)' && print -r -- "$_comps[catalog] $+functions[_catalog_sync]"
                """,
            ])
        #expect(sourced.status == 0)
        #expect(sourced.stderr == "")
        #expect(sourced.stdout == "_catalog 1\n")
        let directory = URL(fileURLWithPath: script).deletingLastPathComponent().path
        let autoloaded = try runProcess(
            URL(fileURLWithPath: Tools.path("zsh")!),
            [
                "-f", "-c",
                """
                fpath=('\(directory)' $fpath); autoload -Uz compinit && compinit -u -d '\(dump)2' && print -r -- $_comps[catalog]
                """,
            ])
        #expect(autoloaded.status == 0 && autoloaded.stderr == "")
        #expect(autoloaded.stdout == "_catalog\n")
    }

    @Test(
        "the fish script loads without error and completes 'catalog imp' and 'catalog sync --pub'",
        .enabled(if: hasFish, "fish is not installed (scripts/setup installs it)"))
    func fish() throws {
        let script = try Tools.generated(["completions", "fish"], name: "catalog.fish")
        func complete(_ line: String) throws -> [String] {
            let result = try runProcess(
                URL(fileURLWithPath: Tools.path("fish")!), ["--no-config", "-c", "source '\(script)'; and complete -C'\(line)'"],
                environment: Tools.environment())
            #expect(result.status == 0)
            #expect(result.stderr == "")
            return result.stdout.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }
        }
        #expect(try complete("catalog imp") == ["import"])
        #expect(try complete("catalog sync --pub") == ["--publish"])
        #expect(try complete("catalog position ").sorted() == ["clear", "get", "set"])
        #expect(try complete("catalog --log-format ").sorted() == ["json", "text"])
    }

    @Test(
        "the man page has every section, command and option, and mandoc lints it without a warning",
        .enabled(if: hasMandoc, "mandoc is not installed (scripts/setup installs it)"))
    func manual() throws {
        let result = runCLI(["man"], environment: ["SOURCE_DATE_EPOCH": "86400"])
        let page = result.stdout
        #expect(result.status == 0)
        #expect(
            page.contains(".TH CATALOG 1 1970-01-02 \"catalog \(CatalogCLI.version.replacingOccurrences(of: "-", with: "\\-"))\" \"User Commands\"\n")
        )
        for section in [
            "NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "\"EXIT STATUS\"", "ENVIRONMENT", "FILES", "EXAMPLES", "\"SEE ALSO\"",
        ] {
            #expect(page.contains("\n.SH \(section)\n"), "no section \(section)")
        }
        for variable in ["CATALOG_DB", "XDG_DATA_HOME", "HOME", "TMPDIR", "PGPASSFILE"] { #expect(page.contains(".B \(variable)\n")) }
        for status in ["0", "64", "65", "66", "69", "70", "73", "74", "75", "76"] { #expect(page.contains(".TP\n.B \(status)\n")) }
        // Regression (a user test): a meaning that --help wraps onto a second line lost its second line.
        #expect(
            page.contains("timeout; a hub down, refusing the login or holding its push lock too long); status \\-\\-check: not healthy (no run yet"))
        for node in CommandTree(root: CatalogCLI.rootCommand).nodes where !node.path.isEmpty {
            #expect(page.contains(".SS \"catalog \(node.key)\"\n"))
            for option in node.command.options { #expect(page.contains("\\fB\(Manual.escaped(option.name))\\fR")) }
        }
        // No line of text starts like a request by accident, and no unescaped hyphen-minus is left in text.
        for line in page.split(separator: "\n") where !line.hasPrefix(".\\\"") && !line.hasPrefix(".TH ") {
            #expect(!line.hasPrefix("'"))
            let characters = Array(line)
            let bare = characters.indices.filter { characters[$0] == "-" && ($0 == 0 || characters[$0 - 1] != "\\") }
            #expect(bare.isEmpty, "unescaped '-': \(line)")
        }
        let file = Support.temporaryDirectory().appending(path: "catalog.1").path
        try page.write(toFile: file, atomically: true, encoding: .utf8)
        let lint = try runProcess(URL(fileURLWithPath: Tools.path("mandoc")!), ["-T", "lint", "-W", "warning", file])
        #expect(lint.status == 0)
        #expect(lint.stdout + lint.stderr == "")
    }

    @Test("man -l renders the page without a warning", .enabled(if: Tools.path("man") != nil, "man is not installed"))
    func manRenders() throws {
        let file = try Tools.generated(["man"], name: "catalog.1")
        let result = try runProcess(
            URL(fileURLWithPath: Tools.path("man")!), ["--warnings", "-l", file],
            environment: ["PATH": "/usr/bin:/bin", "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat", "LC_ALL": "C.UTF-8"])
        #expect(result.status == 0)
        #expect(result.stderr == "")
        #expect(result.stdout.contains("catalog position set"))
        #expect(result.stdout.contains("PGPASSFILE"))
    }

    @Test("roff escaping: backslash, hyphen, quotes, a leading period or apostrophe, non-ASCII")
    func escaping() {
        #expect(Manual.escaped(#"--db C:\x ~/a "q" ^ –…"#) == #"\-\-db C:\ex \(ti/a \(dqq\(dq \(ha \[u2013]\[u2026]"#)
        #expect(Manual.textLine(".hidden request") == #"\&.hidden request"#)
        #expect(Manual.textLine("'also a request") == #"\&'also a request"#)
        #expect(Manual.textLine("  plain text  ") == "plain text")
        #expect(Manual.paragraphs("one\ntwo\n\nthree") == "one two\n.PP\nthree\n")
        #expect(Manual.date(environment: ["SOURCE_DATE_EPOCH": "31536000"], nowMilliseconds: 0) == "1971-01-01")
    }

    @Test("an unknown shell is a usage error with a suggestion")
    func unknownShell() {
        let result = runCLI(["completions", "bsh"])
        #expect(result.status == 64)
        #expect(result.stdout == "")
        #expect(result.stderr.hasPrefix("catalog: error: unknown shell 'bsh' (bash, zsh or fish). Did you mean 'bash'?\n"))
        // Regression (a user test): another shell entirely is not a near miss ("tcsh" suggested "bash").
        #expect(runCLI(["completions", "tcsh"]).stderr.hasPrefix("catalog: error: unknown shell 'tcsh' (bash, zsh or fish)\n"))
    }
}

@Suite("Short options and prefix suggestions")
struct ShortOptionTests {
    @Test("an unambiguous prefix gets a suggestion: export --out → 'Did you mean --output?', exit 64")
    func prefix() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["init"], db: db).status == 0)
        let result = runCLI(["export", "--out", "x.json"], db: db)
        #expect(result.status == 64)
        #expect(
            result.stderr == """
                catalog: error: unknown option '--out'. Did you mean '--output'?
                Usage: catalog [--db PATH] export [--output FILE]
                  See 'catalog export --help'.

                """)
        #expect(runCLI(["sync", "--pub", "x.json"], db: db).stderr.hasPrefix("catalog: error: unknown option '--pub'. Did you mean '--publish'?"))
    }

    @Test("-o, -q, -n and -h are --output, --quiet, --dry-run and --help")
    func shorts() throws {
        let db = Support.temporaryDatabase()
        let seed = Support.root.appending(path: "Seeds/landmarkData.json").path
        let dry = runCLI(["import", "-n", seed], db: db)
        #expect(dry.stdout == "dry run, nothing written: 16 records: 16 inserted, 0 updated, 0 unchanged, 0 pruned, 0 warnings\n")
        #expect(!FileManager.default.fileExists(atPath: db))
        #expect(runCLI(["import", "-q", seed], db: db).stdout == "")
        let file = Support.temporaryDirectory().appending(path: "snapshot.json").path
        #expect(runCLI(["export", "-o", file], db: db).status == 0)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == runCLI(["export"], db: db).stdout)
        let quiet = runCLI(["sync", "-q", file], db: Support.temporaryDatabase())
        #expect(quiet.status == 0 && quiet.stdout == "" && quiet.stderr == "")
        #expect(runCLI(["sync", "-h"]).stdout == runCLI(["sync", "--help"]).stdout)
    }
}
