/// Declarations of commands, options and arguments: the one source for parsing and for `--help`
/// (the shape of swift-driver's option table and swift-argument-parser's help).

/// One option: a flag (`--json`) or an option with a value (`--page N`).
struct OptionSpec {
    /// The long name with dashes, `--json`.
    var name: String
    /// The value's placeholder (`N`, `FILE`), or nil for a flag.
    var valueName: String?
    /// One line of help.
    var help: String
    /// May be given more than once.
    var repeatable = false
    /// Must be given (shown without brackets in the usage line).
    var required = false

    /// A copy with other help text.
    func with(help: String) -> OptionSpec {
        var copy = self
        copy.help = help
        return copy
    }

    static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, valueName: nil, help: help) }
    static func value(_ name: String, _ valueName: String, _ help: String, repeatable: Bool = false) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help, repeatable: repeatable)
    }
}

/// One positional argument.
struct ArgumentSpec {
    var name: String
    var help: String
    var optional = false
    var repeating = false
}

/// A command: its name, abstract, arguments, options, subcommands and what it runs.
struct CommandSpec {
    var name: String
    var abstract: String
    var discussion: String? = nil
    var arguments: [ArgumentSpec] = []
    var options: [OptionSpec] = []
    var subcommands: [CommandSpec] = []
    /// Checks that need more than the table (exclusive options, ranges); throws `UsageError`.
    var validate: ((ParsedArguments) throws -> Void)? = nil
    /// Runs the command; returns the exit status.
    var run: ((ParsedArguments, CLIContext) throws -> Int32)? = nil
}

/// Options every command takes.
let globalOptions: [OptionSpec] = [
    .value("--db", "PATH", "Database file (default: $CATALOG_DB, else $XDG_DATA_HOME/landmark-catalog/catalog.sqlite, else ~/.local/share/landmark-catalog/catalog.sqlite)."),
    .flag("--help", "Show help for this command."),
    .flag("--version", "Show the version."),
]

/// What the parser found.
struct ParsedArguments {
    /// The command path, e.g. `["position", "set"]`.
    var path: [String] = []
    var flags: Set<String> = []
    var values: [String: [String]] = [:]
    var positionals: [String] = []

    func has(_ flag: String) -> Bool { flags.contains(flag) }
    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
}

/// A command line that does not fit the table: exit 64 with the usage and a hint.
struct UsageError: Error {
    var message: String
    /// The command path whose usage to print.
    var path: [String]
}

enum Parser {
    /// Parses `arguments` against `root`. `-h` is `--help`; `--name=value` and `--name value` both work;
    /// `--` ends options. Global options may come before or after the command.
    static func parse(_ arguments: [String], root: CommandSpec) throws -> (CommandSpec, ParsedArguments) {
        var parsed = ParsedArguments()
        var command = root
        var i = 0
        var optionsEnded = false
        func lookup(_ name: String) -> OptionSpec? {
            (command.options + globalOptions).first { $0.name == name }
        }
        while i < arguments.count {
            var token = arguments[i]
            i += 1
            if token == "-h" { token = "--help" }
            if !optionsEnded && token == "--" { optionsEnded = true; continue }
            if !optionsEnded && token.hasPrefix("-") && token != "-" {
                var name = token
                var inline: String?
                if let eq = token.firstIndex(of: "=") {
                    name = String(token[..<eq])
                    inline = String(token[token.index(after: eq)...])
                }
                guard let spec = lookup(name) else {
                    let candidates = (command.options + globalOptions).map(\.name)
                    var message = "unknown option '\(name)'"
                    if let guess = Suggest.nearest(to: name, in: candidates) { message += ". Did you mean '\(guess)'?" }
                    throw UsageError(message: message, path: parsed.path)
                }
                if let valueName = spec.valueName {
                    let value: String
                    if let inline {
                        value = inline
                    } else {
                        // `--user --page 0`: the next word is an option, so the value is missing.
                        guard i < arguments.count, lookup(arguments[i]) == nil || arguments[i] == "-" else {
                            throw UsageError(message: "option '\(name)' needs a value (\(name) \(valueName))", path: parsed.path)
                        }
                        value = arguments[i]
                        i += 1
                    }
                    if !spec.repeatable, parsed.values[name] != nil, name != "--db" {
                        throw UsageError(message: "option '\(name)' is given more than once", path: parsed.path)
                    }
                    parsed.values[name, default: []].append(value)
                } else {
                    if inline != nil { throw UsageError(message: "option '\(name)' takes no value", path: parsed.path) }
                    parsed.flags.insert(name)
                }
                continue
            }
            // A word: a subcommand while the command has them, else a positional argument.
            if !command.subcommands.isEmpty && parsed.positionals.isEmpty {
                if let sub = command.subcommands.first(where: { $0.name == token }) {
                    command = sub
                    parsed.path.append(token)
                    continue
                }
                if parsed.path.isEmpty && token == "help" {
                    // `catalog help [COMMAND...]`
                    var target = root
                    var path: [String] = []
                    for word in arguments[i...] {
                        guard let sub = target.subcommands.first(where: { $0.name == word }) else {
                            throw unknownCommand(word, in: target, path: path)
                        }
                        target = sub
                        path.append(word)
                    }
                    var p = ParsedArguments()
                    p.path = path
                    p.flags.insert("--help")
                    return (target, p)
                }
                if command.run == nil { throw unknownCommand(token, in: command, path: parsed.path) }
            }
            parsed.positionals.append(token)
        }
        if parsed.has("--help") || parsed.has("--version") { return (command, parsed) }
        guard command.run != nil else {
            throw UsageError(message: parsed.path.isEmpty ? "missing command" : "missing subcommand for '\(parsed.path.joined(separator: " "))'",
                             path: parsed.path)
        }
        let required = command.arguments.filter { !$0.optional }.count
        let maximum = command.arguments.contains(where: \.repeating) ? Int.max : command.arguments.count
        if parsed.positionals.count < required {
            let missing = command.arguments[parsed.positionals.count]
            throw UsageError(message: "missing argument <\(missing.name)>", path: parsed.path)
        }
        if parsed.positionals.count > maximum {
            throw UsageError(message: "unexpected argument '\(parsed.positionals[maximum])'", path: parsed.path)
        }
        try command.validate?(parsed)
        return (command, parsed)
    }

    static func unknownCommand(_ word: String, in command: CommandSpec, path: [String]) -> UsageError {
        var message = "unknown command '\(word)'"
        if let guess = Suggest.nearest(to: word, in: command.subcommands.map(\.name) + (path.isEmpty ? ["help"] : [])) {
            message += ". Did you mean '\(guess)'?"
        }
        return UsageError(message: message, path: path)
    }
}

/// Nearest-spelling suggestions: optimal string alignment distance (Damerau–Levenshtein with adjacent
/// transpositions), so `featrued` → `featured`.
enum Suggest {
    static func nearest(to word: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= max(2, $0.0.count / 3) }
        return scored.min { $0.1 < $1.1 }?.0
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased().unicodeScalars), b = Array(b.lowercased().unicodeScalars)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}

/// Help text generated from the declarations.
enum Help {
    static func usageLine(_ command: CommandSpec, path: [String]) -> String {
        var parts = ["catalog"] + (path.isEmpty ? ["[--db PATH]"] : ["[--db PATH]"] + path)
        if !command.subcommands.isEmpty && command.run == nil {
            parts.append("<command>")
        }
        for option in command.options {
            let text = "\(option.name)\(option.valueName.map { " \($0)" } ?? "")"
            parts.append(option.required ? text : "[\(text)]")
        }
        for argument in command.arguments {
            let text = "<\(argument.name)>" + (argument.repeating ? "..." : "")
            parts.append(argument.optional ? "[\(text)]" : text)
        }
        return parts.joined(separator: " ")
    }

    static func render(_ command: CommandSpec, path: [String], footer: String? = nil) -> String {
        var out = "OVERVIEW: \(command.abstract)\n"
        if let discussion = command.discussion { out += "\n\(discussion)\n" }
        out += "\nUSAGE: \(usageLine(command, path: path))\n"
        func row(_ left: String, _ right: String) -> String {
            let pad = 26
            return left.count < pad - 2
                ? "  " + left + String(repeating: " ", count: pad - 2 - left.count) + right + "\n"
                : "  " + left + "\n" + String(repeating: " ", count: pad) + right + "\n"
        }
        if !command.arguments.isEmpty {
            out += "\nARGUMENTS:\n"
            for a in command.arguments { out += row("<\(a.name)>", a.help) }
        }
        out += "\nOPTIONS:\n"
        for o in command.options + globalOptions {
            out += row(o.name + (o.valueName.map { " <\($0.lowercased())>" } ?? "") + (o.name == "--help" ? ", -h" : ""), o.help)
        }
        if !command.subcommands.isEmpty {
            out += "\nSUBCOMMANDS:\n"
            for s in command.subcommands { out += row(s.name, s.abstract) }
            out += "\n  See 'catalog help \((path + ["<subcommand>"]).joined(separator: " "))' for detailed help.\n"
        }
        if let footer { out += "\n" + footer }
        return out
    }
}
