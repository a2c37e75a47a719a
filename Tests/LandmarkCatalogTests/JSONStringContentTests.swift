import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// Strings whose end is well delimited but whose content is bad: `JSONStringContentError`, after which the
/// reader goes on.
@Suite("JSON reader: recoverable string content errors")
struct JSONStringContentTests {
    static func reader(_ bytes: [UInt8]) -> JSONPullReader { JSONPullReader(bytes: bytes, options: JSONTestSupport.strict) }
    static func reader(_ text: String) -> JSONPullReader { reader(Array(text.utf8)) }

    /// The content error `body` throws, or nil (recording an issue) when it throws something else or nothing.
    static func contentError(_ body: () throws -> Void) -> JSONStringContentError? {
        do {
            try body()
            Issue.record("no error")
        } catch let error as JSONStringContentError {
            return error
        } catch {
            Issue.record("not a JSONStringContentError: \(error)")
        }
        return nil
    }

    @Test("a lone surrogate in a string value: readString throws, then the next key is read")
    func loneSurrogateValue() throws {
        let r = Self.reader(#"{"a": "x\ud800y", "b": 1}"#)
        try r.beginObject()
        #expect(try r.nextKey()?.key == "a")
        let error = try #require(Self.contentError { _ = try r.readString() })
        #expect(error.problem == .loneSurrogate)
        #expect(error.found == #"\ud800"#)
        #expect(error.message.hasPrefix(#"lone surrogate \uD800 in string"#))
        #expect(error.position == SourcePosition(line: 1, column: 9, offset: 8))
        #expect(error.stringPosition == SourcePosition(line: 1, column: 7, offset: 6))
        #expect(error.repaired == "x\u{FFFD}y")
        #expect(!error.isKey)
        #expect(error.message(in: "name") == #"name contains a lone surrogate escape \ud800"#)
        let next = try #require(try r.nextKey())
        #expect(next.key == "b")
        #expect(next.position == SourcePosition(line: 1, column: 19, offset: 18))
        #expect(try r.readNumber().int64Value == 1)
        #expect(try r.nextKey() == nil)
        try r.finish()
    }

    @Test(
        "every kind of lone surrogate escape is recoverable; the rest of the string is still decoded",
        arguments: [
            (#"["\uD800", 1]"#, "\u{FFFD}"), (#"["\uD800x", 1]"#, "\u{FFFD}x"), (#"["\uDC00", 1]"#, "\u{FFFD}"),
            (#"["\uD800\u0041", 1]"#, "\u{FFFD}A"), (#"["\uDE00\uD83D", 1]"#, "\u{FFFD}\u{FFFD}"),
            (#"["\uD800\n", 1]"#, "\u{FFFD}\n"), (#"["\uD800\uD800", 1]"#, "\u{FFFD}\u{FFFD}"),
            (#"["\uD83D\uDE00\uD800", 1]"#, "😀\u{FFFD}"),
        ])
    func loneSurrogateKinds(_ testCase: (text: String, repaired: String)) throws {
        let r = Self.reader(testCase.text)
        try r.beginArray()
        #expect(try r.nextElement())
        let error = try #require(Self.contentError { _ = try r.readValue() })
        #expect(error.problem == .loneSurrogate)
        #expect(error.repaired == testCase.repaired)
        #expect(error.message == JSONTestSupport.syntaxError(testCase.text)?.message)
        #expect(error.position == JSONTestSupport.syntaxError(testCase.text)?.position)
        #expect(try r.nextElement())
        #expect(try r.readNumber().int64Value == 1)
        #expect(try r.nextElement() == false)
        try r.finish()
    }

    @Test("invalid UTF-8 in a string: appendString appends nothing, throws, and the next element is read")
    func invalidUTF8Value() throws {
        let bytes = Array(#"["ab"#.utf8) + [0xFF] + Array(#"c", "é", "\#u{1}"]"#.utf8)
        let r = Self.reader(bytes)
        try r.beginArray()
        #expect(try r.nextElement())
        var buffer: [UInt8] = [1, 2]
        let error = try #require(Self.contentError { try r.appendString(to: &buffer) })
        #expect(buffer == [1, 2])
        #expect(error.problem == .invalidUTF8)
        #expect(error.found == "0xFF")
        #expect(error.message == "invalid UTF-8: 0xFF cannot start a character")
        #expect(error.position == SourcePosition(line: 1, column: 5, offset: 4))
        #expect(error.repaired == "ab\u{FFFD}c")
        #expect(error.message(in: "name") == "invalid UTF-8 in name (0xFF)")
        #expect(try r.nextElement())
        let position = r.position
        #expect(position == SourcePosition(line: 1, column: 10, offset: 9))
        #expect(try r.readString() == "é")
        // A raw control character is a content error too.
        #expect(try r.nextElement())
        let control = try #require(Self.contentError { _ = try r.readString() })
        #expect(control.problem == .controlCharacter)
        #expect(control.found == "U+0001")
        #expect(control.repaired == "\u{1}")
        #expect(try r.nextElement() == false)
        try r.finish()
    }

    @Test(
        "ill-formed sequences are skipped by their maximal subpart, so a quote that cuts one short ends the string",
        arguments: [
            ([0xE2, 0x82], "\u{FFFD}", "0xE2 0x82"), ([0xC0, 0xAF], "\u{FFFD}\u{FFFD}", "0xC0"),
            ([0xED, 0xA0, 0x80], "\u{FFFD}\u{FFFD}\u{FFFD}", "0xED"), ([0xF4, 0x90, 0x80, 0x80], "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}", "0xF4"),
            ([0xF0, 0x9F, 0x98, 0x41], "\u{FFFD}A", "0xF0 0x9F 0x98"), ([0x80, 0xBF], "\u{FFFD}\u{FFFD}", "0x80"),
        ] as [([UInt8], String, String)])
    func maximalSubparts(_ testCase: (bytes: [UInt8], repaired: String, found: String)) throws {
        let bytes = Array("[\"".utf8) + testCase.bytes + Array("\",\n \"z\"]".utf8)
        let r = Self.reader(bytes)
        try r.beginArray()
        #expect(try r.nextElement())
        let error = try #require(Self.contentError { _ = try r.readString() })
        #expect(error.repaired == testCase.repaired)
        #expect(error.found == testCase.found)
        #expect(try r.nextElement())
        // Columns after the bad bytes still count every byte that is not a continuation byte.
        #expect(r.position == JSONTestSupport.expectedPosition(in: bytes, offset: bytes.count - 4))
        #expect(try r.readString() == "z")
        #expect(try r.nextElement() == false)
        try r.finish()
    }

    @Test("a key with a lone surrogate or invalid UTF-8: nextKey throws with the reader at its value")
    func badKeys() throws {
        let bytes = Array(#"{"k\udc00": 1, "#.utf8) + [0x22, 0x6B, 0xE9, 0x22] + Array(#" : [true], "id": 7}"#.utf8)
        let r = Self.reader(bytes)
        try r.beginObject()
        let first = try #require(Self.contentError { _ = try r.nextKey() })
        #expect(first.isKey)
        #expect(first.problem == .loneSurrogate)
        #expect(first.repaired == "k\u{FFFD}")
        #expect(first.stringPosition == SourcePosition(line: 1, column: 2, offset: 1))
        #expect(try r.readNumber().int64Value == 1)
        let table = JSONKeyTable(["id", "name"])
        let second = try #require(Self.contentError { _ = try r.nextKey(in: table) })
        #expect(second.isKey)
        #expect(second.problem == .invalidUTF8)
        #expect(second.found == "0xE9")
        #expect(second.repaired == "k\u{FFFD}")
        try r.skipValue()
        let id = try #require(try r.nextKey(in: table))
        #expect(id.index == 0 && id.key == nil)
        #expect(try r.readNumber().int64Value == 7)
        #expect(try r.nextKey(in: table) == nil)
        try r.finish()
    }

    @Test("skipValue of a string element throws the content error and goes on; of an array, a syntax error")
    func skipping() throws {
        let r = Self.reader(#"[{"a": "\ud800"}, "\ud800", ["\ud800"]]"#)
        try r.beginArray()
        #expect(try r.nextElement())
        try r.beginObject()
        #expect(try r.nextKey()?.key == "a")
        #expect(Self.contentError { try r.skipValue() }?.repaired == nil)
        #expect(try r.nextKey() == nil)
        #expect(try r.nextElement())
        #expect(Self.contentError { try r.skipValue() } != nil)
        #expect(try r.nextElement())
        let error = #expect(throws: JSONSyntaxError.self) { try r.skipValue() }
        #expect(error?.message.hasPrefix("lone surrogate") == true)
        #expect(error?.position == SourcePosition(line: 1, column: 31, offset: 30))
    }

    @Test("readValue of an array or object, or of the top-level string, refuses bad content as a syntax error")
    func wholeValues() throws {
        let r = Self.reader(#"[{"a": ["\ud800"]}]"#)
        try r.beginArray()
        #expect(try r.nextElement())
        #expect(throws: JSONSyntaxError.self) { try r.readValue() }
        for text in [#""\ud800""#, #"{"\ud800": 1}"#, "[\"a\nb\"]"] {
            let error = try #require(JSONTestSupport.syntaxError(text), "\(text)")
            #expect(error.message.hasPrefix("lone surrogate") || error.message.hasPrefix("unescaped control character"))
        }
        // A top-level string read on its own is recoverable, like any other.
        let top = Self.reader(#"  "\ud800"  "#)
        #expect(Self.contentError { _ = try top.readString() } != nil)
        try top.finish()
    }

    @Test("a raw LF inside a string ends a line for the positions that follow")
    func newlineInString() throws {
        let r = Self.reader("{\"a\": \"x\ny😀\",\n \"b\": 2}")
        try r.beginObject()
        #expect(try r.nextKey()?.key == "a")
        let error = try #require(Self.contentError { _ = try r.readString() })
        #expect(error.problem == .controlCharacter)
        #expect(error.found == "U+000A")
        #expect(error.position == SourcePosition(line: 1, column: 9, offset: 8))
        let next = try #require(try r.nextKey())
        #expect(next.key == "b")
        #expect(next.position == SourcePosition(line: 3, column: 2, offset: 18))
        #expect(try r.readNumber().int64Value == 2)
    }

    @Test(
        "a string that is also unterminated or badly escaped stays a syntax error, with its first problem",
        arguments: [
            #"["\ud800"#, #"["\ud800 abc"#, #"["\ud800\x"]"#, #"["\ud800x\u12"]"#, "[\"\u{1}\\q\"]",
        ])
    func brokenAfterBadContent(_ text: String) throws {
        let r = Self.reader(text)
        try r.beginArray()
        #expect(try r.nextElement())
        let error = #expect(throws: JSONSyntaxError.self) { try r.readString() }
        #expect(error?.position == SourcePosition(line: 1, column: 3, offset: 2))
        #expect(error?.message.hasPrefix("lone surrogate") == true || error?.message.hasPrefix("unescaped control") == true)
    }

    @Test("recovery gives the same errors and values at every chunk boundary")
    func chunkBoundaries() throws {
        let bytes = Array(#"{"a": "é\ud800😀"#.utf8) + [0xF0, 0x9F, 0x41] + Array(#"", "k\uDC00": "😀\n", "b": ["z"]}"#.utf8)
        func read(_ r: JSONPullReader) throws -> [String] {
            var log: [String] = []
            try r.beginObject()
            while true {
                let key: String
                do {
                    guard let next = try r.nextKey() else { break }
                    key = next.key
                } catch let error as JSONStringContentError {
                    key = "bad key \(error.repaired ?? "") at \(error.position) (\(error.stringPosition))"
                }
                do {
                    log.append("\(key) = \(try r.readValue())")
                } catch let error as JSONStringContentError {
                    log.append("\(key): \(error) [\(error.repaired ?? "")] \(error.found) from \(error.stringPosition)")
                }
            }
            try r.finish()
            return log
        }
        let expected = try read(Self.reader(bytes))
        #expect(expected.count == 3)
        for size in 1...24 {
            let log = try JSONTestSupport.withTemporaryFile(bytes) { fd in
                try read(JSONPullReader(fileDescriptor: fd, options: JSONTestSupport.strict, bufferSize: size))
            }
            #expect(log == expected, "buffer size \(size)")
        }
    }

    /// Walks a document with the pull API, catching content errors and going on, and logs what it meets;
    /// every position it meets must agree with ``JSONTestSupport/expectedPosition(in:offset:)``.
    static func walk(_ bytes: [UInt8], _ r: JSONPullReader, _ problems: inout [String]) -> [String] {
        var log: [String] = []
        func check(_ position: SourcePosition, _ what: String) {
            let expected = JSONTestSupport.expectedPosition(in: bytes, offset: position.offset)
            if expected != position { problems.append("\(what) at \(position), expected \(expected)") }
        }
        func content(_ error: JSONStringContentError) {
            check(error.position, "content error")
            check(error.stringPosition, "string start")
            log.append("content \(error.problem) \(error.found) \(error.repaired ?? "-") \(error.position) \(error.stringPosition)")
        }
        func value() throws {
            switch try r.peekKind() {
            case .object:
                try r.beginObject()
                while true {
                    do {
                        guard let (key, position) = try r.nextKey() else { break }
                        check(position, "key")
                        log.append("key \(key) \(position)")
                    } catch let error as JSONStringContentError {
                        content(error)
                    }
                    try value()
                }
            case .array:
                try r.beginArray()
                while try r.nextElement() { try value() }
            case .string:
                do { log.append("string \(try r.readString())") } catch let error as JSONStringContentError { content(error) }
            default:
                log.append("\(try r.readValue())")
            }
        }
        do {
            try value()
            try r.finish()
        } catch {
            log.append("stop: \(error)")
        }
        return log
    }

    @Test("walking 400 mutated documents with recovery: the same log in memory and through tiny buffers, right positions")
    func randomWalks() throws {
        var random = SplitMix64(seed: 20_261_201)
        var problems: [String] = []
        var recovered = 0
        for i in 0..<400 {
            let value = JSONTestDocuments.value(depth: Int.random(in: 0...2, using: &random), using: &random)
            var bytes = Array(JSONTestDocuments.text(value, using: &random).utf8)
            // Mostly bytes that break string content: control characters, stray UTF-8, surrogate escapes.
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let at = Int.random(in: 0...bytes.count, using: &random)
                let inserted: [[UInt8]] = [
                    [0x01], [0x0A], [0xFF], [0xC3], [0xE2, 0x82], [0xED, 0xA0, 0x80], Array(#"\ud800"#.utf8), Array(#"\uDC00"#.utf8), [0x22],
                ]
                bytes.insert(contentsOf: inserted.randomElement(using: &random)!, at: at)
            }
            let expected = Self.walk(bytes, Self.reader(bytes), &problems)
            if expected.contains(where: { $0.hasPrefix("content") }) { recovered += 1 }
            for size in [1, 3, 8] {
                var ignored: [String] = []
                let log = try JSONTestSupport.withTemporaryFile(bytes) { fd in
                    Self.walk(bytes, JSONPullReader(fileDescriptor: fd, options: JSONTestSupport.strict, bufferSize: size), &ignored)
                }
                if log != expected && problems.count < 10 {
                    problems.append("document #\(i) \(JSONTestDifferential.describe(bytes)), buffer \(size): \(log) vs \(expected)")
                }
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10).joined(separator: "\n"))")
        #expect(recovered > 50, "only \(recovered) documents had a recovered content error")
    }
}

@Suite("Import: string content errors name the record")
struct ImportStringContentTests {
    static func importFile(_ bytes: [UInt8]) throws -> (CLIResult, String) {
        let file = Support.temporaryDirectory().appending(path: "bad.json")
        try Data(bytes).write(to: file)
        let db = Support.temporaryDatabase()
        return (runCLI(["import", file.path], db: db), db)
    }

    @Test("a lone surrogate in name, before id: exit 65, the field and the record's id named")
    func loneSurrogateInName() throws {
        let (result, db) = try Self.importFile(Array(#"[{"name":"\ud800","id":7,"coordinates":{"latitude":1,"longitude":2}}]"#.utf8))
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stdout == "")
        #expect(result.stderr.contains(#"name contains a lone surrogate escape \ud800"#), "\(result.stderr)")
        #expect(result.stderr.contains("bad.json:1:11"), "\(result.stderr)")
        #expect(result.stderr.contains("record 0 (id 7)"), "\(result.stderr)")
        #expect(result.stderr.contains("field name"), "\(result.stderr)")
        #expect(try dumpLandmarks(db).isEmpty)
    }

    @Test("invalid UTF-8 bytes in name, before id: exit 65, the field and the record's id named")
    func invalidUTF8InName() throws {
        let bytes = Array(#"[{"name":"Half "#.utf8) + [0xC3, 0x28] + Array(#"Dome","id":7,"coordinates":{"latitude":1,"longitude":2}}]"#.utf8)
        let (result, db) = try Self.importFile(bytes)
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("invalid UTF-8 in name (0xC3)"), "\(result.stderr)")
        #expect(result.stderr.contains("record 0 (id 7)"), "\(result.stderr)")
        #expect(result.stderr.contains("field name"), "\(result.stderr)")
        #expect(try dumpLandmarks(db).isEmpty)
    }

    @Test("bad content in other fields, unknown keys and keys is reported per field and the rest is still checked")
    func otherFields() throws {
        let bytes =
            Array(#"[{"city":"\udc00","url":"\ud800","id":8,"name":"A","coordinates":{"latitude":1,"longitude":2}},"#.utf8)
            + Array(#" {"n"#.utf8) + [0xFF]
            + Array(#"":1,"id":9,"name":"B","isFeatured":"\ud800","coordinates":{"latitude":91,"longitude":2}},"#.utf8)
            + Array(#" {"id":10,"name":"C","coordinates":{"latitude":1,"longitude":2}}]"#.utf8)
        let (result, _) = try Self.importFile(bytes)
        #expect(result.status == 65, "\(result.stderr)")
        for text in [
            #"city contains a lone surrogate escape \udc00"#, "record 0 (id 8), field city",
            #"url contains a lone surrogate escape \ud800"#, "record 0 (id 8), field url",
            "invalid UTF-8 in key 'n\u{FFFD}' (0xFF)", "record 1 (id 9), field n\u{FFFD}",
            #"isFeatured contains a lone surrogate escape \ud800"#, "record 1 (id 9), field isFeatured",
            "latitude 91 is outside", "5 errors",
        ] {
            #expect(result.stderr.contains(text), "missing \(text) in: \(result.stderr)")
        }
        #expect(!result.stderr.contains("record 2"), "\(result.stderr)")
    }
}
