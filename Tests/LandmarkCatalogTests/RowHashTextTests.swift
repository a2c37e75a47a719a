import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// The row hash's canonical text is a contract (the hub computes the same hash in SQL): the buffered
/// writers that build it must give exactly the bytes of a plain, independent spelling of the rule
/// (docs/merge-rules.md §8, docs/repair.md §1), over many random rows.
@Suite("Row hash texts match the rule byte for byte")
struct RowHashTextTests {
    // MARK: The oracle: the rule spelled out with String interpolation and Double.description

    /// A JSON string literal: `"` and `\` escaped, `\n` `\r` `\t` `\b` `\f` by name, other control
    /// characters as `\u00xx` (lowercase hex), everything else as UTF-8.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    /// The canonical content: keys sorted, compact, NULL as `null`, doubles by `description`.
    static func content(_ l: Landmark) -> String {
        func text(_ s: String?) -> String { s.map(quoted) ?? "null" }
        return "{\"category\":\(text(l.category)),\"city\":\(text(l.city)),"
            + "\"coordinates\":{\"latitude\":\(l.latitude.description),\"longitude\":\(l.longitude.description)},"
            + "\"description\":\(text(l.description)),\"id\":\(l.id),\"imageName\":\(text(l.imageName)),"
            + "\"isFavorite\":\(l.isFavorite),\"isFeatured\":\(l.isFeatured),\"name\":\(quoted(l.name)),"
            + "\"park\":\(text(l.park)),\"state\":\(text(l.state))}"
    }

    static func landmarkText(_ l: Landmark, stamp: HLCStamp, deleted: Bool) -> [UInt8] {
        Array("L\n\(l.id)\n\(stamp.wallMilliseconds)\n\(stamp.counter)\n\(stamp.node)\n\(deleted ? 1 : 0)\n\(content(l))".utf8)
    }

    static func positionText(_ p: PositionRecord) -> [UInt8] {
        let landmark = p.landmark.map { String($0) } ?? ""
        return Array(
            "P\n\(p.user)\n\(p.stamp.wallMilliseconds)\n\(p.stamp.counter)\n\(p.stamp.node)\n\(p.deleted ? 1 : 0)\n\(p.page)\n\(landmark)".utf8)
    }

    /// The first 16 bytes of the text's SHA-256 as four big-endian lanes, through the array API.
    static func hash(_ text: [UInt8]) -> RowHash {
        let d = SHA256.hash(text).map(UInt32.init)
        return RowHash(
            d[0] << 24 | d[1] << 16 | d[2] << 8 | d[3], d[4] << 24 | d[5] << 16 | d[6] << 8 | d[7],
            d[8] << 24 | d[9] << 16 | d[10] << 8 | d[11], d[12] << 24 | d[13] << 16 | d[14] << 8 | d[15])
    }

    // MARK: Random rows

    static let oddDoubles: [Double] = [
        0, -0.0, 1, -1, 0.1, 0.1 + 0.2, 1e-7, -1e-7, 1e15, 1e16, 1e17, 1e21, 1e22, 123_456_789_012_345_683_968,
        Double.leastNonzeroMagnitude, -Double.leastNonzeroMagnitude, Double.leastNormalMagnitude, Double.greatestFiniteMagnitude,
        -Double.greatestFiniteMagnitude,
        Double.ulpOfOne, 89.999999, -179.5, 37.54628069864881, -116.166868, 2.5e-300, 9.999999999999999e22, 1.0e-5, 0.0001,
    ]

    static let scalars: [String] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{08}", "\u{0C}", "\u{00}", "\u{01}", "\u{1F}", "\u{7F}",
        "é", "ü", "ß", "東", "京", "🏔️", "👩‍👩‍👧", "\u{2028}", "\u{FEFF}", "e\u{301}", "\u{10FFFF}",
    ]

    static func pick<T, R: RandomNumberGenerator>(_ a: [T], _ rng: inout R) -> T { a[Int.random(in: 0..<a.count, using: &rng)] }

    static func double<R: RandomNumberGenerator>(_ rng: inout R) -> Double {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return pick(oddDoubles, &rng)
        case 1: return Double.random(in: -180...180, using: &rng)
        case 2: return (Double.random(in: -180...180, using: &rng) * 1e6).rounded() / 1e6
        default:
            while true {  // any finite bit pattern: subnormals, huge and tiny exponents
                let d = Double(bitPattern: rng.next())
                if d.isFinite { return d }
            }
        }
    }

    static func string<R: RandomNumberGenerator>(_ rng: inout R, max: Int = 300) -> String {
        let plain = Int.random(in: 0..<3, using: &rng) == 0
        var s = ""
        for _ in 0..<Int.random(in: 0...max, using: &rng) {
            s += plain ? String(UnicodeScalar(UInt8.random(in: 0x20...0x7E, using: &rng))) : pick(scalars, &rng)
        }
        return s
    }

    static func int<R: RandomNumberGenerator>(_ rng: inout R) -> Int64 {
        pick([Int64.min, Int64.max, 0, -1, 9, 10, Int64.random(in: -1000...1000, using: &rng), Int64(bitPattern: rng.next())], &rng)
    }

    static func optional<R: RandomNumberGenerator>(_ rng: inout R) -> String? {
        Bool.random(using: &rng) ? nil : string(&rng, max: 40)
    }

    static func stamp<R: RandomNumberGenerator>(_ rng: inout R) -> HLCStamp {
        HLCStamp(wallMilliseconds: int(&rng), counter: int(&rng), node: string(&rng, max: 20))
    }

    // MARK: Tests

    @Test("landmark texts and hashes through one reused buffer equal the rule's", arguments: [1 as UInt64, 2, 3, 4])
    func landmarks(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var hasher = RowHasher(capacity: 16)  // small: the buffer must grow and be reused across rows
        for _ in 0..<2_500 {
            let l = Landmark(
                id: Self.int(&rng), name: Self.string(&rng), category: Self.optional(&rng), city: Self.optional(&rng),
                state: Self.optional(&rng), park: Self.optional(&rng), description: Self.optional(&rng),
                imageName: Self.optional(&rng), isFeatured: Bool.random(using: &rng), isFavorite: Bool.random(using: &rng),
                latitude: Self.double(&rng), longitude: Self.double(&rng))
            let stamp = Self.stamp(&rng)
            let deleted = Bool.random(using: &rng)
            let value = LandmarkValue(landmark: l, stamp: stamp, deleted: deleted)
            let expected = Self.landmarkText(l, stamp: stamp, deleted: deleted)
            let hash = hasher.landmark(value)
            #expect(hasher.text.bytes == expected, "\(String(decoding: expected, as: UTF8.self))")
            #expect(hash == Self.hash(expected))
            #expect(RowHash(landmark: value) == hash)
            #expect(RowHash.landmarkText(value, content: LandmarkJSON.bytes(value, shape: .content)) == expected)
        }
    }

    @Test("position texts and hashes, computed ahead or not, equal the rule's", arguments: [5 as UInt64, 6])
    func positions(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var hasher = RowHasher(capacity: 8)
        for _ in 0..<5_000 {
            var p = PositionRecord(
                user: Self.string(&rng, max: 60), page: Self.int(&rng), landmark: Bool.random(using: &rng) ? nil : Self.int(&rng),
                stamp: Self.stamp(&rng), deleted: Bool.random(using: &rng))
            let expected = Self.positionText(p)
            #expect(RowHash.positionText(p) == expected)
            #expect(hasher.position(p) == Self.hash(expected))
            #expect(hasher.text.bytes == expected)
            p.hashAhead(with: &hasher)
            #expect(p.rowHash == Self.hash(expected))
            // A field changed after hashing ahead must not keep the old hash.
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: p.user += "x"
            case 1: p.page &+= 1
            case 2: p.landmark = p.landmark == nil ? 1 : nil
            case 3: p.stamp.counter &+= 1
            default: p.deleted.toggle()
            }
            #expect(p.rowHash == Self.hash(Self.positionText(p)))
        }
    }

    @Test("doubles and strings are written as description and UTF-8", arguments: [7 as UInt64])
    func writerPieces(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        for _ in 0..<20_000 {
            let d = Self.double(&rng)
            var w = JSONWriter(reservingCapacity: 0)
            w.double(d)
            #expect(w.bytes == Array(d.description.utf8), "\(d.bitPattern)")
            let s = Self.string(&rng, max: 40)
            var r = JSONWriter(reservingCapacity: 0)
            r.raw(s)
            #expect(r.bytes == Array(s.utf8))
        }
    }
}
