// JSONPullReader: container navigation — opening and closing arrays and objects, and moving to their
// next element or member (with the trailing-comma leniency).
extension JSONPullReader {
    func open(_ container: Container) throws {
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

    func advanceInArray() throws -> Bool {
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

    func advanceInObject(buildKey: Bool) throws -> (key: String, position: SourcePosition)? {
        var key = ""
        guard let position = try advanceInObject(buildKey: buildKey, { key = String(decoding: $0, as: UTF8.self) }) else {
            return nil
        }
        return (key, position)
    }

    /// Like ``advanceInObject(buildKey:)`` but hands the key's decoded bytes to `deliver` (valid during
    /// the call) and returns only its position.
    @inline(__always)
    func advanceInObject(buildKey: Bool, _ deliver: (UnsafeBufferPointer<UInt8>) -> Void) throws -> SourcePosition? {
        let index = work.pointee.containers.count - 1
        precondition(
            index >= 0 && !work.pointee.containers[index].isArray, "nextKey() called when no object is open")
        guard let byte = peekNonWhitespace() else {
            let expected =
                work.pointee.containers[index] == .objectEmpty
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
        let flawed = try scanStringBytes(build: buildKey, deliver)
        guard let colon = peekNonWhitespace(), colon == UInt8(ascii: ":") else {
            // The key's bad content came first: it is the error, as if reading had stopped there.
            if flawed {
                let error = takeContentError()
                throw syntaxError(error.message, position: error.position)
            }
            throw syntaxError("expected ':' after object key, found \(describe(ahead: 0))", at: pos)
        }
        pos += 1
        if flawed { throw takeContentError(isKey: true) }
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
}
