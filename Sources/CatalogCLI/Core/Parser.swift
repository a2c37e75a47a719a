import LandmarkCatalog

/// A command line read once against the command table: the command it runs, or the first usage error, and
/// how diagnostics are written either way.
struct CommandLineReading {
    /// The command and its checked arguments, or the first error found.
    var outcome: Result<(CommandSpec, ParsedArguments), any Error>
    /// `--log-format`'s value, or nil when it is not given; read past a usage error too, so that the error
    /// is written in that format.
    var logFormat: String?
    /// `--max-diagnostics`' value, or 20 when it is not given (also read past a usage error).
    var diagnosticLimit: Int
}

enum Parser {
    /// Parses `arguments` against `root`: ``read(_:root:)``'s command, or its first error thrown.
    static func parse(_ arguments: [String], root: CommandSpec) throws -> (CommandSpec, ParsedArguments) {
        try read(arguments, root: root).outcome.get()
    }

    /// Reads `arguments` against `root`, once, word by word.
    ///
    /// `-h` is `--help`; short options (`-q`, `-o FILE`) as declared; `--name=value` and `--name value`
    /// both work; `--` ends options. Global options may come before or after the command. Option values
    /// and arguments are checked here, before any command runs (and before the command's `validate`).
    /// After the first usage error the words are still read, their errors dropped, so that the global
    /// options given after a mistake still say how it is reported.
    static func read(_ arguments: [String], root: CommandSpec) -> CommandLineReading {
        var reader = ArgumentReader(arguments, root: root)
        let outcome = Result { try reader.readAll() }
        return CommandLineReading(
            outcome: outcome, logFormat: reader.parsed.texts[GlobalOptions.logFormat.spec.name]?.first,
            diagnosticLimit: reader.parsed.texts[GlobalOptions.maxDiagnostics.spec.name]?.first.map(GlobalOptions.maxDiagnostics.value(ofChecked:))
                ?? 20)
    }

    static func unknownOption(_ name: String, among options: [OptionSpec]) -> String {
        var message = "unknown option '\(name)'"
        if let guess = Suggest.nearest(to: name, in: options.map(\.name)) { message += ". Did you mean '\(guess)'?" }
        return message
    }

    static func unknownCommand(_ word: String, in command: CommandSpec, path: [String]) -> UsageError {
        var message = "unknown command '\(word)'"
        if let guess = Suggest.nearest(to: word, in: command.subcommands.map(\.name) + (path.isEmpty ? ["help"] : [])) {
            message += ". Did you mean '\(guess)'?"
        }
        return UsageError(message: message, path: path)
    }
}

/// The parser's place in a command line: the command found so far and what was given to it.
private struct ArgumentReader {
    let arguments: [String]
    let root: CommandSpec
    /// The index of the next word to read.
    var next = 0
    var command: CommandSpec
    var parsed = ParsedArguments()
    var optionsEnded = false
    /// After `catalog help`: the command whose help is asked for and its path, found word by word.
    var help: (command: CommandSpec, path: [String])?
    /// The first error; the words after it are read only for the global options they give.
    var failure: (any Error)?

    init(_ arguments: [String], root: CommandSpec) {
        self.arguments = arguments
        self.root = root
        command = root
    }

    /// Reads every word, then checks what the command needs.
    mutating func readAll() throws -> (CommandSpec, ParsedArguments) {
        while next < arguments.count {
            let word = arguments[next]
            next += 1
            do {
                try read(word)
            } catch {
                // The first error is the one reported; later words are read for the global options only.
                guard failure == nil else { continue }
                failure = error
                if help != nil {
                    // A word `help` took for a command's name may be a global option (`help --log-format json`).
                    help = nil
                    try? read(word)
                }
            }
        }
        if let failure { throw failure }
        if let help {
            var asked = ParsedArguments()
            asked.path = help.path
            asked.flags.insert(GlobalOptions.help.spec.name)
            return (help.command, asked)
        }
        return try finish()
    }

    mutating func read(_ word: String) throws {
        if let help {
            try readHelpWord(word, after: help)
        } else if !optionsEnded && word == "--" {
            optionsEnded = true
        } else if !optionsEnded && word.hasPrefix("-") && word != "-" {
            try readOption(word)
        } else {
            try readWord(word)
        }
    }

    /// The options the command takes: its own and the global ones.
    var available: [OptionSpec] { command.options + GlobalOptions.all }

    func lookup(_ name: String) -> OptionSpec? {
        if name.count == 2, name.hasPrefix("-"), let letter = name.last, letter != "-" {
            return available.first { $0.short == letter }
        }
        return available.first { $0.name == name }
    }

    /// `--name`, `-n`, `--name=value` or `--name value` (the value is the next word then).
    mutating func readOption(_ token: String) throws {
        var name = token
        var inline: String?
        if token.hasPrefix("--"), let eq = token.firstIndex(of: "=") {
            name = String(token[..<eq])
            inline = String(token[token.index(after: eq)...])
        }
        guard let spec = lookup(name) else {
            throw UsageError(message: Parser.unknownOption(name, among: available), path: parsed.path)
        }
        guard let valueName = spec.valueName else {
            if inline != nil { throw UsageError(message: "option '\(spec.name)' takes no value", path: parsed.path) }
            parsed.flags.insert(spec.name)
            return
        }
        let value: String
        if let inline {
            value = inline
        } else {
            // `--user --page 0`: the next word is an option, so the value is missing.
            guard next < arguments.count, lookup(arguments[next]) == nil || arguments[next] == "-" else {
                throw UsageError(message: "option '\(spec.name)' needs a value (\(spec.name) \(valueName))", path: parsed.path)
            }
            value = arguments[next]
            next += 1
        }
        if !spec.repeatable, parsed.texts[spec.name] != nil, spec.name != GlobalOptions.db.spec.name {
            throw UsageError(message: "option '\(spec.name)' is given more than once", path: parsed.path)
        }
        do {
            try spec.check?(value)
        } catch let error as ValueError {
            throw UsageError(message: error.describe(spec.name, got: value), path: parsed.path)
        }
        parsed.texts[spec.name, default: []].append(value)
    }

    /// A word: a subcommand while the command has them (or `help` at the root), else a positional argument.
    mutating func readWord(_ token: String) throws {
        if !command.subcommands.isEmpty && parsed.positionals.isEmpty {
            if let sub = command.subcommands.first(where: { $0.name == token }) {
                command = sub
                parsed.path.append(token)
                return
            }
            if parsed.path.isEmpty && token == "help" && failure == nil {
                // `catalog help [COMMAND...]`: every word after it names a subcommand.
                help = (root, [])
                return
            }
            if command.run == nil { throw Parser.unknownCommand(token, in: command, path: parsed.path) }
        }
        parsed.positionals.append(token)
    }

    /// A word after `catalog help`: the next subcommand on the way to the command whose help is asked for.
    mutating func readHelpWord(_ word: String, after help: (command: CommandSpec, path: [String])) throws {
        guard let sub = help.command.subcommands.first(where: { $0.name == word }) else {
            throw Parser.unknownCommand(word, in: help.command, path: help.path)
        }
        self.help = (sub, help.path + [word])
    }

    /// Once every word is read: the command runs, its required options and arguments are there, each
    /// argument's words are checked, and the command's own `validate` passes.
    func finish() throws -> (CommandSpec, ParsedArguments) {
        if parsed[GlobalOptions.help] || parsed[GlobalOptions.version] { return (command, parsed) }
        guard command.run != nil else {
            throw UsageError(
                message: parsed.path.isEmpty ? "missing command" : "missing subcommand for '\(parsed.path.joined(separator: " "))'",
                path: parsed.path)
        }
        for option in command.options where option.required && parsed.texts[option.name] == nil && !parsed.flags.contains(option.name) {
            throw UsageError(message: "missing \(Help.optionUsage(option))", path: parsed.path)
        }
        var parsed = self.parsed
        parsed.arguments = try argumentWords()
        try command.validate?(parsed)
        return (command, parsed)
    }

    /// The words to the arguments, in order (a repeating one, the last, takes the rest), each checked
    /// like an option's value; too few or too many words are an error.
    func argumentWords() throws -> [String: [String]] {
        let positionals = parsed.positionals
        let required = command.arguments.filter { !$0.optional }.count
        let maximum = command.arguments.contains(where: \.repeating) ? Int.max : command.arguments.count
        if positionals.count < required {
            throw UsageError(message: "missing argument <\(command.arguments[positionals.count].name)>", path: parsed.path)
        }
        if positionals.count > maximum {
            throw UsageError(message: "unexpected argument '\(positionals[maximum])'", path: parsed.path)
        }
        var assigned: [String: [String]] = [:]
        var next = 0
        for argument in command.arguments where next < positionals.count {
            let words = argument.repeating ? Array(positionals[next...]) : [positionals[next]]
            next += words.count
            for word in words {
                do {
                    try argument.check?(word)
                } catch let error as ValueError {
                    throw UsageError(message: error.describe("<\(argument.name)>", got: word), path: parsed.path)
                }
            }
            assigned[argument.name] = words
        }
        return assigned
    }
}
