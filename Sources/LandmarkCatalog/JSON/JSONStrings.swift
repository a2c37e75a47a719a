// JSONPullReader: strings (RFC 8259 §7): scanning, UTF-8 validation, escapes.
extension JSONPullReader {
    /// Scans a string starting at its opening quote at `pos`; validates UTF-8 and escapes.
    ///
    /// A string that lies whole in the buffer and has no escapes becomes a `String` straight from the
    /// buffer; otherwise its pieces are gathered in `scratch` (decoded escapes, and the bytes read so far
    /// whenever the buffer must be refilled).
    /// - Parameter build: Whether to build the string (`false` checks it and returns "").
    func scanString(build: Bool) throws -> String {
        var result = ""
        try scanStringBytes(build: build) { result = String(decoding: $0, as: UTF8.self) }
        return result
    }

    /// Scans a string like ``scanString(build:)`` but hands its decoded, validated UTF-8 bytes to
    /// `complete` (valid only during the call) instead of making a `String`.
    @inline(__always)
    func scanStringBytes(build: Bool, _ complete: (UnsafeBufferPointer<UInt8>) -> Void) throws {
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
}
