import LandmarkCatalog

enum Parser {
    /// Parses `arguments` against `root`.
    ///
    /// `-h` is `--help`; short options (`-q`, `-o FILE`) as declared; `--name=value` and `--name value`
    /// both work; `--` ends options. Global options may come before or after the command. Option values
    /// and arguments are checked here, before any command runs (and before the command's `validate`).
    static func parse(_ arguments: [String], root: CommandSpec) throws -> (CommandSpec, ParsedArguments) {
        var parsed = ParsedArguments()
        var command = root
        var i = 0
        var optionsEnded = false
        func available() -> [OptionSpec] { command.options + GlobalOptions.all }
        func lookup(_ name: String) -> OptionSpec? {
            if name.count == 2, name.hasPrefix("-"), let letter = name.last, letter != "-" {
                return available().first { $0.short == letter }
            }
            return available().first { $0.name == name }
        }
        while i < arguments.count {
            let token = arguments[i]
            i += 1
            if !optionsEnded && token == "--" {
                optionsEnded = true
                continue
            }
            if !optionsEnded && token.hasPrefix("-") && token != "-" {
                var name = token
                var inline: String?
                if token.hasPrefix("--"), let eq = token.firstIndex(of: "=") {
                    name = String(token[..<eq])
                    inline = String(token[token.index(after: eq)...])
                }
                guard let spec = lookup(name) else {
                    throw UsageError(message: unknownOption(name, among: available()), path: parsed.path)
                }
                if let valueName = spec.valueName {
                    let value: String
                    if let inline {
                        value = inline
                    } else {
                        // `--user --page 0`: the next word is an option, so the value is missing.
                        guard i < arguments.count, lookup(arguments[i]) == nil || arguments[i] == "-" else {
                            throw UsageError(message: "option '\(spec.name)' needs a value (\(spec.name) \(valueName))", path: parsed.path)
                        }
                        value = arguments[i]
                        i += 1
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
                } else {
                    if inline != nil { throw UsageError(message: "option '\(spec.name)' takes no value", path: parsed.path) }
                    parsed.flags.insert(spec.name)
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
                    p.flags.insert(GlobalOptions.help.spec.name)
                    return (target, p)
                }
                if command.run == nil { throw unknownCommand(token, in: command, path: parsed.path) }
            }
            parsed.positionals.append(token)
        }
        if parsed[GlobalOptions.help] || parsed[GlobalOptions.version] { return (command, parsed) }
        guard command.run != nil else {
            throw UsageError(
                message: parsed.path.isEmpty ? "missing command" : "missing subcommand for '\(parsed.path.joined(separator: " "))'",
                path: parsed.path)
        }
        for option in command.options where option.required && parsed.texts[option.name] == nil && !parsed.flags.contains(option.name) {
            throw UsageError(message: "missing \(Help.optionUsage(option))", path: parsed.path)
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
        // The words to the arguments, in order (a repeating one, the last, takes the rest), each checked
        // like an option's value.
        var next = 0
        for argument in command.arguments where next < parsed.positionals.count {
            let words = argument.repeating ? Array(parsed.positionals[next...]) : [parsed.positionals[next]]
            next += words.count
            for word in words {
                do {
                    try argument.check?(word)
                } catch let error as ValueError {
                    throw UsageError(message: error.describe("<\(argument.name)>", got: word), path: parsed.path)
                }
            }
            parsed.arguments[argument.name] = words
        }
        try command.validate?(parsed)
        return (command, parsed)
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
