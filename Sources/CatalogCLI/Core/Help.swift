/// Help text generated from the declarations.
enum Help {
    static func optionUsage(_ option: OptionSpec) -> String {
        "\(option.name)\(option.valueName.map { " \($0)" } ?? "")"
    }

    static func usageLine(_ command: CommandSpec, path: [String]) -> String {
        var parts = ["catalog", "[--db PATH]"] + path
        if !command.subcommands.isEmpty && command.run == nil {
            parts.append("<command>")
        }
        for option in command.options {
            let text = optionUsage(option)
            if command.oneOf.contains(option.name) {
                guard option.name == command.oneOf.first else { continue }
                parts.append(
                    "("
                        + command.oneOf.compactMap { name in command.options.first { $0.name == name }.map(optionUsage) }
                        .joined(separator: " | ") + ")")
                continue
            }
            parts.append(option.required ? text : "[\(text)]")
        }
        for argument in command.arguments {
            let text = "<\(argument.name)>" + (argument.repeating ? "..." : "")
            parts.append(argument.optional ? "[\(text)]" : text)
        }
        return parts.joined(separator: " ")
    }

    /// The left column of an option's help row: `-o, --output <file>`.
    static func optionLabel(_ option: OptionSpec) -> String {
        (option.short.map { "-\($0), " } ?? "") + option.name + (option.valueName.map { " <\($0.lowercased())>" } ?? "")
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
        for o in command.options + GlobalOptions.all { out += row(optionLabel(o), o.help) }
        if !command.subcommands.isEmpty {
            out += "\nSUBCOMMANDS:\n"
            for s in command.subcommands { out += row(s.name, s.abstract) }
            out += "\n  See 'catalog help \((path + ["<subcommand>"]).joined(separator: " "))' for detailed help.\n"
        }
        if let footer { out += "\n" + footer }
        return out
    }
}
