// JSONPullReader: strings (RFC 8259 §7): scanning, UTF-8 validation, escapes.
extension JSONPullReader {
    /// Bad content found in a string (see ``JSONStringContentError``), kept until the string ends.
    struct StringProblem {
        var kind: JSONStringContentError.Problem
        var message: String
        var position: SourcePosition
        var found: String
    }

    /// Scans a string starting at its opening quote at `pos`; validates UTF-8 and escapes.
    ///
    /// A string that lies whole in the buffer and has no escapes becomes a `String` straight from the
    /// buffer; otherwise its pieces are gathered in `scratch` (decoded escapes, and the bytes read so far
    /// whenever the buffer must be refilled).
    ///
    /// Bad content (a lone surrogate escape, invalid UTF-8, a raw control character) does not stop the
    /// scan: the first problem is kept in `work.pointee.problem` and the scan goes on to the closing quote,
    /// then throws ``JSONStringContentError`` with the reader just past the string. When the string turns
    /// out to be broken as well (unterminated, a bad escape), the first problem is thrown as the
    /// ``JSONSyntaxError``, exactly as if the scan had stopped there.
    /// - Parameter build: Whether to build the string (`false` checks it and returns "").
    /// - Returns: The string's decoded content ("" when `build` is false).
    /// - Throws: ``JSONStringContentError`` for bad content in a well-delimited string;
    ///   ``JSONSyntaxError`` for a broken string; ``JSONReadError`` when refilling the buffer fails.
    func scanString(build: Bool) throws -> String {
        var result = ""
        if try scanStringBytes(build: build, { result = String(decoding: $0, as: UTF8.self) }) { throw takeContentError() }
        return result
    }

    /// Scans a string like ``scanString(build:)`` but hands its decoded, validated UTF-8 bytes to
    /// `complete` (valid only during the call) instead of making a `String`.
    ///
    /// Bad content is not thrown from here but returned as a flag (``takeContentError()`` has the error),
    /// so the hot key path needs no `do`/`catch` around this call: with one, the optimizer stopped inlining it.
    /// - Returns: `true` when the content is bad (`complete` was not called, the reader is past the string).
    @inline(__always)
    func scanStringBytes(build: Bool, _ complete: (UnsafeBufferPointer<UInt8>) -> Void) throws -> Bool {
        let start = position(at: pos)
        pos += 1
        var p = pos
        var e = end
        var s = storage
        var cont = continuation
        var runStart = p  // start of the bytes not yet copied to `scratch`
        var usingScratch = false
        var flawed = false  // bad content seen (the first problem is in `work.pointee.problem`)
        if build && !work.pointee.scratch.isEmpty { work.pointee.scratch.removeAll(keepingCapacity: true) }

        while true {
            p = Self.skipPlain(s, from: p, to: e)

            // Wanted: `needed` bytes from p, or else the closing quote, an escape or a character.
            var needed = 1
            if p < e {
                let c = s[p]
                if c == 0x22 {  // the closing quote
                    pos = p + 1
                    continuation = cont
                    return closeString(
                        start: start, build: build, runStart: runStart, quote: p, usingScratch: usingScratch, flawed: flawed, complete)
                }
                if c == 0x5C {
                    // Have the longest escape (\uD83D\uDE00, 12 bytes) in the buffer when the input has it.
                    if e - p >= 12 || atEOF {
                        if build {
                            spill(from: runStart, to: p)
                            usingScratch = true
                        }
                        continuation = cont
                        let length = try decodeEscape(at: p, limit: e, build: build)
                        if length > 0 {
                            p += length
                        } else {
                            p -= length
                            flawed = true
                        }
                        runStart = p
                        continue
                    }
                    needed = 12
                } else if c < 0x20 {
                    continuation = cont
                    noteControlCharacter(at: p)
                    flawed = true
                    p += 1
                    continue
                } else {
                    let length = utf8Sequence(at: p, limit: e, continuation: &cont, flawed: &flawed)
                    if length > 0 {
                        p += length
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
                    throw stringSyntaxError("unterminated string (it starts at \(start)), found end of input", at: pos)
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

    /// The first byte at or after `p` (before `e`) that is not plain ASCII: 0x20…0x7F except `"` and `\\`.
    ///
    /// Eight bytes at a time: a byte is special when its high bit is set or when subtracting borrows from it
    /// (x < 0x20, or x == `"` or `\\` after an XOR): the zero-byte test of Hacker's Delight §6-1. A borrow
    /// only runs towards later bytes, so the lowest flagged byte of the little-endian word is the first
    /// special one.
    @inline(__always)
    static func skipPlain(_ s: UnsafeMutablePointer<UInt8>, from start: Int, to e: Int) -> Int {
        var p = start
        while p &+ 8 <= e {
            let word = UInt64(littleEndian: UnsafeRawPointer(s + p).loadUnaligned(as: UInt64.self))
            let quote = word ^ 0x2222_2222_2222_2222
            let backslash = word ^ 0x5C5C_5C5C_5C5C_5C5C
            let control = (word &- 0x2020_2020_2020_2020) & ~word
            let quotes = (quote &- 0x0101_0101_0101_0101) & ~quote
            let backslashes = (backslash &- 0x0101_0101_0101_0101) & ~backslash
            let special = (word | control | quotes | backslashes) & 0x8080_8080_8080_8080
            if special != 0 { return p &+ special.trailingZeroBitCount >> 3 }
            p &+= 8
        }
        while p < e {
            let c = s[p]
            guard c < 0x80 && c >= 0x20 && c != 0x22 && c != 0x5C else { break }
            p += 1
        }
        return p
    }

    /// Ends a string at its closing quote (at `quote`): keeps the content error when the string was
    /// flawed, else hands `complete` its bytes — in the buffer when nothing was copied, else in `scratch`.
    /// - Returns: `true` when the content is bad.
    @inline(__always)
    private func closeString(
        start: SourcePosition, build: Bool, runStart: Int, quote p: Int, usingScratch: Bool, flawed: Bool,
        _ complete: (UnsafeBufferPointer<UInt8>) -> Void
    ) -> Bool {
        if _slowPath(flawed) {
            keepContentError(start: start, build: build, runStart: runStart, end: p, usingScratch: usingScratch)
            return true
        }
        if !build { return false }
        if !usingScratch {
            complete(UnsafeBufferPointer(start: storage + runStart, count: p - runStart))
            return false
        }
        spill(from: runStart, to: p)
        work.pointee.scratch.withUnsafeBufferPointer { complete($0) }
        if work.pointee.scratch.capacity > 1 << 20 { work.pointee.scratch = [] }  // let a huge one go
        return false
    }

    /// Copies buffer bytes `[from, to)` to `scratch`.
    @inline(__always)
    private func spill(from: Int, to: Int) {
        if to > from {
            work.pointee.scratch.append(contentsOf: UnsafeBufferPointer(start: storage + from, count: to - from))
        }
    }

    /// Checks the UTF-8 sequence that starts with the non-ASCII byte at `p` (Unicode 15, table 3-7,
    /// well-formed byte sequences: no overlong forms, no surrogates, nothing above U+10FFFF), adding its
    /// continuation bytes to `cont`.
    ///
    /// An ill-formed or truncated sequence is noted as the string's problem (see
    /// ``noteInvalidUTF8(at:limit:bad:continuation:)``) and sets `flawed`.
    /// - Returns: The number of bytes to move past (the sequence, or the ill-formed part of it); or minus
    ///   the sequence's length, when the buffer ends inside it and more input may follow.
    @inline(__always)
    private func utf8Sequence(at p: Int, limit e: Int, continuation cont: inout Int, flawed: inout Bool) -> Int {
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
            flawed = true
            let (skipped, continuations) = noteInvalidUTF8(at: p, limit: e, bad: 0, continuation: cont)
            cont += continuations
            return skipped
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
        if bad == 0 {
            cont += length - 1
            return length
        }
        flawed = true
        let (skipped, continuations) = noteInvalidUTF8(at: p, limit: e, bad: bad, continuation: cont)
        cont += continuations
        return skipped
    }

    /// Notes the ill-formed UTF-8 at `p` as the string's problem, unless it has one already.
    /// - Parameters:
    ///   - p: The index in `storage` of the sequence's lead byte.
    ///   - e: The end of the bytes in the buffer (a sequence cut there is truncated).
    ///   - bad: The index in the sequence of the first byte that does not fit; 0 when `storage[p]` cannot
    ///     start a sequence at all.
    ///   - cont: The continuation bytes before `p` (for the position).
    /// - Returns: The bytes to skip — the lead byte and the continuation bytes that fitted (Unicode's
    ///   "maximal subpart", which one U+FFFD replaces), so a quote that cut the sequence short still ends
    ///   the string — and how many of them are continuation bytes.
    @inline(never)
    private func noteInvalidUTF8(at p: Int, limit e: Int, bad: Int, continuation cont: Int) -> (Int, Int) {
        let s = storage
        let skipped = max(bad, 1)
        if work.pointee.problem == nil {
            continuation = cont
            let message: String
            if bad == 0 {
                message = "invalid UTF-8: \(hex(s[p])) cannot start a character"
            } else {
                var bytes: [String] = []
                for i in 0...bad where p + i < e { bytes.append(hex(s[p + i])) }
                let cut = p + bad < e ? "" : " cut short by the end of input"
                message =
                    "invalid UTF-8 sequence \(bytes.joined(separator: " "))\(cut) "
                    + "(overlong, surrogate, above U+10FFFF or truncated)"
            }
            let found = (p..<p + skipped).map { hex(s[$0]) }.joined(separator: " ")
            work.pointee.problem = StringProblem(kind: .invalidUTF8, message: message, position: position(at: p), found: found)
        }
        var continuations = 0
        for i in p..<p + skipped where s[i] & 0xC0 == 0x80 { continuations += 1 }
        return (skipped, continuations)
    }

    /// Notes the raw control character at `p` as the string's problem, unless it has one already; a LF
    /// also starts a new line.
    ///
    /// `continuation` must count the continuation bytes before `p`.
    @inline(never)
    private func noteControlCharacter(at p: Int) {
        let c = storage[p]
        if work.pointee.problem == nil {
            let code = hex4(UInt32(c))
            work.pointee.problem = StringProblem(
                kind: .controlCharacter,
                message: "unescaped control character U+\(code) in string (RFC 8259 requires an escape such as \\u\(code))",
                position: position(at: p), found: "U+\(code)")
        }
        if c == 0x0A {
            line += 1
            lineStart = base + p + 1
            lineStartContinuation = continuation
        }
    }

    /// Notes the lone surrogate escape at `p` as the string's problem, unless it has one already, and puts
    /// U+FFFD in its place (when `build`).
    /// - Returns: −6: the escape's length, negated to say that the string is flawed.
    @inline(never)
    private func noteLoneSurrogate(_ message: String, at p: Int, build: Bool) -> Int {
        if work.pointee.problem == nil {
            let found = String(decoding: UnsafeBufferPointer(start: storage + p, count: 6), as: UTF8.self)
            work.pointee.problem = StringProblem(kind: .loneSurrogate, message: message, position: position(at: p), found: found)
        }
        if build { work.pointee.scratch.append(contentsOf: [0xEF, 0xBF, 0xBD]) }
        return -6
    }

    /// Makes the error for a string that ended (the reader is past its closing quote at `end`) with bad
    /// content and keeps it for ``takeContentError()``.
    @inline(never)
    private func keepContentError(start: SourcePosition, build: Bool, runStart: Int, end: Int, usingScratch: Bool) {
        guard let problem = work.pointee.problem else { preconditionFailure("a flawed string without a problem") }
        work.pointee.problem = nil
        var repaired: String?
        if build {
            if usingScratch {
                spill(from: runStart, to: end)
                repaired = String(decoding: work.pointee.scratch, as: UTF8.self)
            } else {
                repaired = String(decoding: UnsafeBufferPointer(start: storage + runStart, count: end - runStart), as: UTF8.self)
            }
        }
        work.pointee.contentError = JSONStringContentError(
            problem: problem.kind, message: problem.message, position: problem.position, stringPosition: start,
            found: problem.found, repaired: repaired, isKey: false)
    }

    /// The error of the string that ``scanStringBytes(build:_:)`` last found flawed (taken: kept no longer).
    @inline(never)
    func takeContentError(isKey: Bool = false) -> JSONStringContentError {
        guard var error = work.pointee.contentError else { preconditionFailure("no string content error to take") }
        work.pointee.contentError = nil
        error.isKey = isKey
        return error
    }

    /// A syntax error inside a string.
    ///
    /// When the string already had bad content, that earlier problem is the error, as if the scan had
    /// stopped there.
    private func stringSyntaxError(_ message: String, at index: Int) -> any Error {
        stringSyntaxError(message, position: position(at: index))
    }

    private func stringSyntaxError(_ message: String, position: SourcePosition) -> any Error {
        if let problem = work.pointee.problem {
            work.pointee.problem = nil
            return syntaxError(problem.message, position: problem.position)
        }
        return syntaxError(message, position: position)
    }

    /// Decodes the escape whose backslash is at `p` into `scratch` (when `build`).
    /// - Returns: The number of bytes the escape takes; negated for a lone surrogate escape (noted as the
    ///   string's problem, U+FFFD in its place).
    /// - Throws: ``JSONSyntaxError`` for an escape that RFC 8259 §7 does not have or a truncated one.
    private func decodeEscape(at p: Int, limit e: Int, build: Bool) throws -> Int {
        let s = storage
        guard p + 1 < e else { throw stringSyntaxError("unterminated string, found end of input", at: p + 1) }
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
                    return noteLoneSurrogate(
                        "lone surrogate \\u\(hex4(first)) in string: a high surrogate must be followed by "
                            + "a \\u escape of a low surrogate (DC00…DFFF)",
                        at: p, build: build)
                }
                let second = try hexQuad(at: p + 8, limit: e)
                guard second >= 0xDC00 && second <= 0xDFFF else {
                    // Only the first escape is lone: the second one is read next, on its own.
                    return noteLoneSurrogate(
                        "lone surrogate \\u\(hex4(first)) in string: it is followed by \\u\(hex4(second)), "
                            + "not by a low surrogate (DC00…DFFF)",
                        at: p, build: build)
                }
                scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                length = 12
            } else if first >= 0xDC00 && first <= 0xDFFF {
                return noteLoneSurrogate(
                    "lone surrogate \\u\(hex4(first)) in string: a low surrogate must follow "
                        + "a high surrogate (D800…DBFF)",
                    at: p, build: build)
            }
            if build { appendUTF8(scalar) }
            return length
        default:
            let position = position(at: p + 1)
            throw stringSyntaxError(
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
            guard i < e else { throw stringSyntaxError("expected 4 hex digits after \\u, found end of input", at: i) }
            let c = storage[i]
            let digit: UInt8
            switch c {
            case 0x30...0x39: digit = c - 0x30
            case 0x41...0x46: digit = c - 0x41 + 10
            case 0x61...0x66: digit = c - 0x61 + 10
            default:
                let position = position(at: i)
                throw stringSyntaxError(
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
}
