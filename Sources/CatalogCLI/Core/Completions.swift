/// Shell completion scripts for bash, zsh and fish, generated from the command table (the idea of
/// swift-argument-parser's `--generate-completion-script`): commands, subcommands, every option with
/// its short name, and values where they are known — files, directories, fixed words (`--log-format`,
/// the shells) and the saved remotes, which the scripts read when completing by running
/// `catalog [--db PATH] remote list` (local, no network).
///
/// One generator walks the table once for every shell; what differs is the shell's syntax
/// (``ShellSyntax``: `BashCompletion.swift`, `ZshCompletion.swift`, `FishCompletion.swift`).
enum Completions {
    /// The shells a script is generated for.
    static let shells = ["bash", "zsh", "fish"]

    /// The script for `shell`, one of ``shells``.
    static func script(for shell: String, root: CommandSpec, version: String) -> String {
        generate(CommandTree(root: root), syntax: syntax(for: shell, root: root, version: version))
    }

    /// The syntax of `shell`, one of ``shells``.
    static func syntax(for shell: String, root: CommandSpec, version: String) -> ShellSyntax {
        switch shell {
        case "bash": return .bash(version: version)
        case "zsh": return .zsh(version: version, root: root)
        case "fish": return .fish(version: version)
        default: preconditionFailure("no completion script for \(shell)")
        }
    }

    /// Walks the table once, root first: each command adds its text to every part of the script; then
    /// the parts, each between its opening and closing text, in order.
    static func generate(_ tree: CommandTree, syntax: ShellSyntax) -> String {
        var bodies = Array(repeating: "", count: syntax.parts.count)
        for node in tree.nodes {
            for (n, part) in syntax.parts.enumerated() { bodies[n] += part.command(node) }
        }
        return zip(syntax.parts, bodies).map { part, body in part.opening + body + part.closing }.joined()
    }
}

/// How one shell's completion script is written: its parts in order, each a fixed opening, what each
/// command of the table adds, and a fixed closing (a bash lookup function's `case`, a zsh function per
/// command, fish's `complete` lines).
struct ShellSyntax {
    /// One part of a script.
    struct Part {
        var opening: String
        /// What a command adds (often nothing: a command without subcommands in a table of subcommands).
        var command: (CommandTree.Node) -> String
        var closing: String = ""
    }

    var parts: [Part]
}

extension ShellSyntax {
    /// How a value is completed, as the scripts spell it: `file`, `directory`, `remote`, `words:a,b`,
    /// or `value` (anything; nothing to offer).
    static func kindWord(_ kind: CompletionKind) -> String {
        switch kind {
        case .none: return "value"
        case .file: return "file"
        case .directory: return "directory"
        case .remote: return "remote"
        case .words(let words):
            precondition(words.allSatisfy { !$0.contains(",") && !$0.contains(" ") && !$0.contains("'") }, "completion words must be plain")
            return "words:" + words.joined(separator: ",")
        }
    }

    /// The names an option answers to: `-o` (if it has one) and `--output`.
    static func names(_ option: OptionSpec) -> [String] { (option.short.map { ["-\($0)"] } ?? []) + [option.name] }

    /// A POSIX shell single-quoted word.
    static func shellQuoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
}

/// The command table as the generators walk it: every command with its path, the root first, then
/// depth first in table order.
struct CommandTree {
    struct Node {
        /// `["position", "set"]`; empty for the root.
        var path: [String]
        var command: CommandSpec
        /// The path as the scripts key it: `position set`; empty for the root.
        var key: String { path.joined(separator: " ") }
    }

    let root: CommandSpec
    let nodes: [Node]

    init(root: CommandSpec) {
        self.root = root
        func walk(_ command: CommandSpec, _ path: [String]) -> [Node] {
            [Node(path: path, command: command)] + command.subcommands.flatMap { walk($0, path + [$0.name]) }
        }
        nodes = walk(root, [])
    }
}
