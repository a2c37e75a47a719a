import CatalogTestSupport
import Foundation
import Testing

/// `scripts/install` (docs/operations.md §1, issue 13) into temporary prefixes, with the binary these tests were built
/// with (`--binary`: no release build here, to stay fast; the script's default builds one).
@Suite("Install: scripts/install into a temporary prefix", .serialized)
struct InstallTests {
    static let script = Support.root.appending(path: "scripts/install").path
    static let installed = [
        "bin/catalog", "share/man/man1/catalog.1", "share/bash-completion/completions/catalog",
        "share/zsh/site-functions/_catalog", "share/fish/vendor_completions.d/catalog.fish",
    ]

    /// Runs the install script with `arguments` (and `DESTDIR` when given).
    static func install(_ arguments: [String], destdir: String? = nil) throws -> CLIResult {
        var environment = ["PATH": "/usr/bin:/bin", "HOME": Support.temporaryDirectory().path]
        if let destdir { environment["DESTDIR"] = destdir }
        return try runProcess(URL(fileURLWithPath: "/bin/bash"), [script] + arguments, environment: environment)
    }

    /// A new prefix with catalog installed in it.
    static func installedPrefix() throws -> URL {
        let prefix = Support.temporaryDirectory().appending(path: "prefix")
        let result = try install(["--prefix", prefix.path, "--binary", Support.catalogBinary.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "")
        return prefix
    }

    /// Every file and directory under `root`, relative to it, sorted.
    static func tree(_ root: URL) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        var paths: [String] = []
        while let path = enumerator?.nextObject() as? String { paths.append(path) }
        return paths.sorted()
    }

    /// The crontab block of docs/operations.md §2 (the first `cron` block): its environment lines and its one job's command (the schedule dropped).
    static func documentedCron() throws -> (environment: [(String, String)], command: String) {
        let readme = try String(contentsOf: Support.root.appending(path: "docs/operations.md"), encoding: .utf8)
        let block = try #require(readme.components(separatedBy: "```cron\n").dropFirst().first?.components(separatedBy: "```").first)
        var environment: [(String, String)] = []
        var jobs: [String] = []
        for line in block.split(separator: "\n").map(String.init) where !line.hasPrefix("#") {
            if let eq = line.firstIndex(of: "="), !line.contains(" "), line[..<eq].allSatisfy({ $0.isLetter || $0 == "_" }) {
                environment.append((String(line[..<eq]), String(line[line.index(after: eq)...])))
            } else {
                jobs.append(line.split(separator: " ", maxSplits: 5).dropFirst(5).joined())
            }
        }
        #expect(jobs.count == 1)
        return (environment, try #require(jobs.first))
    }

    @Test("binary, man page and completions land in their standard places; env -i PATH=PREFIX/bin:/usr/bin:/bin catalog --version runs")
    func installs() throws {
        let prefix = try Self.installedPrefix()
        for path in Self.installed {
            let attributes = try FileManager.default.attributesOfItem(atPath: prefix.appending(path: path).path)
            #expect((attributes[.posixPermissions] as? Int) == (path == "bin/catalog" ? 0o755 : 0o644), "\(path)")
        }
        #expect(try Data(contentsOf: prefix.appending(path: "bin/catalog")) == Data(contentsOf: Support.catalogBinary))
        #expect(
            try String(contentsOf: prefix.appending(path: "share/bash-completion/completions/catalog"), encoding: .utf8)
                == runCLI(["completions", "bash"]).stdout)
        let version = try runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["-i", "PATH=\(prefix.path)/bin:/usr/bin:/bin", "catalog", "--version"],
            in: URL(fileURLWithPath: "/"))
        #expect(version.status == 0)
        #expect(version.stdout == "catalog 0.2.0\n")
        #expect(version.stderr == "")
    }

    @Test("the cron line of docs/operations.md, run once by hand with a temporary database, succeeds silently and publishes")
    func cronLine() throws {
        let prefix = try Self.installedPrefix()
        let (environment, command) = try Self.documentedCron()
        let path = try #require(environment.first { $0.0 == "PATH" }?.1)
        #expect(path.hasPrefix("/usr/local/bin:"))
        // The paths in the line move under a sandbox; PATH's /usr/local is the temporary prefix.
        let sandbox = Support.temporaryDirectory()
        var words: [String] = []
        for word in command.split(separator: " ").map(String.init) {
            guard word.hasPrefix("/") else {
                words.append(word)
                continue
            }
            let moved = sandbox.path + word
            try FileManager.default.createDirectory(atPath: (moved as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            words.append(moved)
        }
        #expect(words.first == "catalog")
        let cronPath = path.replacingOccurrences(of: "/usr/local", with: prefix.path)
        let run = try runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["-i", "PATH=\(cronPath)", "/bin/sh", "-c", words.joined(separator: " ")],
            in: URL(fileURLWithPath: "/"))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "" && run.stderr == "")
        let published = try #require(words.firstIndex(of: "--publish").map { words[$0 + 1] })
        // A snapshot log (a directory) or one snapshot file, as the path says.
        let file = published.hasSuffix(".json") ? published : published + "/manifest.json"
        let format = published.hasSuffix(".json") ? "landmark-catalog-snapshot" : "landmark-catalog-log"
        #expect(try String(contentsOfFile: file, encoding: .utf8).hasPrefix(#"{"format":"\#(format)","version":1,"#))
        let database = try #require(words.firstIndex(of: "--db").map { words[$0 + 1] })
        let status = runCLI(["status", "--json"], db: database)
        #expect(status.stdout.contains(#""outcome":"ok""#))
        // Without the documented PATH line, cron's default PATH does not find catalog: why the line is there.
        if !FileManager.default.fileExists(atPath: "/usr/bin/catalog") && !FileManager.default.fileExists(atPath: "/bin/catalog") {
            let bare = try runProcess(
                URL(fileURLWithPath: "/usr/bin/env"), ["-i", "PATH=/usr/bin:/bin", "/bin/sh", "-c", words.joined(separator: " ")])
            #expect(bare.status == 127)
        }
    }

    @Test("the installed man page renders with man -l and lints clean; the installed completions load and complete")
    func installedFilesWork() throws {
        let prefix = try Self.installedPrefix()
        let page = prefix.appending(path: "share/man/man1/catalog.1").path
        if let man = Tools.path("man") {
            let rendered = try runProcess(
                URL(fileURLWithPath: man), ["--warnings", "-l", page],
                environment: ["PATH": "/usr/bin:/bin", "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "80"])
            #expect(rendered.status == 0)
            #expect(rendered.stderr == "")
            #expect(rendered.stdout.contains("EXIT STATUS"))
        }
        if let mandoc = Tools.path("mandoc") {
            let lint = try runProcess(URL(fileURLWithPath: mandoc), ["-T", "lint", "-W", "warning", page])
            #expect(lint.status == 0 && lint.stdout + lint.stderr == "")
        }
        let bash = prefix.appending(path: "share/bash-completion/completions/catalog").path
        #expect(try bashCompletions("catalog imp", script: bash) == ["import"])
        #expect(try bashCompletions("catalog sync --pub", script: bash) == ["--publish"])
        if let zsh = Tools.path("zsh") {
            let dump = Support.temporaryDirectory().appending(path: "zcompdump").path
            let loaded = try runProcess(
                URL(fileURLWithPath: zsh),
                [
                    "-f", "-c",
                    """
                    fpath=('\(prefix.path)/share/zsh/site-functions' $fpath); autoload -Uz compinit && compinit -u -d '\(dump)' && print -r -- $_comps[catalog]
                    """,
                ])
            #expect(loaded.status == 0 && loaded.stderr == "")
            #expect(loaded.stdout == "_catalog\n")
        }
        if let fish = Tools.path("fish") {
            let script = prefix.appending(path: "share/fish/vendor_completions.d/catalog.fish").path
            let completed = try runProcess(
                URL(fileURLWithPath: fish), ["--no-config", "-c", "source '\(script)'; and complete -C'catalog imp'"],
                environment: Tools.environment())
            #expect(completed.status == 0 && completed.stderr == "")
            #expect(completed.stdout.hasPrefix("import\t"))
        }
    }

    @Test("--uninstall removes exactly what was installed: files, the directories it created, the record")
    func uninstalls() throws {
        let prefix = Support.temporaryDirectory().appending(path: "prefix")
        // Already there before: a directory of ours and a file in it, and a man page of another program.
        try FileManager.default.createDirectory(at: prefix.appending(path: "bin"), withIntermediateDirectories: true)
        try Data("#!/bin/sh\n".utf8).write(to: prefix.appending(path: "bin/other"))
        try FileManager.default.createDirectory(at: prefix.appending(path: "share/man/man1"), withIntermediateDirectories: true)
        try Data(".TH OTHER 1\n".utf8).write(to: prefix.appending(path: "share/man/man1/other.1"))
        let before = Self.tree(prefix)
        #expect(try Self.install(["--prefix", prefix.path, "--binary", Support.catalogBinary.path]).status == 0)
        // Installing twice records the directories the first install created, not fewer.
        #expect(try Self.install(["--prefix", prefix.path, "--binary", Support.catalogBinary.path]).status == 0)
        let record = try String(contentsOf: prefix.appending(path: "share/landmark-catalog/install-manifest"), encoding: .utf8)
        #expect(record.contains("dir \(prefix.path)/share/zsh/site-functions\n"))
        #expect(!record.contains("dir \(prefix.path)/bin\n"))
        #expect(Set(Self.tree(prefix)).isSuperset(of: Self.installed))
        let removed = try Self.install(["--prefix", prefix.path, "--uninstall"])
        #expect(removed.status == 0)
        #expect(Self.tree(prefix) == before)
        let again = try Self.install(["--prefix", prefix.path, "--uninstall"])
        #expect(again.status == 66)
        #expect(again.stderr.contains("nothing recorded"))
    }

    @Test("DESTDIR stages the whole install under it; the record keeps the paths without it")
    func destdir() throws {
        let stage = Support.temporaryDirectory().appending(path: "stage")
        let result = try Self.install(["--prefix", "/usr/local", "--binary", Support.catalogBinary.path], destdir: stage.path)
        #expect(result.status == 0)
        let files = Self.tree(stage)
        for path in Self.installed { #expect(files.contains("usr/local/" + path)) }
        let record = try String(contentsOf: stage.appending(path: "usr/local/share/landmark-catalog/install-manifest"), encoding: .utf8)
        #expect(record.hasPrefix("file /usr/local/bin/catalog\n"))
        #expect(!record.contains(stage.path))
        #expect(try Self.install(["--prefix", "/usr/local", "--uninstall"], destdir: stage.path).status == 0)
        #expect(!FileManager.default.fileExists(atPath: stage.path))
    }

    @Test("bad arguments install nothing: a relative prefix (64), a missing binary (66), an unknown option (64)")
    func refuses() throws {
        let prefix = Support.temporaryDirectory().appending(path: "prefix")
        #expect(try Self.install(["--prefix", "relative/dir", "--binary", Support.catalogBinary.path]).status == 64)
        #expect(try Self.install(["--prefix", prefix.path, "--binary", "/nonexistent/catalog"]).status == 66)
        #expect(try Self.install(["--prefix", prefix.path, "--frobnicate"]).status == 64)
        #expect(!FileManager.default.fileExists(atPath: prefix.path))
        let help = try Self.install(["--help"])
        #expect(help.status == 0)
        #expect(help.stderr.hasPrefix("Usage: scripts/install [--prefix DIR] [--no-build | --binary PATH]\n"))
    }
}
