/// The rows of one table as a repair sees them (docs/repair.md §2): keys as bytes in the table's order,
/// each row's stored hash, range sums, and the rows themselves as a snapshot document.
///
/// This is the one place that decides which rows take part in a repair: the rows that count in the
/// digest at the session's horizon (docs/erasure.md §5) — every live row, and the tombstones and erasure
/// records stamped at or after it — the greater of the two sides' collection horizons, so what lies
/// below it is treated alike on both.
package struct RepairRows: RepairRowSet {
    let store: CatalogStore
    let table: RepairTable
    /// The session's horizon (ms since the epoch, UTC).
    let horizon: Int64

    /// The row count and lane sums of the rows with keys in `[lower, upper)`.
    package func sums(_ lower: [UInt8], _ upper: [UInt8]?) throws -> LaneSums {
        switch table {
        case .landmarks: return try store.landmarkTable.laneSums(KeyRange(Self.id(lower), upper.map(Self.id)), horizon: horizon)
        case .positions: return try store.positionTable.laneSums(KeyRange(Self.user(lower), upper.map(Self.user)), horizon: horizon)
        case .erasures:
            // Few rows, and no hash columns: summed from the records.
            var sums = LaneSums()
            try forEach(lower, upper) { sums.add($1) }
            return sums
        }
    }

    /// Each row with a key in `[lower, upper)`, in key order: its key bytes and stored hash.
    package func forEach(_ lower: [UInt8], _ upper: [UInt8]?, _ body: ([UInt8], RowHash) throws -> Void) throws {
        switch table {
        case .landmarks:
            try store.landmarkTable.forEachHash(KeyRange(Self.id(lower), upper.map(Self.id)), horizon: horizon) { try body(Self.key(id: $0), $1) }
        case .positions:
            try store.positionTable.forEachHash(KeyRange(Self.user(lower), upper.map(Self.user)), horizon: horizon) { try body(Array($0.utf8), $1) }
        case .erasures:
            try store.erasureTable.forEachHash(KeyRange(Self.user(lower), upper.map(Self.user)), horizon: horizon) { try body(Array($0.utf8), $1) }
        }
    }

    /// The shortest key bytes above `a` and at most `b` (`a < b`): a prefix of `b`, for positions cut at
    /// a UTF-8 character boundary so that it is a text like the keys.
    package func separator(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] { Self.separator(a, b, table: table) }

    /// ``separator(_:_:)`` for `table`'s keys, wherever its rows are kept.
    package static func separator(_ a: [UInt8], _ b: [UInt8], table: RepairTable) -> [UInt8] {
        var k = 0
        while k < a.count, k < b.count, a[k] == b[k] { k += 1 }
        k = min(k + 1, b.count)
        if table != .landmarks { while k < b.count, b[k] & 0xC0 == 0x80 { k += 1 } }
        return Array(b[..<k])
    }

    /// A catalog database splits by reading its rows in order (the caller's cut, which prefers short bounds).
    package func parts(_ lower: [UInt8], _ upper: [UInt8]?, count: Int) throws -> [RepairPart]? { nil }

    /// A landmark id's key bytes: 8 bytes big-endian with the sign bit flipped, so byte order is id order.
    package static func key(id: Int64) -> [UInt8] {
        let v = UInt64(bitPattern: id) ^ (1 << 63)
        return (0..<8).map { UInt8(truncatingIfNeeded: v >> UInt64(56 - 8 * $0)) }
    }

    /// The smallest id whose key bytes start with `bytes` (padded with zeros).
    package static func id(_ bytes: [UInt8]) -> Int64 {
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(i < bytes.count ? bytes[i] : 0) }
        return Int64(bitPattern: v ^ (1 << 63))
    }

    /// A position key's user id, or an erasure key's user hash.
    package static func user(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// A snapshot document (docs/snapshot-format.md §2) holding the rows with the given keys: landmark
    /// ids, user ids, erased users' hashes.
    package static func snapshot(store: CatalogStore, landmarks: [[UInt8]], positions: [[UInt8]], erasures: [[UInt8]]) throws -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 1 << 12)
        w.raw("{")
        w.key("format")
        w.string(SnapshotFormat.name)
        w.raw(",")
        w.key("version")
        w.int(SnapshotFormat.version)
        w.raw(",")
        w.key("landmarks")
        w.raw("[")
        var first = true
        try store.landmarkTable.forEachRow(ids: landmarks.map(id)) { s in
            if !first { w.raw(",") }
            first = false
            LandmarkJSON.write(LandmarkRow(statement: s), shape: .snapshot, to: &w)
        }
        w.raw("],")
        w.key("positions")
        w.raw("[")
        first = true
        for record in try store.positionTable.rows(users: positions.map(user)) {
            if !first { w.raw(",") }
            first = false
            record.writeJSON(to: &w)
        }
        w.raw("]")
        let records = try store.erasureTable.records(userHashes: erasures.map(user))
        if !records.isEmpty {
            w.raw(",")
            w.key("erasures")
            w.raw("[")
            for (i, record) in records.enumerated() {
                if i > 0 { w.raw(",") }
                record.writeJSON(to: &w)
            }
            w.raw("]")
        }
        w.raw("}")
        return w.bytes
    }
}
