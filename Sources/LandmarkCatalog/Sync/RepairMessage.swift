/// One message of a repair (docs/repair.md §4): the same bytes whatever carries them (another database
/// in this process, the hub, `POST /v1/repair`).
///
/// Layout: a version byte (1); a flags byte (bit 0: a 16-byte session key follows; bit 1: a horizon
/// follows); the key; the horizon (a varint, ms since the epoch); for each table in ``RepairTable`` order, a varint count of items and the items; then a varint length and that
/// many bytes of rows (a snapshot document, docs/snapshot-format.md §2), 0 for none. Only the rows are
/// excluded from the byte counts a repair reports.
package struct RepairMessage: Equatable, Sendable {
    /// The session key, in the opening message only.
    package var key: [UInt8]?
    /// The sender's horizon (ms since the epoch, UTC): in the opening message, and in an answer whose
    /// sender raised the session's horizon above the one it was sent (docs/repair.md §4).
    package var horizon: Int64?
    /// Each table's items, in ``RepairTable`` order.
    package var items: [[RepairItem]] = RepairTable.allCases.map { _ in [] }
    /// Rows for the receiver to merge: a snapshot document, or empty.
    package var rows: [UInt8] = []

    package init(key: [UInt8]? = nil) { self.key = key }

    /// Whether the message asks nothing of its receiver (no items): the exchange ends with it.
    package var isFinal: Bool { items.allSatisfy(\.isEmpty) }

    /// The format's version byte.
    static let version: UInt8 = 1

    /// The encoded message.
    package func encoded() -> [UInt8] {
        var out: [UInt8] = [Self.version, (key == nil ? 0 : 1) | (horizon == nil ? 0 : 2)]
        if let key { out += key }
        if let horizon { Varint.write(UInt64(bitPattern: horizon), to: &out) }
        for table in items {
            Varint.write(UInt64(table.count), to: &out)
            var previousUpper: [UInt8]? = []
            for item in table {
                item.encode(to: &out, previousUpper: previousUpper)
                previousUpper = item.upper
            }
        }
        Varint.write(UInt64(rows.count), to: &out)
        out += rows
        return out
    }

    /// The size of the encoded message without its rows: what a repair counts as its own bytes.
    package var overheadBytes: Int { encoded().count - rows.count }

    /// Decodes a message.
    /// - Throws: ``RepairMessageError`` for a truncated or malformed message, or another version.
    package init(decoding bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        guard try r.byte() == Self.version else { throw RepairMessageError("unknown repair message version") }
        let flags = try r.byte()
        key = flags & 1 != 0 ? try r.take(16) : nil
        horizon = flags & 2 != 0 ? Int64(bitPattern: try r.varint()) : nil
        items = []
        for _ in RepairTable.allCases {
            let count = try r.varint()
            guard count <= 1 << 20 else { throw RepairMessageError("too many items") }
            var table: [RepairItem] = []
            var previousUpper: [UInt8]? = []
            for index in 0..<count {
                let item = try RepairItem.decode(&r, previousUpper: previousUpper)
                // Ranges in key order, none overlapping another (docs/repair.md §4): so one message costs
                // its answerer at most one pass over each table, whatever the peer sends.
                if index > 0 {
                    guard let previousUpper, !item.lower.lexicographicallyPrecedes(previousUpper) else {
                        throw RepairMessageError("ranges out of key order or overlapping")
                    }
                }
                if let upper = item.upper, !item.lower.lexicographicallyPrecedes(upper) {
                    throw RepairMessageError("a range whose upper bound is not above its lower bound")
                }
                previousUpper = item.upper
                table.append(item)
            }
            items.append(table)
        }
        rows = try r.take(Int(try r.varint()))
        guard r.atEnd else { throw RepairMessageError("bytes after the rows") }
    }
}

/// A malformed repair message (the peer is then unusable for this run).
package struct RepairMessageError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = "malformed repair message: " + description }
}

/// The tables a repair reconciles, in message order.
package enum RepairTable: Int, CaseIterable, Sendable {
    case landmarks, positions, erasures
}

/// One range of one table in a repair message: `[lower, upper)` in the table's key bytes (docs/repair.md
/// §2), with what is said about it.
package struct RepairItem: Equatable, Sendable {
    /// What an item says about its range.
    package enum Payload: Equatable, Sendable {
        /// The sender's keyed fingerprint of its rows in the range: 8 bytes for a whole table, 4 for a
        /// part of one (docs/repair.md §3).
        case fingerprint([UInt8])
        /// Every row id (4 bytes, keyed: ``Reconciler/id(_:)``) the sender holds in the range.
        case ids([UInt32])
        /// The row ids in the range the sender lacks and asks for.
        case want([UInt32])
    }

    /// The range's first key bytes (empty: the table's start).
    package var lower: [UInt8]
    /// The first key bytes above the range; nil: to the table's end.
    package var upper: [UInt8]?
    package var payload: Payload

    package init(lower: [UInt8], upper: [UInt8]?, payload: Payload) {
        self.lower = lower
        self.upper = upper
        self.payload = payload
    }

    // Header byte: bits 0–1 the payload kind (0 an 8-byte fingerprint, 1 ids, 2 want, 3 a 4-byte
    // fingerprint), bit 2 set when `lower` is the previous item's upper (and omitted), bit 3 set when there
    // is no upper bound. With bit 7 set it is a whole item's header instead — a split's part: a 4-byte
    // fingerprint, chained, with an upper bound sharing bits 4–6 bytes with `lower` (7: 7 plus a varint
    // that follows), and bits 0–3 bytes more.
    func encode(to out: inout [UInt8], previousUpper: [UInt8]?) {
        if case .fingerprint(let f) = payload, f.count == 4, previousUpper == lower, let upper {
            var shared = 0
            while shared < lower.count, shared < upper.count, lower[shared] == upper[shared] { shared += 1 }
            if upper.count - shared < 16 {
                out.append(0x80 | UInt8(min(shared, 7)) << 4 | UInt8(upper.count - shared))
                if shared >= 7 { Varint.write(UInt64(shared - 7), to: &out) }
                out += upper[shared...]
                out += f
                return
            }
        }
        let kind: UInt8
        switch payload {
        case .fingerprint(let f): kind = f.count == 4 ? 3 : 0
        case .ids: kind = 1
        case .want: kind = 2
        }
        let chained = previousUpper == lower
        out.append(kind | (chained ? 4 : 0) | (upper == nil ? 8 : 0))
        if !chained {
            Varint.write(UInt64(lower.count), to: &out)
            out += lower
        }
        if let upper {
            // Written as the length of the prefix it shares with `lower`, then the rest.
            var shared = 0
            while shared < lower.count, shared < upper.count, lower[shared] == upper[shared] { shared += 1 }
            Varint.write(UInt64(shared), to: &out)
            Varint.write(UInt64(upper.count - shared), to: &out)
            out += upper[shared...]
        }
        switch payload {
        case .fingerprint(let f): out += f
        case .ids(let ids), .want(let ids):
            Varint.write(UInt64(ids.count), to: &out)
            for id in ids { for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: id >> UInt32(shift))) } }
        }
    }

    static func decode(_ r: inout ByteReader, previousUpper: [UInt8]?) throws -> RepairItem {
        let header = try r.byte()
        if header & 0x80 != 0 {
            guard let previousUpper else { throw RepairMessageError("a range chained after the table's end") }
            var shared = Int(header >> 4 & 7)
            if shared == 7 { shared += Int(clamping: try r.varint()) }
            guard shared <= previousUpper.count else { throw RepairMessageError("a bound shares more than its lower bound has") }
            let upper = Array(previousUpper[..<shared]) + (try r.take(Int(header & 15)))
            return RepairItem(lower: previousUpper, upper: upper, payload: .fingerprint(try r.take(4)))
        }
        let lower: [UInt8]
        if header & 4 != 0 {
            guard let previousUpper else { throw RepairMessageError("a range chained after the table's end") }
            lower = previousUpper
        } else {
            lower = try r.take(Int(try r.varint()))
        }
        var upper: [UInt8]?
        if header & 8 == 0 {
            let shared = Int(try r.varint())
            guard shared <= lower.count else { throw RepairMessageError("a bound shares more than its lower bound has") }
            upper = Array(lower[..<shared]) + (try r.take(Int(try r.varint())))
        }
        let payload: Payload
        switch header & 3 {
        case 0: payload = .fingerprint(try r.take(8))
        case 3: payload = .fingerprint(try r.take(4))
        case 1, 2:
            let count = Int(try r.varint())
            guard count <= 1 << 20 else { throw RepairMessageError("too many ids") }
            var ids: [UInt32] = []
            ids.reserveCapacity(count)
            for _ in 0..<count { ids.append(try r.take(4).reduce(0) { $0 << 8 | UInt32($1) }) }
            payload = header & 3 == 1 ? .ids(ids) : .want(ids)
        default: throw RepairMessageError("unknown item kind")
        }
        return RepairItem(lower: lower, upper: upper, payload: payload)
    }
}

/// Unsigned LEB128 varints.
enum Varint {
    static func write(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(v & 0x7f) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }
}

/// Reads a message's bytes front to back, throwing at the end of them.
struct ByteReader {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { offset == bytes.count }

    mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw RepairMessageError("truncated") }
        offset += 1
        return bytes[offset - 1]
    }

    mutating func take(_ n: Int) throws -> [UInt8] {
        guard n >= 0, n <= bytes.count - offset else { throw RepairMessageError("truncated") }
        offset += n
        return Array(bytes[offset - n..<offset])
    }

    mutating func varint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64 else { throw RepairMessageError("varint too long") }
            value |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
        }
    }
}
