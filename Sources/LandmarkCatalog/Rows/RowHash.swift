/// The first 16 bytes of a row's SHA-256 hash as four 32-bit lanes (`h0` the first four bytes,
/// big-endian): what each row stores beside itself and the kept digest sums (docs/repair.md §1).
///
/// The hashed text is the row's canonical text (docs/merge-rules.md §8), fields joined by LF:
/// - landmark: `L`, id, updated_ms, counter, node, deleted (`0`/`1`), the canonical content;
/// - position: `P`, user, updated_ms, counter, node, deleted, page, landmark id (empty for none);
/// - erasure record: `E`, user hash, updated_ms, counter, node.
package struct RowHash: Sendable, Equatable, Hashable {
    /// The four lanes, each in `0 ..< 2³²`.
    package var lanes: (UInt32, UInt32, UInt32, UInt32)

    package init(_ h0: UInt32, _ h1: UInt32, _ h2: UInt32, _ h3: UInt32) { lanes = (h0, h1, h2, h3) }

    /// The hash of the canonical row text `text`.
    package init(text: [UInt8]) {
        self = text.withUnsafeBytes { Self(hashing: $0) }
    }

    /// The hash of the canonical row text in `text`.
    init(hashing text: UnsafeRawBufferPointer) {
        lanes = SHA256.withDigest(of: text) { d in
            (
                UInt32(bigEndian: d.loadUnaligned(fromByteOffset: 0, as: UInt32.self)),
                UInt32(bigEndian: d.loadUnaligned(fromByteOffset: 4, as: UInt32.self)),
                UInt32(bigEndian: d.loadUnaligned(fromByteOffset: 8, as: UInt32.self)),
                UInt32(bigEndian: d.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
            )
        }
    }

    /// The hash of a landmark row, live or tombstone.
    package init<F: LandmarkFields>(landmark f: F) {
        var hasher = RowHasher(capacity: 1024)
        self = hasher.landmark(f)
    }

    /// The hash of a position row, live or tombstone.
    package init(position p: PositionRecord) {
        var hasher = RowHasher(capacity: 128)
        self = hasher.position(p)
    }

    /// The hash of an erasure record.
    package init(erasure e: ErasureRecord) { self.init(text: Self.erasureText(e)) }

    /// The lanes as SQL integers, `h0` first.
    package var values: [Int64] { [Int64(lanes.0), Int64(lanes.1), Int64(lanes.2), Int64(lanes.3)] }

    /// Lane `i` (0 to 3) as an SQL integer.
    @inline(__always) func value(_ i: Int) -> Int64 {
        switch i {
        case 0: Int64(lanes.0)
        case 1: Int64(lanes.1)
        case 2: Int64(lanes.2)
        default: Int64(lanes.3)
        }
    }

    package static func == (a: RowHash, b: RowHash) -> Bool { a.lanes == b.lanes }
    package func hash(into hasher: inout Hasher) {
        hasher.combine(lanes.0)
        hasher.combine(lanes.1)
        hasher.combine(lanes.2)
        hasher.combine(lanes.3)
    }

    /// The canonical text of a landmark row: its header (``writeLandmarkHeader(_:to:)``) and `content`,
    /// its canonical content bytes.
    package static func landmarkText<F: LandmarkFields>(_ f: F, content: [UInt8]) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: content.count + 64)
        writeLandmarkHeader(f, to: &w)
        w.bytes.append(contentsOf: content)
        return w.bytes
    }

    /// Appends the canonical text of a landmark row: the header, then the canonical content
    /// (``LandmarkJSONShape/content``) written straight into `w`.
    static func writeLandmarkText<F: LandmarkFields>(_ f: F, to w: inout JSONWriter) {
        writeLandmarkHeader(f, to: &w)
        LandmarkJSON.write(f, shape: .content, to: &w)
    }

    /// Appends the lines of a landmark row's text before its content: `L`, id, updated_ms, counter,
    /// node, deleted, each followed by LF.
    static func writeLandmarkHeader<F: LandmarkFields>(_ f: F, to w: inout JSONWriter) {
        w.raw("L\n")
        w.int(f.int(.id))
        w.byte(0x0A)
        w.int(f.int(.updatedMs))
        w.byte(0x0A)
        w.int(f.int(.counter))
        w.byte(0x0A)
        f.withText(.node) { if let b = $0 { w.bytes.append(contentsOf: b) } }
        w.byte(0x0A)
        w.raw(f.int(.deleted) != 0 ? "1" : "0")
        w.byte(0x0A)
    }

    /// The canonical text of an erasure record: `E`, user hash, updated_ms, counter, node.
    package static func erasureText(_ e: ErasureRecord) -> [UInt8] {
        Array("E\n\(e.userHash)\n\(e.stamp.wallMilliseconds)\n\(e.stamp.counter)\n\(e.stamp.node)".utf8)
    }

    /// The canonical text of a position row.
    package static func positionText(_ p: PositionRecord) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 128)
        writePositionText(p, to: &w)
        return w.bytes
    }

    /// Appends the canonical text of a position row.
    static func writePositionText(_ p: PositionRecord, to w: inout JSONWriter) {
        w.raw("P\n")
        w.raw(p.user)
        w.byte(0x0A)
        w.int(p.stamp.wallMilliseconds)
        w.byte(0x0A)
        w.int(p.stamp.counter)
        w.byte(0x0A)
        w.raw(p.stamp.node)
        w.byte(0x0A)
        w.raw(p.deleted ? "1" : "0")
        w.byte(0x0A)
        w.int(p.page)
        w.byte(0x0A)
        if let l = p.landmark { w.int(l) }
    }
}

/// Row hashes computed one after another through one reused text buffer: each row's canonical text is
/// written straight into it (no intermediate arrays or strings) and hashed in place.
///
/// ``RowHash/init(landmark:)`` and ``RowHash/init(position:)`` are this with a fresh buffer, so both
/// write the same bytes. One hasher per thread.
package struct RowHasher {
    /// The text of the last row hashed.
    private(set) var text: JSONWriter

    /// A hasher whose buffer starts with room for `capacity` bytes (it grows as needed and is kept).
    package init(capacity: Int = 2048) { text = JSONWriter(reservingCapacity: capacity) }

    /// The hash of a landmark row, live or tombstone.
    package mutating func landmark<F: LandmarkFields>(_ f: F) -> RowHash {
        text.bytes.removeAll(keepingCapacity: true)
        RowHash.writeLandmarkText(f, to: &text)
        return text.bytes.withUnsafeBytes { RowHash(hashing: $0) }
    }

    /// The hash of a position row, live or tombstone.
    package mutating func position(_ p: PositionRecord) -> RowHash {
        text.bytes.removeAll(keepingCapacity: true)
        RowHash.writePositionText(p, to: &text)
        return text.bytes.withUnsafeBytes { RowHash(hashing: $0) }
    }
}

/// The sums of one table's (or one key range's) row hashes: the row count and each lane's sum, as
/// `digest_totals` keeps them and a range's `sum(h0) … sum(h3)` reads them (docs/repair.md §1).
package struct LaneSums: Sendable, Equatable {
    /// Rows summed.
    package var rows: Int64 = 0
    /// `sum(h0)`, `sum(h1)`, `sum(h2)`, `sum(h3)`; each below 2⁶³ for fewer than 2³¹ rows.
    package var sums: [Int64] = [0, 0, 0, 0]

    package init() {}
    package init(rows: Int64, sums: [Int64]) {
        self.rows = rows
        self.sums = sums
    }

    /// Adds one row's hash.
    package mutating func add(_ h: RowHash) {
        rows += 1
        for i in 0..<4 { sums[i] &+= h.value(i) }
    }

    /// Takes one row's hash away (a row replaced or deleted).
    package mutating func subtract(_ h: RowHash) {
        rows -= 1
        for i in 0..<4 { sums[i] &-= h.value(i) }
    }

    /// Adds another set of sums.
    package mutating func add(_ other: LaneSums) {
        rows += other.rows
        for i in 0..<4 { sums[i] &+= other.sums[i] }
    }

    /// Takes another set of sums away.
    package mutating func subtract(_ other: LaneSums) {
        rows -= other.rows
        for i in 0..<4 { sums[i] &-= other.sums[i] }
    }

    /// The sums with every row taken away: what deleting the rows they sum moves the totals by.
    package var negated: LaneSums {
        var n = LaneSums()
        n.subtract(self)
        return n
    }

    /// The two 64-bit digest lanes: `(s0·2³² + s1, s2·2³² + s3)` modulo 2⁶⁴.
    package var lanes64: (high: UInt64, low: UInt64) {
        let s = sums.map { UInt64(bitPattern: $0) }
        return (s[0] &<< 32 &+ s[1], s[2] &<< 32 &+ s[3])
    }
}

/// A range of keys in the table's key order, the repair's unit (docs/repair.md §2).
///
/// From `lower` (included) up to `upper` (excluded; nil: to the end).
package struct KeyRange<Key: Comparable & Sendable>: Sendable {
    /// The first key in the range (or a key below it).
    package var lower: Key
    /// The first key above the range; nil for no bound.
    package var upper: Key?

    package init(_ lower: Key, _ upper: Key?) {
        self.lower = lower
        self.upper = upper
    }

    /// Whether `key` lies in the range.
    package func contains(_ key: Key) -> Bool { key >= lower && upper.map { key < $0 } ?? true }
}

/// A landmark's content read through `base`, with `stamp` and a live flag in place of its own stamp
/// columns: the row an import writes (its records carry no stamps).
package struct StampedFields<Base: LandmarkFields>: LandmarkFields {
    let base: Base
    let stamp: HLCStamp

    package init(_ base: Base, stamp: HLCStamp) {
        self.base = base
        self.stamp = stamp
    }

    package func withText<T>(_ column: LandmarkColumn, _ body: (UnsafeBufferPointer<UInt8>?) -> T) -> T {
        guard column == .node else { return base.withText(column, body) }
        var node = stamp.node
        return node.withUTF8 { body($0) }
    }

    package func int(_ column: LandmarkColumn) -> Int64 {
        switch column {
        case .updatedMs: stamp.wallMilliseconds
        case .counter: stamp.counter
        case .deleted: 0
        default: base.int(column)
        }
    }

    package func double(_ column: LandmarkColumn) -> Double { base.double(column) }

    package func isNull(_ column: LandmarkColumn) -> Bool { base.isNull(column) }
}
