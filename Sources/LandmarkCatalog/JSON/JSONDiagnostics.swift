#if canImport(Glibc)
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

    /// `line:column`, e.g. `106:5`.
    public var description: String { "\(line):\(column)" }
}

/// Malformed JSON: the input breaks RFC 8259 (https://www.rfc-editor.org/rfc/rfc8259) or one of the
/// reader's limits (nesting depth, UTF-8 only).
///
/// `message` says what was expected and what was found; `position` is where the problem was detected.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was expected and what was found, e.g. `expected ':' after object key, found '}'`.
    public var message: String
    /// Where the problem was detected.
    public var position: SourcePosition

    /// Creates an error from its message and position.
    public init(message: String, position: SourcePosition) {
        self.message = message
        self.position = position
    }

    /// The message followed by ` at line:column`, e.g. `expected ',' or ']' after array element, found '}' at 12:5`.
    public var description: String { "\(message) at \(position)" }
}

/// Something the reader accepted although RFC 8259 does not allow it (in lenient mode only: a single
/// trailing comma before `]` or `}`), with the position of the offending byte.
public struct JSONWarning: Sendable, Equatable, CustomStringConvertible {
    /// What was accepted, e.g. `trailing comma before ']'`.
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
/// Thrown by a ``JSONPullReader`` made with `init(fileDescriptor:options:)` when `read(2)` fails with
/// anything but `EINTR` (which is retried).
public struct JSONReadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `errno` value that `read(2)` set, e.g. `EIO` (5) or `EISDIR` (21).
    public var errno: Int32
    /// The offset, in bytes from the start of the input, at which the failed read started.
    public var offset: Int

    /// Creates a read error from an `errno` value and the byte offset of the failed read.
    public init(errno: Int32, offset: Int) {
        self.errno = errno
        self.offset = offset
    }

    /// E.g. `read failed at byte 65536: Is a directory (errno 21)`.
    public var description: String {
        "read failed at byte \(offset): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
