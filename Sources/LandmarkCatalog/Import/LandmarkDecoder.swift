/// A landmark record decoded straight from the reader, field by field, with its strings kept as UTF-8
/// byte ranges in the batch's shared buffer (no `String` per field): the import's fast path.
struct RawLandmark {
    /// Which optional keys the record had (`Field` bits). Keys it lacked keep stored values.
    var present: UInt16 = 0
    var index: Int
    var position: SourcePosition
    var id: Int64 = 0
    /// Byte ranges in `LandmarkBatch.bytes`, by `Field.text` order; `start < 0` means null.
    var texts = TextRanges()
    var isFeatured = false
    var isFavorite = false
    var latitude = 0.0
    var longitude = 0.0
    /// Unknown keys as a compact JSON object text, or nil.
    var extraJSON: String?
    /// For snapshots: the last-writer-wins keys, when present.
    var stamp: StampMembers?
    /// Set when this id already appeared in the file: the index of its first record.
    var duplicateOf: Int?

    /// Bits of `present`; `text` fields are also indexes into `texts`.
    enum Field {
        static let name = 0, category = 1, city = 2, state = 3, park = 4, description = 5, imageName = 6
        static let isFeatured: UInt16 = 1 << 7, isFavorite: UInt16 = 1 << 8, extra: UInt16 = 1 << 9
        static func bit(_ text: Int) -> UInt16 { 1 << UInt16(text) }
    }
}

/// Seven byte ranges stored inline (no array allocation per record).
struct TextRanges {
    private var ranges: (Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (-1, -1, -1, -1, -1, -1, -1)

    /// The range of field `i` (0…6); `start < 0` means null.
    subscript(i: Int) -> (start: Int32, count: Int32) {
        get {
            let v: Int64
            switch i {
            case 0: v = ranges.0
            case 1: v = ranges.1
            case 2: v = ranges.2
            case 3: v = ranges.3
            case 4: v = ranges.4
            case 5: v = ranges.5
            default: v = ranges.6
            }
            return v < 0 ? (-1, 0) : (Int32(truncatingIfNeeded: v >> 32), Int32(truncatingIfNeeded: v & 0xFFFF_FFFF))
        }
        set {
            let v = newValue.start < 0 ? -1 : (Int64(newValue.start) << 32) | Int64(UInt32(bitPattern: newValue.count))
            switch i {
            case 0: ranges.0 = v
            case 1: ranges.1 = v
            case 2: ranges.2 = v
            case 3: ranges.3 = v
            case 4: ranges.4 = v
            case 5: ranges.5 = v
            default: ranges.6 = v
            }
        }
    }
}

/// A snapshot row's last-writer-wins keys, as read.
final class StampMembers {
    var updatedAt, counter, node, deleted: JSONMember?
}

/// Decoded records and the diagnostics found while decoding them, handed from the reading thread to
/// the writing one.
final class LandmarkBatch: @unchecked Sendable {
    var bytes: [UInt8] = []
    var records: [RawLandmark] = []
    /// Diagnostics in input order, each after the record it concerns (`afterRecord` = count of records before it).
    var diagnostics: [(afterRecord: Int, diagnostic: Diagnostic)] = []
    /// The reading failed: a syntax, read or usage error that ends the import.
    var failure: (any Error)?
    /// True for the last batch.
    var isLast = false
    /// Records read from the file so far (valid or not).
    var recordsRead = 0
    /// With the last batch: every id in the file, for `--prune`.
    var seen = SeenIDs()

    init() {
        bytes.reserveCapacity(1 << 21)
        records.reserveCapacity(LandmarkDecoder.batchSize)
    }

    /// The text field `field` of `record`, or nil when null.
    func text(_ record: RawLandmark, _ field: Int) -> String? {
        let r = record.texts[field]
        guard r.start >= 0 else { return nil }
        return bytes.withUnsafeBufferPointer {
            String(decoding: UnsafeBufferPointer(rebasing: $0[Int(r.start)..<Int(r.start + r.count)]), as: UTF8.self)
        }
    }
}

/// Ids seen so far in one file, in memory that grows with the number of *runs* of consecutive ids in
/// consecutive records (one run for a typical file), not with the number of records; out-of-order ids
/// fall back to a dictionary. Remembers each id's first record index, for the duplicate-id message.
struct SeenIDs {
    /// Runs: ids lo…hi were records firstIndex…firstIndex + (hi − lo), sorted by lo, disjoint.
    private var runs: [(lo: Int64, hi: Int64, firstIndex: Int)] = []
    private var others: [Int64: Int] = [:]

    /// Records `id` at record `index`; returns the first index if the id was already seen.
    mutating func insert(_ id: Int64, index: Int) -> Int? {
        if let last = runs.last {
            if id == last.hi &+ 1, index == last.firstIndex + Int(last.hi - last.lo) + 1, last.hi < Int64.max {
                runs[runs.count - 1].hi = id
                return others[id]
            }
            if let first = firstIndex(of: id) { return first }
        } else if let first = others[id] {
            return first
        }
        if runs.isEmpty || id > runs[runs.count - 1].hi {
            runs.append((id, id, index))
        } else {
            others[id] = index
        }
        return nil
    }

    /// The first record index of `id`, or nil when unseen.
    func firstIndex(of id: Int64) -> Int? {
        if let i = others[id] { return i }
        var low = 0, high = runs.count - 1
        while low <= high {
            let mid = (low + high) / 2
            let run = runs[mid]
            if id < run.lo { high = mid - 1 } else if id > run.hi { low = mid + 1 } else {
                return run.firstIndex + Int(id - run.lo)
            }
        }
        return nil
    }

    func contains(_ id: Int64) -> Bool { firstIndex(of: id) != nil }
}

/// Reads landmark records from a JSON reader positioned inside the top-level array, validating each
/// against SPEC §3, into batches. Diagnostics carry file, line:column, record index, id and field.
struct LandmarkDecoder {
    static let batchSize = 2000

    let file: String
    /// Read `updatedAt`, `counter`, `node`, `deleted` into `stamp` (snapshot rows) instead of keeping them as unknown keys.
    let snapshotRows: Bool
    /// Keys already warned about in this file (one warning per key).
    var warnedKeys: Set<String> = []
    var seen = SeenIDs()
    /// Errors so far (with `strict`, warnings count too).
    var errors = 0
    let strict: Bool

    init(file: String, strict: Bool, snapshotRows: Bool = false) {
        self.file = file
        self.strict = strict
        self.snapshotRows = snapshotRows
    }

    mutating func report(_ batch: LandmarkBatch, _ severity: Diagnostic.Severity, _ message: String, at position: SourcePosition?,
                         index: Int? = nil, id: Int64? = nil, field: String? = nil) {
        if severity == .error || strict { errors += 1 }
        batch.diagnostics.append((batch.records.count, Diagnostic(severity: severity, message: message, file: file, position: position,
                                                                   index: index, id: id, field: field)))
    }

    mutating func warnOnce(_ batch: LandmarkBatch, _ key: String, _ message: String, at: SourcePosition, index: Int, id: Int64?) {
        guard warnedKeys.insert(key).inserted else { return }
        report(batch, .warning, message, at: at, index: index, id: id, field: key.hasPrefix("\u{0}") ? nil : key)
    }

    /// Reports a string with bad content (`JSONStringContentError`: the reader is then just past the string)
    /// as an error on `field`, so the record goes on being read; rethrows any other error.
    @inline(never)  // the error path: kept out of the loops that call it
    mutating func recover(_ error: any Error, _ batch: LandmarkBatch, _ field: String, index: Int, id: Int64?) throws {
        guard let error = error as? JSONStringContentError else { throw error }
        report(batch, .error, error.message(in: field), at: error.position, index: index, id: id, field: field)
    }

    /// The reader's next key in `table`; a key with bad content is reported as an error on it and its member skipped.
    mutating func nextKey(_ reader: JSONPullReader, in table: JSONKeyTable, _ batch: LandmarkBatch, index: Int, id: Int64?)
        throws -> (index: Int, key: String?, position: SourcePosition)? {
        while true {
            do { return try reader.nextKey(in: table) } catch { try skipMember(badKey: error, reader, batch, index: index, id: id) }
        }
    }

    /// The reader's next key in the object `object`; a key with bad content is reported as an error on it and its member skipped.
    mutating func nextKey(_ reader: JSONPullReader, in object: String, _ batch: LandmarkBatch, index: Int, id: Int64?)
        throws -> (key: String, position: SourcePosition)? {
        while true {
            do { return try reader.nextKey() } catch { try skipMember(badKey: error, reader, batch, index: index, id: id, in: object) }
        }
    }

    /// Reports a key with bad content (`error`; any other error is rethrown) and skips its value.
    @inline(never)  // the error path: kept out of the loops that call it
    mutating func skipMember(badKey error: any Error, _ reader: JSONPullReader, _ batch: LandmarkBatch, index: Int, id: Int64?,
                             in object: String? = nil) throws {
        guard let error = error as? JSONStringContentError else { throw error }
        let key = (object.map { $0 + "." } ?? "") + (error.repaired ?? "")
        report(batch, .error, error.message(in: "key '\(key)'"), at: error.position, index: index, id: id, field: key)
        do { try reader.skipValue() } catch { try recover(error, batch, key, index: index, id: id) }
    }

    /// The keys a landmark record may have, in the order `decode` numbers them (12… only in snapshots).
    static let keyNames = ["id", "name", "category", "city", "state", "park", "description", "imageName", "isFeatured",
                           "isFavorite", "isFavourite", "coordinates", "updatedAt", "counter", "node", "deleted"]
    static let keys = JSONKeyTable(Array(keyNames.prefix(12)))
    static let snapshotKeys = JSONKeyTable(keyNames)

    /// Decodes the next array element into `batch` (when valid). The reader is at the element's start.
    /// - Throws: `JSONSyntaxError` / `JSONReadError` from the reader; validation problems are reported, not thrown, and
    ///   so is a string with bad content (`JSONStringContentError`), as an error on its field.
    mutating func decode(_ reader: JSONPullReader, index: Int, into batch: LandmarkBatch) throws {
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
        var id: Int64?
        // Messages about fields before `id` learn the id once it is read.
        defer {
            if let id {
                for i in diagnosticsBefore..<batch.diagnostics.count where batch.diagnostics[i].diagnostic.id == nil
                    && batch.diagnostics[i].diagnostic.index == index {
                    batch.diagnostics[i].diagnostic.id = id
                }
            }
        }
        var record = RawLandmark(index: index, position: position)
        var seenKeys: UInt32 = 0  // bit per known key, for duplicate keys
        var sawName = false, sawCoordinates = false, sawIsFavorite = false
        var favouriteAt: (SourcePosition, Bool?)?
        var extras: [JSONMember] = []
        try reader.beginObject()
        let table = snapshotRows ? Self.snapshotKeys : Self.keys
        while let (match, unknownKey, at) = try nextKey(reader, in: table, batch, index: index, id: id) {
            let kind = try reader.peekKind()
            let known = match
            let key = unknownKey ?? Self.keyNames[match]
            if known >= 0 {
                if seenKeys & (1 << known) != 0 {
                    report(batch, .error, "duplicate key '\(key)' in one landmark", at: at, index: index, id: id, field: key)
                    do { try reader.skipValue() } catch { try recover(error, batch, key, index: index, id: id) }
                    continue
                }
                seenKeys |= 1 << known
            } else if extras.contains(where: { $0.key == key }) {
                report(batch, .error, "duplicate key '\(key)' in one landmark", at: at, index: index, id: id, field: key)
                do { try reader.skipValue() } catch { try recover(error, batch, key, index: index, id: id) }
                continue
            }
            func wrong(_ field: String, _ expected: String) throws {
                let value: JSONValue
                do { value = try reader.readValue() } catch { return try recover(error, batch, field, index: index, id: id) }
                report(batch, .error, "\(field) must be \(expected), found \(value.described)", at: at, index: index, id: id, field: field)
            }
            switch known {
            case 0:
                guard kind == .number else { try wrong("id", "an integer that fits in 64 bits"); continue }
                let n = try reader.readNumber()
                if let v = n.int64Value { id = v } else {
                    report(batch, .error, "id must be an integer that fits in 64 bits, found the number \(n.literal)", at: at, index: index, field: "id")
                }
            case 1:
                sawName = true
                guard kind == .string else { try wrong("name", "a non-empty string"); continue }
                let start = batch.bytes.count
                let count: Int
                do { count = try reader.appendString(to: &batch.bytes) } catch { try recover(error, batch, "name", index: index, id: id); continue }
                record.texts[RawLandmark.Field.name] = (Int32(start), Int32(count))
                if Self.isBlank(batch.bytes[start...]) {
                    report(batch, .error, "name must not be empty", at: at, index: index, id: id, field: "name")
                }
            case 2...7:
                let field = known - 1
                record.present |= RawLandmark.Field.bit(field)
                if kind == .null {
                    try reader.readNull()
                } else if kind == .string {
                    let start = batch.bytes.count
                    let count: Int
                    do { count = try reader.appendString(to: &batch.bytes) } catch { try recover(error, batch, key, index: index, id: id); continue }
                    record.texts[field] = (Int32(start), Int32(count))
                } else {
                    try wrong(key, "a string or null")
                }
            case 8, 9, 10:
                let value: Bool?
                switch kind {
                case .bool: value = try reader.readBool()
                case .null: try reader.readNull(); value = false
                default: try wrong(key, "true, false or null"); value = nil
                }
                if known == 8 {
                    record.present |= RawLandmark.Field.isFeatured
                    record.isFeatured = value ?? false
                } else if known == 9 {
                    sawIsFavorite = true
                    record.present |= RawLandmark.Field.isFavorite
                    record.isFavorite = value ?? false
                } else {
                    favouriteAt = (at, value)
                }
            case 11:
                sawCoordinates = true
                try readCoordinates(reader, at: at, kind: kind, into: &record, index: index, id: id, batch: batch)
            case 12...15:
                let value: JSONValue
                do { value = try reader.readValue() } catch { try recover(error, batch, key, index: index, id: id); continue }
                let member = JSONMember(key: key, value: value, position: at)
                let stamp = record.stamp ?? StampMembers()
                record.stamp = stamp
                switch known {
                case 12: stamp.updatedAt = member
                case 13: stamp.counter = member
                case 14: stamp.node = member
                default: stamp.deleted = member
                }
            default:
                let value: JSONValue
                do { value = try reader.readValue() } catch { try recover(error, batch, key, index: index, id: id); continue }
                extras.append(JSONMember(key: key, value: value, position: at))
                warnOnce(batch, key, "unknown key '\(key)' is kept as it is (warned once per file)", at: at, index: index, id: id)
            }
        }
        if let (at, value) = favouriteAt {
            if sawIsFavorite {
                report(batch, .error, "both isFavorite and isFavourite are given; keep one", at: at, index: index, id: id, field: "isFavourite")
            } else {
                warnOnce(batch, "isFavourite", "the British spelling 'isFavourite' is read as 'isFavorite'", at: at, index: index, id: id)
                record.present |= RawLandmark.Field.isFavorite
                record.isFavorite = value ?? false
            }
        }
        if id == nil && seenKeys & 1 == 0 {
            report(batch, .error, "missing required key 'id'", at: position, index: index, field: "id")
        }
        if !sawName { report(batch, .error, "missing required key 'name'", at: position, index: index, id: id, field: "name") }
        if !sawCoordinates {
            report(batch, .error, "missing required key 'coordinates'", at: position, index: index, id: id, field: "coordinates")
        }
        // Apple's 2019 shape: no isFeatured, and category "Featured" meant featured.
        if record.present & RawLandmark.Field.isFeatured == 0, record.present & RawLandmark.Field.bit(RawLandmark.Field.category) != 0 {
            let r = record.texts[RawLandmark.Field.category]
            if r.start >= 0, batch.bytes[Int(r.start)..<Int(r.start + r.count)].elementsEqual("Featured".utf8) {
                warnOnce(batch, "\u{0}legacy", "legacy shape without isFeatured: category \"Featured\" is read as featured",
                         at: position, index: index, id: id)
                record.present |= RawLandmark.Field.isFeatured
                record.isFeatured = true
            }
        }
        if !extras.isEmpty {
            record.present |= RawLandmark.Field.extra
            record.extraJSON = JSONValue.object(extras).serialized()
        }
        guard errors == errorsBefore, let id else {
            batch.bytes.removeSubrange(bytesBefore...)
            return
        }
        record.id = id
        record.duplicateOf = seen.insert(id, index: index)
        if record.duplicateOf != nil { errors += 1 }
        batch.records.append(record)
    }

    mutating func readCoordinates(_ reader: JSONPullReader, at: SourcePosition, kind: JSONKind, into record: inout RawLandmark,
                                  index: Int, id: Int64?, batch: LandmarkBatch) throws {
        guard kind == .object else {
            let value: JSONValue
            do { value = try reader.readValue() } catch { return try recover(error, batch, "coordinates", index: index, id: id) }
            report(batch, .error, "coordinates must be an object with latitude and longitude, found \(value.described)",
                   at: at, index: index, id: id, field: "coordinates")
            return
        }
        var sawLatitude = false, sawLongitude = false
        try reader.beginObject()
        while let (key, keyAt) = try nextKey(reader, in: "coordinates", batch, index: index, id: id) {
            let limit: Double
            switch key {
            case "latitude" where sawLatitude, "longitude" where sawLongitude:
                do { try reader.skipValue() } catch { try recover(error, batch, "coordinates.\(key)", index: index, id: id) }
                report(batch, .error, "duplicate key '\(key)' in coordinates", at: keyAt, index: index, id: id, field: "coordinates.\(key)")
                continue
            case "latitude": limit = 90; sawLatitude = true
            case "longitude": limit = 180; sawLongitude = true
            default:
                do { try reader.skipValue() } catch { try recover(error, batch, "coordinates.\(key)", index: index, id: id) }
                report(batch, .error, "unknown key '\(key)' in coordinates (only latitude and longitude are stored)",
                       at: keyAt, index: index, id: id, field: "coordinates.\(key)")
                continue
            }
            guard try reader.peekKind() == .number else {
                let value: JSONValue
                do { value = try reader.readValue() } catch { try recover(error, batch, "coordinates.\(key)", index: index, id: id); continue }
                report(batch, .error, "\(key) must be a number, found \(value.described)", at: keyAt, index: index, id: id, field: "coordinates.\(key)")
                continue
            }
            let n = try reader.readNumber()
            let v = n.doubleValue
            guard v.isFinite, v >= -limit, v <= limit else {
                report(batch, .error, "\(key) \(n.literal) is outside −\(Int(limit))…\(Int(limit))", at: keyAt, index: index, id: id,
                       field: "coordinates.\(key)")
                continue
            }
            if key == "latitude" { record.latitude = v } else { record.longitude = v }
        }
        if !sawLatitude { report(batch, .error, "missing required key 'latitude'", at: at, index: index, id: id, field: "coordinates.latitude") }
        if !sawLongitude { report(batch, .error, "missing required key 'longitude'", at: at, index: index, id: id, field: "coordinates.longitude") }
    }

    /// True when the bytes are empty or only whitespace (ASCII fast path; Unicode checked when needed).
    static func isBlank(_ bytes: ArraySlice<UInt8>) -> Bool {
        var nonASCII = false
        for b in bytes {
            if b >= 0x80 { nonASCII = true; continue }
            if b != 0x20 && b != 0x09 && b != 0x0A && b != 0x0D { return false }
        }
        return !nonASCII || String(decoding: bytes, as: UTF8.self).allSatisfy(\.isWhitespace)
    }
}
