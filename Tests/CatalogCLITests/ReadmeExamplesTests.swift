import CatalogTestSupport
import Foundation
import Testing

/// The checked examples of README.md and of every `docs/*.md`: every fenced block marked `console`.
///
/// In one, a line starting with `$ ` is a command; the lines after it, up to the next command or the end
/// of the block, are what it prints (standard output and standard error, in order); `…` in an expected
/// line stands for any text. The commands of one file run in that file's order, through bash, with the
/// built `catalog` first on PATH, in one fresh database (`CATALOG_DB`, one per file), in a directory that
/// holds a copy of `Seeds/landmarkData.json`. A command must exit 0 unless what it should print includes
/// a `catalog: error:` line.
enum ReadmeExamples {
    struct Command: Sendable, Equatable {
        /// The file's line of the `$ ` line (1-based).
        var line: Int
        var command: String
        var expected: [String]
        /// The file it comes from, relative to the package root.
        var file = "README.md"
    }

    struct Mismatch: CustomStringConvertible {
        var command: Command
        var status: Int32
        var actual: [String]
        var description: String {
            "\(command.file):\(command.line): `\(command.command)` (exit \(status)) printed\n"
                + actual.map { "  | \($0)" }.joined(separator: "\n") + "\n\(command.file) shows\n"
                + command.expected.map { "  | \($0)" }.joined(separator: "\n")
        }
    }

    /// The commands of every `console` block, in order.
    /// - Parameters:
    ///   - text: the Markdown text.
    ///   - file: the file's path relative to the package root, for messages.
    /// - Returns: each command with the lines it must print.
    static func parse(_ text: String, file: String = "README.md") -> [Command] {
        var commands: [Command] = []
        var inBlock = false
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if !inBlock {
                inBlock = trimmed == "```console"
                continue
            }
            if trimmed.hasPrefix("```") {
                inBlock = false
            } else if line.hasPrefix("$ ") {
                commands.append(Command(line: index + 1, command: String(line.dropFirst(2)), expected: [], file: file))
            } else if !commands.isEmpty {
                commands[commands.count - 1].expected.append(line)
            }
        }
        return commands
    }

    /// Whether `actual` is `expected`, line for line, with `…` matching any text within a line.
    static func matches(expected: [String], actual: [String]) -> Bool {
        guard expected.count == actual.count else { return false }
        return zip(expected, actual).allSatisfy { pattern, line in
            let parts = pattern.components(separatedBy: "…")
            guard parts.count > 1 else { return pattern == line }
            guard line.hasPrefix(parts[0]), line.hasSuffix(parts[parts.count - 1]),
                line.count >= parts[0].count + parts[parts.count - 1].count
            else { return false }
            var rest = Substring(line.dropFirst(parts[0].count).dropLast(parts[parts.count - 1].count))
            for middle in parts.dropFirst().dropLast() {
                guard let found = rest.range(of: middle) else { return false }
                rest = rest[found.upperBound...]
            }
            return true
        }
    }

    /// Runs `commands` in order in a fresh sandbox and returns the ones whose output differs from their file's.
    static func check(_ commands: [Command]) throws -> [Mismatch] {
        let sandbox = Support.temporaryDirectory()
        try FileManager.default.copyItem(
            at: Support.root.appending(path: "Seeds/landmarkData.json"),
            to: sandbox.appending(path: "landmarkData.json"))
        let home = sandbox.appending(path: "home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let environment = [
            "PATH": Support.catalogBinary.deletingLastPathComponent().path + ":/usr/bin:/bin", "HOME": home.path,
            "CATALOG_DB": sandbox.appending(path: "catalog.sqlite").path,
        ]
        var mismatches: [Mismatch] = []
        for command in commands {
            let result = try runProcess(
                URL(fileURLWithPath: "/bin/bash"), ["--norc", "--noprofile", "-o", "pipefail", "-c", "exec 2>&1\n" + command.command],
                in: sandbox, environment: environment)
            var actual = result.stdout.components(separatedBy: "\n")
            if actual.last == "" { actual.removeLast() }
            let mayFail = command.expected.contains { $0.hasPrefix("catalog: error:") }
            if !matches(expected: command.expected, actual: actual) || (result.status != 0 && !mayFail) {
                mismatches.append(Mismatch(command: command, status: result.status, actual: actual))
            }
        }
        return mismatches
    }

    static var readme: String { get throws { try String(contentsOf: Support.root.appending(path: "README.md"), encoding: .utf8) } }

    /// The pages of `docs/` (`docs/NAME.md`, relative to the package root), sorted.
    static var docs: [String] {
        get throws {
            try FileManager.default.contentsOfDirectory(atPath: Support.root.appending(path: "docs").path)
                .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        }
    }

    /// The text of `file` (relative to the package root).
    static func text(_ file: String) throws -> String {
        try String(contentsOf: Support.root.appending(path: file), encoding: .utf8)
    }
}

@Suite("README examples are true")
struct ReadmeExamplesTests {
    @Test("every console example in README prints what README shows, run against Seeds/ in a fresh database")
    func examples() throws {
        let commands = ReadmeExamples.parse(try ReadmeExamples.readme)
        #expect(commands.map(\.command).contains("catalog import landmarkData.json"))
        #expect(commands.map(\.command).contains("catalog position get --user ann"))
        #expect(commands.count >= 5)
        let mismatches = try ReadmeExamples.check(commands)
        #expect(mismatches.isEmpty, "\(mismatches.map(\.description).joined(separator: "\n\n"))")
    }

    @Test("every console example in docs/*.md prints what the page shows, each page in a fresh database")
    func docsExamples() throws {
        let pages = try ReadmeExamples.docs
        for page in [
            "docs/cli.md", "docs/exit-statuses.md", "docs/log-format.md", "docs/merge-rules.md", "docs/snapshot-format.md",
            "docs/hub.md", "docs/operations.md", "docs/limits.md", "docs/performance.md",
        ] {
            #expect(pages.contains(page), "\(page) is missing")
        }
        var checked = 0
        for page in pages {
            let commands = ReadmeExamples.parse(try ReadmeExamples.text(page), file: page)
            checked += commands.count
            let mismatches = try ReadmeExamples.check(commands)
            #expect(mismatches.isEmpty, "\(mismatches.map(\.description).joined(separator: "\n\n"))")
        }
        #expect(checked >= 10)
    }

    @Test("an example in docs/ edited to be wrong fails the check, naming its page and line")
    func wrongDocsExampleFails() throws {
        let page = "docs/exit-statuses.md"
        let text = try ReadmeExamples.text(page)
        #expect(text.contains("exit 64\n"))
        let mismatches = try ReadmeExamples.check(ReadmeExamples.parse(text.replacingOccurrences(of: "exit 64\n", with: "exit 65\n"), file: page))
        #expect(mismatches.count == 1)
        #expect(mismatches.first?.description.hasPrefix("docs/exit-statuses.md:") == true)
        #expect(mismatches.first?.actual.last == "exit 64")
    }

    @Test("docs/exit-statuses.md lists exactly the exit statuses catalog --help lists")
    func exitStatusTable() throws {
        let help = runCLI(["--help"])
        #expect(help.status == 0)
        let section = try #require(help.stdout.components(separatedBy: "EXIT STATUS:\n").last)
        let helpCodes = section.split(separator: "\n").compactMap { line -> Int? in
            let words = line.split(separator: " ")
            return line.hasPrefix("  ") && !line.hasPrefix("      ") ? words.first.flatMap { Int($0) } : nil
        }
        let text = try ReadmeExamples.text("docs/exit-statuses.md")
        let table = try #require(text.components(separatedBy: "## 1. The statuses").last?.components(separatedBy: "\n## ").first)
        let docCodes = table.split(separator: "\n").compactMap { line -> Int? in
            guard line.hasPrefix("| ") else { return nil }
            return Int(line.dropFirst(2).prefix { $0.isNumber })
        }
        #expect(helpCodes.count >= 10)
        #expect(docCodes == helpCodes)
    }

    @Test(
        "an example edited to be wrong fails the check, naming its line and what was printed",
        arguments: [
            ("16 records: 16 inserted", "12 records: 12 inserted"),
            ("ann: page 2 of 4 (landmark 1006)", "ann: page 2 of 3 (landmark 1007)"),
            (#""pageCount":4"#, #""pageCount":3"#),
            ("16 unchanged, 0 pruned, 0 warnings (nothing to do)\n", "16 unchanged, 0 pruned, 0 warnings\n"),
        ])
    func wrongExampleFails(_ original: String, _ edited: String) throws {
        let readme = try ReadmeExamples.readme
        #expect(readme.contains(original))
        let commands = ReadmeExamples.parse(readme.replacingOccurrences(of: original, with: edited))
        let mismatches = try ReadmeExamples.check(commands)
        #expect(mismatches.count == 1)
        let mismatch = try #require(mismatches.first)
        #expect(mismatch.command.expected.joined(separator: "\n").contains(edited.trimmingCharacters(in: .newlines)))
        #expect(mismatch.actual.joined(separator: "\n").contains(original.trimmingCharacters(in: .newlines)))
        #expect(mismatch.description.hasPrefix("README.md:\(mismatch.command.line): `catalog "))
    }

    @Test("a command that fails, or prints an extra line, is a mismatch")
    func failures() throws {
        let commands = ReadmeExamples.parse(
            """
            ```console
            $ catalog position get --user ann
            ann: page 2 of 4 (landmark 1006)
            $ echo one; echo two
            one
            ```
            """)
        #expect(
            commands == [
                ReadmeExamples.Command(line: 2, command: "catalog position get --user ann", expected: ["ann: page 2 of 4 (landmark 1006)"]),
                ReadmeExamples.Command(line: 4, command: "echo one; echo two", expected: ["one"]),
            ])
        let mismatches = try ReadmeExamples.check(commands)
        #expect(mismatches.map(\.status) == [66, 0])
        #expect(mismatches.first?.actual.first?.hasPrefix("catalog: error: ") == true)
        #expect(mismatches.last?.actual == ["one", "two"])
    }

    @Test("… matches any text within one line, nothing across lines")
    func wildcard() {
        #expect(
            ReadmeExamples.matches(
                expected: [#"{"currentPage":2,"landmarks":[…],"pageCount":4}"#],
                actual: [#"{"currentPage":2,"landmarks":[{"id":1}],"pageCount":4}"#]))
        #expect(ReadmeExamples.matches(expected: ["a…b…c"], actual: ["a12b34c"]))
        #expect(ReadmeExamples.matches(expected: ["a…"], actual: ["a"]))
        #expect(!ReadmeExamples.matches(expected: ["a…c"], actual: ["ab"]))
        #expect(!ReadmeExamples.matches(expected: ["ab…ba"], actual: ["aba"]))
        #expect(!ReadmeExamples.matches(expected: ["…"], actual: ["x", "y"]))
        #expect(!ReadmeExamples.matches(expected: [], actual: ["x"]))
    }
}
