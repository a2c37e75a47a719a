// JSONPullReader: building errors and describing the input they are about.
extension JSONPullReader {
    /// An error at buffer index `index`; a failed read, when there was one, is the real cause and wins.
    func syntaxError(_ message: String, at index: Int) -> any Error {
        syntaxError(message, position: position(at: index))
    }

    func syntaxError(_ message: String, position: SourcePosition) -> any Error {
        if let readError { return readError }
        return JSONSyntaxError(message: message, position: position)
    }

    func expectedValueError() -> any Error {
        syntaxError("expected a value, found \(describe(ahead: 0))", at: pos)
    }

    func trailingDataError() -> any Error {
        syntaxError("unexpected data after the end of the JSON text, found \(describe(ahead: 0))", at: pos)
    }

    func mismatch(_ expected: String) -> any Error {
        syntaxError("expected \(expected), found \(describe(ahead: 0))", at: pos)
    }

    /// Describes the input at `pos + offset` for a message: `'x'`, `'é' (U+00E9)`,
    /// `control character U+000C`, `invalid UTF-8 byte 0xFF` or `end of input`.
    func describe(ahead offset: Int) -> String {
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
            let scalar = decoded.unicodeScalars.first
        {
            return "'\(decoded)' (U+\(hex4(scalar.value)))"
        }
        return "invalid UTF-8 byte \(hex(c))"
    }
}

func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return byte < 0x10 ? "0x0\(digits)" : "0x\(digits)"
}

func hex4(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
