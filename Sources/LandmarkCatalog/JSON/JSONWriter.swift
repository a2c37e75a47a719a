/// A small, fast JSON text builder (RFC 8259) for the tool's outputs: appends UTF-8 into a byte buffer
/// that the caller flushes.
///
/// Keys are written in the order given; callers sort them.
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8] = []

    public init(reservingCapacity: Int = 4096) { bytes.reserveCapacity(reservingCapacity) }

    @inline(__always) public mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }
    /// Appends the UTF-8 bytes of `s` as they are (copied from its contiguous storage in one go).
    @inline(__always) public mutating func raw(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }
    @inline(__always) public mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// Appends a JSON string literal: `"`, `\`, and control characters escaped; everything else as UTF-8.
    public mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { string(utf8: $0) }
    }

    /// Appends a JSON string literal from UTF-8 bytes (already valid UTF-8, as SQLite text is here).
    ///
    /// Eight bytes are checked at a time (a word with no byte below 0x20, no `"` and no `\` is copied
    /// as it is), since text is mostly plain: descriptions of hundreds of characters.
    public mutating func string(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(0x22)
        var start = 0
        var i = 0
        let n = utf8.count
        if let base = utf8.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i < n {
                if i + 8 <= n {
                    let v = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    if !Self.mayNeedEscape(v) {
                        i += 8
                        continue
                    }
                }
                let c = utf8[i]
                if c < 0x20 || c == 0x22 || c == 0x5C {
                    if start < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i])) }
                    appendEscape(c)
                    start = i + 1
                }
                i += 1
            }
        }
        if start < n { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
        bytes.append(0x22)
    }

    /// Whether any byte of the word may be below 0x20, `"` or `\` (exact for "none"; a yes may be a
    /// false alarm, which costs only a byte-by-byte look).
    ///
    /// The zero-byte test of Mycroft (1987).
    @inline(__always)
    static func mayNeedEscape(_ v: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let below = (v &- 0x2020_2020_2020_2020) & ~v & highs
        let q = v ^ 0x2222_2222_2222_2222
        let b = v ^ 0x5C5C_5C5C_5C5C_5C5C
        let quote = (q &- ones) & ~q & highs
        let backslash = (b &- ones) & ~b & highs
        return (below | quote | backslash) != 0
    }

    private mutating func appendEscape(_ c: UInt8) {
        bytes.append(0x5C)
        switch c {
        case 0x22: bytes.append(0x22)
        case 0x5C: bytes.append(0x5C)
        case 0x0A: bytes.append(0x6E)
        case 0x0D: bytes.append(0x72)
        case 0x09: bytes.append(0x74)
        case 0x08: bytes.append(0x62)
        case 0x0C: bytes.append(0x66)
        default:
            let hex: StaticString = "0123456789abcdef"
            hex.withUTF8Buffer { h in bytes.append(contentsOf: [0x75, 0x30, 0x30, h[Int(c >> 4)], h[Int(c & 0xF)]]) }
        }
    }

    public mutating func string(_ s: String?) {
        if let s { string(s) } else { raw("null") }
    }
    /// An integer in decimal, digit by digit (no `String`).
    public mutating func int(_ v: Int64) {
        if v >= 0 && v < 10 {
            bytes.append(UInt8(48 + v))
            return
        }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = v.magnitude
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            repeat {
                d[19 - count] = UInt8(48 + n % 10)
                n /= 10
                count += 1
            } while n > 0
            if v < 0 { bytes.append(0x2D) }
            bytes.append(contentsOf: d[(20 - count)...])
        }
    }
    public mutating func int(_ v: Int64?) { if let v { int(v) } else { raw("null") } }
    public mutating func bool(_ v: Bool) { if v { raw("true") } else { raw("false") } }
    /// A finite double in its shortest round-trip form (`37.54628069864881`, `-116.166868`).
    public mutating func double(_ v: Double) {
        precondition(v.isFinite, "JSON has no representation for \(v)")
        raw(v.description)
    }
    /// A JSON array of strings.
    public mutating func stringArray(_ strings: [String]) {
        byte(0x5B)
        for (n, s) in strings.enumerated() {
            if n > 0 { byte(0x2C) }
            string(s)
        }
        byte(0x5D)
    }

    /// `"key":` — the key escaped as a string.
    public mutating func key(_ k: String) {
        string(k)
        bytes.append(0x3A)
    }
}
