// JSONPullReader: whole values (`readValue()`, `skipValue()`) read without recursion, and the literals.
extension JSONPullReader {
    /// Reads a value whose first byte, at `pos`, is `first`, without recursion: the arrays and objects
    /// being built wait on stacks in `work`, and values are appended to them in place.
    func readTree(startingWith first: UInt8) throws -> JSONValue {
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
    func skip(startingWith byte: UInt8) throws {
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

    static let trueBytes: [UInt8] = Array("true".utf8)
    static let falseBytes: [UInt8] = Array("false".utf8)
    static let nullBytes: [UInt8] = Array("null".utf8)

    /// Consumes `word` (`true`, `false` or `null`), whose first byte is at `pos`.
    func scanLiteral(_ word: [UInt8]) throws {
        for k in 1..<word.count where byte(ahead: k) != Int(word[k]) {
            throw syntaxError(
                "invalid literal, expected '\(String(decoding: word, as: UTF8.self))', found \(describe(ahead: k))",
                at: pos + k)
        }
        pos += word.count
    }
}
