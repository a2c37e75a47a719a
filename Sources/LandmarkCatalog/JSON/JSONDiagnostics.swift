#if os(Linux)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A place in a JSON text, as people and editors count it.
///
/// - `line`: 1-based; only LF (U+000A) ends a line, so CRLF text counts like LF text and a CR is the
///   last column of its line (the same rule as Python's `json` module and most editors).
/// - `column`: 1-based, counted in Unicode scalars: every UTF-8 byte that is not a continuation byte
///   (`10xxxxxx`) starts a new column. A leading UTF-8 byte order mark is not counted.
/// - `offset`: 0-based, in bytes from the very first byte of the input (a byte order mark included).
public struct SourcePosition: Sendable, Hashable, CustomStringConvertible {
    /// 1-based line number; lines end at LF.
    public var line: Int
    /// 1-based column, in Unicode scalars from the start of the line.
    public var column: Int
    /// 0-based offset in bytes from the start of the input.
    public var offset: Int

    /// Creates a position from its three coordinates.
    public init(line: Int, column: Int, offset: Int) {
        self.line = line
        self.column = column
        self.offset = offset
    }

    /// `line:column`, e.g., `106:5`.
    public var description: String { "\(line):\(column)" }
}

/// Malformed JSON: the input breaks RFC 8259 (https://www.rfc-editor.org/rfc/rfc8259) or one of the
/// reader's limits (nesting depth, UTF-8 only).
///
/// `message` says what was expected and what was found; `position` is where the problem was detected.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was expected and what was found, e.g., `expected ':' after object key, found '}'`.
    public var message: String
    /// Where the problem was detected.
    public var position: SourcePosition

    /// Creates an error from its message and position.
    public init(message: String, position: SourcePosition) {
        self.message = message
        self.position = position
    }

    /// The message followed by ` at line:column`, e.g., `expected ',' or ']' after array element, found '}' at 12:5`.
    public var description: String { "\(message) at \(position)" }
}

/// A string whose content is bad although its end is well delimited: a lone surrogate escape, invalid
/// UTF-8, or an unescaped control character inside the quotes.
///
/// Thrown by the `JSONPullReader` methods that read one string — `JSONPullReader/readString()`,
/// `JSONPullReader/appendString(to:)`, `JSONPullReader/nextKey()`, `JSONPullReader/nextKey(in:)`,
/// and `JSONPullReader/readValue()` / `JSONPullReader/skipValue()` of a string that is an element or
/// member value of an open array or object — after consuming the whole string (for a key, the `:` too).
/// The reader is left in a valid state right after it (at a key's value), so the caller may report it
/// and go on pulling. A raw LF inside such a string counts as a line end for the positions that follow.
///
/// Everything else about strings stays a ``JSONSyntaxError``: no closing quote (the message is then the
/// first problem in the string, as if reading had stopped there), an escape RFC 8259 does not have, a
/// `\u` without four hex digits. Where the reader reads a whole array, object or document itself
/// (`JSONPullReader/readValue()` and `JSONPullReader/skipValue()` of an array or object, or of the
/// top-level value), bad string content is a ``JSONSyntaxError`` too, with the same message and
/// position: the value is refused as a whole.
public struct JSONStringContentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with the content (an open set: more may be added).
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// A short name, e.g., `lone surrogate escape`.
        public let description: String
        /// Creates a problem from its name.
        public init(_ description: String) { self.description = description }

        /// A `\uXXXX` escape of a surrogate (D800…DFFF) that is not part of a high–low pair.
        public static let loneSurrogate = Problem("lone surrogate escape")
        /// Bytes that are not well-formed UTF-8 (Unicode 15, table 3-7).
        public static let invalidUTF8 = Problem("invalid UTF-8")
        /// A raw U+0000…U+001F, which RFC 8259 §7 requires to be escaped.
        public static let controlCharacter = Problem("unescaped control character")
    }

    /// What is wrong (the first problem in the string; there may be more).
    public var problem: Problem
    /// The message a ``JSONSyntaxError`` would carry, e.g., `lone surrogate \uD800 in string: …`.
    public var message: String
    /// Where the first problem is: the backslash of the escape, the first byte of the bad sequence, or the
    /// control character.
    public var position: SourcePosition
    /// Where the string starts (its opening quote).
    public var stringPosition: SourcePosition
    /// The offending input as written: the escape (`\ud800`), the bytes (`0xC0 0xAF`) or the character
    /// (`U+0009`).
    public var found: String
    /// The string as read, each lone surrogate escape and each ill-formed UTF-8 sequence replaced by
    /// U+FFFD (control characters are kept); `nil` when the string was skipped rather than read.
    public var repaired: String?
    /// Whether the string is an object key (the reader is then at the key's value).
    public var isKey: Bool

    /// Creates an error from its parts.
    public init(
        problem: Problem, message: String, position: SourcePosition, stringPosition: SourcePosition,
        found: String, repaired: String?, isKey: Bool
    ) {
        self.problem = problem
        self.message = message
        self.position = position
        self.stringPosition = stringPosition
        self.found = found
        self.repaired = repaired
        self.isKey = isKey
    }

    /// The problem said of `subject` (e.g., a field name): `name contains a lone surrogate escape \ud800`,
    /// `invalid UTF-8 in name (0xFF)`, `name contains an unescaped control character U+0009`.
    public func message(in subject: String) -> String {
        switch problem {
        case .loneSurrogate: "\(subject) contains a lone surrogate escape \(found)"
        case .invalidUTF8: "invalid UTF-8 in \(subject) (\(found))"
        case .controlCharacter: "\(subject) contains an unescaped control character \(found)"
        default: "\(subject): \(message)"
        }
    }

    /// The message followed by ` at line:column`, like ``JSONSyntaxError``.
    public var description: String { "\(message) at \(position)" }
}

/// Something the reader accepted although RFC 8259 does not allow it (in lenient mode only: a single
/// trailing comma before `]` or `}`), with the position of the offending byte.
public struct JSONWarning: Sendable, Equatable, CustomStringConvertible {
    /// What was accepted, e.g., `trailing comma before ']'`.
    public var message: String
    /// Where it is (for a trailing comma: the comma itself).
    public var position: SourcePosition

    /// Creates a warning from its message and position.
    public init(message: String, position: SourcePosition) {
        self.message = message
        self.position = position
    }

    /// The message followed by ` at line:column`.
    public var description: String { "\(message) at \(position)" }
}

/// Reading the input failed (an I/O error, not malformed JSON).
///
/// Thrown by a `JSONPullReader` made with `init(fileDescriptor:options:)` when `read(2)` fails with
/// anything but `EINTR` (which is retried).
public struct JSONReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `errno` value that `read(2)` set, e.g., `EIO` (5) or `EISDIR` (21).
    public var errno: Int32
    /// The offset, in bytes from the start of the input, at which the failed read started.
    public var offset: Int

    /// Creates a read error from an `errno` value and the byte offset of the failed read.
    public init(errno: Int32, offset: Int) {
        self.errno = errno
        self.offset = offset
    }

    /// The message, for example `read failed at byte 65536: Is a directory (errno 21)`.
    public var description: String {
        "read failed at byte \(offset): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
