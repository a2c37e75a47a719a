/// A small, fast JSON text builder (RFC 8259) for the tool's outputs: appends UTF-8 into a byte buffer
/// that the caller flushes. Keys are written in the order given; callers sort them.
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8] = []

    public init(reservingCapacity: Int = 4096) { bytes.reserveCapacity(reservingCapacity) }

    @inline(__always) public mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }
    @inline(__always) public mutating func raw(_ s: String) { bytes.append(contentsOf: s.utf8) }
    @inline(__always) public mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// Appends a JSON string literal: `"`, `\`, and control characters escaped; everything else as UTF-8.
    public mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { string(utf8: $0) }
    }

    /// Appends a JSON string literal from UTF-8 bytes (already valid UTF-8, as SQLite text is here).
    public mutating func string(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(0x22)
        var start = 0
        for i in 0..<utf8.count {
            let c = utf8[i]
            guard c < 0x20 || c == 0x22 || c == 0x5C else { continue }
            if start < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i])) }
            appendEscape(c)
            start = i + 1
        }
        if start < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
        bytes.append(0x22)
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
    public mutating func int(_ v: Int64) { raw(String(v)) }
    public mutating func int(_ v: Int64?) { if let v { int(v) } else { raw("null") } }
    public mutating func bool(_ v: Bool) { if v { raw("true") } else { raw("false") } }
    /// A finite double in its shortest round-trip form (`37.54628069864881`, `-116.166868`).
    public mutating func double(_ v: Double) {
        precondition(v.isFinite, "JSON has no representation for \(v)")
        raw(v.description)
    }
    /// `"key":` — the key escaped as a string.
    public mutating func key(_ k: String) {
        string(k)
        bytes.append(0x3A)
    }
}
