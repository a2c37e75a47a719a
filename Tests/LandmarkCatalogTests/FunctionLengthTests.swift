import CatalogTestSupport
import Foundation
import Testing

/// Function bodies stay short enough to read in one screen: no function in `Sources/` is longer than
/// ``FunctionLengthTests/limit`` lines, except the hot decoding loops named in ``FunctionLengthTests/hotLoops``
/// (splitting them costs speed).
@Suite("Function length")
struct FunctionLengthTests {
    /// The most lines a function's body may span, from its opening brace to its closing one.
    static let limit = 80

    /// `file name: function` of the decoding loops allowed to be longer: the import and snapshot decoders'
    /// inner loops.
    static let hotLoops: Set<String> = [
        "LandmarkDecoder.swift: decode", "SnapshotDecoder.swift: run", "SnapshotDecoder.swift: readPosition",
    ]

    @Test("no function in Sources is longer than 80 lines, outside the hot decoding loops")
    func noLongFunctions() throws {
        var long: [String] = []
        for file in try TableHomeTests.sources() {
            let name = URL(fileURLWithPath: file.path).lastPathComponent
            for function in FunctionLengths.measure(file.text) where function.lines > Self.limit {
                guard !Self.hotLoops.contains("\(name): \(function.name)") else { continue }
                long.append("\(file.path):\(function.line): \(function.name), \(function.lines) lines")
            }
        }
        #expect(long.isEmpty, "split by what each part does: \(long)")
    }

    @Test("the count can fail: a planted 81-line body is over; braces in strings and comments, and requirements, do not count")
    func plantedFunction() {
        let body = (1...78).map { "    let x\($0) = \"}\" // {\n" }.joined()
        let text = """
            protocol P {
                func requirement() -> Int
            }
            struct S {
                @discardableResult
                static func long(_ a: (Int) -> Void) -> Int {
            \(body)    return 0
                }
                func short<T>(_ t: T) { let s = \"\"\"
                    {{{
                    \"\"\"
                    print(s) }
            }
            """
        let measured = FunctionLengths.measure(text)
        #expect(measured.map(\.name) == ["long", "short"])
        #expect(measured.first { $0.name == "long" }?.lines == 81)
        #expect(measured.first { $0.name == "short" }?.lines == 4)
        #expect(measured.filter { $0.lines > Self.limit }.map(\.name) == ["long"])
    }
}

/// The lines of each function's body in Swift source, counted from the body's opening brace to its closing
/// one (both lines included); braces inside string literals and `//` comments are skipped, and a
/// requirement (no body) is not a function.
enum FunctionLengths {
    /// A line that declares a func or an init (attributes and modifiers before it).
    nonisolated(unsafe) static let declaration =
        #/[ \t]*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|static|final|override|nonisolated|mutating|class)\s+)*(?:func\s+(\w+)|(init)[?!]?)\s*[(<]/#

    /// Each function in `text`: its name, the line it is declared on (1-based) and its body's lines.
    static func measure(_ text: String) -> [(name: String, line: Int, lines: Int)] {
        let bytes = Array(text.utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var starts: [Int] = []
        var offset = 0
        for line in lines {
            starts.append(offset)
            offset += line.utf8.count + 1
        }
        let declared: [(line: Int, name: String)] = lines.enumerated().compactMap { n, line in
            guard let match = line.prefixMatch(of: declaration) else { return nil }
            return (n, String(match.output.1 ?? match.output.2 ?? ""))
        }
        var found: [(name: String, line: Int, lines: Int)] = []
        for (index, declaration) in declared.enumerated() {
            guard let open = bytes[starts[declaration.line]...].firstIndex(of: UInt8(ascii: "(")) else { continue }
            let close = matchingParenthesis(bytes, from: open)
            guard let brace = bytes[close...].firstIndex(of: UInt8(ascii: "{")) else { continue }
            // A declaration or a closing brace before the brace: this one was a requirement, without a body.
            if declared[(index + 1)...].contains(where: { starts[$0.line] >= close && starts[$0.line] < brace }) { continue }
            if bytes[close..<brace].contains(UInt8(ascii: "}")) { continue }
            let end = blockEnd(bytes, from: brace)
            let newlines = bytes[brace..<end].filter { $0 == 0x0A }.count
            found.append((declaration.name, declaration.line + 1, newlines + 1))
        }
        return found
    }

    /// The index of the `)` that closes the `(` at `open` (the end of the text when none does).
    static func matchingParenthesis(_ bytes: [UInt8], from open: Int) -> Int {
        var depth = 0
        var k = open
        while k < bytes.count {
            if bytes[k] == UInt8(ascii: "(") { depth += 1 }
            if bytes[k] == UInt8(ascii: ")") { depth -= 1 }
            if depth == 0 { return k }
            k += 1
        }
        return bytes.count - 1
    }

    /// The index of the `}` that closes the `{` at `open`, skipping string literals and line comments.
    static func blockEnd(_ bytes: [UInt8], from open: Int) -> Int {
        let quote = UInt8(ascii: "\"")
        var depth = 0
        var j = open
        func starts(with text: String, at i: Int) -> Bool { bytes[i...].starts(with: Array(text.utf8)) }
        while j < bytes.count {
            let c = bytes[j]
            if c == quote {
                if starts(with: "\"\"\"", at: j) {
                    var k = j + 3
                    while k < bytes.count && !starts(with: "\"\"\"", at: k) { k += 1 }
                    j = k + 3
                    continue
                }
                var k = j + 1
                while k < bytes.count && bytes[k] != quote && bytes[k] != 0x0A { k += bytes[k] == UInt8(ascii: "\\") ? 2 : 1 }
                j = k + 1
                continue
            }
            if starts(with: "//", at: j) {
                j = bytes[j...].firstIndex(of: 0x0A) ?? bytes.count
                continue
            }
            if c == UInt8(ascii: "{") { depth += 1 }
            if c == UInt8(ascii: "}") {
                depth -= 1
                if depth == 0 { return j }
            }
            j += 1
        }
        return bytes.count - 1
    }
}
