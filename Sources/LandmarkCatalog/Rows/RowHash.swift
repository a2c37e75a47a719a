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
        let hash = SHA256.hash(text)
        func lane(_ i: Int) -> UInt32 {
            UInt32(hash[i]) << 24 | UInt32(hash[i + 1]) << 16 | UInt32(hash[i + 2]) << 8 | UInt32(hash[i + 3])
        }
        lanes = (lane(0), lane(4), lane(8), lane(12))
    }

    /// The hash of a landmark row, live or tombstone.
    package init<F: LandmarkFields>(landmark f: F) {
        self.init(text: Self.landmarkText(f, content: LandmarkJSON.bytes(f, shape: .content)))
    }

    /// The hash of a position row, live or tombstone.
    package init(position p: PositionRecord) { self.init(text: Self.positionText(p)) }

    /// The hash of an erasure record.
    package init(erasure e: ErasureRecord) { self.init(text: Self.erasureText(e)) }

    /// The lanes as SQL integers, `h0` first.
    package var values: [Int64] { [Int64(lanes.0), Int64(lanes.1), Int64(lanes.2), Int64(lanes.3)] }

    package static func == (a: RowHash, b: RowHash) -> Bool { a.values == b.values }
    package func hash(into hasher: inout Hasher) { hasher.combine(values) }

    /// The canonical text of a landmark row.
    package static func landmarkText<F: LandmarkFields>(_ f: F, content: [UInt8]) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: content.count + 64)
        w.raw("L\n")
        w.raw(String(f.int(.id)))
        w.byte(0x0A)
        w.raw(String(f.int(.updatedMs)))
        w.byte(0x0A)
        w.raw(String(f.int(.counter)))
        w.byte(0x0A)
        f.withText(.node) { if let b = $0 { w.bytes.append(contentsOf: b) } }
        w.byte(0x0A)
        w.raw(f.int(.deleted) != 0 ? "1" : "0")
        w.byte(0x0A)
        w.bytes.append(contentsOf: content)
        return w.bytes
    }

    /// The canonical text of an erasure record: `E`, user hash, updated_ms, counter, node.
    package static func erasureText(_ e: ErasureRecord) -> [UInt8] {
        Array("E\n\(e.userHash)\n\(e.stamp.wallMilliseconds)\n\(e.stamp.counter)\n\(e.stamp.node)".utf8)
    }

    /// The canonical text of a position row.
    package static func positionText(_ p: PositionRecord) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 96)
        w.raw("P\n")
        w.raw(p.user)
        w.byte(0x0A)
        w.raw(String(p.stamp.wallMilliseconds))
        w.byte(0x0A)
        w.raw(String(p.stamp.counter))
        w.byte(0x0A)
        w.raw(p.stamp.node)
        w.byte(0x0A)
        w.raw(p.deleted ? "1" : "0")
        w.byte(0x0A)
        w.raw(String(p.page))
        w.byte(0x0A)
        if let l = p.landmark { w.raw(String(l)) }
        return w.bytes
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
        for (i, v) in h.values.enumerated() { sums[i] &+= v }
    }

    /// Takes one row's hash away (a row replaced or deleted).
    package mutating func subtract(_ h: RowHash) {
        rows -= 1
        for (i, v) in h.values.enumerated() { sums[i] &-= v }
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
