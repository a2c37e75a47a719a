import LandmarkCatalog

/// Declarations of commands, options and arguments: the one source for parsing, `--help`, the man
/// page and the shell completions (the shape of swift-driver's option table and swift-argument-parser's
/// declarations). Options and arguments are declared once as typed values and queried typed, so a
/// misspelt name cannot compile.

/// What a shell may complete for an option's value or an argument.
enum CompletionKind: Sendable {
    case none
    /// A file or directory path.
    case file
    /// A directory.
    case directory
    /// A saved remote's name (or a path / URL).
    case remote
    /// One of fixed words.
    case words([String])
}

/// Turns an option's value or an argument's word into its typed value, or throws a ``ValueError`` saying
/// what is expected.
///
/// A reader is a pure function of the text: the parser runs it to check the text before any command
/// runs, and reading the value runs it again on the same text, so that cannot fail.
typealias ValueReader<Value> = @Sendable (String) throws -> Value

/// The value of `text`, which the parser already checked with `read` (see ``ValueReader``): a refusal
/// now would be a reader that is not a pure function of its text, a programming error.
private func readChecked<Value>(_ read: ValueReader<Value>, _ text: String, _ what: String) -> Value {
    do {
        return try read(text)
    } catch {
        preconditionFailure(
            "\(what): '\(text)' passed the parser's check and then was refused (\(error)); a reader must be a pure function of its text")
    }
}

/// One option: a flag (`--json`) or an option with a value (`--page N`), with its help and how its value
/// is checked.
///
/// The parser checks values (types and ranges) before any command runs.
struct OptionSpec: Sendable {
    /// The long name with dashes, `--json`.
    var name: String
    /// A one-letter short name (`q` for `-q`), or nil.
    var short: Character?
    /// The value's placeholder (`N`, `FILE`), or nil for a flag.
    var valueName: String?
    /// One line of help.
    var help: String
    /// May be given more than once.
    var repeatable = false
    /// Must be given (shown without brackets in the usage line).
    var required = false
    /// Checks a value's text, throwing a ``ValueError`` saying what is expected: the typed option's
    /// reader with its result dropped (nil for a flag).
    ///
    /// The parser runs it on every value it takes.
    var check: (@Sendable (String) throws -> Void)?
    /// What a shell completes for the value.
    var completion: CompletionKind = .none

    /// A copy with other help text.
    func with(help: String) -> OptionSpec {
        var copy = self
        copy.help = help
        return copy
    }

    /// A copy that must be given.
    var mandatory: OptionSpec {
        var copy = self
        copy.required = true
        return copy
    }
}

/// Why an option's value or an argument was refused.
///
/// The parser words it `--page needs EXPECTED, got 'x'`, unless the reader gave the whole message.
struct ValueError: Error {
    /// What is expected: `an integer in 0…10`.
    var expected: String
    /// The whole message instead, for a value with its own wording: `unknown shell 'tcsh' (bash, zsh or fish)`.
    var message: String? = nil

    /// The usage error's message for `text` given to `name` (`--page`, `<row>`).
    func describe(_ name: String, got text: String) -> String { message ?? "\(name) needs \(expected), got '\(text)'" }
}

/// A declared flag, queried as `parsed[Options.json]`.
struct Flag: Sendable {
    let spec: OptionSpec
    init(_ name: String, short: Character? = nil, _ help: String) {
        spec = OptionSpec(name: name, short: short, valueName: nil, help: help)
    }
    private init(spec: OptionSpec) { self.spec = spec }
    func with(help: String) -> Flag { Flag(spec: spec.with(help: help)) }
}

/// A declared option with a value of type `Value`, queried as `parsed[Options.page]` (a `Value?`: nil when
/// it is not given).
///
/// Only the text is kept; reading runs ``read`` on it again.
struct Option<Value>: Sendable {
    let spec: OptionSpec
    /// Reads a value's text; the spec's `check` is this reader with its result dropped.
    let read: ValueReader<Value>

    init(
        _ name: String, short: Character? = nil, _ valueName: String, _ help: String, repeatable: Bool = false,
        completion: CompletionKind = .none, parse: @escaping ValueReader<Value>
    ) {
        spec = OptionSpec(
            name: name, short: short, valueName: valueName, help: help, repeatable: repeatable,
            check: { _ = try parse($0) }, completion: completion)
        read = parse
    }
    private init(spec: OptionSpec, read: @escaping ValueReader<Value>) {
        self.spec = spec
        self.read = read
    }
    func with(help: String) -> Option { Option(spec: spec.with(help: help), read: read) }
    /// The option made required: the parser refuses a command line without it, so it reads as a `Value`.
    var mandatory: RequiredOption<Value> { RequiredOption(spec: spec.mandatory, read: read) }
    /// The typed value of a text the parser checked (see ``ValueReader``).
    func value(ofChecked text: String) -> Value { readChecked(read, text, spec.name) }
}

/// A declared option that must be given (`Option.mandatory`), queried as `parsed[PositionOptions.user]`: a
/// `Value`, not optional, since the parser refuses a command line without it before the command runs.
struct RequiredOption<Value>: Sendable {
    let spec: OptionSpec
    /// Reads a value's text; the spec's `check` is this reader with its result dropped.
    let read: ValueReader<Value>
    fileprivate init(spec: OptionSpec, read: @escaping ValueReader<Value>) {
        self.spec = spec
        self.read = read
    }
    /// The typed value of a text the parser checked (see ``ValueReader``).
    func value(ofChecked text: String) -> Value { readChecked(read, text, spec.name) }
}

/// Value readers (``ValueReader``) for options and arguments.
enum Values {
    static func string(_ text: String) throws -> String { text }

    static func nonEmpty(_ text: String) throws -> String {
        guard !text.isEmpty else { throw ValueError(expected: "a non-empty value") }
        return text
    }

    static func integer(_ range: ClosedRange<Int>) -> ValueReader<Int> {
        { text in
            guard let n = Int(text), range.contains(n) else { throw ValueError(expected: "an integer in \(range.lowerBound)…\(range.upperBound)") }
            return n
        }
    }

    static func anyInteger(_ text: String) throws -> Int64 {
        guard let n = Int64(text) else { throw ValueError(expected: "an integer") }
        return n
    }

    static func int64(_ range: ClosedRange<Int64>) -> ValueReader<Int64> {
        { text in
            guard let n = Int64(text), range.contains(n) else { throw ValueError(expected: "an integer in \(range.lowerBound)…\(range.upperBound)") }
            return n
        }
    }

    /// A duration, the one reader of every time option: a number with a unit `s`, `m`, `h` or `d`
    /// (`90s`, `10m`, `1h`, `1d`) or plain seconds (`30`, `0.5`), in seconds.
    /// - Parameters:
    ///   - zeroAllowed: whether `0` is taken (else the duration must be more than 0, and the message says so).
    ///   - most: the longest taken, in seconds.
    ///   - why: explains the bound `most` in messages.
    /// - Returns: the reader, whose value is in seconds.
    static func duration(zeroAllowed: Bool = false, atMost most: Double = .infinity, _ why: String? = nil) -> ValueReader<Double> {
        { text in
            let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
            var digits = Substring(text)
            var factor = 1.0
            if let last = digits.last, let unit = units[last] {
                factor = unit
                digits = digits.dropLast()
            }
            // Only plain decimals: no sign, no exponent, no `inf`/`nan`.
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(digits), value.isFinite else {
                throw ValueError(expected: "a duration such as 90s, 10m, 1h or plain seconds")
            }
            let seconds = value * factor
            if seconds == 0 && !zeroAllowed {
                throw ValueError(expected: "a duration more than 0 (such as 90s, 10m or 1h)")
            }
            guard seconds <= most else {
                throw ValueError(expected: "a duration of at most \(describe(most))\(why.map { " (\($0))" } ?? "")")
            }
            return seconds
        }
    }

    /// `7d`, `1d`, `90s`: a bound as it is typed.
    private static func describe(_ seconds: Double) -> String {
        for (unit, size) in [("d", 86_400.0), ("h", 3600), ("m", 60)] where seconds >= size && seconds.truncatingRemainder(dividingBy: size) == 0 {
            return "\(number(seconds / size))\(unit)"
        }
        return "\(number(seconds))s"
    }

    static func oneOf(_ words: [String]) -> ValueReader<String> {
        { text in
            guard words.contains(text) else { throw ValueError(expected: "one of \(words.joined(separator: ", "))") }
            return text
        }
    }

    /// One of `words`, refused in the words of an argument: `unknown shell 'tcsh' (bash, zsh or fish)`, with
    /// the nearest word suggested (`. Did you mean 'bash'?`) when one is near.
    static func oneOf(_ words: [String], unknown noun: String) -> ValueReader<String> {
        { text in
            guard words.contains(text) else {
                let list = words.count > 1 ? words.dropLast().joined(separator: ", ") + " or " + words[words.count - 1] : words.joined()
                var message = "unknown \(noun) '\(text)' (\(list))"
                if let guess = Suggest.nearest(to: text, in: words) { message += ". Did you mean '\(guess)'?" }
                throw ValueError(expected: "one of \(words.joined(separator: ", "))", message: message)
            }
            return text
        }
    }

    private static func number(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
}

/// One positional argument as help, the man page and completions show it, and how the parser checks it.
struct ArgumentSpec: Sendable {
    var name: String
    var help: String
    var optional = false
    /// Takes every word left (the last argument only).
    var repeating = false
    var completion: CompletionKind = .none
    /// Checks a word, throwing a ``ValueError``: the typed argument's reader with its result dropped.
    var check: (@Sendable (String) throws -> Void)?
}

/// A declared positional argument that must be given, queried as `parsed[ImportArguments.file]`: a `Value`,
/// since the parser refuses a command line without it.
///
/// `.repeating` makes a repeating one; `.optional` an optional last one.
struct Argument<Value>: Sendable {
    private(set) var spec: ArgumentSpec
    /// Reads a word; the spec's `check` is this reader with its result dropped.
    let read: ValueReader<Value>

    init(_ name: String, _ help: String, completion: CompletionKind = .none, parse: @escaping ValueReader<Value>) {
        spec = ArgumentSpec(name: name, help: help, completion: completion, check: { _ = try parse($0) })
        read = parse
    }

    /// The argument made repeating: zero or more words (`[<name>...]`), read as `[Value]`.
    var repeating: RepeatingArgument<Value> {
        var spec = spec
        spec.optional = true
        spec.repeating = true
        return RepeatingArgument(spec: spec, read: read)
    }

    /// The typed value of a word the parser checked (see ``ValueReader``).
    func value(ofChecked word: String) -> Value { readChecked(read, word, "<\(spec.name)>") }

    /// The argument made optional (`[<name>]`, the last one only), read with `parsed.optional(_:)`.
    var optional: Argument<Value> {
        var copy = self
        copy.spec.optional = true
        return copy
    }
}

extension Argument where Value == String {
    /// An argument that takes any word as it is.
    init(_ name: String, _ help: String, completion: CompletionKind = .none) {
        self.init(name, help, completion: completion, parse: Values.string)
    }
}

/// A declared repeating positional argument (`Argument.repeating`): zero or more words, queried as `[Value]`.
struct RepeatingArgument<Value>: Sendable {
    let spec: ArgumentSpec
    /// Reads a word; the spec's `check` is this reader with its result dropped.
    let read: ValueReader<Value>
    fileprivate init(spec: ArgumentSpec, read: @escaping ValueReader<Value>) {
        self.spec = spec
        self.read = read
    }
    /// The typed value of a word the parser checked (see ``ValueReader``).
    func value(ofChecked word: String) -> Value { readChecked(read, word, "<\(spec.name)>") }
}

/// A command: its name, abstract, arguments, options, subcommands and what it runs.
struct CommandSpec {
    var name: String
    var abstract: String
    var discussion: String? = nil
    var arguments: [ArgumentSpec] = []
    var options: [OptionSpec] = []
    var subcommands: [CommandSpec] = []
    /// Options of which exactly one must be given (shown as `(--page N | --landmark ID)`); the check is
    /// in `validate`.
    var oneOf: [String] = []
    /// Checks that need more than the table (exclusive options); throws `UsageError`.
    var validate: ((ParsedArguments) throws -> Void)? = nil
    /// Runs the command; returns the exit status.
    var run: ((Invocation) throws -> Int32)? = nil
}

/// Options every command takes.
enum GlobalOptions {
    static let db = Option<String>(
        "--db", "PATH",
        "Database file (default: $CATALOG_DB, else $XDG_DATA_HOME/landmark-catalog/catalog.sqlite, else ~/.local/share/landmark-catalog/catalog.sqlite).",
        completion: .file, parse: Values.string)
    static let logFormat = Option<String>(
        "--log-format", "FORMAT",
        "How diagnostics on stderr are written: text (default) or json (one JSON object per line).",
        completion: .words(["text", "json"]), parse: Values.oneOf(["text", "json"]))
    static let maxDiagnostics = Option<Int>(
        "--max-diagnostics", "N",
        "Lines of one kind of diagnostic shown per run (default 20; 0 shows all). Counts are always complete.",
        parse: Values.integer(0...100_000_000))
    static let help = Flag("--help", short: "h", "Show help for this command.")
    static let version = Flag("--version", "Show the version.")
    static let all: [OptionSpec] = [db.spec, logFormat.spec, maxDiagnostics.spec, help.spec, version.spec]
}

/// What the parser found: flags given, option values and arguments' words, all checked.
///
/// Only texts are kept; a typed query (`parsed[Options.page]`) reads the text again with the
/// declaration's reader.
struct ParsedArguments {
    /// The command path, e.g., `["position", "set"]`.
    var path: [String] = []
    var flags: Set<String> = []
    /// Each option's value texts in the order given, by the option's name; each passed the option's check.
    var texts: [String: [String]] = [:]
    /// The words that are neither options nor the command's name, in order: the parser's, which hands
    /// them to the command's arguments (``arguments``); commands query arguments by their declarations.
    var positionals: [String] = []
    /// Each argument's words, by the argument's name (a repeating argument's, in order); each passed the
    /// argument's check.
    ///
    /// An argument not given has no entry.
    var arguments: [String: [String]] = [:]

    subscript(flag: Flag) -> Bool { flags.contains(flag.spec.name) }
    /// The option's value (the last given), or nil when it is not given.
    subscript<V>(option: Option<V>) -> V? { texts[option.spec.name]?.last.map(option.value(ofChecked:)) }
    /// A required option's value (the last given): the parser refused the command line without it.
    subscript<V>(option: RequiredOption<V>) -> V {
        guard let text = texts[option.spec.name]?.last else {
            preconditionFailure("\(option.spec.name) is read by a command that does not declare it required")
        }
        return option.value(ofChecked: text)
    }
    /// Every value of a repeatable option, in the order given.
    func all<V>(_ option: Option<V>) -> [V] { texts[option.spec.name]?.map(option.value(ofChecked:)) ?? [] }
    /// Every value of a repeatable required option (at least one: the parser refused the command line
    /// without it), in the order given.
    func all<V>(_ option: RequiredOption<V>) -> [V] { texts[option.spec.name]?.map(option.value(ofChecked:)) ?? [] }
    /// Whether the option was given at all.
    func given<V>(_ option: Option<V>) -> Bool { texts[option.spec.name] != nil }

    /// A required argument's value: the parser refused the command line without it.
    subscript<V>(argument: Argument<V>) -> V {
        guard let word = arguments[argument.spec.name]?.first else {
            preconditionFailure("<\(argument.spec.name)> is read by a command that does not declare it")
        }
        return argument.value(ofChecked: word)
    }
    /// An optional argument's value (`Argument.optional`), or nil when it is not given.
    func optional<V>(_ argument: Argument<V>) -> V? { arguments[argument.spec.name]?.first.map(argument.value(ofChecked:)) }
    /// A repeating argument's values, in order (none when it is not given).
    subscript<V>(argument: RepeatingArgument<V>) -> [V] { arguments[argument.spec.name]?.map(argument.value(ofChecked:)) ?? [] }
}

/// A command line that does not fit the table: exit 64 with the usage and a hint.
struct UsageError: Error {
    var message: String
    /// The command path whose usage to print.
    var path: [String]
}
