/// Reads landmark objects from a JSON reader into a ``RowBatch``, validating each against docs/cli.md §2 (and,
/// for snapshot rows, the stamp of docs/snapshot-format.md §3).
///
/// Diagnostics carry file, line:column, record index, id and field. Keys are matched by their bytes against a table
/// generated from ``LandmarkColumn``.
package struct LandmarkDecoder {
    static let batchSize = 2000

    /// What the objects are.
    package enum Mode {
        /// Records of `landmarkData.json`: absent keys keep stored values; the snapshot stamp keys are
        /// reserved (refused: kept, they would be written twice in one snapshot object).
        case importRecord
        /// Snapshot rows (docs/snapshot-format.md §3): whole rows with `updatedAt`, `counter`, `node`, `deleted`.
        case snapshotRow
        /// A landmark's canonical content (``LandmarkJSONShape/content``), e.g. a hub row's body.
        case content
    }

    let file: String
    let mode: Mode
    let strict: Bool
    /// Prepended to field names in messages (`landmarks.` inside a snapshot).
    let fieldPrefix: String
    /// Keys already warned about in this file (one warning per key).
    var warnedKeys: Set<String> = []
    var seen = SeenIDs()
    /// Errors so far (with `strict`, warnings count too).
    var errors = 0

    package init(file: String, mode: Mode, strict: Bool = false) {
        self.file = file
        self.mode = mode
        self.strict = strict
        self.fieldPrefix = mode == .snapshotRow ? "landmarks." : ""
    }

    /// The keys a landmark object may have.
    enum Key {
        case column(LandmarkColumn)
        case isFavourite, coordinates
    }

    static let keys: [(String, Key)] = {
        var keys: [(String, Key)] = []
        for c in LandmarkColumn.allCases {
            guard let key = c.jsonKey else { continue }
            if case .coordinate = c.kind { continue }
            keys.append((key, .column(c)))
        }
        return keys + [("isFavourite", .isFavourite), ("coordinates", .coordinates)]
    }()
    static let keyTable = JSONKeyTable(keys.map(\.0))

    mutating func report(
        _ batch: RowBatch, _ severity: Diagnostic.Severity, _ message: String, at position: SourcePosition?,
        index: Int? = nil, id: Int64? = nil, field: String? = nil, kind: String? = nil
    ) {
        if severity == .error || strict { errors += 1 }
        batch.diagnostics.append(
            (
                batch.landmarks.count,
                Diagnostic(
                    severity: severity, message: message, file: file, position: position,
                    index: index, id: id, field: field.map { fieldPrefix + $0 }, kind: kind)
            ))
    }

    mutating func warnOnce(_ batch: RowBatch, _ key: String, kind: String, _ message: String, at: SourcePosition, index: Int, id: Int64?) {
        guard warnedKeys.insert(key).inserted else { return }
        report(batch, .warning, message, at: at, index: index, id: id, field: key.hasPrefix("\u{0}") ? nil : key, kind: kind)
    }

    /// Reports a string with bad content (`JSONStringContentError`: the reader is then just past the string)
    /// as an error on `field`, so the record goes on being read; rethrows any other error.
    @inline(never)  // the error path: kept out of the loops that call it
    mutating func recover(_ error: any Error, _ batch: RowBatch, _ field: String, index: Int, id: Int64?) throws {
        guard let error = error as? JSONStringContentError else { throw error }
        report(batch, .error, error.message(in: field), at: error.position, index: index, id: id, field: field)
    }

    /// The reader's next key in `table`; a key with bad content is reported as an error on it and its member skipped.
    mutating func nextKey(_ reader: JSONPullReader, in table: JSONKeyTable, _ batch: RowBatch, index: Int, id: Int64?)
        throws -> (index: Int, key: String?, position: SourcePosition)?
    {
        while true {
            do { return try reader.nextKey(in: table) } catch { try skipMember(badKey: error, reader, batch, index: index, id: id) }
        }
    }

    /// The reader's next key in the object `object`; a key with bad content is reported as an error on it and its member skipped.
    mutating func nextKey(_ reader: JSONPullReader, in object: String, _ batch: RowBatch, index: Int, id: Int64?)
        throws -> (key: String, position: SourcePosition)?
    {
        while true {
            do { return try reader.nextKey() } catch { try skipMember(badKey: error, reader, batch, index: index, id: id, in: object) }
        }
    }

    /// Reports a key with bad content (`error`; any other error is rethrown) and skips its value.
    @inline(never)  // the error path: kept out of the loops that call it
    mutating func skipMember(
        badKey error: any Error, _ reader: JSONPullReader, _ batch: RowBatch, index: Int, id: Int64?,
        in object: String? = nil
    ) throws {
        guard let error = error as? JSONStringContentError else { throw error }
        let key = (object.map { $0 + "." } ?? "") + (error.repaired ?? "")
        report(batch, .error, error.message(in: "key '\(key)'"), at: error.position, index: index, id: id, field: key)
        do { try reader.skipValue() } catch { try recover(error, batch, key, index: index, id: id) }
    }

    /// What has been read of one landmark object so far.
    struct Reading {
        var record: RawLandmark
        var id: Int64?
        /// A bit per known key (its index in ``keys``), for duplicate keys.
        var seenKeys: UInt64 = 0
        var sawName = false
        var sawCoordinates = false
        var sawUpdatedAt = false
        var sawNode = false
        /// Where `isFavourite` was and its value (nil when wrong).
        var favouriteAt: (SourcePosition, Bool?)?
        var extras: [JSONMember] = []
        var index: Int { record.index }
    }

    /// Decodes the next array element into `batch` (when valid).
    ///
    /// The reader is at the element's start.
    /// - Throws: `JSONSyntaxError` / `JSONReadError` from the reader; validation problems are reported, not thrown, and
    ///   so is a string with bad content (`JSONStringContentError`), as an error on its field.
    package mutating func decode(_ reader: JSONPullReader, index: Int, into batch: RowBatch) throws {
        let position = reader.position
        let elementKind = try reader.peekKind()
        guard elementKind == .object else {
            do { _ = try reader.readValue() } catch is JSONStringContentError {}  // a string all the same, now read
            report(batch, .error, "a landmark must be a JSON object, found \(elementKind.description)", at: position, index: index)
            return
        }
        let errorsBefore = errors
        let bytesBefore = batch.bytes.count
        let diagnosticsBefore = batch.diagnostics.count
        var r = Reading(record: RawLandmark(index: index, position: position))
        // Messages about fields before `id` learn the id once it is read.
        defer { if let id = r.id { Self.fillID(id, in: batch, from: diagnosticsBefore, index: index) } }
        try reader.beginObject()
        while let (match, unknownKey, at) = try nextKey(reader, in: Self.keyTable, batch, index: index, id: r.id) {
            try readMember(reader, match: match, unknownKey: unknownKey, at: at, into: &r, batch: batch)
        }
        finishRecord(&r, at: position, errorsBefore: errorsBefore, batch: batch)
        guard errors == errorsBefore, let id = r.id else {
            batch.bytes.removeSubrange(bytesBefore...)
            return
        }
        r.record.id = id
        r.record.duplicateOf = seen.insert(id, index: index)
        if let first = r.record.duplicateOf {
            errors += 1
            if mode != .importRecord {
                // The import names both records itself (it can read the first one's name).
                report(
                    batch, .error, "duplicate id \(id): records \(first) and \(index) both use it", at: position, index: index, id: id, field: "id")
                batch.bytes.removeSubrange(bytesBefore...)
                return
            }
        }
        batch.landmarks.append(r.record)
    }

    /// Sets `id` on the diagnostics of record `index` from `start` on that were reported before the id was read.
    static func fillID(_ id: Int64, in batch: RowBatch, from start: Int, index: Int) {
        for i in start..<batch.diagnostics.count
        where batch.diagnostics[i].diagnostic.id == nil && batch.diagnostics[i].diagnostic.index == index {
            batch.diagnostics[i].diagnostic.id = id
        }
    }

    /// Reads one member of a landmark object (the reader is at its value): a duplicate key is an error, an
    /// unknown key is kept, a known one is read by its column's kind.
    @inline(__always)
    mutating func readMember(
        _ reader: JSONPullReader, match: Int, unknownKey: String?, at: SourcePosition, into r: inout Reading, batch: RowBatch
    ) throws {
        let kind = try reader.peekKind()
        let key = unknownKey ?? Self.keys[match].0
        let duplicate: Bool
        if match >= 0 {
            duplicate = r.seenKeys & (1 << UInt64(match)) != 0
            r.seenKeys |= 1 << UInt64(match)
        } else {
            duplicate = r.extras.contains { $0.key == key }
        }
        if duplicate {
            report(batch, .error, "duplicate key '\(key)' in one landmark", at: at, index: r.index, id: r.id, field: key)
            do { try reader.skipValue() } catch { try recover(error, batch, key, index: r.index, id: r.id) }
            return
        }
        guard match >= 0 else { return try readUnknown(reader, key: key, at: at, into: &r, batch: batch) }
        switch Self.keys[match].1 {
        case .coordinates:
            r.sawCoordinates = true
            try readCoordinates(reader, at: at, kind: kind, into: &r.record, index: r.index, id: r.id, batch: batch)
        case .isFavourite:
            r.favouriteAt = (at, try readBool(reader, kind: kind, key: key, at: at, index: r.index, id: r.id, batch: batch))
        case .column(let column):
            try readColumn(column, reader, kind: kind, key: key, at: at, into: &r, batch: batch)
        }
    }

    /// Keeps the member of an unknown key (warned once per file on import).
    mutating func readUnknown(_ reader: JSONPullReader, key: String, at: SourcePosition, into r: inout Reading, batch: RowBatch) throws {
        let value: JSONValue
        do { value = try reader.readValue() } catch { return try recover(error, batch, key, index: r.index, id: r.id) }
        r.extras.append(JSONMember(key: key, value: value, position: at))
        if mode == .importRecord {
            warnOnce(
                batch, key, kind: "unknown-key", "unknown key '\(key)' is kept as it is (warned once per file)", at: at, index: r.index, id: r.id)
        }
    }

    /// Reads the value of `column`'s key by the column's kind (docs/cli.md §2).
    @inline(__always)
    mutating func readColumn(
        _ column: LandmarkColumn, _ reader: JSONPullReader, kind: JSONKind, key: String, at: SourcePosition, into r: inout Reading,
        batch: RowBatch
    ) throws {
        switch column.kind {
        case .id:
            try readID(reader, kind: kind, at: at, into: &r, batch: batch)
        case .text(let required):
            if required { r.sawName = true } else { r.record.mark(column) }
            try readText(column, required: required, reader, kind: kind, key: key, at: at, into: &r, batch: batch)
        case .bool:
            let value = try readBool(reader, kind: kind, key: key, at: at, index: r.index, id: r.id, batch: batch)
            r.record.mark(column)
            r.record.setFlag(column, value ?? false)
        case .int(let optional), .double(let optional):
            r.record.mark(column)
            try readNumber(column, optional: optional, reader, kind: kind, key: key, at: at, into: &r, batch: batch)
        case .stamp where mode == .snapshotRow:
            try readStamp(column, reader, kind: kind, at: at, into: &r.record, index: r.index, id: r.id, batch: batch)
            if column == .updatedMs { r.sawUpdatedAt = true }
            if column == .node { r.sawNode = true }
        case .stamp:
            do { try reader.skipValue() } catch { try recover(error, batch, key, index: r.index, id: r.id) }
            report(
                batch, .error,
                "'\(key)' is a snapshot field and cannot be a landmark key (kept, it would repeat that key in every snapshot); rename or remove it",
                at: at, index: r.index, id: r.id, field: key)
        case .coordinate, .extra:
            preconditionFailure("\(column) has no key of its own")
        }
    }

    /// Reports that `field`'s value is not `expected`, reading the value to name it.
    mutating func wrong(
        _ reader: JSONPullReader, _ field: String, _ expected: String, at: SourcePosition, index: Int, id: Int64?, batch: RowBatch
    ) throws {
        let value: JSONValue
        do { value = try reader.readValue() } catch { return try recover(error, batch, field, index: index, id: id) }
        report(batch, .error, "\(field) must be \(expected), found \(value.described)", at: at, index: index, id: id, field: field)
    }

    mutating func readID(_ reader: JSONPullReader, kind: JSONKind, at: SourcePosition, into r: inout Reading, batch: RowBatch) throws {
        guard kind == .number else {
            return try wrong(reader, "id", "an integer that fits in 64 bits", at: at, index: r.index, id: r.id, batch: batch)
        }
        let n = try reader.readNumber()
        if let v = n.int64Value {
            r.id = v
        } else {
            report(batch, .error, "id must be an integer that fits in 64 bits, found the number \(n.literal)", at: at, index: r.index, field: "id")
        }
    }

    @inline(__always)
    mutating func readText(
        _ column: LandmarkColumn, required: Bool, _ reader: JSONPullReader, kind: JSONKind, key: String, at: SourcePosition,
        into r: inout Reading, batch: RowBatch
    ) throws {
        if kind == .null && !required {
            try reader.readNull()
        } else if kind == .string {
            let start = batch.bytes.count
            let count: Int
            do { count = try reader.appendString(to: &batch.bytes) } catch { return try recover(error, batch, key, index: r.index, id: r.id) }
            r.record.texts[column.textSlot] = (Int32(start), Int32(count))
            if required, Self.isBlank(batch.bytes[start...]) {
                report(batch, .error, "\(key) must not be empty", at: at, index: r.index, id: r.id, field: key)
            }
        } else {
            try wrong(reader, key, required ? "a non-empty string" : "a string or null", at: at, index: r.index, id: r.id, batch: batch)
        }
    }

    /// A boolean or `null` (false); nil after reporting any other value.
    mutating func readBool(
        _ reader: JSONPullReader, kind: JSONKind, key: String, at: SourcePosition, index: Int, id: Int64?, batch: RowBatch
    ) throws -> Bool? {
        switch kind {
        case .bool: return try reader.readBool()
        case .null:
            try reader.readNull()
            return false
        default:
            try wrong(reader, key, "true, false or null", at: at, index: index, id: id, batch: batch)
            return nil
        }
    }

    /// An integer field (fits in 64 bits) or a double field (finite); `null` when `optional`.
    mutating func readNumber(
        _ column: LandmarkColumn, optional: Bool, _ reader: JSONPullReader, kind: JSONKind, key: String, at: SourcePosition,
        into r: inout Reading, batch: RowBatch
    ) throws {
        let integer = if case .int = column.kind { true } else { false }
        let expected = (integer ? "an integer that fits in 64 bits" : "a finite number") + (optional ? " or null" : "")
        if kind == .null && optional {
            try reader.readNull()
            return r.record.setNull(column)
        }
        guard kind == .number else { return try wrong(reader, key, expected, at: at, index: r.index, id: r.id, batch: batch) }
        let n = try reader.readNumber()
        if integer, let v = n.int64Value {
            r.record.set(column, int: v)
        } else if !integer, n.doubleValue.isFinite {
            r.record.set(column, double: n.doubleValue)
        } else {
            report(batch, .error, "\(key) must be \(expected), found the number \(n.literal)", at: at, index: r.index, id: r.id, field: key)
        }
    }

    /// The checks once the object is read: `isFavourite`, the required keys, a snapshot row's stamp,
    /// Apple's 2019 shape, and the kept unknown keys.
    mutating func finishRecord(_ r: inout Reading, at position: SourcePosition, errorsBefore: Int, batch: RowBatch) {
        let (index, id) = (r.index, r.id)
        if let (at, value) = r.favouriteAt {
            if r.record.has(.isFavorite) {
                report(batch, .error, "both isFavorite and isFavourite are given; keep one", at: at, index: index, id: id, field: "isFavourite")
            } else {
                warnOnce(
                    batch, "isFavourite", kind: "quirk", "the British spelling 'isFavourite' is read as 'isFavorite'", at: at, index: index, id: id)
                r.record.mark(.isFavorite)
                r.record.isFavorite = value ?? false
            }
        }
        if id == nil && r.seenKeys & 1 == 0 {
            report(batch, .error, "missing required key 'id'", at: position, index: index, field: "id")
        }
        if !r.sawName { report(batch, .error, "missing required key 'name'", at: position, index: index, id: id, field: "name") }
        if !r.sawCoordinates {
            report(batch, .error, "missing required key 'coordinates'", at: position, index: index, id: id, field: "coordinates")
        }
        if mode == .snapshotRow && errors == errorsBefore {
            if !r.sawUpdatedAt {
                report(batch, .error, "missing updatedAt", at: position, index: index, id: id, field: "updatedAt")
            } else if !r.sawNode {
                report(batch, .error, "missing node", at: position, index: index, id: id, field: "node")
            }
        }
        // Apple's 2019 shape: no isFeatured, and category "Featured" meant featured.
        if mode == .importRecord, !r.record.has(.isFeatured), r.record.has(.category) {
            let t = r.record.texts[LandmarkColumn.category.textSlot]
            if t.start >= 0, batch.bytes[Int(t.start)..<Int(t.start + t.count)].elementsEqual("Featured".utf8) {
                warnOnce(
                    batch, "\u{0}legacy", kind: "quirk", "legacy shape without isFeatured: category \"Featured\" is read as featured",
                    at: position, index: index, id: id)
                r.record.mark(.isFeatured)
                r.record.isFeatured = true
            }
        }
        if !r.extras.isEmpty {
            r.record.mark(.extra)
            r.record.extraJSON = JSONValue.object(r.extras).serialized()
        }
    }

    /// Reads one stamp key of a snapshot row (docs/snapshot-format.md §3): `updatedAt` an RFC 3339 date-time, `counter` an
    /// integer in 0…``HLCStamp/maxCounter``, `node` a node id, `deleted` a boolean or null.
    mutating func readStamp(
        _ column: LandmarkColumn, _ reader: JSONPullReader, kind: JSONKind, at: SourcePosition,
        into record: inout RawLandmark, index: Int, id: Int64?, batch: RowBatch
    ) throws {
        let key = column.jsonKey ?? ""
        // The common shapes are read without building a value: a string of bytes, a number, a boolean.
        guard case .stamp(let role) = column.kind else { preconditionFailure("\(column) is not a stamp column") }
        switch role {
        case .updatedMs where kind == .string:
            let start = batch.bytes.count
            do { try reader.appendString(to: &batch.bytes) } catch { return try recover(error, batch, key, index: index, id: id) }
            let ms = batch.bytes.withUnsafeBufferPointer { Timestamp.parse(utf8: UnsafeBufferPointer(rebasing: $0[start...])) }
            let text = ms == nil ? String(decoding: batch.bytes[start...], as: UTF8.self) : ""
            batch.bytes.removeSubrange(start...)
            if let ms {
                record.updatedMs = ms
                return
            }
            return report(
                batch, .error, "\(key) must be an RFC 3339 date-time, found \(JSONValue.string(text).described)", at: at,
                index: index, id: id, field: key)
        case .counter where kind == .number:
            let n = try reader.readNumber()
            if let c = n.int64Value, HLCStamp.isValidCounter(c) {
                record.counter = c
                return
            }
            return report(
                batch, .error, "\(key) must be an integer in 0…\(HLCStamp.maxCounter), found the number \(n.literal)", at: at,
                index: index, id: id, field: key)
        case .node where kind == .string:
            let start = batch.bytes.count
            do { try reader.appendString(to: &batch.bytes) } catch { return try recover(error, batch, key, index: index, id: id) }
            let bytes = batch.bytes[start...]
            if NodeID.isValid(utf8: bytes) {
                record.texts[TextRanges.nodeSlot] = (Int32(start), Int32(bytes.count))
                return
            }
            let text = String(decoding: bytes, as: UTF8.self)
            batch.bytes.removeSubrange(start...)
            return report(
                batch, .error, "\(key) must be \(NodeID.rule), found \(JSONValue.string(text).described)",
                at: at, index: index, id: id, field: key)
        case .deleted where kind == .bool:
            record.deleted = try reader.readBool()
            return
        case .updatedMs, .counter, .node, .deleted, .seq:
            break  // another JSON kind: parsed (and refused) below
        }
        let value: JSONValue
        do { value = try reader.readValue() } catch { return try recover(error, batch, key, index: index, id: id) }
        switch StampField.parse(role, value) {
        case .success(let parsed):
            switch parsed {
            case .wall(let ms): record.updatedMs = ms
            case .counter(let c): record.counter = c
            case .deleted(let d): record.deleted = d
            case .node(let node):
                let start = batch.bytes.count
                batch.bytes.append(contentsOf: node.utf8)
                record.texts[TextRanges.nodeSlot] = (Int32(start), Int32(node.utf8.count))
            }
        case .failure(let problem):
            report(batch, .error, "\(key) \(problem)", at: at, index: index, id: id, field: key)
        }
    }

    mutating func readCoordinates(
        _ reader: JSONPullReader, at: SourcePosition, kind: JSONKind, into record: inout RawLandmark,
        index: Int, id: Int64?, batch: RowBatch
    ) throws {
        guard kind == .object else {
            let value: JSONValue
            do { value = try reader.readValue() } catch { return try recover(error, batch, "coordinates", index: index, id: id) }
            report(
                batch, .error, "coordinates must be an object with latitude and longitude, found \(value.described)",
                at: at, index: index, id: id, field: "coordinates")
            return
        }
        var sawLatitude = false
        var sawLongitude = false
        try reader.beginObject()
        while let (key, keyAt) = try nextKey(reader, in: "coordinates", batch, index: index, id: id) {
            let column: LandmarkColumn
            switch key {
            case "latitude" where sawLatitude, "longitude" where sawLongitude:
                do { try reader.skipValue() } catch { try recover(error, batch, "coordinates.\(key)", index: index, id: id) }
                report(batch, .error, "duplicate key '\(key)' in coordinates", at: keyAt, index: index, id: id, field: "coordinates.\(key)")
                continue
            case "latitude":
                column = .latitude
                sawLatitude = true
            case "longitude":
                column = .longitude
                sawLongitude = true
            default:
                do { try reader.skipValue() } catch { try recover(error, batch, "coordinates.\(key)", index: index, id: id) }
                report(
                    batch, .error, "unknown key '\(key)' in coordinates (only latitude and longitude are stored)",
                    at: keyAt, index: index, id: id, field: "coordinates.\(key)")
                continue
            }
            guard case .coordinate(let limit) = column.kind else { preconditionFailure() }
            guard try reader.peekKind() == .number else {
                let value: JSONValue
                do { value = try reader.readValue() } catch {
                    try recover(error, batch, "coordinates.\(key)", index: index, id: id)
                    continue
                }
                report(
                    batch, .error, "\(key) must be a number, found \(value.described)", at: keyAt, index: index, id: id, field: "coordinates.\(key)")
                continue
            }
            let n = try reader.readNumber()
            let v = n.doubleValue
            guard v.isFinite, v >= -limit, v <= limit else {
                report(
                    batch, .error, "\(key) \(n.literal) is outside −\(Int(limit))…\(Int(limit))", at: keyAt, index: index, id: id,
                    field: "coordinates.\(key)")
                continue
            }
            record.set(column, double: v)
        }
        if !sawLatitude { report(batch, .error, "missing required key 'latitude'", at: at, index: index, id: id, field: "coordinates.latitude") }
        if !sawLongitude { report(batch, .error, "missing required key 'longitude'", at: at, index: index, id: id, field: "coordinates.longitude") }
    }

    /// True when the bytes are empty or only whitespace (ASCII fast path; Unicode checked when needed).
    static func isBlank(_ bytes: ArraySlice<UInt8>) -> Bool {
        var nonASCII = false
        for b in bytes {
            if b >= 0x80 {
                nonASCII = true
                continue
            }
            if b != 0x20 && b != 0x09 && b != 0x0A && b != 0x0D { return false }
        }
        return !nonASCII || String(decoding: bytes, as: UTF8.self).allSatisfy(\.isWhitespace)
    }
}

/// The stamp keys of snapshot rows (docs/snapshot-format.md §3), validated in one place for landmarks and positions.
enum StampField {
    case wall(Int64)
    case counter(Int64)
    case node(String)
    case deleted(Bool)

    /// Parses the value of stamp column `column` (`updatedMs`, `counter`, `node`, `deleted`; `seq` has no key).
    /// - Returns: the value, or what is wrong with it (`must be …, found …`).
    static func parse(_ column: LandmarkColumn.Stamp, _ value: JSONValue) -> Result<StampField, StampProblem> {
        switch column {
        case .updatedMs:
            if case .string(let s) = value, let ms = Timestamp.parse(s) { return .success(.wall(ms)) }
            return .failure(StampProblem("must be an RFC 3339 date-time, found \(value.described)"))
        case .counter:
            if case .number(let n) = value, let c = n.int64Value, HLCStamp.isValidCounter(c) { return .success(.counter(c)) }
            return .failure(StampProblem("must be an integer in 0…\(HLCStamp.maxCounter), found \(value.described)"))
        case .node:
            if case .string(let s) = value, NodeID(rawValue: s) != nil { return .success(.node(s)) }
            return .failure(StampProblem("must be \(NodeID.rule), found \(value.described)"))
        case .deleted:
            switch value {
            case .bool(let b): return .success(.deleted(b))
            case .null: return .success(.deleted(false))
            default: return .failure(StampProblem("must be true or false, found \(value.described)"))
            }
        case .seq:
            preconditionFailure("seq has no key in a snapshot row")
        }
    }
}

/// What is wrong with a stamp value.
struct StampProblem: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

extension StampProblem: CustomStringConvertible { var description: String { message } }

extension JSONValue {
    /// The value as a message names it: `the number 91`, `the string "x"`, `true`, or its kind (`an object`).
    var described: String {
        switch self {
        case .number(let n): return "the number \(n.literal)"
        case .string(let s): return "the string \(s.count > 40 ? String(reflecting: String(s.prefix(40)) + "…") : String(reflecting: s))"
        case .bool(let b): return "\(b)"
        default: return kind.description
        }
    }
}
