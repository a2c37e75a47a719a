import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Helpers shared by the JSON reader tests (also used by JSONTestSuiteInteropTests.swift)

enum JSONTestSupport {
    static let strict = JSONPullReader.Options()
    static let lenient = JSONPullReader.Options(allowTrailingCommas: true)

    struct Parsed {
        var value: JSONValue
        var warnings: [JSONWarning]
    }

    /// Reads a whole document the way an importer does: `readValue()` then `finish()`.
    static func parse(_ bytes: [UInt8], _ options: JSONPullReader.Options) -> Result<Parsed, any Error> {
        let reader = JSONPullReader(bytes: bytes, options: options)
        do {
            let value = try reader.readValue()
            try reader.finish()
            return .success(Parsed(value: value, warnings: reader.warnings))
        } catch {
            return .failure(error)
        }
    }

    static func parse(_ text: String, _ options: JSONPullReader.Options = strict) -> Result<Parsed, any Error> {
        parse(Array(text.utf8), options)
    }

    /// The syntax error a document gives, or `nil` when it is accepted.
    static func syntaxError(_ bytes: [UInt8], _ options: JSONPullReader.Options = strict) -> JSONSyntaxError? {
        if case .failure(let error) = parse(bytes, options) { return error as? JSONSyntaxError }
        return nil
    }

    static func syntaxError(_ text: String, _ options: JSONPullReader.Options = strict) -> JSONSyntaxError? {
        syntaxError(Array(text.utf8), options)
    }

    /// The value of a document that must be accepted.
    static func value(_ text: String, _ options: JSONPullReader.Options = strict) throws -> JSONValue {
        try parse(text, options).get().value
    }

    /// The position of byte `offset`, computed independently of the reader: lines end at LF, columns
    /// count bytes that are not UTF-8 continuation bytes, and a leading BOM takes no column.
    static func expectedPosition(in bytes: [UInt8], offset: Int) -> SourcePosition {
        let hasBOM = bytes.starts(with: [0xEF, 0xBB, 0xBF])
        var line = 1
        var lineStart = hasBOM && offset >= 3 ? 3 : 0
        for i in lineStart..<min(offset, bytes.count) where bytes[i] == 0x0A {
            line += 1
            lineStart = i + 1
        }
        var column = 1
        for i in lineStart..<min(offset, bytes.count) where bytes[i] & 0xC0 != 0x80 {
            column += 1
        }
        return SourcePosition(line: line, column: column, offset: offset)
    }

    /// Problems with positions: an error, warning or key position that is out of the input or that
    /// disagrees with ``expectedPosition(in:offset:)``.
    static func positionProblems(_ bytes: [UInt8], _ result: Result<Parsed, any Error>) -> [String] {
        var problems: [String] = []
        func check(_ position: SourcePosition, _ what: String) {
            guard position.offset >= 0 && position.offset <= bytes.count else {
                problems.append("\(what) offset \(position.offset) outside 0...\(bytes.count)")
                return
            }
            let expected = expectedPosition(in: bytes, offset: position.offset)
            if expected != position {
                problems.append("\(what) at \(position) (offset \(position.offset)), expected \(expected)")
            }
        }
        func walk(_ value: JSONValue) {
            switch value {
            case .array(let elements): elements.forEach(walk)
            case .object(let members):
                for member in members {
                    check(member.position, "key \(member.key.debugDescription)")
                    if member.position.offset < bytes.count && bytes[member.position.offset] != UInt8(ascii: "\"") {
                        problems.append("key position \(member.position) is not at a quote")
                    }
                    walk(member.value)
                }
            default: break
            }
        }
        switch result {
        case .success(let parsed):
            walk(parsed.value)
            for warning in parsed.warnings {
                check(warning.position, "warning '\(warning.message)'")
                if bytes[warning.position.offset] != UInt8(ascii: ",") {
                    problems.append("trailing-comma warning at \(warning.position) is not at a comma")
                }
            }
        case .failure(let error):
            if let error = error as? JSONSyntaxError {
                check(error.position, "error '\(error.message)'")
            } else {
                problems.append("not a JSONSyntaxError: \(error)")
            }
        }
        return problems
    }

    /// The value with every key position set to 0:0, to compare values read from different texts.
    static func withoutPositions(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let elements): return .array(elements.map(withoutPositions))
        case .object(let members):
            return .object(
                members.map {
                    JSONMember(key: $0.key, value: withoutPositions($0.value), position: SourcePosition(line: 0, column: 0, offset: 0))
                })
        default: return value
        }
    }

    /// The package root, found from this file: Tests/LandmarkCatalogTests/X.swift → three levels up.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `<root>/../shared/fixtures/<name>` when that directory exists.
    static func sharedFixtures(_ name: String) -> URL? {
        let url = packageRoot.appendingPathComponent("../shared/fixtures/\(name)").standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return nil
        }
        return url
    }

    /// The names of the `*.json` files in a directory, sorted; none when it is `nil`.
    static func jsonFiles(in directory: URL?) -> [String] {
        guard let directory,
            let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path)
        else { return [] }
        return names.filter { $0.hasSuffix(".json") }.sorted()
    }

    static func bytes(of url: URL) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: url))
    }

    /// Writes `bytes` to a new temporary file and runs `body` with a read-only descriptor of it.
    static func withTemporaryFile<T>(_ bytes: [UInt8], _ body: (Int32) throws -> T) throws -> T {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("json-reader-test-\(UUID().uuidString).json")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let fd = open(url.path, O_RDONLY)
        guard fd >= 0 else { throw JSONReadError(errno: errno, offset: 0) }
        defer { close(fd) }
        return try body(fd)
    }
}

// MARK: - Positions

@Suite("JSON reader: positions")
struct JSONReaderPositionTests {
    /// Walks `[\n  1,\n  {"a": true}\n]` with the pull API and records positions.
    private func positions(of text: String) throws -> [SourcePosition] {
        let reader = JSONPullReader(bytes: Array(text.utf8), options: JSONTestSupport.strict)
        var result: [SourcePosition] = []
        result.append(reader.position)
        try reader.beginArray()
        #expect(try reader.nextElement())
        result.append(reader.position)
        #expect(try reader.readNumber().int64Value == 1)
        #expect(try reader.nextElement())
        result.append(reader.position)
        try reader.beginObject()
        let key = try #require(try reader.nextKey())
        #expect(key.key == "a")
        result.append(key.position)
        result.append(reader.position)
        #expect(try reader.readBool() == true)
        #expect(try reader.nextKey() == nil)
        #expect(try reader.nextElement() == false)
        result.append(reader.position)
        try reader.finish()
        return result
    }

    @Test("line:column on LF input")
    func lineFeed() throws {
        let found = try positions(of: "[\n  1,\n  {\"a\": true}\n]")
        #expect(found.map(\.description) == ["1:1", "2:3", "3:3", "3:4", "3:9", "4:2"])
        #expect(found.map(\.offset) == [0, 4, 9, 10, 15, 22])
    }

    @Test("line:column on CRLF input: same lines and columns as LF, offsets count the CRs")
    func crlf() throws {
        let found = try positions(of: "[\r\n  1,\r\n  {\"a\": true}\r\n]")
        #expect(found.map(\.description) == ["1:1", "2:3", "3:3", "3:4", "3:9", "4:2"])
        #expect(found.map(\.offset) == [0, 5, 11, 12, 17, 25])
    }

    @Test("columns count Unicode scalars, offsets count bytes")
    func columnsCountScalars() throws {
        // [ " é € 😀 " , ␠ x  — x is the 9th scalar and the 15th byte.
        let error = try #require(JSONTestSupport.syntaxError("[\"é€😀\", x]"))
        #expect(error.position == SourcePosition(line: 1, column: 9, offset: 14))
        #expect(error.message == "expected a value, found 'x'")
        #expect(error.description == "expected a value, found 'x' at 1:9")
    }

    @Test("an error inside a string after non-ASCII text has the right column")
    func errorInsideString() throws {
        let error = try #require(JSONTestSupport.syntaxError("{\"k\":\n  \"한국\u{1}\"}"))
        #expect(error.position == SourcePosition(line: 2, column: 6, offset: 15))
        #expect(error.message.contains("unescaped control character U+0001"))
    }

    @Test("position skips whitespace and reports the end of input")
    func positionAtEnd() throws {
        let reader = JSONPullReader(bytes: Array("  \n 7 \n\n".utf8), options: JSONTestSupport.strict)
        #expect(reader.position == SourcePosition(line: 2, column: 2, offset: 4))
        #expect(try reader.readNumber().int64Value == 7)
        #expect(reader.position == SourcePosition(line: 4, column: 1, offset: 8))
        try reader.finish()
    }

    @Test("key positions point at the opening quote")
    func keyPositions() throws {
        let value = try JSONTestSupport.value("{\"a\":1,\n \"b\" : {\"c\":[]}}")
        guard case .object(let members) = value, case .object(let inner) = members[1].value else {
            Issue.record("not an object: \(value)")
            return
        }
        #expect(members.map(\.position.description) == ["1:2", "2:2"])
        #expect(inner[0].position == SourcePosition(line: 2, column: 9, offset: 16))
    }
}

// MARK: - Errors and their messages

@Suite("JSON reader: errors")
struct JSONReaderErrorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var text: String
        var message: String
        var position: String
        var testDescription: String { text.debugDescription }
    }

    static let cases: [Case] = [
        Case(text: "", message: "expected a value, found end of input", position: "1:1"),
        Case(text: " \n\t ", message: "expected a value, found end of input", position: "2:3"),
        Case(text: "{\"a\" 1}", message: "expected ':' after object key, found '1'", position: "1:6"),
        Case(text: "{\"a\"}", message: "expected ':' after object key, found '}'", position: "1:5"),
        Case(text: "{\"a\":1 \"b\":2}", message: "expected ',' or '}' after object member, found '\"'", position: "1:8"),
        Case(text: "[1 2]", message: "expected ',' or ']' after array element, found '2'", position: "1:4"),
        Case(text: "[1}", message: "expected ',' or ']' after array element, found '}'", position: "1:3"),
        Case(text: "[1", message: "expected ',' or ']' after array element, found end of input", position: "1:3"),
        Case(text: "[", message: "expected a value or ']', found end of input", position: "1:2"),
        Case(text: "{", message: "expected a string key or '}', found end of input", position: "1:2"),
        Case(text: "{1:2}", message: "expected a string key or '}', found '1'", position: "1:2"),
        Case(text: "{\"a\":}", message: "expected a value, found '}'", position: "1:6"),
        Case(text: "[1] x", message: "unexpected data after the end of the JSON text, found 'x'", position: "1:5"),
        Case(text: "1 2", message: "unexpected data after the end of the JSON text, found '2'", position: "1:3"),
        Case(text: "[,]", message: "expected a value, found ','", position: "1:2"),
        Case(text: "[1,,]", message: "expected a value, found ','", position: "1:4"),
        Case(text: "{,}", message: "expected a string key or '}', found ','", position: "1:2"),
        Case(text: "[1,]", message: "expected a value after ',', found ']' (trailing comma at 1:3)", position: "1:4"),
        Case(text: "{\"a\":1,\n}", message: "expected a string key after ',', found '}' (trailing comma at 1:7)", position: "2:1"),
        Case(text: "[01]", message: "leading zeros are not allowed in numbers, found '1' after '0'", position: "1:3"),
        Case(text: "[-]", message: "expected a digit after '-', found ']'", position: "1:3"),
        Case(text: "[1.]", message: "expected a digit after '.' in number, found ']'", position: "1:4"),
        Case(text: "[1e+]", message: "expected a digit in the exponent of a number, found ']'", position: "1:5"),
        Case(text: "[.5]", message: "expected a value, found '.'", position: "1:2"),
        Case(text: "[+1]", message: "expected a value, found '+'", position: "1:2"),
        Case(text: "[NaN]", message: "expected a value, found 'N'", position: "1:2"),
        Case(text: "[-Infinity]", message: "expected a digit after '-', found 'I'", position: "1:3"),
        Case(text: "[tru]", message: "invalid literal, expected 'true', found ']'", position: "1:5"),
        Case(text: "[nul", message: "invalid literal, expected 'null', found end of input", position: "1:5"),
        Case(text: "[True]", message: "expected a value, found 'T'", position: "1:2"),
        Case(
            text: "[\"a\\qb\"]", message: "invalid escape in string, expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX, found 'q' after '\\'",
            position: "1:5"),
        Case(text: "[\"\\u12G4\"]", message: "expected 4 hex digits after \\u, found 'G'", position: "1:7"),
        Case(text: "[\"abc", message: "unterminated string (it starts at 1:2), found end of input", position: "1:6"),
        Case(
            text: "[\"a\tb\"]", message: "unescaped control character U+0009 in string (RFC 8259 requires an escape such as \\u0009)", position: "1:4"
        ),
        Case(text: "[\u{0C}1]", message: "expected a value, found control character U+000C", position: "1:2"),
        Case(text: "[é]", message: "expected a value, found 'é' (U+00E9)", position: "1:2"),
        Case(text: "\u{FEFF}\u{FEFF}1", message: "expected a value, found '\u{FEFF}' (U+FEFF)", position: "1:1"),
        Case(text: "{\"a\":1}}", message: "unexpected data after the end of the JSON text, found '}'", position: "1:8"),
    ]

    @Test("messages say what was expected and what was found, at the right place", arguments: cases)
    func message(_ testCase: Case) throws {
        let error = try #require(JSONTestSupport.syntaxError(testCase.text))
        #expect(error.message == testCase.message)
        #expect(error.position.description == testCase.position)
        #expect(error.description == "\(testCase.message) at \(testCase.position)")
        #expect(JSONTestSupport.positionProblems(Array(testCase.text.utf8), .failure(error)).isEmpty)
    }

    @Test("the pull API reports type mismatches and a second top-level value")
    func pullMismatches() throws {
        let reader = JSONPullReader(bytes: Array("[1, \"x\"] 2".utf8), options: JSONTestSupport.strict)
        #expect(throws: JSONSyntaxError(message: "expected an object, found '['", position: SourcePosition(line: 1, column: 1, offset: 0))) {
            try reader.beginObject()
        }
        try reader.beginArray()
        #expect(try reader.nextElement())
        #expect(throws: JSONSyntaxError(message: "expected a string, found '1'", position: SourcePosition(line: 1, column: 2, offset: 1))) {
            try reader.readString()
        }
        #expect(try reader.peekKind() == .number)
        try reader.skipValue()
        #expect(try reader.nextElement())
        #expect(try reader.peekKind() == .string)
        #expect(try reader.readString() == "x")
        #expect(try reader.nextElement() == false)
        #expect(
            throws: JSONSyntaxError(
                message: "unexpected data after the end of the JSON text, found '2'", position: SourcePosition(line: 1, column: 10, offset: 9))
        ) {
            try reader.readValue()
        }
    }

    @Test("a read error is a JSONReadError with errno, not a syntax error")
    func readError() throws {
        let fd = open(FileManager.default.temporaryDirectory.path, O_RDONLY)  // read(2) on a directory: EISDIR
        try #require(fd >= 0)
        defer { close(fd) }
        let reader = JSONPullReader(fileDescriptor: fd, options: JSONTestSupport.strict)
        do {
            _ = try reader.readValue()
            Issue.record("reading a directory succeeded")
        } catch let error as JSONReadError {
            #expect(error.errno == EISDIR)
            #expect(error.description.contains("errno \(EISDIR)"))
        } catch {
            Issue.record("expected JSONReadError, got \(error)")
        }
    }
}

// MARK: - Trailing commas, BOM, encodings, UTF-8

@Suite("JSON reader: leniency and encodings")
struct JSONReaderEncodingTests {
    @Test("lenient mode accepts one trailing comma with a warning at the comma")
    func trailingCommaWarning() throws {
        let parsed = try JSONTestSupport.parse("[1, 2,\n ]", JSONTestSupport.lenient).get()
        #expect(parsed.value.serialized() == "[1,2]")
        #expect(parsed.warnings == [JSONWarning(message: "trailing comma before ']'", position: SourcePosition(line: 1, column: 6, offset: 5))])

        let nested = try JSONTestSupport.parse("[[1,],{\"a\":[],},\n{},]", JSONTestSupport.lenient).get()
        #expect(nested.value.serialized() == "[[1],{\"a\":[]},{}]")
        #expect(nested.warnings.map(\.message) == ["trailing comma before ']'", "trailing comma before '}'", "trailing comma before ']'"])
        #expect(nested.warnings.map(\.position.description) == ["1:4", "1:14", "2:3"])
    }

    @Test("strict mode refuses the trailing comma at the closing bracket", arguments: ["[1,]", "{\"a\":1,}", "[1 , ]"])
    func trailingCommaStrict(_ text: String) throws {
        let error = try #require(JSONTestSupport.syntaxError(text))
        #expect(error.message.contains("trailing comma at 1:"))
        #expect(error.position.offset == text.utf8.count - 1)
    }

    @Test(
        "lenient mode still refuses empty slots and doubled commas", arguments: ["[1,,]", "[,]", "{,}", "{\"a\":1,,}", "[1,", "[,1]", "{\"a\":0,,}"])
    func lenientStillRefuses(_ text: String) {
        #expect(JSONTestSupport.syntaxError(text, JSONTestSupport.lenient) != nil)
    }

    @Test("one UTF-8 byte order mark is skipped and takes no column")
    func byteOrderMark() throws {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("[1,\n x]".utf8)
        let error = try #require(JSONTestSupport.syntaxError(bytes))
        #expect(error.position == SourcePosition(line: 2, column: 2, offset: 8))
        let reader = JSONPullReader(bytes: [0xEF, 0xBB, 0xBF] + Array("{}".utf8), options: JSONTestSupport.strict)
        #expect(reader.position == SourcePosition(line: 1, column: 1, offset: 3))
        #expect(try reader.readValue() == .object([]))
        try reader.finish()
        #expect(JSONTestSupport.syntaxError([0xEF, 0xBB, 0xBF])?.message == "expected a value, found end of input")
        #expect(JSONTestSupport.syntaxError([0xEF, 0xBB, 0x7B, 0x7D])?.message == "expected a value, found invalid UTF-8 byte 0xEF")
    }

    @Test(
        "UTF-16 and UTF-32 input is refused",
        arguments: [
            [0xFF, 0xFE, 0x5B, 0x00, 0x5D, 0x00], [0xFE, 0xFF, 0x00, 0x5B, 0x00, 0x5D],
            [0x00, 0x5B, 0x00, 0x5D], [0x5B, 0x00, 0x5D, 0x00], [0x31, 0x00],
            [0x00, 0x00, 0xFE, 0xFF, 0x00, 0x00, 0x00, 0x31], [0xFF, 0xFE, 0x00, 0x00, 0x31, 0x00, 0x00, 0x00],
        ] as [[UInt8]])
    func utf16Refused(_ bytes: [UInt8]) throws {
        let error = try #require(JSONTestSupport.syntaxError(bytes))
        #expect(error.message.hasPrefix("input is UTF-16 or UTF-32"))
        #expect(error.message.hasSuffix("only UTF-8 is accepted"))
        #expect(error.position == SourcePosition(line: 1, column: 1, offset: 0))
        // The error sticks: every call reports it again.
        let reader = JSONPullReader(bytes: bytes, options: JSONTestSupport.lenient)
        #expect(throws: error) { try reader.peekKind() }
        #expect(throws: error) { try reader.beginArray() }
    }

    @Test("Foundation's UTF-16 encoding of a document is refused")
    func foundationUTF16() throws {
        let data = try #require("[\"é\"]".data(using: .utf16))
        #expect(JSONTestSupport.syntaxError([UInt8](data))?.message.contains("UTF-16") == true)
    }

    struct InvalidUTF8: Sendable, CustomTestStringConvertible {
        var bytes: [UInt8]
        var position: String
        var offset: Int
        var testDescription: String { bytes.map { String($0, radix: 16) }.joined(separator: " ") }
    }

    static let invalidUTF8: [InvalidUTF8] = [
        InvalidUTF8(bytes: Array("[\"ab".utf8) + [0xFF] + Array("\"]".utf8), position: "1:5", offset: 4),
        InvalidUTF8(bytes: Array("[\"".utf8) + [0xC0, 0xAF] + Array("\"]".utf8), position: "1:3", offset: 2),  // overlong '/'
        InvalidUTF8(bytes: Array("[\"".utf8) + [0xE0, 0x80, 0xAF] + Array("\"]".utf8), position: "1:3", offset: 2),  // overlong
        InvalidUTF8(bytes: Array("[\"".utf8) + [0xED, 0xA0, 0x80] + Array("\"]".utf8), position: "1:3", offset: 2),  // U+D800
        InvalidUTF8(bytes: Array("[\"".utf8) + [0xF4, 0x90, 0x80, 0x80] + Array("\"]".utf8), position: "1:3", offset: 2),  // U+110000
        InvalidUTF8(bytes: Array("[\"é".utf8) + [0xE6, 0x97] + Array("\"]".utf8), position: "1:4", offset: 4),  // truncated
        InvalidUTF8(bytes: Array("[\"".utf8) + [0x80] + Array("\"]".utf8), position: "1:3", offset: 2),  // lone continuation
        InvalidUTF8(bytes: Array("[\"".utf8) + [0xF8, 0x88, 0x80, 0x80, 0x80] + Array("\"]".utf8), position: "1:3", offset: 2),
        InvalidUTF8(bytes: Array("[\"€\",\n \"😀".utf8) + [0xF0, 0x9F, 0x98], position: "2:4", offset: 14),  // cut by the end
        InvalidUTF8(bytes: Array("{\"".utf8) + [0xE9] + Array("\":1}".utf8), position: "1:3", offset: 2),  // Latin-1 key
        InvalidUTF8(bytes: [0x5B, 0xFF, 0x5D], position: "1:2", offset: 1),  // outside a string
    ]

    @Test("invalid UTF-8 is an error at the first byte of the bad sequence", arguments: invalidUTF8)
    func invalidUTF8Position(_ testCase: InvalidUTF8) throws {
        for options in [JSONTestSupport.strict, JSONTestSupport.lenient] {
            let error = try #require(JSONTestSupport.syntaxError(testCase.bytes, options))
            #expect(error.position.description == testCase.position)
            #expect(error.position.offset == testCase.offset)
            #expect(error.message.contains("UTF-8"))
        }
    }

    @Test("escapes decode, surrogate pairs join, NUL is kept")
    func escapes() throws {
        let value = try JSONTestSupport.value(
            #"["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u20AC\uD83D\uDE00\ud834\udd1e", "a\u0000b", "\uFFFF\uDBFF\uDFFF"]"#)
        #expect(
            value
                == .array([
                    .string("\"\\/\u{8}\u{C}\n\r\t"),
                    .string("Aé€😀𝄞"),
                    .string("a\u{0}b"),
                    .string("\u{FFFF}\u{10FFFF}"),
                ]))
    }

    @Test(
        "a lone or reversed surrogate escape is an error at its backslash",
        arguments: [
            #"["\uD800"]"#, #"["\uD800x"]"#, #"["\uDC00"]"#, #"["\uD800\u0041"]"#, #"["\uDE00\uD83D"]"#,
            #"["\uD800\n"]"#, #"["\uD800\uD800"]"#, #"["\uD800\"#,
        ])
    func loneSurrogates(_ text: String) throws {
        let error = try #require(JSONTestSupport.syntaxError(text))
        #expect(error.message.hasPrefix("lone surrogate"))
        #expect(error.position == SourcePosition(line: 1, column: 3, offset: 2))
    }
}

// MARK: - Numbers

@Suite("JSON reader: numbers")
struct JSONReaderNumberTests {
    @Test("Int64 values: exact integers only")
    func int64() throws {
        #expect(JSONNumber(literal: "9223372036854775807")?.int64Value == Int64.max)
        #expect(JSONNumber(literal: "-9223372036854775808")?.int64Value == Int64.min)
        #expect(JSONNumber(literal: "9223372036854775808")?.int64Value == nil)
        #expect(JSONNumber(literal: "-9223372036854775809")?.int64Value == nil)
        #expect(JSONNumber(literal: "123456789012345678901234567890")?.int64Value == nil)
        #expect(JSONNumber(literal: "1.0")?.int64Value == nil)
        #expect(JSONNumber(literal: "1e2")?.int64Value == nil)
        #expect(JSONNumber(literal: "0")?.int64Value == 0)
        #expect(JSONNumber(literal: "-0")?.int64Value == 0)
        #expect(JSONNumber(literal: "1001")?.int64Value == 1001)
    }

    @Test("Double values equal Swift's Double(String) (strtod)")
    func doubles() throws {
        #expect(JSONNumber(literal: "37.54628069864881")?.doubleValue == Double("37.54628069864881"))
        #expect(JSONNumber(literal: "-116.166868")?.doubleValue == -116.166868)
        #expect(JSONNumber(literal: "1E+2")?.doubleValue == 100)
        #expect(JSONNumber(literal: "1e400")?.doubleValue == .infinity)
        #expect(JSONNumber(literal: "-1e400")?.doubleValue == -.infinity)
        #expect(JSONNumber(literal: "1e-400")?.doubleValue == 0)
        #expect(JSONNumber(literal: "0e99999999999999999999")?.doubleValue == 0)
        #expect(JSONNumber(literal: "4.9e-324")?.doubleValue == Double.leastNonzeroMagnitude)
        #expect(JSONNumber(literal: "1.7976931348623157e308")?.doubleValue == Double.greatestFiniteMagnitude)
        let negativeZero = try #require(JSONNumber(literal: "-0"))
        #expect(negativeZero.doubleValue == 0 && negativeZero.doubleValue.sign == .minus)
        #expect(JSONNumber(literal: "-0.0e5")?.doubleValue.sign == .minus)
    }

    @Test("Double values of random literals match Double(String), fast path and slow path alike")
    func randomDoubles() throws {
        var random = SplitMix64(seed: 0xD0_0B1E)
        var mismatches: [String] = []
        for _ in 0..<20_000 {
            let integerDigits = Int.random(in: 1...20, using: &random)
            var literal = Bool.random(using: &random) ? "-" : ""
            literal += String(Int.random(in: 1...9, using: &random))
            for _ in 1..<integerDigits { literal += String(Int.random(in: 0...9, using: &random)) }
            if Int.random(in: 0..<4, using: &random) == 0 { literal = literal.hasPrefix("-") ? "-0" : "0" }
            if Bool.random(using: &random) {
                literal += "."
                for _ in 0..<Int.random(in: 1...20, using: &random) { literal += String(Int.random(in: 0...9, using: &random)) }
            }
            if Bool.random(using: &random) {
                literal += pick(["e", "E", "e+", "e-", "E-"], using: &random)
                literal += String(Int.random(in: 0...40, using: &random))
            }
            guard let number = JSONNumber(literal: literal) else {
                mismatches.append("refused \(literal)")
                continue
            }
            let expected = try #require(Double(literal))
            if number.doubleValue != expected || number.doubleValue.sign != expected.sign {
                mismatches.append("\(literal): \(number.doubleValue) != \(expected)")
            }
            // Shortest round-trip text of a random Double must come back exactly.
            let double = Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF)
            if let back = JSONNumber(literal: "\(double)".replacingOccurrences(of: "e+", with: "e")), back.doubleValue != double {
                mismatches.append("\(double) read back as \(back.doubleValue)")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
    }

    @Test(
        "the number grammar of RFC 8259 §6",
        arguments: [
            ("0", true), ("-0", true), ("12", true), ("-12.5e-3", true), ("1E9", true), ("0.0", true), ("0e0", true),
            ("1.5E+10", true), ("01", false), ("-01", false), ("+1", false), (".5", false), ("5.", false), ("1e", false),
            ("1e+", false), ("1.e5", false), ("-", false), ("--1", false), ("NaN", false), ("Infinity", false),
            ("0x10", false), ("1_000", false), (" 1", false), ("1 ", false), ("1.5.2", false), ("", false), ("١", false),
        ] as [(String, Bool)])
    func grammar(_ literal: String, _ valid: Bool) {
        #expect((JSONNumber(literal: literal) != nil) == valid)
        if let number = JSONNumber(literal: literal) { #expect(number.literal == literal) }
    }

    @Test("a very long number is read whole, even across the buffer's growth")
    func longNumber() throws {
        let digits = String(repeating: "7", count: 200_000)
        let text = "[\(digits).5e-199990]"
        let value = try JSONTestSupport.withTemporaryFile(Array(text.utf8)) { fd in
            let reader = JSONPullReader(fileDescriptor: fd, options: JSONTestSupport.strict, bufferSize: 1024)
            let value = try reader.readValue()
            try reader.finish()
            return value
        }
        guard case .array(let elements) = value, case .number(let number) = elements[0] else {
            Issue.record("unexpected \(value)")
            return
        }
        #expect(number.literal.utf8.count == 200_000 + 10)
        #expect(number.doubleValue == Double("\(digits).5e-199990"))
        #expect(number.int64Value == nil)
    }
}

// MARK: - Depth

@Suite("JSON reader: depth limit")
struct JSONReaderDepthTests {
    @Test("512 levels are accepted, 513 refused, by readValue and skipValue alike")
    func limit() throws {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(throws: Never.self) { try JSONTestSupport.parse(ok, JSONTestSupport.strict).get() }
        let tooDeep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        let error = try #require(JSONTestSupport.syntaxError(tooDeep))
        #expect(error.message == "too deeply nested: more than 512 levels of arrays and objects (maxDepth)")
        #expect(error.position == SourcePosition(line: 1, column: 513, offset: 512))
        let reader = JSONPullReader(bytes: Array(tooDeep.utf8), options: JSONTestSupport.strict)
        #expect(throws: error) { try reader.skipValue() }
    }

    @Test("a custom maxDepth counts objects and arrays")
    func custom() throws {
        let options = JSONPullReader.Options(maxDepth: 3)
        #expect(throws: Never.self) { try JSONTestSupport.parse("[{\"a\":[1]}]", options).get() }
        #expect(JSONTestSupport.syntaxError("[{\"a\":[{}]}]", options)?.position.offset == 7)
    }

    @Test("100000 opening brackets give an error, not a stack overflow")
    func hugeNesting() throws {
        let text = String(repeating: "[", count: 100_000)
        #expect(JSONTestSupport.syntaxError(text)?.message.hasPrefix("too deeply nested") == true)
        let objects = String(repeating: "{\"a\":", count: 100_000)
        #expect(JSONTestSupport.syntaxError(objects, JSONPullReader.Options(maxDepth: 100_000))?.message == "expected a value, found end of input")
    }
}

// MARK: - Chunk boundaries

@Suite("JSON reader: chunk boundaries")
struct JSONReaderChunkTests {
    /// Documents with multi-byte characters, escapes, numbers and literals everywhere.
    static let documents: [String] = [
        #"{"name": "Gyeongbokgung 경복궁 😀", "id": 1001, "esc": "a\"b\\c\/d\u00e9\uD83D\uDE00\n", "coordinates": {"latitude": 37.54628069864881, "longitude": -126.97696}, "ok": [true, false, null, -0.5e-3, 1E+2]}"#,
        "[\n  \"𝄞𝄞𝄞\",\r\n  \"\\uD834\\uDD1E\",\n  12345678901234567890,\n  {\"k\":\"v\"}\n]\n",
        #"["\u0000\u001f", "€€€€", 0, -0, 1.0, [[[]]], {}]"#,
    ]

    @Test("every tiny buffer size gives the same values and positions as an in-memory read")
    func tinyBuffers() throws {
        for document in JSONReaderChunkTests.documents {
            let bytes = Array(document.utf8)
            let expected = try JSONTestSupport.parse(bytes, JSONTestSupport.strict).get().value
            for size in 1...24 {
                let value = try JSONTestSupport.withTemporaryFile(bytes) { fd in
                    let reader = JSONPullReader(fileDescriptor: fd, options: JSONTestSupport.strict, bufferSize: size)
                    let value = try reader.readValue()
                    try reader.finish()
                    return value
                }
                #expect(value == expected, "buffer size \(size)")
            }
        }
    }

    @Test("errors after chunk boundaries have the same positions as in memory")
    func errorPositions() throws {
        let broken: [[UInt8]] = [
            Array("[\n \"😀😀😀\", \"é\u{1}\"]".utf8),
            Array("[\n \"😀😀😀\", ".utf8) + [0x22, 0xE2, 0x82] + Array("\"]".utf8),
            Array("{\"한\": [1, 2,\r\n 3,]}".utf8),
            Array("[\"\\u00e9\\uD83D\\u0041\"]".utf8),
            Array("[12345.6789e".utf8),
        ]
        for bytes in broken {
            let expected = try #require(JSONTestSupport.syntaxError(bytes))
            for size in 1...16 {
                let error = try JSONTestSupport.withTemporaryFile(bytes) { fd -> JSONSyntaxError? in
                    let reader = JSONPullReader(fileDescriptor: fd, options: JSONTestSupport.strict, bufferSize: size)
                    do {
                        _ = try reader.readValue()
                        try reader.finish()
                        return nil
                    } catch {
                        return error as? JSONSyntaxError
                    }
                }
                #expect(error == expected, "buffer size \(size)")
            }
        }
    }

    @Test("a 64 KiB buffer with a 4-byte character and an escape split across its boundary")
    func defaultBufferBoundary() throws {
        let chunk = JSONPullReader.defaultBufferSize
        for shift in 0..<12 {
            // `["aaaa…😀\uD83D\uDE00é", "x"]` with the emoji, then the escape, around byte 65536.
            let padding = chunk - 2 - 3 - shift
            let text = "[\"" + String(repeating: "a", count: padding) + "😀\\uD83D\\uDE00é\", \"x\"]"
            let bytes = Array(text.utf8)
            let (value, position) = try JSONTestSupport.withTemporaryFile(bytes) { fd -> (JSONValue, SourcePosition) in
                let reader = JSONPullReader(fileDescriptor: fd, options: JSONTestSupport.strict)
                try reader.beginArray()
                #expect(try reader.nextElement())
                let first = try reader.readValue()
                #expect(try reader.nextElement())
                let position = reader.position
                let second = try reader.readValue()
                #expect(try reader.nextElement() == false)
                try reader.finish()
                return (.array([first, second]), position)
            }
            #expect(value == .array([.string(String(repeating: "a", count: padding) + "😀😀é"), .string("x")]), "shift \(shift)")
            #expect(position == SourcePosition(line: 1, column: padding + 20, offset: bytes.count - 4), "shift \(shift)")
        }
    }

    @Test("a pipe delivering a few bytes at a time")
    func pipeInput() throws {
        var descriptors: [Int32] = [0, 0]
        try #require(pipe(&descriptors) == 0)
        let (readEnd, writeEnd) = (descriptors[0], descriptors[1])
        defer {
            // Drain the pipe so the writer never blocks or gets SIGPIPE, then close it.
            var sink = [UInt8](repeating: 0, count: 4096)
            while read(readEnd, &sink, sink.count) > 0 {}
            close(readEnd)
        }
        var records: [String] = []
        for i in 0..<2000 {
            records.append(#"{"id": \#(i), "name": "Place \#(i) — 장소 😀", "tags": ["a\u00e9", null, true], "lat": \#(Double(i) / 7)}"#)
        }
        let document = Array(("[\n" + records.joined(separator: ",\n") + "\n]\n").utf8)
        let writer = Thread {
            var offset = 0
            var step = 1
            while offset < document.count {
                let count = min(step, document.count - offset)
                let written = document.withUnsafeBytes { write(writeEnd, $0.baseAddress! + offset, count) }
                if written > 0 { offset += written }
                step = step % 97 + 1
            }
            close(writeEnd)
        }
        writer.start()
        let reader = JSONPullReader(fileDescriptor: readEnd, options: JSONTestSupport.strict)
        try reader.beginArray()
        var count = 0
        while try reader.nextElement() {
            let position = reader.position
            #expect(position.line == count + 2 && position.column == 1)
            let value = try reader.readValue()
            #expect(value.serialized().contains("\"id\":\(count),"))
            count += 1
        }
        try reader.finish()
        #expect(count == 2000)
        // The reader does not close the descriptor it was given.
        #expect(fcntl(readEnd, F_GETFD) != -1)
    }
}

// MARK: - Values

@Suite("JSON reader: values")
struct JSONReaderValueTests {
    @Test("serialized() is compact, keeps order and duplicates, escapes per RFC 8259")
    func serialized() throws {
        let value = try JSONTestSupport.value(
            "{ \"b\" : [ 1 , 2.50 , -0 , 1E+2 , true , false , null ] , \"a\" : \"q\\\"b\\\\s\\/\\u0001\\u001f\\b\\f\\n\\r\\t é😀\u{7F}\" , \"b\" : { } }"
        )
        #expect(value.serialized() == #"{"b":[1,2.50,-0,1E+2,true,false,null],"a":"q\"b\\s/\u0001\u001f\b\f\n\r\t é😀\#u{7F}","b":{}}"#)
    }

    @Test("serialized() reads back to an equal value")
    func roundTrip() throws {
        var random = SplitMix64(seed: 42)
        for _ in 0..<300 {
            let value = JSONTestDocuments.value(depth: 0, using: &random)
            let text = value.serialized()
            let back = try JSONTestSupport.value(text)
            #expect(JSONTestSupport.withoutPositions(back) == JSONTestSupport.withoutPositions(value), "\(text)")
            #expect(back.serialized() == text)
        }
    }

    @Test("duplicate keys are kept in order: the caller decides")
    func duplicateKeys() throws {
        let value = try JSONTestSupport.value(#"{"id":1,"id":2}"#)
        guard case .object(let members) = value else {
            Issue.record("not an object")
            return
        }
        #expect(members.map(\.key) == ["id", "id"])
        #expect(members.map(\.value) == [.number(JSONNumber(literal: "1")!), .number(JSONNumber(literal: "2")!)])
    }

    @Test("skipValue checks everything it skips")
    func skipChecks() throws {
        let reader = JSONPullReader(bytes: Array(#"[{"a":["\uD800"]}, 1]"#.utf8), options: JSONTestSupport.strict)
        try reader.beginArray()
        #expect(try reader.nextElement())
        #expect(throws: JSONSyntaxError.self) { try reader.skipValue() }
        let ok = JSONPullReader(bytes: Array(#"[{"a":["x",{"b":[]}],"c":-1.5e3}, 2]"#.utf8), options: JSONTestSupport.strict)
        try ok.beginArray()
        #expect(try ok.nextElement())
        try ok.skipValue()
        #expect(try ok.nextElement())
        #expect(try ok.readNumber().int64Value == 2)
        #expect(try ok.nextElement() == false)
        try ok.finish()
    }
}

// MARK: - JSONTestDifferential testing against Foundation's JSONSerialization

/// Random JSON values and random texts for them.
enum JSONTestDocuments {
    static let pieces: [String] = [
        "a", "b", "z", "A", "0", "9", " ", "/", "~", "é", "ß", "€", "中", "文", "한", "국", "😀", "🎉", "𝄞", "\u{7F}", "\u{A0}", "\u{2028}", "\u{FFFD}",
    ]
    static let escaped: [Character: String] = ["\"": "\\\"", "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\u{8}": "\\b", "\u{C}": "\\f"]

    static func string<R: RandomNumberGenerator>(using random: inout R) -> String {
        var result = ""
        for _ in 0..<Int.random(in: 0...8, using: &random) {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: result.append(pick(["\"", "\\", "\n", "\r", "\t", "\u{8}", "\u{C}", "\u{0}", "\u{1F}"], using: &random))
            default: result += pick(pieces, using: &random)
            }
        }
        return result
    }

    static func number<R: RandomNumberGenerator>(using random: inout R) -> JSONNumber {
        var literal = Bool.random(using: &random) ? "-" : ""
        switch Int.random(in: 0..<6, using: &random) {
        case 0: literal += "0"
        case 1: literal += String(Int.random(in: 1...999, using: &random))
        case 2: literal += String(UInt64.random(in: 1...UInt64.max, using: &random))
        case 3: literal += String(Int.random(in: 1...9, using: &random)) + String(repeating: "0", count: Int.random(in: 18...30, using: &random))
        default: literal += String(Int.random(in: 0...99_999, using: &random))
        }
        if Bool.random(using: &random) {
            literal += "." + String(Int.random(in: 0...99_999_999, using: &random))
        }
        if Int.random(in: 0..<3, using: &random) == 0 {
            literal += pick(["e", "E", "e+", "e-", "E+", "E-"], using: &random)
            // Now and then an exponent beyond Double's range (±infinity or ±0 for us).
            literal += String(Int.random(in: 0...(Int.random(in: 0..<5, using: &random) == 0 ? 999 : 30), using: &random))
        }
        guard let number = JSONNumber(literal: literal) else { preconditionFailure("generated an invalid number \(literal)") }
        return number
    }

    static func value<R: RandomNumberGenerator>(depth: Int, using random: inout R) -> JSONValue {
        let scalarOnly = depth >= 4
        switch Int.random(in: 0..<(scalarOnly ? 5 : 8), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .number(number(using: &random))
        case 3, 4: return .string(string(using: &random))
        case 5: return .array((0..<Int.random(in: 0...5, using: &random)).map { _ in value(depth: depth + 1, using: &random) })
        default:
            var keys: [String] = []
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                let key = string(using: &random)
                if !keys.contains(key) { keys.append(key) }
            }
            let origin = SourcePosition(line: 0, column: 0, offset: 0)
            return .object(keys.map { JSONMember(key: $0, value: value(depth: depth + 1, using: &random), position: origin) })
        }
    }

    /// A random text for `value`: random whitespace between tokens, random choice of escapes, and now and
    /// then a trailing comma (which only lenient mode and Foundation accept).
    static func text<R: RandomNumberGenerator>(_ value: JSONValue, using random: inout R) -> String {
        var out = ""
        func space() {
            guard Int.random(in: 0..<3, using: &random) == 0 else { return }
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                out += pick([" ", "\t", "\n", "\r\n", "  "], using: &random)
            }
        }
        func writeString(_ s: String) {
            out += "\""
            for character in s {
                for scalar in character.unicodeScalars {
                    let c = Character(scalar)
                    if let escape = escaped[c], Bool.random(using: &random) || scalar.value < 0x20 || c == "\"" || c == "\\" {
                        out += escape
                    } else if scalar.value < 0x20 || Int.random(in: 0..<8, using: &random) == 0 {
                        if scalar.value > 0xFFFF {
                            let v = scalar.value - 0x10000
                            out += String(format: "\\u%04X\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF))
                        } else {
                            out += String(format: Bool.random(using: &random) ? "\\u%04x" : "\\u%04X", scalar.value)
                        }
                    } else if c == "/" && Bool.random(using: &random) {
                        out += "\\/"
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                }
            }
            out += "\""
        }
        func trailingComma(after count: Int) {
            if count > 0 && Int.random(in: 0..<40, using: &random) == 0 { out += "," }
        }
        func write(_ value: JSONValue) {
            space()
            switch value {
            case .null: out += "null"
            case .bool(let b): out += b ? "true" : "false"
            case .number(let n): out += n.literal
            case .string(let s): writeString(s)
            case .array(let elements):
                out += "["
                for (i, element) in elements.enumerated() {
                    if i > 0 { out += "," }
                    write(element)
                }
                trailingComma(after: elements.count)
                space()
                out += "]"
            case .object(let members):
                out += "{"
                for (i, member) in members.enumerated() {
                    if i > 0 { out += "," }
                    space()
                    writeString(member.key)
                    space()
                    out += ":"
                    write(member.value)
                }
                trailingComma(after: members.count)
                space()
                out += "}"
            }
            space()
        }
        write(value)
        return out
    }

    static let mutationBytes: [UInt8] =
        Array("[]{}\",:\\ \t\n\r0123456789-+.eEtfnulrsaxu/".utf8)
        + [0x00, 0x01, 0x0B, 0x0C, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xF5, 0xFE, 0xFF]

    /// `bytes` with one to three random deletions, insertions or replacements.
    static func mutate<R: RandomNumberGenerator>(_ bytes: [UInt8], using random: inout R) -> [UInt8] {
        var result = bytes
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let index = Int.random(in: 0...result.count, using: &random)
            let byte =
                Bool.random(using: &random)
                ? pick(mutationBytes, using: &random) : UInt8.random(in: 0...255, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0 where index < result.count: result.remove(at: index)
            case 1 where index < result.count: result[index] = byte
            default: result.insert(byte, at: index)
            }
        }
        return result
    }
}

/// A value in a form both readers can be brought to.
indirect enum JSONTestNormalized: CustomStringConvertible {
    case null
    case bool(Bool)
    /// Our numbers: the Double and the literal.
    case number(Double, literal: String)
    /// Foundation's numbers that fit a Double or an integer type.
    case foundationNumber(NSNumber)
    /// Foundation's NSDecimalNumber (for literals with many digits).
    case decimal(Decimal)
    case string(String)
    case array([JSONTestNormalized])
    case object([String: JSONTestNormalized])

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): "\(b)"
        case .number(let d, let literal): "\(literal) (\(d))"
        case .foundationNumber(let n): "\(n) (\(n.doubleValue))"
        case .decimal(let d): "decimal \(d)"
        case .string(let s): s.debugDescription
        case .array(let a): "[\(a.map(\.description).joined(separator: ", "))]"
        case .object(let o): "{\(o.sorted { $0.key < $1.key }.map { "\($0.key.debugDescription): \($0.value)" }.joined(separator: ", "))}"
        }
    }

    /// Ours.
    ///
    /// Duplicate keys: the last one wins, as in Foundation (`{"a":1,"a":2}` gives `["a": 2]`).
    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let n): self = .number(n.doubleValue, literal: n.literal)
        case .string(let s): self = .string(s)
        case .array(let a): self = .array(a.map(JSONTestNormalized.init))
        case .object(let members):
            var dictionary: [String: JSONTestNormalized] = [:]
            for member in members { dictionary[member.key] = JSONTestNormalized(member.value) }
            self = .object(dictionary)
        }
    }

    /// Foundation's.
    ///
    /// On Linux, `true`/`false` come back as NSNumber too (`__NSCFBoolean`, objCType "c"), while JSON
    /// numbers come back with objCType "i", "q", "Q" or "d", or as NSDecimalNumber.
    init?(foundation any: Any) {
        switch any {
        case is NSNull: self = .null
        case let s as String: self = .string(s)
        case let d as NSDecimalNumber: self = .decimal(d.decimalValue)
        case let n as NSNumber:
            self = String(cString: n.objCType) == "c" ? .bool(n.boolValue) : .foundationNumber(n)
        case let a as [Any]:
            var elements: [JSONTestNormalized] = []
            for element in a {
                guard let normalized = JSONTestNormalized(foundation: element) else { return nil }
                elements.append(normalized)
            }
            self = .array(elements)
        case let o as [String: Any]:
            var dictionary: [String: JSONTestNormalized] = [:]
            for (key, value) in o {
                guard let normalized = JSONTestNormalized(foundation: value) else { return nil }
                dictionary[key] = normalized
            }
            self = .object(dictionary)
        default: return nil
        }
    }

    /// `nil` when ours (`self`) matches Foundation's, else the first difference.
    func difference(from theirs: JSONTestNormalized, path: String = "$") -> String? {
        switch (self, theirs) {
        case (.null, .null): return nil
        case (.bool(let a), .bool(let b)): return a == b ? nil : "\(path): \(a) vs \(b)"
        case (.number(let d, _), .foundationNumber(let n)):
            // Integers: compare exactly when both are integers that fit Int64; else the Double.
            return d == n.doubleValue ? nil : "\(path): \(self) vs \(n) (\(n.doubleValue))"
        case (.number(_, let literal), .decimal(let decimal)):
            // Foundation keeps literals with many digits as Decimal: compare as decimals.
            return Decimal(string: literal) == decimal ? nil : "\(path): \(literal) vs decimal \(decimal)"
        case (.string(let a), .string(let b)):
            return a.unicodeScalars.elementsEqual(b.unicodeScalars) ? nil : "\(path): \(a.debugDescription) vs \(b.debugDescription)"
        case (.array(let a), .array(let b)):
            guard a.count == b.count else { return "\(path): \(a.count) elements vs \(b.count)" }
            for (i, (x, y)) in zip(a, b).enumerated() {
                if let difference = x.difference(from: y, path: "\(path)[\(i)]") { return difference }
            }
            return nil
        case (.object(let a), .object(let b)):
            guard Set(a.keys) == Set(b.keys) else { return "\(path): keys \(a.keys.sorted()) vs \(b.keys.sorted())" }
            for (key, value) in a.sorted(by: { $0.key < $1.key }) {
                guard let other = b[key] else { return "\(path): no key \(key.debugDescription)" }
                if let difference = value.difference(from: other, path: "\(path).\(key.debugDescription)") { return difference }
            }
            return nil
        default: return "\(path): \(self) vs \(theirs)"
        }
    }

    var hasNonFiniteNumber: Bool {
        switch self {
        case .number(let d, _): !d.isFinite
        case .array(let a): a.contains { $0.hasNonFiniteNumber }
        case .object(let o): o.values.contains { $0.hasNonFiniteNumber }
        default: false
        }
    }
}

enum JSONTestDifferential {
    /// Reads `bytes` with our reader (strict and lenient) and with `JSONSerialization` (fragments allowed)
    /// and returns every disagreement.
    ///
    /// Where Foundation on Linux (swift-corelibs-foundation, Swift 6.3) departs from RFC 8259, checked by hand:
    /// 1. It accepts one trailing comma before `]` or `}` (`[1,]`, `{"a":1,}`; not `[1,,]`, `[,]`), as Apple's
    ///    Foundation does. That is exactly our lenient mode, so Foundation is compared with lenient mode, and
    ///    strict mode must agree with lenient mode except that it refuses each trailing comma.
    /// 2. It guesses the encoding and reads UTF-16/UTF-32 (a NUL among the first two bytes, or an FE FF / FF FE
    ///    byte order mark: `00 31` is read as `1`). We refuse such input (only UTF-8, docs/cli.md §2); such inputs
    ///    are only checked for our refusal.
    /// 3. It refuses numbers whose magnitude overflows Double ("Number 1e400 is not representable in Swift").
    ///    RFC 8259 §6 allows any range; we accept them with doubleValue ±infinity. Excluded exactly when
    ///    Foundation says "not representable" and our value holds a non-finite number.
    struct Exceptions {
        var trailingCommas = 0
        var encodings = 0
        var overflows = 0
    }

    static func problems(_ bytes: [UInt8]) -> [String] {
        var stats = Exceptions()
        return problems(bytes, &stats)
    }

    static func problems(_ bytes: [UInt8], _ stats: inout Exceptions) -> [String] {
        var problems: [String] = []
        let strict = JSONTestSupport.parse(bytes, JSONTestSupport.strict)
        let lenient = JSONTestSupport.parse(bytes, JSONTestSupport.lenient)
        problems += JSONTestSupport.positionProblems(bytes, strict).map { "strict: \($0)" }
        problems += JSONTestSupport.positionProblems(bytes, lenient).map { "lenient: \($0)" }

        // Strict and lenient agree, up to trailing commas.
        switch (strict, lenient) {
        case (.success(let s), .success(let l)):
            if !s.warnings.isEmpty || !l.warnings.isEmpty { problems.append("warnings without trailing commas: \(l.warnings)") }
            if s.value != l.value { problems.append("strict and lenient values differ") }
        case (.failure(let error), .success(let l)):
            stats.trailingCommas += 1
            let message = (error as? JSONSyntaxError)?.message ?? "\(error)"
            if l.warnings.isEmpty || !message.contains("trailing comma at \(l.warnings[0].position)") {
                problems.append("strict refused (\(message)) what lenient accepted with warnings \(l.warnings)")
            }
        case (.success, .failure(let error)):
            problems.append("lenient refused what strict accepted: \(error)")
        case (.failure, .failure):
            break
        }

        // Exception 2: UTF-16/UTF-32.
        let prefix = Array(bytes.prefix(2))
        if prefix.contains(0) || prefix == [0xFE, 0xFF] || prefix == [0xFF, 0xFE] {
            stats.encodings += 1
            let message = (JSONTestSupport.syntaxError(bytes))?.message ?? ""
            if !message.hasPrefix("input is UTF-16 or UTF-32") { problems.append("UTF-16/32 not refused: \(message)") }
            return problems
        }

        let foundation = Result { try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) }
        switch (lenient, foundation) {
        case (.success(let ours), .success(let theirs)):
            guard let normalized = JSONTestNormalized(foundation: theirs) else {
                problems.append("Foundation returned an unexpected type: \(type(of: theirs))")
                break
            }
            if let difference = JSONTestNormalized(ours.value).difference(from: normalized) {
                problems.append("values differ: \(difference)")
            }
        case (.failure(let error), .success(let theirs)):
            problems.append("we refused (\(error)), Foundation accepted \(theirs)")
        case (.success(let ours), .failure(let error)):
            // Exception 3: numbers beyond Double's range.
            if "\(error)".contains("is not representable in Swift"), JSONTestNormalized(ours.value).hasNonFiniteNumber {
                stats.overflows += 1
                break
            }
            problems.append("we accepted, Foundation refused: \(error)")
        case (.failure, .failure):
            break
        }
        return problems
    }

    static func describe(_ bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text.debugDescription }
        return bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
    }
}

@Suite("JSON reader vs Foundation JSONSerialization")
struct JSONReaderDifferentialTests {
    static let handWrittenDocuments: [String] = [
        #"{"a": [1, 2.5, -3e2, true, false, null, "x"], "b": {"c": {}}}"#,
        #""\u00e9\ud83d\ude00\/""#, "[]", "{}", "  [ { } , [ ] ]  ", "123", "-0.0", "1E400", "[1,]", #"{"a":1,}"#,
        #"{"a":1,"a":2}"#, "\u{FEFF}[1]", "[1 2]", #"{"a"}"#, #"["\x"]"#, "[01]", "[1,,]", "", " ", "\"\\uD800\"",
        """
        [
            {
                "name": "Turtle Rock",
                "id": 1001,
                "isFeatured": true,
                "coordinates": { "longitude": -116.166868, "latitude": 34.011286 },
                "imageName": "turtlerock"
            }
        ]
        """,
        "[12345678901234567890.5, 123456789012345678901234567890, 9223372036854775808, -9223372036854775809]",
    ]

    @Test("hand-written documents", arguments: handWrittenDocuments)
    func handWritten(_ text: String) {
        let problems = JSONTestDifferential.problems(Array(text.utf8))
        #expect(problems.isEmpty, "\(text.debugDescription): \(problems)")
    }

    @Test("2000 random documents and 2000 random mutations of them")
    func random() {
        let seed = ProcessInfo.processInfo.environment["JSON_DIFFERENTIAL_SEED"].flatMap { UInt64($0) } ?? 20_261_130
        var random = SplitMix64(seed: seed)
        var documents: [[UInt8]] = []
        var failures: [String] = []
        var accepted = 0
        var refused = 0
        var exceptions = JSONTestDifferential.Exceptions()
        for _ in 0..<2000 {
            let value = JSONTestDocuments.value(depth: Int.random(in: 0...2, using: &random), using: &random)
            documents.append(Array(JSONTestDocuments.text(value, using: &random).utf8))
        }
        var mutations: [[UInt8]] = []
        for _ in 0..<2000 {
            mutations.append(JSONTestDocuments.mutate(pick(documents, using: &random), using: &random))
        }
        for (kind, batch) in [("document", documents), ("mutation", mutations)] {
            for (i, bytes) in batch.enumerated() {
                let problems = JSONTestDifferential.problems(bytes, &exceptions)
                if !problems.isEmpty && failures.count < 10 {
                    failures.append("\(kind) #\(i) \(JSONTestDifferential.describe(bytes)): \(problems.joined(separator: "; "))")
                }
                if case .success = JSONTestSupport.parse(bytes, JSONTestSupport.lenient) { accepted += 1 } else { refused += 1 }
            }
        }
        #expect(failures.isEmpty, "seed \(seed) (set JSON_DIFFERENTIAL_SEED to replay):\n\(failures.joined(separator: "\n"))")
        // The mutations must really produce both outcomes (counted in lenient mode), or the comparison proves little…
        #expect(accepted > 2000 && refused > 500, "seed \(seed): \(accepted) accepted, \(refused) refused")
        // …and the documented exceptions must really occur, or their exclusions are untested.
        #expect(exceptions.trailingCommas > 0 && exceptions.overflows > 0, "seed \(seed): \(exceptions)")
    }

    static let landmarks = JSONTestSupport.sharedFixtures("landmarks")

    /// Where Python's `json` module reports the trailing comma (`Expecting property name enclosed in
    /// double quotes: line 106 column 5 (char 2845)`), and where the comma itself is (SOURCES.md).
    static let trailingCommaFiles: [String: (error: SourcePosition, comma: SourcePosition)] = [
        "landmarkData.apple-2019.featured3.trailing-comma.json":
            (SourcePosition(line: 106, column: 5, offset: 2845), SourcePosition(line: 105, column: 37, offset: 2839)),
        "landmarkData.apple-2019.featured4.trailing-comma.json":
            (SourcePosition(line: 106, column: 5, offset: 2845), SourcePosition(line: 105, column: 37, offset: 2839)),
        "landmarkData.user.isFavourite-spelling.trailing-comma.json":
            (SourcePosition(line: 106, column: 5, offset: 2852), SourcePosition(line: 105, column: 37, offset: 2846)),
    ]

    @Test(
        "landmark fixtures (../shared/fixtures/landmarks)",
        .enabled(if: landmarks != nil, "../shared/fixtures/landmarks not found"),
        arguments: JSONTestSupport.jsonFiles(in: landmarks))
    func landmarkFixture(_ name: String) throws {
        let bytes = try JSONTestSupport.bytes(of: try #require(JSONReaderDifferentialTests.landmarks).appendingPathComponent(name))
        let problems = JSONTestDifferential.problems(bytes)
        #expect(problems.isEmpty, "\(problems)")
        let lenient = try JSONTestSupport.parse(bytes, JSONTestSupport.lenient).get()
        guard case .array(let records) = lenient.value else {
            Issue.record("\(name) is not an array")
            return
        }
        #expect(records.count >= 8)
        if let expected = JSONReaderDifferentialTests.trailingCommaFiles[name] {
            let error = try #require(JSONTestSupport.syntaxError(bytes))
            #expect(error.position == expected.error)
            #expect(error.message == "expected a string key after ',', found '}' (trailing comma at 105:37)")
            #expect(lenient.warnings == [JSONWarning(message: "trailing comma before '}'", position: expected.comma)])
        } else {
            #expect(JSONTestSupport.syntaxError(bytes) == nil)
            #expect(lenient.warnings.isEmpty)
        }
    }

    @Test(
        "the trailing-comma table names files that exist",
        .enabled(if: landmarks != nil, "../shared/fixtures/landmarks not found"))
    func trailingCommaTable() {
        let names = Set(JSONTestSupport.jsonFiles(in: JSONReaderDifferentialTests.landmarks))
        #expect(Set(JSONReaderDifferentialTests.trailingCommaFiles.keys).isSubset(of: names))
    }
}

/// One element of `choices` (which must not be empty), drawn as `randomElement(using:)` draws it, so
/// a seed gives the same documents as before.
private func pick<C: Collection, R: RandomNumberGenerator>(_ choices: C, using random: inout R) -> C.Element {
    choices[choices.index(choices.startIndex, offsetBy: Int.random(in: 0..<choices.count, using: &random))]
}
