/// Read access to one landmark's columns, wherever they live: an SQLite row, a decoded batch, a value.
///
/// ``LandmarkJSON`` writes every landmark shape through it, so each shape has one writer.
package protocol LandmarkFields {
    /// Calls `body` with the UTF-8 bytes of text column `column` (or of `extra`), nil for NULL.
    func withText<T>(_ column: LandmarkColumn, _ body: (UnsafeBufferPointer<UInt8>?) -> T) -> T
    /// An integer column (`id`, an integer field, `counter`, `updatedMs`) or a boolean one as 0 / 1; 0
    /// for a null integer field.
    func int(_ column: LandmarkColumn) -> Int64
    /// A coordinate column or a double field; 0 for a null double field.
    func double(_ column: LandmarkColumn) -> Double
    /// Whether number field `column` (an optional `int` or `double`) is null.
    func isNull(_ column: LandmarkColumn) -> Bool
}

extension LandmarkFields {
    /// Text column `column` (or `extra`) as a `String`, nil for NULL.
    func string(_ column: LandmarkColumn) -> String? {
        withText(column) { $0.map { String(decoding: $0, as: UTF8.self) } }
    }
}

/// The landmark JSON shapes (one writer for all): keys sorted by their UTF-8 bytes, compact, kept
/// unknown keys merged in key order.
public enum LandmarkJSONShape: Sendable {
    /// `landmarkData.json` as Apple's tutorial `Landmark` decodes it (`featured --json`): a NULL
    /// string is written `""`, because that type declares `park`, `state`, `city`, `category`,
    /// `description` and `imageName` as non-optional `String`s.
    case apple
    /// A snapshot row (docs/snapshot-format.md §3): content with NULL as `null`, plus `counter`, `deleted`, `node`, `updatedAt`.
    case snapshot
    /// A landmark's canonical content: the snapshot row without its stamp. The tie rule of
    /// ``LastWriterWins`` orders these bytes; the hub stores them as a row's body.
    case content
}

package enum LandmarkJSON {
    /// One key of the shapes, in output order.
    enum Item {
        case column(LandmarkColumn)
        case coordinates
    }

    /// Every key of every shape, as `"key":` bytes, sorted by key bytes (`coordinates` holds
    /// `latitude` and `longitude`).
    static let order: [(key: String, prefix: [UInt8], item: Item)] = {
        var items: [(String, Item)] = [("coordinates", .coordinates)]
        for c in LandmarkColumn.allCases {
            guard let key = c.jsonKey else { continue }
            if case .coordinate = c.kind { continue }
            items.append((key, .column(c)))
        }
        items.sort { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
        return items.map { (key: $0.0, prefix: Array("\"\($0.0)\":".utf8), item: $0.1) }
    }()

    /// Every key a shape may write itself: kept unknown keys with these names are never written (they
    /// would repeat a key in one object).
    static let ownKeys: Set<String> = Set(order.map(\.key)).union(["latitude", "longitude"])

    /// A shape's keys in order, as one buffer of `{"key":` / `,"key":` prefixes and what follows each:
    /// the loop for a landmark without kept unknown keys touches no `String` and no reference count.
    struct Plan {
        let items: [(item: Item, start: Int, count: Int)]
        let prefixes: [UInt8]

        init(_ shape: LandmarkJSONShape) {
            var items: [(Item, Int, Int)] = []
            var prefixes: [UInt8] = []
            for entry in LandmarkJSON.order {
                if case .column(let c) = entry.item, !c.isContent, shape != .snapshot { continue }
                let prefix = Array((items.isEmpty ? "{" : ",").utf8) + entry.prefix
                items.append((entry.item, prefixes.count, prefix.count))
                prefixes += prefix
            }
            self.items = items
            self.prefixes = prefixes
        }
    }

    static let applePlan = Plan(.apple), snapshotPlan = Plan(.snapshot), contentPlan = Plan(.content)

    /// Writes one value of `item`.
    @inline(__always)
    static func writeValue<F: LandmarkFields>(_ item: Item, of fields: F, shape: LandmarkJSONShape, to w: inout JSONWriter) {
        switch item {
        case .coordinates:
            w.raw("{\"latitude\":")
            w.double(fields.double(.latitude))
            w.raw(",\"longitude\":")
            w.double(fields.double(.longitude))
            w.byte(0x7D)
        case .column(let c):
            switch c.kind {
            case .id, .stamp(.counter): w.int(fields.int(c))
            case .bool, .stamp(.deleted): w.bool(fields.int(c) != 0)
            case .stamp(.updatedMs): Timestamp.write(milliseconds: fields.int(c), to: &w)
            case .int(let optional):
                if optional && fields.isNull(c) { w.raw("null") } else { w.int(fields.int(c)) }
            case .double(let optional):
                if optional && fields.isNull(c) { w.raw("null") } else { w.double(fields.double(c)) }
            case .text, .stamp(.node):
                fields.withText(c) { bytes in
                    if let bytes { w.string(utf8: bytes) } else if shape == .apple { w.raw("\"\"") } else { w.raw("null") }
                }
            case .coordinate, .extra, .stamp(.seq):
                preconditionFailure("\(c) has no key of its own")
            }
        }
    }

    /// Writes `fields` as a JSON object of `shape`.
    static func write<F: LandmarkFields>(_ fields: F, shape: LandmarkJSONShape, to w: inout JSONWriter) {
        let hasExtras = fields.withText(.extra) { $0 != nil }
        guard hasExtras else {
            let plan = shape == .apple ? applePlan : shape == .snapshot ? snapshotPlan : contentPlan
            plan.prefixes.withUnsafeBufferPointer { prefixes in
                for entry in plan.items {
                    w.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: prefixes[entry.start..<(entry.start + entry.count)]))
                    writeValue(entry.item, of: fields, shape: shape, to: &w)
                }
            }
            w.byte(0x7D)
            return
        }
        let extras = fields.withText(.extra) { bytes in bytes.map { keptKeys(in: $0) } } ?? []
        var next = 0
        w.byte(0x7B)
        var first = true
        for entry in order {
            if case .column(let c) = entry.item, !c.isContent, shape != .snapshot { continue }
            while next < extras.count, extras[next].key.utf8.lexicographicallyPrecedes(entry.key.utf8) {
                if !first { w.byte(0x2C) }
                first = false
                w.key(extras[next].key)
                w.raw(extras[next].json)
                next += 1
            }
            if !first { w.byte(0x2C) }
            first = false
            w.bytes.append(contentsOf: entry.prefix)
            writeValue(entry.item, of: fields, shape: shape, to: &w)
        }
        while next < extras.count {
            w.byte(0x2C)
            w.key(extras[next].key)
            w.raw(extras[next].json)
            next += 1
        }
        w.byte(0x7D)
    }

    /// The kept unknown keys of an `extra` object text, sorted by key bytes, without keys a shape
    /// writes itself (a database written before such keys were refused may still hold them).
    static func keptKeys(in bytes: UnsafeBufferPointer<UInt8>) -> [(key: String, json: String)] {
        let reader = JSONPullReader(bytes: Array(bytes), options: .init(allowTrailingCommas: false, maxDepth: 64))
        guard case .object(let members)? = try? reader.readValue() else { return [] }
        return members.filter { !ownKeys.contains($0.key) }
            .map { (key: $0.key, json: $0.value.serialized()) }
            .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }

    /// `fields` as bytes of `shape`.
    package static func bytes<F: LandmarkFields>(_ fields: F, shape: LandmarkJSONShape) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 512)
        write(fields, shape: shape, to: &w)
        return w.bytes
    }
}

/// An SQLite row that selects `LandmarkColumn.selectList`.
package struct LandmarkRow: LandmarkFields {
    let statement: Statement
    package init(statement: Statement) { self.statement = statement }
    @inline(__always) package func withText<T>(_ column: LandmarkColumn, _ body: (UnsafeBufferPointer<UInt8>?) -> T) -> T {
        body(statement.textBytes(column))
    }
    @inline(__always) package func int(_ column: LandmarkColumn) -> Int64 { statement.int(column) }
    @inline(__always) package func double(_ column: LandmarkColumn) -> Double { statement.double(column) }
    @inline(__always) package func isNull(_ column: LandmarkColumn) -> Bool { statement.isNull(column) }
}

/// A ``Landmark`` value with an optional stamp (a tombstone flag included), read through the table of
/// fields (``LandmarkColumn/field``).
struct LandmarkValue: LandmarkFields {
    var landmark: Landmark
    var stamp = HLCStamp(wallMilliseconds: 0, counter: 0, node: "")
    var deleted = false

    func withText<T>(_ column: LandmarkColumn, _ body: (UnsafeBufferPointer<UInt8>?) -> T) -> T {
        var text: String?
        switch column.field {
        case .requiredText(let p): text = landmark[keyPath: p]
        case .text(let p), .extra(let p): text = landmark[keyPath: p]
        case .stamp(.node): text = stamp.node
        case .id, .bool, .int, .optionalInt, .double, .optionalDouble, .coordinate, .stamp:
            preconditionFailure("\(column) is not a text column")
        }
        guard var text else { return body(nil) }
        return text.withUTF8 { body($0) }
    }
    func int(_ column: LandmarkColumn) -> Int64 {
        switch column.field {
        case .id(let p): return landmark[keyPath: p]
        case .bool(let p): return landmark[keyPath: p] ? 1 : 0
        case .int(let p): return Int64(landmark[keyPath: p])
        case .optionalInt(let p): return landmark[keyPath: p].map(Int64.init) ?? 0
        case .stamp(.updatedMs): return stamp.wallMilliseconds
        case .stamp(.counter): return stamp.counter
        case .stamp(.deleted): return deleted ? 1 : 0
        case .requiredText, .text, .extra, .double, .optionalDouble, .coordinate, .stamp(.node), .stamp(.seq):
            preconditionFailure("\(column) is not an integer column")
        }
    }
    func double(_ column: LandmarkColumn) -> Double {
        switch column.field {
        case .coordinate(let p, _), .double(let p): return landmark[keyPath: p]
        case .optionalDouble(let p): return landmark[keyPath: p] ?? 0
        case .id, .requiredText, .text, .bool, .int, .optionalInt, .extra, .stamp:
            preconditionFailure("\(column) is not a double column")
        }
    }
    func isNull(_ column: LandmarkColumn) -> Bool {
        switch column.field {
        case .optionalInt(let p): return landmark[keyPath: p] == nil
        case .optionalDouble(let p): return landmark[keyPath: p] == nil
        case .id, .requiredText, .text, .bool, .int, .double, .coordinate, .extra, .stamp: return false
        }
    }
}

extension Landmark {
    /// Writes this landmark as a JSON object of `shape` (keys sorted, compact; kept unknown keys
    /// merged in key order).
    ///
    /// For `.snapshot`, `stamp` and `deleted` give the stamp keys.
    public func writeJSON(
        to writer: inout JSONWriter, shape: LandmarkJSONShape = .apple,
        stamp: HLCStamp = HLCStamp(wallMilliseconds: 0, counter: 0, node: ""), deleted: Bool = false
    ) {
        LandmarkJSON.write(LandmarkValue(landmark: self, stamp: stamp, deleted: deleted), shape: shape, to: &writer)
    }
}

extension LandmarkJSON {
    /// Whether two landmarks hold the same content, compared column by column on the bytes (no JSON is
    /// built).
    ///
    /// Stamps and the tombstone flag are not compared. Kept unknown keys compare as text, so the same
    /// keys in another order count as different here (the canonical bytes then decide).
    static func sameContent<A: LandmarkFields, B: LandmarkFields>(_ a: A, _ b: B) -> Bool {
        for column in LandmarkColumn.allCases {
            switch column.kind {
            case .id, .bool:
                if a.int(column) != b.int(column) { return false }
            case .int(let optional):
                if optional && a.isNull(column) != b.isNull(column) { return false }
                if a.int(column) != b.int(column) { return false }
            case .double(let optional):
                if optional && a.isNull(column) != b.isNull(column) { return false }
                if a.double(column) != b.double(column) { return false }
            case .coordinate:
                if a.double(column) != b.double(column) { return false }
            case .text, .extra:
                let equal = a.withText(column) { x in b.withText(column) { y in OptionalBytes.equal(x, y) } }
                if !equal { return false }
            case .stamp:
                continue
            }
        }
        return true
    }
}
