import CatalogTestSupport
import Foundation
import Testing

@testable import CatalogCLI
@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

@Suite("RFC 3339 timestamps")
struct TimestampTests {
    @Test(
        "parses to the instant in ms, applying offsets",
        arguments: [
            ("2026-11-30T01:02:03.456Z", 1_796_000_523_456),
            ("2026-11-30T02:02:03.456+01:00", 1_796_000_523_456),
            ("2026-11-29T20:32:03.456-04:30", 1_796_000_523_456),
            ("2026-11-30t01:02:03.456z", 1_796_000_523_456),
            ("2026-11-30T01:02:03Z", 1_796_000_523_000),
            ("2026-11-30T01:02:03.4567891Z", 1_796_000_523_456),
            ("2026-11-30T01:02:03.4Z", 1_796_000_523_400),
            ("1970-01-01T00:00:00Z", 0),
            ("1969-12-31T23:59:59.999Z", -1),
            ("2024-02-29T00:00:00Z", 1_709_164_800_000),
        ] as [(String, Int64)])
    func parses(_ pair: (String, Int64)) {
        #expect(Timestamp.parse(pair.0) == pair.1)
    }

    @Test(
        "refuses what is not an RFC 3339 date-time",
        arguments: [
            "2026-11-30", "2026-11-30T01:02:03", "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
            "2026-11-30T24:00:00Z", "2026-11-30T01:02:03.Z", "2026-11-30T01:02:03+0100", "2026-11-30 01:02:03Z", "yesterday", "",
            "2026-11-30T01:02:03Z trailing",
        ])
    func refuses(_ text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test(
        "formats ms as UTC with three fraction digits and parses back",
        arguments: [
            Int64(0), -1, 1_796_000_523_456, 951_782_400_000, 4_102_444_799_999,
        ])
    func roundTrip(_ ms: Int64) {
        let text = Timestamp.format(milliseconds: ms)
        #expect(text.hasSuffix("Z"))
        #expect(text.count == 24)
        #expect(Timestamp.parse(text) == ms)
    }

    @Test("known instants: the epoch, the ms before it, a leap day, the last ms of year 9999, day boundaries before 1970")
    func knownInstants() {
        let table: [(Int64, String)] = [
            (0, "1970-01-01T00:00:00.000Z"), (-1, "1969-12-31T23:59:59.999Z"), (-86_400_000, "1969-12-31T00:00:00.000Z"),
            (-86_400_001, "1969-12-30T23:59:59.999Z"), (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"), (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
        ]
        for (ms, text) in table {
            #expect(Timestamp.format(milliseconds: ms) == text, "\(ms)")
            var w = JSONWriter()
            Timestamp.write(milliseconds: ms, to: &w)
            #expect(String(decoding: w.bytes, as: UTF8.self) == "\"\(text)\"")
        }
        // Any Int64 formats without trapping (a stored stamp is an Int64, whatever wrote it).
        for ms in [Int64.min, Int64.min + 1, Int64.max] {
            var w = JSONWriter()
            Timestamp.write(milliseconds: ms, to: &w)
            #expect(!Timestamp.format(milliseconds: ms).isEmpty && w.bytes.count > 2)
        }
    }
}

@Suite("JSON writer")
struct JSONWriterTests {
    @Test("escapes quotes, backslashes and control characters; keeps other text as UTF-8")
    func escaping() throws {
        var w = JSONWriter()
        w.string("a\"b\\c\nd\te\u{1}f é 東京 🏔️ \u{7F}")
        let text = String(decoding: w.bytes, as: UTF8.self)
        #expect(text == #""a\"b\\c\nd\te\u0001f é 東京 🏔️ \#u{7F}""#)
        let decoded = try JSONSerialization.jsonObject(with: Data(w.bytes), options: .fragmentsAllowed) as? String
        #expect(decoded == "a\"b\\c\nd\te\u{1}f é 東京 🏔️ \u{7F}")
    }

    @Test("doubles in shortest round-trip form")
    func doubles() {
        var w = JSONWriter()
        for v in [37.54628069864881, -116.166868, 90.0, -0.0, 1e-7] {
            w.double(v)
            w.byte(0x20)
        }
        #expect(String(decoding: w.bytes, as: UTF8.self) == "37.54628069864881 -116.166868 90.0 -0.0 1e-07 ")
    }
}

@Suite("Suggestions")
struct SuggestTests {
    @Test(
        "nearest spelling with transpositions",
        arguments: [
            ("featrued", "featured"), ("improt", "import"), ("postions", "positions"), ("--jsn", "--json"), ("snyc", "sync"),
        ])
    func suggests(_ pair: (String, String)) {
        let candidates = ["import", "featured", "position", "positions", "sync", "export", "--json", "--db"]
        #expect(Suggest.nearest(to: pair.0, in: candidates) == pair.1)
    }

    @Test("nothing close, no suggestion")
    func none() {
        #expect(Suggest.nearest(to: "frobnicate", in: ["import", "featured"]) == nil)
    }
}

@Suite("Tables")
struct TableTests {
    @Test(
        "display width: Hangul and emoji are two columns, combining marks none",
        arguments: [
            ("Half Dome", 9), ("서울", 4), ("Zoe\u{301}", 3), ("🏔️", 2), ("東京タワー", 10), ("Kīlauea", 7),
        ])
    func width(_ pair: (String, Int)) {
        #expect(Table.displayWidth(pair.0) == pair.1)
    }

    @Test("columns line up by display width")
    func aligned() {
        let text = Table.render([["NAME", "ID"], ["서울", "1"], ["Rome", "2"]])
        #expect(text == "NAME  ID\n서울  1\nRome  2\n")
    }
}

@Suite("Seen ids")
struct SeenIDsTests {
    @Test("runs and out-of-order ids remember each id's first record")
    func remembers() {
        var seen = SeenIDs()
        for (index, id) in [Int64(5), 6, 7, 100, 3, 8].enumerated() {
            #expect(seen.insert(id, index: index) == nil)
        }
        #expect(seen.insert(6, index: 6) == 1)
        #expect(seen.insert(3, index: 7) == 4)
        #expect(seen.insert(8, index: 8) == 5)
        #expect(seen.insert(100, index: 9) == 3)
        #expect(!seen.contains(4))
        #expect(seen.contains(7))
    }
}

@Suite("NodeID and validated stamps: the rule in one place")
struct NodeIDTests {
    @Test("node ids: 1–64 of A–Z a–z 0–9 . _ -, nothing else")
    func nodeIDs() throws {
        for good in ["a", "node-1", "A.b_c-9", String(repeating: "x", count: 64)] { #expect(NodeID(rawValue: good)?.rawValue == good) }
        for bad in ["", String(repeating: "x", count: 65), "a b", "é", "a/b", "n\u{0}"] { #expect(NodeID(rawValue: bad) == nil, "\(bad)") }
        #expect(throws: CatalogError.self) { try NodeID(validating: "a b") }
        do {
            _ = try NodeID(validating: "a b", what: "remote name")
        } catch let error as CatalogError {
            #expect(error.exitStatus == 64 && error.message == "invalid remote name 'a b': use 1–64 characters of A–Z a–z 0–9 . _ -")
        }
    }

    @Test("a stamp from outside: its time representable in RFC 3339, its counter 0…2³²−1, its node a NodeID")
    func validatedStamps() {
        let max = Timestamp.representable.upperBound
        #expect(
            HLCStamp(validatingWall: max, counter: HLCStamp.maxCounter, node: "n")
                == HLCStamp(wallMilliseconds: max, counter: 4_294_967_295, node: "n"))
        #expect(HLCStamp(validatingWall: max + 1, counter: 0, node: "n") == nil)
        #expect(HLCStamp(validatingWall: Timestamp.representable.lowerBound - 1, counter: 0, node: "n") == nil)
        #expect(HLCStamp(validatingWall: 0, counter: -1, node: "n") == nil)
        #expect(HLCStamp(validatingWall: 0, counter: HLCStamp.maxCounter + 1, node: "n") == nil)
        #expect(HLCStamp(validatingWall: 0, counter: 0, node: "") == nil)
    }
}
