/// A streaming pull reader for JSON text (RFC 8259: https://www.rfc-editor.org/rfc/rfc8259) that
/// knows the line and column of everything it reads.
///
/// It reads a file descriptor in chunks (64 KiB by default) or a byte array, so memory stays bounded by
/// the buffer plus the value being read, whatever the size of the input. Typical use:
///
/// ```swift
/// let reader = JSONPullReader(fileDescriptor: fd, options: .init())
/// try reader.beginArray()
/// while try reader.nextElement() {
///     let position = reader.position
///     let record = try reader.readValue()
///     // …
/// }
/// try reader.finish()
/// ```
///
/// What it accepts is RFC 8259, strictly:
/// - Whitespace is only space, tab, LF and CR. Lines end at LF (see ``SourcePosition``).
/// - Numbers follow §6 exactly (no `+`, no leading zeros, no `.5` or `5.`, no `NaN` or `Infinity`);
///   any magnitude is accepted (see ``JSONNumber/doubleValue``).
/// - Strings (§7): raw control characters U+0000…U+001F are errors; every escape is decoded; a `\uXXXX`
///   escape for a surrogate must be a high surrogate (D800…DBFF) directly followed by a `\uXXXX` low
///   surrogate (DC00…DFFF). A lone or reversed surrogate escape is an error, since it names no Unicode
///   scalar and a Swift `String` cannot hold it.
/// - The input must be UTF-8 (§8.1): invalid UTF-8 anywhere (stray continuation bytes, overlong forms,
///   UTF-8-encoded surrogates, code points above U+10FFFF, truncated sequences) is an error at the
///   first byte of the bad sequence. One leading byte order mark (EF BB BF) is skipped. Input that is
///   UTF-16 or UTF-32 (a byte order mark FE FF or FF FE, or a NUL among the first two bytes) is refused.
/// - Duplicate object keys are kept, in order: the caller decides what they mean.
/// - Nesting deeper than ``Options/maxDepth`` arrays and objects is an error (never a stack overflow:
///   nothing here recurses).
/// - The one leniency, only with ``Options/allowTrailingCommas``: a single comma directly before `]` or
///   `}` (whitespace between allowed) is accepted and recorded in ``warnings``. `[1,,]`, `[,]` and `{,}`
///   stay errors.
///
/// Errors are ``JSONSyntaxError`` (the position where the problem was detected, and a message saying
/// what was expected and what was found) or, for a file descriptor, ``JSONReadError``. After an error
/// the reader's state is unspecified: stop reading.
///
/// The one recoverable error is ``JSONStringContentError``: a string read on its own whose end is well
/// delimited but whose content is bad (a lone surrogate escape, invalid UTF-8, a raw control character).
/// The reader is then right after the string and the caller may go on pulling; where and when it is
/// thrown is said there.
///
/// Calling the pull methods out of order (e.g. ``nextElement()`` when no array is open) is a
/// programming error and traps.
///
/// It is `package`, not `public`: the sync and server targets read JSON with it; an app does not see it.
///
/// The implementation is one class split by concern: this file holds its state, the pull API and the
/// start of input; `JSONContainers.swift` the container navigation, `JSONBuffer.swift` the buffer and
/// positions, `JSONStrings.swift` strings, `JSONNumbers.swift` numbers, `JSONWholeValues.swift`
/// ``readValue()`` and ``skipValue()``, and `JSONReaderErrors.swift` the error messages. The state is `internal` (not `private`) so those
/// extensions can reach it; nothing outside `JSON/` touches it. Release builds optimize the whole module
/// at once, so the hot helpers still inline across the files.
package final class JSONPullReader {
    /// How strict the reader is.
    package struct Options: Sendable {
        /// Accept a single trailing comma before `]` or `}` with a warning (Apple's 2019
        /// `landmarkData.json` has one).
        ///
        /// Default `false`: RFC 8259 forbids it.
        package var allowTrailingCommas: Bool
        /// The deepest nesting of arrays and objects accepted; default 512 (Foundation's
        /// `JSONSerialization` limit).
        ///
        /// The outermost array or object is depth 1.
        package var maxDepth: Int

        /// Creates options.
        /// - Parameters:
        ///   - allowTrailingCommas: Accept one trailing comma before `]` or `}` with a warning.
        ///   - maxDepth: The deepest nesting of arrays and objects accepted (at least 1).
        package init(allowTrailingCommas: Bool = false, maxDepth: Int = 512) {
            precondition(maxDepth >= 1, "maxDepth must be at least 1")
            self.allowTrailingCommas = allowTrailingCommas
            self.maxDepth = maxDepth
        }
    }

    /// The size of the read buffer for a file descriptor, in bytes (64 KiB).
    package static let defaultBufferSize = 64 * 1024

    enum Container: UInt8 {
        case arrayEmpty, arrayFilled, objectEmpty, objectFilled
        var isArray: Bool { self == .arrayEmpty || self == .arrayFilled }
    }

    let fileDescriptor: Int32
    let options: Options
    /// For a reader over part of a file (``init(fileDescriptor:range:options:)``): the next offset to read
    /// with `pread(2)` and where the part ends; −1 for a whole descriptor read with `read(2)`.
    var rangeOffset = -1
    var rangeEnd = -1
    /// Called with every chunk read from the descriptor, in order (a hash computed in the same pass).
    package var onRead: ((UnsafeRawBufferPointer) -> Void)?

    // The buffer: bytes [0, end) are valid, [pos, end) not yet consumed; storage[0] is input byte `base`.
    var storage: UnsafeMutablePointer<UInt8>
    var capacity: Int
    let bufferSize: Int
    var pos = 0
    var end = 0
    var base = 0
    var atEOF: Bool
    var readError: JSONReadError?

    // Position tracking: the current line, the input offset where it starts, and counts of UTF-8
    // continuation bytes (only strings can hold any) in total and before the line start.
    var line = 1
    var lineStart = 0
    var continuation = 0
    var lineStartContinuation = 0

    var started = false
    var ready = false
    var startError: JSONSyntaxError?
    var topLevelValueStarted = false

    /// The containers that are open, innermost last, and the buffer where strings with escapes or split
    /// across reads are assembled.
    ///
    /// They sit behind a pointer because modifying an array stored in a class costs a dynamic exclusivity
    /// check per call (about 15% of the reading time); nothing else holds them.
    struct Work {
        var containers: [Container] = []
        var scratch: [UInt8] = []
        /// The arrays and objects that ``readValue()`` is building, innermost last (kept to reuse their storage).
        var arrays: [[JSONValue]] = []
        var objects: [[JSONMember]] = []
        var keys: [(key: String, position: SourcePosition)] = []
        /// The first bad content of the string being scanned; nil between strings.
        var problem: StringProblem?
        /// The error for the string just scanned with bad content, until it is thrown.
        var contentError: JSONStringContentError?
    }

    let work: UnsafeMutablePointer<Work>

    /// What was accepted although RFC 8259 forbids it, in input order (lenient mode only).
    package internal(set) var warnings: [JSONWarning] = []

    /// Creates a reader over an open file descriptor, read with `read(2)` in 64 KiB chunks.
    ///
    /// The reader never closes `fileDescriptor`; the caller keeps it open while reading and closes it after.
    /// - Parameters:
    ///   - fileDescriptor: A descriptor open for reading (a file, a pipe, standard input).
    ///   - options: Strictness and limits.
    package convenience init(fileDescriptor: Int32, options: Options) {
        self.init(fileDescriptor: fileDescriptor, options: options, bufferSize: JSONPullReader.defaultBufferSize)
    }

    /// Creates a reader over a file descriptor with a buffer of `bufferSize` bytes (tests use tiny ones
    /// to put chunk boundaries everywhere).
    init(fileDescriptor: Int32, options: Options, bufferSize: Int) {
        precondition(bufferSize >= 1)
        self.fileDescriptor = fileDescriptor
        self.options = options
        capacity = bufferSize
        self.bufferSize = bufferSize
        storage = .allocate(capacity: bufferSize)
        work = .allocate(capacity: 1)
        work.initialize(to: Work())
        atEOF = false
    }

    /// Creates a reader over the bytes `range` of a file, read with `pread(2)`, so many readers can share
    /// one descriptor (several downloaded files kept in one spool file).
    /// - Parameters:
    ///   - fileDescriptor: A regular file open for reading (not closed by the reader).
    ///   - range: Byte offsets in the file; the JSON text is exactly these bytes.
    ///   - options: Strictness and limits.
    package convenience init(fileDescriptor: Int32, range: Range<Int>, options: Options) {
        self.init(fileDescriptor: fileDescriptor, options: options, bufferSize: JSONPullReader.defaultBufferSize)
        rangeOffset = range.lowerBound
        rangeEnd = range.upperBound
    }

    /// Creates a reader over bytes in memory (the reader keeps its own copy).
    /// - Parameters:
    ///   - bytes: The whole JSON text.
    ///   - options: Strictness and limits.
    package init(bytes: [UInt8], options: Options) {
        fileDescriptor = -1
        self.options = options
        capacity = max(bytes.count, 1)
        bufferSize = capacity
        let copy = UnsafeMutablePointer<UInt8>.allocate(capacity: max(bytes.count, 1))
        bytes.withUnsafeBufferPointer { buffer in
            if let source = buffer.baseAddress { copy.initialize(from: source, count: buffer.count) }
        }
        storage = copy
        work = .allocate(capacity: 1)
        work.initialize(to: Work())
        end = bytes.count
        atEOF = true
    }

    deinit {
        storage.deallocate()
        work.deinitialize(count: 1)
        work.deallocate()
    }

    // MARK: - Public pull API

    /// The position of the next byte that is not whitespace (the start of the next token), or of the
    /// end of the input.
    ///
    /// Skips whitespace, reading more input if needed.
    package var position: SourcePosition {
        if !started { begin() }
        _ = peekNonWhitespace()
        return position(at: pos)
    }

    /// The kind of the next value, without consuming anything.
    /// - Returns: The kind, judged from the value's first byte.
    /// - Throws: ``JSONSyntaxError`` at the end of input or at a byte that cannot start a value;
    ///   ``JSONReadError`` when reading fails.
    package func peekKind() throws -> JSONKind {
        try prepare()
        guard let byte = peekNonWhitespace() else { throw expectedValueError() }
        if work.pointee.containers.isEmpty && topLevelValueStarted { throw trailingDataError() }
        switch byte {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        default: throw expectedValueError()
        }
    }

    /// Consumes the `[` that opens an array; then call ``nextElement()`` before each element.
    /// - Throws: ``JSONSyntaxError`` when the next value is not an array or nesting exceeds
    ///   ``Options/maxDepth``; ``JSONReadError`` when reading fails.
    package func beginArray() throws {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "[") else { throw mismatch("an array") }
        consumingValue()
        try open(.arrayEmpty)
    }

    /// Moves to the next element of the innermost open array.
    ///
    /// Consumes the `,` before every element but the first. At the end consumes `]` (and, in lenient
    /// mode, one trailing comma before it, with a warning at the comma).
    /// - Returns: `true` when an element follows (read or skip it next); `false` when the array is closed.
    /// - Throws: ``JSONSyntaxError`` when neither an element nor `]` follows; ``JSONReadError``.
    package func nextElement() throws -> Bool {
        try prepare()
        return try advanceInArray()
    }

    /// Consumes the `{` that opens an object; then call ``nextKey()`` before each member.
    /// - Throws: ``JSONSyntaxError`` when the next value is not an object or nesting exceeds
    ///   ``Options/maxDepth``; ``JSONReadError`` when reading fails.
    package func beginObject() throws {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "{") else { throw mismatch("an object") }
        consumingValue()
        try open(.objectEmpty)
    }

    /// Moves to the next member of the innermost open object, consuming its key and the `:`.
    ///
    /// At the end consumes `}` (and, in lenient mode, one trailing comma before it, with a warning).
    /// - Returns: The decoded key and the position of its opening quote; `nil` when the object is closed.
    /// - Throws: ``JSONSyntaxError`` when neither a member nor `}` follows; ``JSONStringContentError`` for
    ///   a key with bad content (the reader is then at its value, `repaired` has the key);
    ///   ``JSONReadError``.
    package func nextKey() throws -> (key: String, position: SourcePosition)? {
        try prepare()
        return try advanceInObject(buildKey: true)
    }

    /// Moves to the next member like ``nextKey()``, matching the key against `table` by its bytes, so
    /// known keys cost no `String`.
    /// - Returns: the index of the key in `table` (`key` nil), or −1 and the key for an unknown key, with
    ///   the position of its opening quote; `nil` when the object is closed.
    /// - Throws: ``JSONSyntaxError`` when neither a member nor `}` follows; ``JSONStringContentError`` for
    ///   a key with bad content (the reader is then at its value); ``JSONReadError``.
    package func nextKey(in table: JSONKeyTable) throws -> (index: Int, key: String?, position: SourcePosition)? {
        try prepare()
        var index = -1
        var key: String?
        guard
            let position = try advanceInObject(
                buildKey: true,
                { bytes in
                    index = table.index(of: bytes)
                    if index < 0 { key = String(decoding: bytes, as: UTF8.self) }
                })
        else { return nil }
        return (index, key, position)
    }

    /// Reads the next value with everything inside it.
    /// - Returns: The value; object members keep their order and key positions.
    /// - Throws: ``JSONSyntaxError`` for malformed JSON, including bad string content inside an array or
    ///   object or in the top-level value; ``JSONStringContentError`` for a string with bad content that
    ///   is an element or member value of an open array or object (the reader is then past it);
    ///   ``JSONReadError`` when reading fails.
    package func readValue() throws -> JSONValue {
        let first = try valueStart()
        consumingValue()
        if first == UInt8(ascii: "\""), !work.pointee.containers.isEmpty { return .string(try scanString(build: true)) }
        do {
            return try readTree(startingWith: first)
        } catch let error as JSONStringContentError {
            throw syntaxError(error.message, position: error.position)
        }
    }

    /// Reads the next value, which must be a string.
    /// - Returns: The string with its escapes decoded.
    /// - Throws: ``JSONSyntaxError`` when the next value is not a (well-formed) string;
    ///   ``JSONStringContentError`` when its content is bad (the reader is then past it); ``JSONReadError``.
    package func readString() throws -> String {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "\"") else { throw mismatch("a string") }
        consumingValue()
        return try scanString(build: true)
    }

    /// Reads the next value, which must be a string, and appends its decoded UTF-8 bytes (escapes
    /// decoded, validated) to `buffer`, without making a `String`: the import's fast path.
    /// - Returns: The number of bytes appended.
    /// - Throws: ``JSONSyntaxError`` when the next value is not a (well-formed) string;
    ///   ``JSONStringContentError`` when its content is bad (nothing is appended, the reader is then past
    ///   it); ``JSONReadError``.
    @discardableResult
    package func appendString(to buffer: inout [UInt8]) throws -> Int {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "\"") else { throw mismatch("a string") }
        consumingValue()
        var count = 0
        let flawed = try scanStringBytes(build: true) { bytes in
            buffer.append(contentsOf: bytes)
            count = bytes.count
        }
        if flawed { throw takeContentError() }
        return count
    }

    /// Reads the next value, which must be a number.
    /// - Returns: The number, with its literal, `Int64` value (when exact) and `Double` value.
    /// - Throws: ``JSONSyntaxError`` when the next value is not a (well-formed) number; ``JSONReadError``.
    package func readNumber() throws -> JSONNumber {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) else {
            throw mismatch("a number")
        }
        consumingValue()
        return try scanNumber(build: true)
    }

    /// Reads the next value, which must be `true` or `false`.
    /// - Returns: The boolean.
    /// - Throws: ``JSONSyntaxError`` when the next value is not a boolean; ``JSONReadError``.
    package func readBool() throws -> Bool {
        let byte = try valueStart()
        switch byte {
        case UInt8(ascii: "t"):
            consumingValue()
            try scanLiteral(JSONPullReader.trueBytes)
            return true
        case UInt8(ascii: "f"):
            consumingValue()
            try scanLiteral(JSONPullReader.falseBytes)
            return false
        default: throw mismatch("a boolean")
        }
    }

    /// Reads the next value, which must be `null`.
    /// - Throws: ``JSONSyntaxError`` when the next value is not `null`; ``JSONReadError``.
    package func readNull() throws {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "n") else { throw mismatch("null") }
        consumingValue()
        try scanLiteral(JSONPullReader.nullBytes)
    }

    /// Skips the next value with everything inside it, checking it as thoroughly as ``readValue()``
    /// but building nothing.
    /// - Throws: what ``readValue()`` throws for the same value: ``JSONSyntaxError`` for malformed JSON
    ///   (bad string content inside an array or object or in the top-level value included);
    ///   ``JSONStringContentError`` for a string element or member value with bad content (the reader is
    ///   then past it); ``JSONReadError`` when reading fails.
    package func skipValue() throws {
        let first = try valueStart()
        consumingValue()
        let depth = work.pointee.containers.count
        if first == UInt8(ascii: "\""), depth > 0 {
            _ = try scanString(build: false)
            return
        }
        do {
            try skip(startingWith: first)
            while work.pointee.containers.count > depth {
                let more: Bool
                if work.pointee.containers[work.pointee.containers.count - 1].isArray {
                    more = try advanceInArray()
                } else {
                    more = try advanceInObject(buildKey: false) != nil
                }
                if more {
                    guard let next = peekNonWhitespace() else { throw expectedValueError() }
                    try skip(startingWith: next)
                }
            }
        } catch let error as JSONStringContentError {
            throw syntaxError(error.message, position: error.position)
        }
    }

    /// Checks that nothing but whitespace follows the value that was read.
    /// - Throws: ``JSONSyntaxError`` `unexpected data after the end of the JSON text` when anything
    ///   else follows, or `expected a value, found end of input` when the input held no value at all;
    ///   ``JSONReadError`` when reading fails.
    package func finish() throws {
        try prepare()
        precondition(
            work.pointee.containers.isEmpty,
            "finish() called with \(work.pointee.containers.count) array(s) or object(s) still open")
        if peekNonWhitespace() != nil { throw trailingDataError() }
        if let readError { throw readError }
        if !topLevelValueStarted { throw expectedValueError() }
    }

    // MARK: - Start of input

    @inline(__always)
    private func prepare() throws {
        if _slowPath(!ready) {
            if !started { begin() }
            if let startError { throw startError }
            ready = true
        }
    }

    /// Looks at the first bytes: skips a UTF-8 byte order mark, refuses UTF-16 and UTF-32.
    private func begin() {
        started = true
        _ = ensure(3)
        let b0 = byte(ahead: 0)
        let b1 = byte(ahead: 1)
        if b0 == 0xEF && b1 == 0xBB && byte(ahead: 2) == 0xBF {
            pos += 3
            lineStart = base + pos
        } else if (b0 == 0xFE && b1 == 0xFF) || (b0 == 0xFF && b1 == 0xFE) {
            startError = JSONSyntaxError(
                message: "input is UTF-16 or UTF-32 (it starts with the byte order mark \(hex(UInt8(b0))) "
                    + "\(hex(UInt8(b1)))), only UTF-8 is accepted",
                position: position(at: pos))
        } else if b0 == 0 || b1 == 0 {
            startError = JSONSyntaxError(
                message: "input is UTF-16 or UTF-32 (a NUL byte among its first two bytes), only UTF-8 is accepted",
                position: position(at: pos))
        }
    }

    // MARK: - Values

    /// The first byte of the next value, not consumed (at the top level there is only one value).
    @inline(__always)
    private func valueStart() throws -> UInt8 {
        try prepare()
        guard let byte = peekNonWhitespace() else { throw expectedValueError() }
        if work.pointee.containers.isEmpty && topLevelValueStarted { throw trailingDataError() }
        return byte
    }

    /// Notes that a value is being consumed (after its kind was checked, so that a mismatch consumes nothing).
    @inline(__always)
    private func consumingValue() {
        if work.pointee.containers.isEmpty { topLevelValueStarted = true }
    }
}

@available(*, unavailable, message: "a JSONPullReader holds a read position and buffer: use it from one task only")
extension JSONPullReader: Sendable {}
