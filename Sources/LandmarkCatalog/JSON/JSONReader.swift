#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
/// Calling the pull methods out of order (e.g. ``nextElement()`` when no array is open) is a
/// programming error and traps.
public final class JSONPullReader {
    /// How strict the reader is.
    public struct Options: Sendable {
        /// Accept a single trailing comma before `]` or `}` with a warning (Apple's 2019
        /// `landmarkData.json` has one). Default `false`: RFC 8259 forbids it.
        public var allowTrailingCommas: Bool
        /// The deepest nesting of arrays and objects accepted; default 512 (Foundation's
        /// `JSONSerialization` limit). The outermost array or object is depth 1.
        public var maxDepth: Int

        /// Creates options.
        /// - Parameters:
        ///   - allowTrailingCommas: Accept one trailing comma before `]` or `}` with a warning.
        ///   - maxDepth: The deepest nesting of arrays and objects accepted (at least 1).
        public init(allowTrailingCommas: Bool = false, maxDepth: Int = 512) {
            precondition(maxDepth >= 1, "maxDepth must be at least 1")
            self.allowTrailingCommas = allowTrailingCommas
            self.maxDepth = maxDepth
        }
    }

    /// The size of the read buffer for a file descriptor, in bytes (64 KiB).
    public static let defaultBufferSize = 64 * 1024

    private enum Container: UInt8 {
        case arrayEmpty, arrayFilled, objectEmpty, objectFilled
        var isArray: Bool { self == .arrayEmpty || self == .arrayFilled }
    }

    private let fileDescriptor: Int32
    private let options: Options

    // The buffer: bytes [0, end) are valid, [pos, end) not yet consumed; storage[0] is input byte `base`.
    private var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private let bufferSize: Int
    private var pos = 0
    private var end = 0
    private var base = 0
    private var atEOF: Bool
    private var readError: JSONReadError?

    // Position tracking: the current line, the input offset where it starts, and counts of UTF-8
    // continuation bytes (only strings can hold any) in total and before the line start.
    private var line = 1
    private var lineStart = 0
    private var continuation = 0
    private var lineStartContinuation = 0

    private var started = false
    private var ready = false
    private var startError: JSONSyntaxError?
    private var topLevelValueStarted = false

    /// The containers that are open, innermost last, and the buffer where strings with escapes or split
    /// across reads are assembled. They sit behind a pointer because modifying an array stored in a class
    /// costs a dynamic exclusivity check per call (about 15% of the reading time); nothing else holds them.
    private struct Work {
        var containers: [Container] = []
        var scratch: [UInt8] = []
        /// The arrays and objects that ``readValue()`` is building, innermost last (kept to reuse their storage).
        var arrays: [[JSONValue]] = []
        var objects: [[JSONMember]] = []
        var keys: [(key: String, position: SourcePosition)] = []
    }
    private let work: UnsafeMutablePointer<Work>

    /// What was accepted although RFC 8259 forbids it, in input order (lenient mode only).
    public private(set) var warnings: [JSONWarning] = []

    /// Creates a reader over an open file descriptor, read with `read(2)` in 64 KiB chunks.
    ///
    /// The reader never closes `fileDescriptor`; the caller keeps it open while reading and closes it after.
    /// - Parameters:
    ///   - fileDescriptor: A descriptor open for reading (a file, a pipe, standard input).
    ///   - options: Strictness and limits.
    public convenience init(fileDescriptor: Int32, options: Options) {
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

    /// Creates a reader over bytes in memory (the reader keeps its own copy).
    /// - Parameters:
    ///   - bytes: The whole JSON text.
    ///   - options: Strictness and limits.
    public init(bytes: [UInt8], options: Options) {
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
    /// end of the input. Skips whitespace, reading more input if needed.
    public var position: SourcePosition {
        if !started { begin() }
        _ = peekNonWhitespace()
        return position(at: pos)
    }

    /// The kind of the next value, without consuming anything.
    /// - Returns: The kind, judged from the value's first byte.
    /// - Throws: ``JSONSyntaxError`` at the end of input or at a byte that cannot start a value;
    ///   ``JSONReadError`` when reading fails.
    public func peekKind() throws -> JSONKind {
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
    public func beginArray() throws {
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
    public func nextElement() throws -> Bool {
        try prepare()
        return try advanceInArray()
    }

    /// Consumes the `{` that opens an object; then call ``nextKey()`` before each member.
    /// - Throws: ``JSONSyntaxError`` when the next value is not an object or nesting exceeds
    ///   ``Options/maxDepth``; ``JSONReadError`` when reading fails.
    public func beginObject() throws {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "{") else { throw mismatch("an object") }
        consumingValue()
        try open(.objectEmpty)
    }

    /// Moves to the next member of the innermost open object, consuming its key and the `:`.
    ///
    /// At the end consumes `}` (and, in lenient mode, one trailing comma before it, with a warning).
    /// - Returns: The decoded key and the position of its opening quote; `nil` when the object is closed.
    /// - Throws: ``JSONSyntaxError`` when neither a member nor `}` follows; ``JSONReadError``.
    public func nextKey() throws -> (key: String, position: SourcePosition)? {
        try prepare()
        return try advanceInObject(buildKey: true)
    }

    /// Moves to the next member like ``nextKey()``, matching the key against `table` by its bytes, so
    /// known keys cost no `String`.
    /// - Returns: the index of the key in `table` (`key` nil), or −1 and the key for an unknown key, with
    ///   the position of its opening quote; `nil` when the object is closed.
    /// - Throws: ``JSONSyntaxError`` when neither a member nor `}` follows; ``JSONReadError``.
    public func nextKey(in table: JSONKeyTable) throws -> (index: Int, key: String?, position: SourcePosition)? {
        try prepare()
        var index = -1
        var key: String?
        guard let position = try advanceInObject(buildKey: true, { bytes in
            index = table.index(of: bytes)
            if index < 0 { key = String(decoding: bytes, as: UTF8.self) }
        }) else { return nil }
        return (index, key, position)
    }

    /// Reads the next value with everything inside it.
    /// - Returns: The value; object members keep their order and key positions.
    /// - Throws: ``JSONSyntaxError`` for malformed JSON; ``JSONReadError`` when reading fails.
    public func readValue() throws -> JSONValue {
        let first = try valueStart()
        consumingValue()
        return try readTree(startingWith: first)
    }

    /// Reads the next value, which must be a string.
    /// - Returns: The string with its escapes decoded.
    /// - Throws: ``JSONSyntaxError`` when the next value is not a (well-formed) string; ``JSONReadError``.
    public func readString() throws -> String {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "\"") else { throw mismatch("a string") }
        consumingValue()
        return try scanString(build: true)
    }

    /// Reads the next value, which must be a string, and appends its decoded UTF-8 bytes (escapes
    /// decoded, validated) to `buffer`, without making a `String`: the import's fast path.
    /// - Returns: The number of bytes appended.
    /// - Throws: ``JSONSyntaxError`` when the next value is not a (well-formed) string; ``JSONReadError``.
    @discardableResult
    public func appendString(to buffer: inout [UInt8]) throws -> Int {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "\"") else { throw mismatch("a string") }
        consumingValue()
        var count = 0
        try scanStringBytes(build: true) { bytes in
            buffer.append(contentsOf: bytes)
            count = bytes.count
        }
        return count
    }

    /// Reads the next value, which must be a number.
    /// - Returns: The number, with its literal, `Int64` value (when exact) and `Double` value.
    /// - Throws: ``JSONSyntaxError`` when the next value is not a (well-formed) number; ``JSONReadError``.
    public func readNumber() throws -> JSONNumber {
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
    public func readBool() throws -> Bool {
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
    public func readNull() throws {
        let byte = try valueStart()
        guard byte == UInt8(ascii: "n") else { throw mismatch("null") }
        consumingValue()
        try scanLiteral(JSONPullReader.nullBytes)
    }

    /// Skips the next value with everything inside it, checking it as thoroughly as ``readValue()``
    /// but building nothing.
    /// - Throws: ``JSONSyntaxError`` for malformed JSON; ``JSONReadError`` when reading fails.
    public func skipValue() throws {
        let first = try valueStart()
        consumingValue()
        let depth = work.pointee.containers.count
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
    }

    /// Checks that nothing but whitespace follows the value that was read.
    /// - Throws: ``JSONSyntaxError`` `unexpected data after the end of the JSON text` when anything
    ///   else follows, or `expected a value, found end of input` when the input held no value at all;
    ///   ``JSONReadError`` when reading fails.
    public func finish() throws {
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

    // MARK: - Buffer

    /// Moves bytes `[keep, end)` to the start of the buffer and reads more after them.
    /// - Returns: `false` when nothing more could be read (end of input or a read error, kept in `readError`).
    @inline(never)
    private func fill(keepingFrom keep: Int) -> Bool {
        if atEOF { return false }
        if keep > 0 {
            let kept = end - keep
            if kept > 0 { memmove(storage, storage + keep, kept) }
            base += keep
            pos -= keep
            end = kept
        }
        if end == capacity {
            // One number longer than the buffer: grow, so that it stays contiguous.
            resize(to: capacity * 2)
        } else if capacity > bufferSize && end <= bufferSize / 2 {
            // The long number is behind us: shrink back, so memory stays bounded by the current value.
            resize(to: bufferSize)
        }
        while true {
            let count = read(fileDescriptor, storage + end, capacity - end)
            if count > 0 {
                end += count
                return true
            }
            if count == 0 {
                atEOF = true
                return false
            }
            let code = errno
            if code == EINTR { continue }
            readError = JSONReadError(errno: code, offset: base + end)
            atEOF = true
            return false
        }
    }

    private func resize(to newCapacity: Int) {
        let resized = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        resized.initialize(from: storage, count: end)
        storage.deallocate()
        storage = resized
        capacity = newCapacity
    }

    /// Makes at least `count` bytes available from `pos`, unless the input ends first.
    @inline(__always)
    private func ensure(_ count: Int) -> Bool {
        if end - pos >= count { return true }
        return ensureSlow(count)
    }

    @inline(never)
    private func ensureSlow(_ count: Int) -> Bool {
        while end - pos < count {
            if !fill(keepingFrom: pos) { return false }
        }
        return true
    }

    /// The byte `offset` bytes after `pos` (which stays where it is), or -1 past the end of input.
    @inline(__always)
    private func byte(ahead offset: Int) -> Int {
        if pos + offset < end { return Int(storage[pos + offset]) }
        return ensure(offset + 1) ? Int(storage[pos + offset]) : -1
    }

    // MARK: - Positions

    /// The position of buffer index `index`; `continuation` must count the continuation bytes before it.
    @inline(__always)
    private func position(at index: Int) -> SourcePosition {
        let offset = base + index
        return SourcePosition(
            line: line,
            column: offset - lineStart - (continuation - lineStartContinuation) + 1,
            offset: offset)
    }

    /// Skips whitespace (space, tab, LF, CR), counting lines.
    /// - Returns: The next byte, not consumed, or `nil` at the end of input.
    @inline(__always)
    private func peekNonWhitespace() -> UInt8? {
        if pos < end {
            let byte = storage[pos]
            if byte > 0x20 { return byte }
        }
        return skipWhitespace()
    }

    private func skipWhitespace() -> UInt8? {
        var p = pos
        var e = end
        var s = storage
        while true {
            while p < e {
                let byte = s[p]
                if byte == 0x20 {
                    // Indentation comes in runs of spaces: eight at a time, then the rest of the run at once
                    // (in a little-endian word the lowest differing byte is the first one).
                    guard p &+ 8 <= e else {
                        p += 1
                        continue
                    }
                    while p &+ 8 <= e {
                        let other = UInt64(littleEndian: UnsafeRawPointer(s + p).loadUnaligned(as: UInt64.self))
                            ^ 0x2020_2020_2020_2020
                        if other != 0 {
                            p &+= other.trailingZeroBitCount >> 3
                            break
                        }
                        p &+= 8
                    }
                } else if byte == 0x0A {
                    p += 1
                    line += 1
                    lineStart = base + p
                    lineStartContinuation = continuation
                } else if byte == 0x09 || byte == 0x0D {
                    p += 1
                } else {
                    pos = p
                    return byte
                }
            }
            pos = p
            if !fill(keepingFrom: p) { return nil }
            p = pos
            e = end
            s = storage
        }
    }

    // MARK: - Containers

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

    private func open(_ container: Container) throws {
        if work.pointee.containers.count >= options.maxDepth {
            throw syntaxError(
                "too deeply nested: more than \(options.maxDepth) levels of arrays and objects (maxDepth)", at: pos)
        }
        work.pointee.containers.append(container)
        pos += 1
    }

    private func close() {
        work.pointee.containers.removeLast()
        pos += 1
    }

    private func advanceInArray() throws -> Bool {
        let index = work.pointee.containers.count - 1
        precondition(
            index >= 0 && work.pointee.containers[index].isArray, "nextElement() called when no array is open")
        if work.pointee.containers[index] == .arrayEmpty {
            guard let byte = peekNonWhitespace() else {
                throw syntaxError("expected a value or ']', found end of input", at: pos)
            }
            if byte == UInt8(ascii: "]") {
                close()
                return false
            }
            work.pointee.containers[index] = .arrayFilled
            return true
        }
        guard let byte = peekNonWhitespace() else {
            throw syntaxError("expected ',' or ']' after array element, found end of input", at: pos)
        }
        if byte == UInt8(ascii: ",") {
            let comma = position(at: pos)
            pos += 1
            guard let next = peekNonWhitespace() else {
                throw syntaxError("expected a value after ',', found end of input", at: pos)
            }
            if next == UInt8(ascii: "]") {
                try trailingComma(at: comma, closer: "]", expected: "a value")
                close()
                return false
            }
            return true
        }
        if byte == UInt8(ascii: "]") {
            close()
            return false
        }
        throw syntaxError("expected ',' or ']' after array element, found \(describe(ahead: 0))", at: pos)
    }

    private func advanceInObject(buildKey: Bool) throws -> (key: String, position: SourcePosition)? {
        var key = ""
        guard let position = try advanceInObject(buildKey: buildKey, { key = String(decoding: $0, as: UTF8.self) }) else {
            return nil
        }
        return (key, position)
    }

    /// Like ``advanceInObject(buildKey:)`` but hands the key's decoded bytes to `deliver` (valid during
    /// the call) and returns only its position.
    @inline(__always)
    private func advanceInObject(buildKey: Bool, _ deliver: (UnsafeBufferPointer<UInt8>) -> Void) throws -> SourcePosition? {
        let index = work.pointee.containers.count - 1
        precondition(
            index >= 0 && !work.pointee.containers[index].isArray, "nextKey() called when no object is open")
        guard let byte = peekNonWhitespace() else {
            let expected = work.pointee.containers[index] == .objectEmpty
                ? "a string key or '}'" : "',' or '}' after object member"
            throw syntaxError("expected \(expected), found end of input", at: pos)
        }
        if work.pointee.containers[index] == .objectEmpty {
            if byte == UInt8(ascii: "}") {
                close()
                return nil
            }
            guard byte == UInt8(ascii: "\"") else {
                throw syntaxError("expected a string key or '}', found \(describe(ahead: 0))", at: pos)
            }
            work.pointee.containers[index] = .objectFilled
        } else if byte == UInt8(ascii: ",") {
            let comma = position(at: pos)
            pos += 1
            guard let next = peekNonWhitespace() else {
                throw syntaxError("expected a string key after ',', found end of input", at: pos)
            }
            if next == UInt8(ascii: "}") {
                try trailingComma(at: comma, closer: "}", expected: "a string key")
                close()
                return nil
            }
            guard next == UInt8(ascii: "\"") else {
                throw syntaxError("expected a string key after ',', found \(describe(ahead: 0))", at: pos)
            }
        } else if byte == UInt8(ascii: "}") {
            close()
            return nil
        } else {
            throw syntaxError("expected ',' or '}' after object member, found \(describe(ahead: 0))", at: pos)
        }
        let keyPosition = position(at: pos)
        try scanStringBytes(build: buildKey, deliver)
        guard let colon = peekNonWhitespace() else {
            throw syntaxError("expected ':' after object key, found end of input", at: pos)
        }
        guard colon == UInt8(ascii: ":") else {
            throw syntaxError("expected ':' after object key, found \(describe(ahead: 0))", at: pos)
        }
        pos += 1
        return keyPosition
    }

    /// A comma directly before `closer` (at `pos`): a warning in lenient mode, else an error at the closer.
    private func trailingComma(at comma: SourcePosition, closer: Character, expected: String) throws {
        if options.allowTrailingCommas {
            warnings.append(JSONWarning(message: "trailing comma before '\(closer)'", position: comma))
        } else {
            throw syntaxError(
                "expected \(expected) after ',', found '\(closer)' (trailing comma at \(comma))", at: pos)
        }
    }

    // MARK: - Whole values

    /// Reads a value whose first byte, at `pos`, is `first`, without recursion: the arrays and objects
    /// being built wait on stacks in `work`, and values are appended to them in place.
    private func readTree(startingWith first: UInt8) throws -> JSONValue {
        let depth = work.pointee.containers.count
        // After an error, leftovers of the failed read are dropped here.
        work.pointee.arrays.removeAll(keepingCapacity: true)
        work.pointee.objects.removeAll(keepingCapacity: true)
        work.pointee.keys.removeAll(keepingCapacity: true)
        var byte = first
        while true {
            var value: JSONValue
            switch byte {
            case UInt8(ascii: "["):
                try open(.arrayEmpty)
                if try advanceInArray() {
                    work.pointee.arrays.append([])
                    byte = try nextValueByte()
                    continue
                }
                value = .array([])
            case UInt8(ascii: "{"):
                try open(.objectEmpty)
                if let key = try advanceInObject(buildKey: true) {
                    work.pointee.objects.append([])
                    work.pointee.keys.append(key)
                    byte = try nextValueByte()
                    continue
                }
                value = .object([])
            default:
                value = try readScalar(startingWith: byte)
            }
            // `value` is complete: append it to its parent, closing every container that it completes.
            // The reader's own stack of open containers says which kind of parent comes next.
            while work.pointee.containers.count > depth {
                if work.pointee.containers[work.pointee.containers.count - 1].isArray {
                    work.pointee.arrays[work.pointee.arrays.count - 1].append(value)
                    if try advanceInArray() { break }
                    value = .array(work.pointee.arrays.removeLast())
                } else {
                    let key = work.pointee.keys.removeLast()
                    work.pointee.objects[work.pointee.objects.count - 1].append(
                        JSONMember(key: key.key, value: value, position: key.position))
                    if let next = try advanceInObject(buildKey: true) {
                        work.pointee.keys.append(next)
                        break
                    }
                    value = .object(work.pointee.objects.removeLast())
                }
            }
            if work.pointee.containers.count == depth { return value }
            byte = try nextValueByte()
        }
    }

    @inline(__always)
    private func nextValueByte() throws -> UInt8 {
        guard let byte = peekNonWhitespace() else { throw expectedValueError() }
        return byte
    }

    private func readScalar(startingWith byte: UInt8) throws -> JSONValue {
        switch byte {
        case UInt8(ascii: "\""): return .string(try scanString(build: true))
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try scanNumber(build: true))
        case UInt8(ascii: "t"):
            try scanLiteral(JSONPullReader.trueBytes)
            return .bool(true)
        case UInt8(ascii: "f"):
            try scanLiteral(JSONPullReader.falseBytes)
            return .bool(false)
        case UInt8(ascii: "n"):
            try scanLiteral(JSONPullReader.nullBytes)
            return .null
        default: throw expectedValueError()
        }
    }

    /// Skips a scalar, or opens the container that starts with `byte`.
    private func skip(startingWith byte: UInt8) throws {
        switch byte {
        case UInt8(ascii: "["): try open(.arrayEmpty)
        case UInt8(ascii: "{"): try open(.objectEmpty)
        case UInt8(ascii: "\""): _ = try scanString(build: false)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try scanNumber(build: false)
        case UInt8(ascii: "t"): try scanLiteral(JSONPullReader.trueBytes)
        case UInt8(ascii: "f"): try scanLiteral(JSONPullReader.falseBytes)
        case UInt8(ascii: "n"): try scanLiteral(JSONPullReader.nullBytes)
        default: throw expectedValueError()
        }
    }

    // MARK: - Literals

    private static let trueBytes: [UInt8] = Array("true".utf8)
    private static let falseBytes: [UInt8] = Array("false".utf8)
    private static let nullBytes: [UInt8] = Array("null".utf8)

    /// Consumes `word` (`true`, `false` or `null`), whose first byte is at `pos`.
    private func scanLiteral(_ word: [UInt8]) throws {
        for k in 1..<word.count where byte(ahead: k) != Int(word[k]) {
            throw syntaxError(
                "invalid literal, expected '\(String(decoding: word, as: UTF8.self))', found \(describe(ahead: k))",
                at: pos + k)
        }
        pos += word.count
    }

    // MARK: - Numbers

    @inline(__always)
    private static func isDigit(_ byte: Int) -> Bool {
        byte >= 0x30 && byte <= 0x39
    }

    /// Scans a number (RFC 8259 §6) starting at `pos`, keeping it contiguous in the buffer.
    private func scanNumber(build: Bool) throws -> JSONNumber {
        var k = 0
        var c = byte(ahead: 0)
        if c == 0x2D {  // '-'
            k = 1
            c = byte(ahead: 1)
        }
        if c == 0x30 {  // '0'
            k += 1
            c = byte(ahead: k)
            if JSONPullReader.isDigit(c) {
                throw syntaxError(
                    "leading zeros are not allowed in numbers, found \(describe(ahead: k)) after '0'", at: pos + k)
            }
        } else if JSONPullReader.isDigit(c) {
            repeat {
                k += 1
                c = byte(ahead: k)
            } while JSONPullReader.isDigit(c)
        } else {
            throw syntaxError("expected a digit after '-', found \(describe(ahead: k))", at: pos + k)
        }
        let integerEnd = k
        var fractionEnd = k
        if c == 0x2E {  // '.'
            k += 1
            c = byte(ahead: k)
            guard JSONPullReader.isDigit(c) else {
                throw syntaxError("expected a digit after '.' in number, found \(describe(ahead: k))", at: pos + k)
            }
            repeat {
                k += 1
                c = byte(ahead: k)
            } while JSONPullReader.isDigit(c)
            fractionEnd = k
        }
        var exponentStart = -1
        if c == 0x65 || c == 0x45 {  // 'e' 'E'
            k += 1
            c = byte(ahead: k)
            exponentStart = k
            if c == 0x2B || c == 0x2D {  // '+' '-'
                k += 1
                c = byte(ahead: k)
            }
            guard JSONPullReader.isDigit(c) else {
                throw syntaxError(
                    "expected a digit in the exponent of a number, found \(describe(ahead: k))", at: pos + k)
            }
            repeat {
                k += 1
                c = byte(ahead: k)
            } while JSONPullReader.isDigit(c)
        }
        defer { pos += k }
        if !build { return JSONNumber(literal: "", int64Value: nil, doubleValue: 0) }
        return JSONPullReader.makeNumber(
            UnsafeBufferPointer(start: storage + pos, count: k),
            integerEnd: integerEnd, fractionEnd: fractionEnd, exponentStart: exponentStart)
    }

    /// Exact powers of ten that a `Double` holds (1e0 … 1e22).
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// Builds a ``JSONNumber`` from a literal already checked against the grammar.
    /// - Parameters:
    ///   - bytes: The literal.
    ///   - integerEnd: Index just past the integer digits.
    ///   - fractionEnd: Index just past the fraction digits (`integerEnd` when there is no fraction).
    ///   - exponentStart: Index just past the `e`/`E`, or -1 without an exponent.
    static func makeNumber(
        _ bytes: UnsafeBufferPointer<UInt8>, integerEnd: Int, fractionEnd: Int, exponentStart: Int
    ) -> JSONNumber {
        let literal = String(decoding: bytes, as: UTF8.self)
        let negative = bytes[0] == 0x2D
        let integerStart = negative ? 1 : 0

        // Significant digits of integer and fraction, up to 19 (which fit a UInt64).
        var mantissa: UInt64 = 0
        var digits = 0
        var overflow = false
        for i in integerStart..<fractionEnd where i != integerEnd {
            let digit = UInt64(bytes[i] &- 0x30)
            if digits == 0 && digit == 0 { continue }
            if digits == 19 {
                overflow = true
                break
            }
            mantissa = mantissa &* 10 &+ digit
            digits += 1
        }

        var int64Value: Int64?
        if exponentStart < 0 && fractionEnd == integerEnd && !overflow {
            if negative {
                if mantissa <= UInt64(Int64.max) {
                    int64Value = -Int64(mantissa)
                } else if mantissa == UInt64(Int64.max) + 1 {
                    int64Value = Int64.min
                }
            } else if mantissa <= UInt64(Int64.max) {
                int64Value = Int64(mantissa)
            }
        }

        // Clinger's fast path: a mantissa of at most 2^53 and a power of ten up to 1e22 are both exact
        // Doubles, so one correctly rounded multiplication or division gives the correctly rounded result.
        if !overflow {
            var exponent = 0
            if exponentStart >= 0 {
                var i = exponentStart
                var exponentNegative = false
                if bytes[i] == 0x2B || bytes[i] == 0x2D {
                    exponentNegative = bytes[i] == 0x2D
                    i += 1
                }
                while i < bytes.count {
                    if exponent < 100_000 { exponent = exponent * 10 + Int(bytes[i] &- 0x30) }
                    i += 1
                }
                if exponentNegative { exponent = -exponent }
            }
            // Digits after the point that were counted as significant shift the exponent down.
            // (Leading zeros were left out of the mantissa, which does not change its value.)
            exponent -= fractionEnd > integerEnd ? fractionEnd - integerEnd - 1 : 0
            if mantissa == 0 {
                return JSONNumber(literal: literal, int64Value: int64Value, doubleValue: negative ? -0.0 : 0.0)
            }
            if mantissa <= 1 << 53 && exponent >= -22 && exponent <= 22 {
                var value = Double(mantissa)
                if exponent >= 0 {
                    value *= powersOfTen[exponent]
                } else {
                    value /= powersOfTen[-exponent]
                }
                return JSONNumber(literal: literal, int64Value: int64Value, doubleValue: negative ? -value : value)
            }
        }
        // Everything else: the C library's strtod (Swift's Double(String) uses strtod_l in the C locale).
        guard let value = Double(literal) else {
            preconditionFailure("a literal that passed the JSON number grammar was refused by Double(_:): \(literal)")
        }
        return JSONNumber(literal: literal, int64Value: int64Value, doubleValue: value)
    }

    // MARK: - Strings

    /// Scans a string starting at its opening quote at `pos`; validates UTF-8 and escapes.
    ///
    /// A string that lies whole in the buffer and has no escapes becomes a `String` straight from the
    /// buffer; otherwise its pieces are gathered in `scratch` (decoded escapes, and the bytes read so far
    /// whenever the buffer must be refilled).
    /// - Parameter build: Whether to build the string (`false` checks it and returns "").
    private func scanString(build: Bool) throws -> String {
        var result = ""
        try scanStringBytes(build: build) { result = String(decoding: $0, as: UTF8.self) }
        return result
    }

    /// Scans a string like ``scanString(build:)`` but hands its decoded, validated UTF-8 bytes to
    /// `complete` (valid only during the call) instead of making a `String`.
    @inline(__always)
    private func scanStringBytes(build: Bool, _ complete: (UnsafeBufferPointer<UInt8>) -> Void) throws {
        let start = position(at: pos)
        pos += 1
        var p = pos
        var e = end
        var s = storage
        var cont = continuation
        var runStart = p  // start of the bytes not yet copied to `scratch`
        var usingScratch = false
        if build && !work.pointee.scratch.isEmpty { work.pointee.scratch.removeAll(keepingCapacity: true) }

        while true {
            // Plain ASCII (0x20…0x7F except '"' and '\\') eight bytes at a time. A byte is special when its
            // high bit is set or when subtracting borrows from it (x < 0x20, or x == '"' or '\\' after an
            // XOR): the zero-byte test of Hacker's Delight §6-1. A borrow only runs towards later bytes, so
            // the lowest flagged byte of the little-endian word is the first special one.
            while p &+ 8 <= e {
                let word = UInt64(littleEndian: UnsafeRawPointer(s + p).loadUnaligned(as: UInt64.self))
                let quote = word ^ 0x2222_2222_2222_2222
                let backslash = word ^ 0x5C5C_5C5C_5C5C_5C5C
                let control = (word &- 0x2020_2020_2020_2020) & ~word
                let quotes = (quote &- 0x0101_0101_0101_0101) & ~quote
                let backslashes = (backslash &- 0x0101_0101_0101_0101) & ~backslash
                let special = (word | control | quotes | backslashes) & 0x8080_8080_8080_8080
                if special != 0 {
                    p &+= special.trailingZeroBitCount >> 3
                    break
                }
                p &+= 8
            }
            while p < e {
                let c = s[p]
                guard c < 0x80 && c >= 0x20 && c != 0x22 && c != 0x5C else { break }
                p += 1
            }

            // Wanted: `needed` bytes from p, or else the closing quote, an escape or a character.
            var needed = 1
            if p < e {
                let c = s[p]
                if c == 0x22 {  // the closing quote
                    pos = p + 1
                    continuation = cont
                    if !build { return }
                    if !usingScratch {
                        complete(UnsafeBufferPointer(start: s + runStart, count: p - runStart))
                        return
                    }
                    spill(from: runStart, to: p)
                    work.pointee.scratch.withUnsafeBufferPointer { complete($0) }
                    if work.pointee.scratch.capacity > 1 << 20 { work.pointee.scratch = [] }  // let a huge one go
                    return
                }
                if c == 0x5C {
                    // Have the longest escape (\uD83D\uDE00, 12 bytes) in the buffer when the input has it.
                    if e - p >= 12 || atEOF {
                        if build {
                            spill(from: runStart, to: p)
                            usingScratch = true
                        }
                        continuation = cont
                        p += try decodeEscape(at: p, limit: e, build: build)
                        runStart = p
                        continue
                    }
                    needed = 12
                } else if c < 0x20 {
                    continuation = cont
                    let code = hex4(UInt32(c))
                    throw syntaxError(
                        "unescaped control character U+\(code) in string "
                            + "(RFC 8259 requires an escape such as \\u\(code))",
                        at: p)
                } else {
                    let length = try utf8Sequence(at: p, limit: e, continuation: cont)
                    if length > 0 {
                        p += length
                        cont += length - 1
                        continue
                    }
                    needed = -length
                }
            }

            // Out of buffered bytes: keep what we have and read more.
            if build { spill(from: runStart, to: p) }
            usingScratch = true
            pos = p
            continuation = cont
            if needed == 1 {
                if !fill(keepingFrom: p) {
                    throw syntaxError("unterminated string (it starts at \(start)), found end of input", at: pos)
                }
            } else {
                _ = ensure(needed)
            }
            p = pos
            e = end
            s = storage
            runStart = p
        }
    }

    /// Copies buffer bytes `[from, to)` to `scratch`.
    @inline(__always)
    private func spill(from: Int, to: Int) {
        if to > from {
            work.pointee.scratch.append(contentsOf: UnsafeBufferPointer(start: storage + from, count: to - from))
        }
    }

    /// Checks the UTF-8 sequence that starts with the non-ASCII byte at `p` (Unicode 15, table 3-7,
    /// well-formed byte sequences: no overlong forms, no surrogates, nothing above U+10FFFF).
    /// - Returns: Its length; or minus its length, when the buffer ends inside it and more input may follow.
    /// - Throws: ``JSONSyntaxError`` at `p` for an ill-formed or truncated sequence.
    @inline(__always)
    private func utf8Sequence(at p: Int, limit e: Int, continuation cont: Int) throws -> Int {
        let s = storage
        let lead = s[p]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF:
            length = 2
        case 0xE0:
            length = 3
            low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF:
            length = 3
        case 0xED:
            length = 3
            high = 0x9F
        case 0xF0:
            length = 4
            low = 0x90
        case 0xF1...0xF3:
            length = 4
        case 0xF4:
            length = 4
            high = 0x8F
        default:
            continuation = cont
            throw syntaxError("invalid UTF-8: \(hex(lead)) cannot start a character", at: p)
        }
        if e - p < length && !atEOF { return -length }
        var bad = 0  // the index in the sequence of the first byte that does not fit, 0 when none
        if !(p + 1 < e && s[p + 1] >= low && s[p + 1] <= high) {
            bad = 1
        } else {
            for i in 2..<length where !(p + i < e && s[p + i] >= 0x80 && s[p + i] <= 0xBF) {
                bad = i
                break
            }
        }
        if bad == 0 { return length }
        continuation = cont
        var bytes: [String] = []
        for i in 0...bad where p + i < e { bytes.append(hex(s[p + i])) }
        let cut = p + bad < e ? "" : " cut short by the end of input"
        throw syntaxError(
            "invalid UTF-8 sequence \(bytes.joined(separator: " "))\(cut) "
                + "(overlong, surrogate, above U+10FFFF or truncated)",
            at: p)
    }

    /// Decodes the escape whose backslash is at `p` into `scratch` (when `build`).
    /// - Returns: The number of bytes the escape takes.
    private func decodeEscape(at p: Int, limit e: Int, build: Bool) throws -> Int {
        let s = storage
        guard p + 1 < e else { throw syntaxError("unterminated string, found end of input", at: p + 1) }
        let decoded: UInt8
        switch s[p + 1] {
        case UInt8(ascii: "\""): decoded = 0x22
        case UInt8(ascii: "\\"): decoded = 0x5C
        case UInt8(ascii: "/"): decoded = 0x2F
        case UInt8(ascii: "b"): decoded = 0x08
        case UInt8(ascii: "f"): decoded = 0x0C
        case UInt8(ascii: "n"): decoded = 0x0A
        case UInt8(ascii: "r"): decoded = 0x0D
        case UInt8(ascii: "t"): decoded = 0x09
        case UInt8(ascii: "u"):
            let first = try hexQuad(at: p + 2, limit: e)
            var scalar = first
            var length = 6
            if first >= 0xD800 && first <= 0xDBFF {
                guard p + 7 < e, s[p + 6] == UInt8(ascii: "\\"), s[p + 7] == UInt8(ascii: "u") else {
                    throw syntaxError(
                        "lone surrogate \\u\(hex4(first)) in string: a high surrogate must be followed by "
                            + "a \\u escape of a low surrogate (DC00…DFFF)",
                        at: p)
                }
                let second = try hexQuad(at: p + 8, limit: e)
                guard second >= 0xDC00 && second <= 0xDFFF else {
                    throw syntaxError(
                        "lone surrogate \\u\(hex4(first)) in string: it is followed by \\u\(hex4(second)), "
                            + "not by a low surrogate (DC00…DFFF)",
                        at: p)
                }
                scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                length = 12
            } else if first >= 0xDC00 && first <= 0xDFFF {
                throw syntaxError(
                    "lone surrogate \\u\(hex4(first)) in string: a low surrogate must follow "
                        + "a high surrogate (D800…DBFF)",
                    at: p)
            }
            if build { appendUTF8(scalar) }
            return length
        default:
            let position = position(at: p + 1)
            throw syntaxError(
                #"invalid escape in string, expected one of \" \\ \/ \b \f \n \r \t \uXXXX, found "#
                    + "\(describe(ahead: p + 1 - pos)) after '\\'",
                position: position)
        }
        if build { work.pointee.scratch.append(decoded) }
        return 2
    }

    /// Reads four hex digits at `p`.
    private func hexQuad(at p: Int, limit e: Int) throws -> UInt32 {
        var value: UInt32 = 0
        for i in p..<p + 4 {
            guard i < e else { throw syntaxError("expected 4 hex digits after \\u, found end of input", at: i) }
            let c = storage[i]
            let digit: UInt8
            switch c {
            case 0x30...0x39: digit = c - 0x30
            case 0x41...0x46: digit = c - 0x41 + 10
            case 0x61...0x66: digit = c - 0x61 + 10
            default:
                let position = position(at: i)
                throw syntaxError(
                    "expected 4 hex digits after \\u, found \(describe(ahead: i - pos))", position: position)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            work.pointee.scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            work.pointee.scratch.append(UInt8(0xC0 | scalar >> 6))
            work.pointee.scratch.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            work.pointee.scratch.append(UInt8(0xE0 | scalar >> 12))
            work.pointee.scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            work.pointee.scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            work.pointee.scratch.append(UInt8(0xF0 | scalar >> 18))
            work.pointee.scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            work.pointee.scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            work.pointee.scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    // MARK: - Errors

    /// An error at buffer index `index`; a failed read, when there was one, is the real cause and wins.
    private func syntaxError(_ message: String, at index: Int) -> any Error {
        syntaxError(message, position: position(at: index))
    }

    private func syntaxError(_ message: String, position: SourcePosition) -> any Error {
        if let readError { return readError }
        return JSONSyntaxError(message: message, position: position)
    }

    private func expectedValueError() -> any Error {
        syntaxError("expected a value, found \(describe(ahead: 0))", at: pos)
    }

    private func trailingDataError() -> any Error {
        syntaxError("unexpected data after the end of the JSON text, found \(describe(ahead: 0))", at: pos)
    }

    private func mismatch(_ expected: String) -> any Error {
        syntaxError("expected \(expected), found \(describe(ahead: 0))", at: pos)
    }

    /// Describes the input at `pos + offset` for a message: `'x'`, `'é' (U+00E9)`,
    /// `control character U+000C`, `invalid UTF-8 byte 0xFF` or `end of input`.
    private func describe(ahead offset: Int) -> String {
        let first = byte(ahead: offset)
        if first < 0 { return "end of input" }
        let c = UInt8(first)
        if c < 0x20 || c == 0x7F { return "control character U+\(hex4(UInt32(c)))" }
        if c < 0x80 { return "'\(Character(Unicode.Scalar(c)))'" }
        let length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2
        _ = byte(ahead: offset + length - 1)  // make the whole sequence available when it exists
        let available = min(length, end - pos - offset)
        var bytes: [UInt8] = []
        for i in 0..<max(available, 0) { bytes.append(storage[pos + offset + i]) }
        if let decoded = String(validating: bytes, as: UTF8.self), decoded.unicodeScalars.count == 1,
           let scalar = decoded.unicodeScalars.first {
            return "'\(decoded)' (U+\(hex4(scalar.value)))"
        }
        return "invalid UTF-8 byte \(hex(c))"
    }
}

@available(*, unavailable, message: "a JSONPullReader holds a read position and buffer: use it from one task only")
extension JSONPullReader: Sendable {}

private func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return byte < 0x10 ? "0x0\(digits)" : "0x\(digits)"
}

private func hex4(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

/// A fixed set of object keys matched by their UTF-8 bytes (see ``JSONPullReader/nextKey(in:)``).
public struct JSONKeyTable: Sendable {
    private let keys: [[UInt8]]

    /// - Parameter keys: the keys; a key's index in this array is what ``index(of:)`` returns.
    public init(_ keys: [String]) {
        self.keys = keys.map { Array($0.utf8) }
    }

    /// The index of the key spelled by `bytes`, or −1.
    @inline(__always)
    public func index(of bytes: UnsafeBufferPointer<UInt8>) -> Int {
        for i in keys.indices {
            let k = keys[i]
            guard k.count == bytes.count, k.first == bytes.first else { continue }
            if k.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, k.count) == 0 }) { return i }
        }
        return -1
    }
}
