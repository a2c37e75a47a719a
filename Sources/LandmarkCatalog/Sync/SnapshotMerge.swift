import Foundation

/// What merging one or more snapshots did (or, in a dry run, would do).
public struct MergeCounts: Sendable, Equatable {
    /// Landmark rows read from snapshots.
    public var landmarksSeen = 0
    /// Landmark rows that replaced (or created) the stored row.
    public var landmarksApplied = 0
    /// Position rows read.
    public var positionsSeen = 0
    /// Position rows that replaced (or created) the stored row.
    public var positionsApplied = 0
    /// Rows whose key was not greater than the stored row's (old or repeated deliveries).
    public var stale = 0
    /// Rows whose key equalled the stored one with different content: settled by the fixed rule, logged.
    public var ties = 0
    /// Rows stamped beyond the allowed drift: kept in quarantine, not applied.
    public var quarantined = 0

    public init() {}

    static func + (a: MergeCounts, b: MergeCounts) -> MergeCounts {
        var c = a
        c.landmarksSeen += b.landmarksSeen
        c.landmarksApplied += b.landmarksApplied
        c.positionsSeen += b.positionsSeen
        c.positionsApplied += b.positionsApplied
        c.stale += b.stale
        c.ties += b.ties
        c.quarantined += b.quarantined
        return c
    }
}

/// Merges one snapshot stream into the database, inside the caller's write transaction, by the rules of
/// SPEC §7: each row's order key is (`updatedAt` as an instant in ms, `counter`, `node`); a row replaces the
/// stored one only when its key is strictly greater; on equal keys with different content a tombstone
/// wins, else the greater content (compared as bytes of its canonical JSON) wins, and the tie is logged.
/// The result is the per-row maximum of a total order, so merging is commutative, associative and idempotent.
///
/// Each position is one guarded upsert (`INSERT … ON CONFLICT DO UPDATE … WHERE`, see
/// https://sqlite.org/lang_upsert.html).
struct SnapshotMerger {
    let store: CatalogStore
    let source: String
    /// Rows stamped later than this instant (ms since the epoch, UTC) are quarantined.
    let quarantineAfter: Int64
    let diagnostics: (Diagnostic) -> Void
    var counts = MergeCounts()
    var errors = 0
    let maxErrors = 20
    /// The largest key applied or seen (not quarantined): the clock moves past it.
    var maxSeen: (wall: Int64, counter: Int64) = (0, 0)
    var format: String?
    var version: Int64?
    var sawFormat = false, sawVersion = false

    init(store: CatalogStore, source: String, quarantineAfter: Int64, diagnostics: @escaping (Diagnostic) -> Void) {
        self.store = store
        self.source = source
        self.quarantineAfter = quarantineAfter
        self.diagnostics = diagnostics
    }

    mutating func error(_ message: String, at position: SourcePosition?, index: Int? = nil, id: Int64? = nil, field: String? = nil) {
        errors += 1
        guard errors <= maxErrors else { return }
        diagnostics(Diagnostic(severity: .error, message: message, file: source, position: position, index: index, id: id, field: field))
    }

    /// Reads and merges the whole snapshot.
    /// - Throws: `CatalogError` 76 for an unknown format or a newer version, 65 for malformed content
    ///   (after reporting each error to `diagnostics`); the caller rolls the transaction back.
    mutating func merge(_ reader: JSONPullReader) throws {
        do {
            guard try reader.peekKind() == .object else {
                error("a snapshot must be a JSON object with \"format\": \"\(SnapshotFormat.name)\"", at: reader.position)
                throw failure()
            }
            try reader.beginObject()
            while let (key, at) = try reader.nextKey() {
                switch key {
                case "format":
                    sawFormat = true
                    guard case .string(let s) = try reader.readValue() else {
                        error("format must be a string", at: at, field: "format"); continue
                    }
                    format = s
                    try checkEnvelope()
                case "version":
                    sawVersion = true
                    guard case .number(let n) = try reader.readValue(), let v = n.int64Value else {
                        error("version must be an integer", at: at, field: "version"); continue
                    }
                    guard v >= 1 else { error("version must be 1 or more, found \(v)", at: at, field: "version"); continue }
                    version = v
                    try checkEnvelope()
                case "landmarks":
                    try reader.beginArray()
                    var index = 0
                    var decoder = LandmarkDecoder(file: source, strict: false, snapshotRows: true)
                    let batch = LandmarkBatch()
                    while try reader.nextElement() {
                        counts.landmarksSeen += 1
                        try decoder.decode(reader, index: index, into: batch)
                        for (_, d) in batch.diagnostics where d.severity == .error {
                            error(d.message, at: d.position, index: d.index, id: d.id, field: d.field.map { "landmarks.\($0)" })
                        }
                        if let record = batch.records.first {
                            if let first = record.duplicateOf {
                                error("duplicate id \(record.id): records \(first) and \(record.index) both use it", at: record.position,
                                      index: record.index, id: record.id, field: "landmarks.id")
                            } else {
                                try mergeLandmark(record, in: batch)
                            }
                        }
                        batch.records.removeAll(keepingCapacity: true)
                        batch.bytes.removeAll(keepingCapacity: true)
                        batch.diagnostics.removeAll(keepingCapacity: true)
                        index += 1
                    }
                case "positions":
                    try reader.beginArray()
                    var index = 0
                    var batch: [PositionRow] = []
                    batch.reserveCapacity(Self.batchSize)
                    while try reader.nextElement() {
                        if let row = try readPosition(reader, index: index) { batch.append(row) }
                        index += 1
                        if batch.count == Self.batchSize {
                            try applyPositions(&batch)
                        }
                    }
                    try applyPositions(&batch)
                default:
                    try reader.skipValue()  // node, generatedAt, and keys a later minor revision may add
                }
            }
            try reader.finish()
        } catch let e as JSONSyntaxError {
            error(e.message, at: e.position)
        } catch let e as JSONStringContentError {  // outside landmark rows (which the decoder reads): malformed as well
            error(e.message, at: e.position)
        }
        try checkEnvelope()
        if errors == 0 {
            if !sawFormat { error("missing \"format\": \"\(SnapshotFormat.name)\"", at: nil, field: "format") }
            if !sawVersion { error("missing \"version\"", at: nil, field: "version") }
        }
        if errors > 0 { throw failure() }
    }

    func checkEnvelope() throws {
        if let format, format != SnapshotFormat.name {
            throw CatalogError(.incompatible, "unknown snapshot format \(String(reflecting: format)) (expected \"\(SnapshotFormat.name)\"), \(source)")
        }
        if let version, version > SnapshotFormat.version {
            throw CatalogError(.incompatible, "snapshot version \(version) is newer than this catalog reads (\(SnapshotFormat.version)), \(source)",
                               hint: "upgrade catalog on this machine")
        }
    }

    func failure() -> CatalogError {
        CatalogError(.dataInvalid, "\(source) is not a valid snapshot (\(errors == 1 ? "1 error" : "\(errors) errors")); nothing was merged")
    }

    // MARK: Stamps

    /// Reads `updatedAt`, `counter`, `node`, `deleted` from a row.
    mutating func stamp(_ members: [JSONMember], index: Int, at: SourcePosition, kind: String, id: Int64?)
        -> (stamp: HLCStamp, deleted: Bool)? {
        var wall: Int64?, counter: Int64 = 0, node: String?, deleted = false
        let before = errors
        for m in members {
            switch m.key {
            case "updatedAt":
                if case .string(let s) = m.value, let ms = Timestamp.parse(s) { wall = ms } else {
                    error("updatedAt must be an RFC 3339 date-time, found \(m.value.described)", at: m.position, index: index, id: id, field: "\(kind).updatedAt")
                }
            case "counter":
                if case .number(let n) = m.value, let c = n.int64Value, c >= 0 { counter = c } else {
                    error("counter must be a non-negative integer, found \(m.value.described)", at: m.position, index: index, id: id, field: "\(kind).counter")
                }
            case "node":
                if case .string(let s) = m.value, CatalogStore.isValidNodeID(s) { node = s } else {
                    error("node must be 1–64 characters of A–Z a–z 0–9 . _ -, found \(m.value.described)", at: m.position, index: index, id: id, field: "\(kind).node")
                }
            case "deleted":
                switch m.value {
                case .bool(let b): deleted = b
                case .null: deleted = false
                default: error("deleted must be true or false", at: m.position, index: index, id: id, field: "\(kind).deleted")
                }
            default: break
            }
        }
        if wall == nil && errors == before { error("missing updatedAt", at: at, index: index, id: id, field: "\(kind).updatedAt") }
        if node == nil && errors == before { error("missing node", at: at, index: index, id: id, field: "\(kind).node") }
        guard errors == before, let wall, let node else { return nil }
        return (HLCStamp(wallMilliseconds: wall, counter: counter, node: node), deleted)
    }

    /// Quarantines a row stamped beyond the drift limit. Returns true when it did.
    mutating func quarantine(_ stamp: HLCStamp, kind: String, key: String, rowJSON: @autoclosure () -> String) throws -> Bool {
        guard stamp.wallMilliseconds > quarantineAfter else {
            if (stamp.wallMilliseconds, stamp.counter) > maxSeen { maxSeen = (stamp.wallMilliseconds, stamp.counter) }
            return false
        }
        counts.quarantined += 1
        let ahead = Double(stamp.wallMilliseconds - (quarantineAfter)) / 1000
        // The same row delivered again (every cron run, say) is kept once and reported once.
        try store.connection.execute(sql: """
            INSERT INTO sync_quarantine (received_at, source, kind, row_key, updated_ms, counter, node, row_json, reason)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (kind, row_key, updated_ms, counter, node) DO NOTHING
            """, [.text(Timestamp.format(milliseconds: store.wallClock.nowMilliseconds())), .text(source), .text(kind), .text(key),
                  .integer(stamp.wallMilliseconds), .integer(stamp.counter), .text(stamp.node), .text(rowJSON()),
                  .text("stamped \(Timestamp.format(milliseconds: stamp.wallMilliseconds)), beyond the allowed clock drift by \(ahead) s")])
        guard store.connection.changes > 0 else { return true }
        diagnostics(Diagnostic(severity: .warning,
                               message: "quarantined \(kind) \(key): stamped \(Timestamp.format(milliseconds: stamp.wallMilliseconds)), beyond the allowed clock drift; not applied",
                               file: source, position: nil, index: nil, id: nil, field: nil))
        return true
    }

    // MARK: Positions

    /// Rows are applied in batches sorted by user id: B-tree pages are then visited in key order, which
    /// is what makes a million random-order upserts fast (and the batch bounds memory).
    static let batchSize = 100_000

    /// One position row of a snapshot, validated.
    struct PositionRow {
        var user: String
        var page: Int64
        var landmark: Int64?
        var stamp: HLCStamp
        var deleted: Bool
        var index: Int
        var position: SourcePosition

        /// The row as JSON, for the quarantine table.
        var json: String {
            var w = JSONWriter()
            w.raw("{"); w.key("counter"); w.int(stamp.counter)
            w.raw(","); w.key("deleted"); w.bool(deleted)
            w.raw(","); w.key("landmarkId"); w.int(landmark)
            w.raw(","); w.key("node"); w.string(stamp.node)
            w.raw(","); w.key("page"); w.int(page)
            w.raw(","); w.key("updatedAt"); w.string(Timestamp.format(milliseconds: stamp.wallMilliseconds))
            w.raw(","); w.key("user"); w.string(user); w.raw("}")
            return String(decoding: w.bytes, as: UTF8.self)
        }
    }

    /// Reads one position object field by field (no intermediate tree).
    mutating func readPosition(_ reader: JSONPullReader, index: Int) throws -> PositionRow? {
        counts.positionsSeen += 1
        let at = reader.position
        guard try reader.peekKind() == .object else {
            let value = try reader.readValue()
            error("a position must be a JSON object, found \(value.kind.description)", at: at, index: index, field: "positions")
            return nil
        }
        let before = errors
        var user: String?, page: Int64?, landmark: Int64?, wall: Int64?, counter: Int64 = 0, node: String?, deleted = false
        try reader.beginObject()
        while let (key, keyAt) = try reader.nextKey() {
            let kind = try reader.peekKind()
            func wrong(_ what: String) throws {
                let value = try reader.readValue()
                error("\(key) must be \(what), found \(value.described)", at: keyAt, index: index, field: "positions.\(key)")
            }
            switch key {
            case "user":
                guard kind == .string else { try wrong("a string"); continue }
                do { user = try UserID.normalize(try reader.readString()) } catch let e as CatalogError {
                    error(e.message, at: keyAt, index: index, field: "positions.user")
                }
            case "page":
                guard kind == .number else { try wrong("a non-negative integer"); continue }
                let n = try reader.readNumber()
                if let p = n.int64Value, p >= 0 { page = p } else {
                    error("page must be a non-negative integer, found the number \(n.literal)", at: keyAt, index: index, field: "positions.page")
                }
            case "landmarkId":
                if kind == .null { try reader.readNull(); landmark = nil; continue }
                guard kind == .number else { try wrong("an integer or null"); continue }
                let n = try reader.readNumber()
                if let v = n.int64Value { landmark = v } else {
                    error("landmarkId must be an integer or null, found the number \(n.literal)", at: keyAt, index: index, field: "positions.landmarkId")
                }
            case "updatedAt":
                guard kind == .string else { try wrong("an RFC 3339 date-time"); continue }
                let text = try reader.readString()
                if let ms = Timestamp.parse(text) { wall = ms } else {
                    error("updatedAt must be an RFC 3339 date-time, found \(String(reflecting: text))", at: keyAt, index: index, field: "positions.updatedAt")
                }
            case "counter":
                guard kind == .number else { try wrong("a non-negative integer"); continue }
                let n = try reader.readNumber()
                if let c = n.int64Value, c >= 0 { counter = c } else {
                    error("counter must be a non-negative integer, found the number \(n.literal)", at: keyAt, index: index, field: "positions.counter")
                }
            case "node":
                guard kind == .string else { try wrong("a non-empty string"); continue }
                let text = try reader.readString()
                if CatalogStore.isValidNodeID(text) { node = text } else {
                    error("node must be 1–64 characters of A–Z a–z 0–9 . _ -, found \(String(reflecting: text))", at: keyAt, index: index, field: "positions.node")
                }
            case "deleted":
                if kind == .null { try reader.readNull(); continue }
                guard kind == .bool else { try wrong("true or false"); continue }
                deleted = try reader.readBool()
            default:
                try reader.skipValue()
            }
        }
        if errors == before {
            if user == nil { error("missing user", at: at, index: index, field: "positions.user") }
            else if page == nil { error("missing page", at: at, index: index, field: "positions.page") }
            else if wall == nil { error("missing updatedAt", at: at, index: index, field: "positions.updatedAt") }
            else if node == nil { error("missing node", at: at, index: index, field: "positions.node") }
        }
        guard errors == before, let user, let page, let wall, let node else { return nil }
        return PositionRow(user: user, page: page, landmark: landmark,
                           stamp: HLCStamp(wallMilliseconds: wall, counter: counter, node: node),
                           deleted: deleted, index: index, position: at)
    }

    /// Applies a batch in user-id order, then empties it. Skipped once errors were found (the run fails).
    mutating func applyPositions(_ batch: inout [PositionRow]) throws {
        defer { batch.removeAll(keepingCapacity: true) }
        guard errors == 0, !batch.isEmpty else { return }
        batch.sort { $0.user < $1.user }  // NFC strings: scalar order, which is UTF-8 byte order
        let select = try store.connection.cachedStatement(sql: """
            SELECT updated_ms, counter, node, deleted, page, landmark_id FROM positions WHERE user_id = ?
            """)
        let upsert = try store.connection.cachedStatement(sql: """
            INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT (user_id) DO UPDATE SET page = excluded.page, landmark_id = excluded.landmark_id,
                updated_ms = excluded.updated_ms, counter = excluded.counter, node = excluded.node, deleted = excluded.deleted
            WHERE (excluded.updated_ms, excluded.counter, excluded.node) > (positions.updated_ms, positions.counter, positions.node)
               OR ((excluded.updated_ms, excluded.counter, excluded.node) = (positions.updated_ms, positions.counter, positions.node)
                   AND (excluded.deleted, excluded.page, coalesce(excluded.landmark_id, -9223372036854775808))
                     > (positions.deleted, positions.page, coalesce(positions.landmark_id, -9223372036854775808)))
            """)
        for row in batch {
            let stamp = row.stamp
            if try quarantine(stamp, kind: "position", key: row.user, rowJSON: row.json) { continue }
            // Classify first (a point read), so stale re-deliveries cost no write and ties are counted.
            try select.bind(row.user, at: 1)
            if try select.step() {
                let stored = HLCStamp(wallMilliseconds: select.int(0), counter: select.int(1), node: select.text(2) ?? "")
                let storedContent = (select.int(3), select.int(4), select.optionalInt(5) ?? Int64.min)
                select.reset()
                if stamp < stored { counts.stale += 1; continue }
                if stamp == stored {
                    let content = (Int64(row.deleted ? 1 : 0), row.page, row.landmark ?? Int64.min)
                    if content == storedContent { counts.stale += 1; continue }
                    counts.ties += 1
                    diagnostics(Diagnostic(severity: .warning, message: "tie on position of \(String(reflecting: row.user)) at \(stamp): equal stamps, different content; settled by the fixed rule (tombstone, else greater page, else greater landmark)",
                                           file: source, position: row.position, index: row.index, id: nil, field: nil))
                    if content < storedContent { continue }
                }
            } else {
                select.reset()
            }
            try upsert.bind(row.user, at: 1)
            try upsert.bind(row.page, at: 2)
            if let landmark = row.landmark { try upsert.bind(landmark, at: 3) } else { try upsert.bind(.null, at: 3) }
            try upsert.bind(stamp.wallMilliseconds, at: 4)
            try upsert.bind(stamp.counter, at: 5)
            try upsert.bind(stamp.node, at: 6)
            try upsert.bind(Int64(row.deleted ? 1 : 0), at: 7)
            try upsert.run()
            if store.connection.changes > 0 { counts.positionsApplied += 1 } else { counts.stale += 1 }
        }
    }

    // MARK: Landmarks

    mutating func mergeLandmark(_ record: RawLandmark, in batch: LandmarkBatch) throws {
        let members = [record.stamp?.updatedAt, record.stamp?.counter, record.stamp?.node, record.stamp?.deleted].compactMap { $0 }
        guard let (stamp, deleted) = stamp(members, index: record.index, at: record.position, kind: "landmarks", id: record.id) else { return }
        typealias F = RawLandmark.Field
        // A snapshot row is the whole state: absent optional keys are null. Built only when needed.
        func incomingLandmark() -> Landmark {
            Landmark(id: record.id, name: batch.text(record, F.name) ?? "", category: batch.text(record, F.category),
                     city: batch.text(record, F.city), state: batch.text(record, F.state), park: batch.text(record, F.park),
                     description: batch.text(record, F.description), imageName: batch.text(record, F.imageName),
                     isFeatured: record.isFeatured, isFavorite: record.isFavorite, latitude: record.latitude,
                     longitude: record.longitude, extraJSON: record.extraJSON)
        }
        guard errors == 0 else { return }
        if try quarantine(stamp, kind: "landmark", key: String(record.id), rowJSON: Self.rowJSON(incomingLandmark(), stamp: stamp, deleted: deleted)) { return }
        let select = try store.connection.cachedStatement(sql: """
            SELECT \(CatalogStore.landmarkColumns), updated_ms, counter, node, deleted FROM landmarks WHERE id = ?
            """)
        try select.bind(record.id, at: 1)
        let at = record.position, index = record.index
        var incoming: Landmark?
        if try select.step() {
            // The stamp decides most rows: an older or repeated delivery costs a point read and no strings.
            let storedWall = select.int(13), storedCounter = select.int(14)
            if (stamp.wallMilliseconds, stamp.counter) < (storedWall, storedCounter) {
                select.reset()
                counts.stale += 1
                return
            }
            let stored = HLCStamp(wallMilliseconds: storedWall, counter: storedCounter, node: select.text(15) ?? "")
            let storedDeleted = select.int(16) != 0
            if stamp == stored, Self.sameContent(record, in: batch, as: select, deleted: deleted) {
                select.reset()
                counts.stale += 1  // the same row delivered again
                return
            }
            let old = stamp == stored ? CatalogStore.landmark(from: select) : nil
            select.reset()
            if stamp < stored { counts.stale += 1; return }
            if let old {
                let incomingNow = incomingLandmark()
                incoming = incomingNow
                let a = Self.canonical(incomingNow, deleted: deleted), b = Self.canonical(old, deleted: storedDeleted)
                if a == b { counts.stale += 1; return }
                counts.ties += 1
                diagnostics(Diagnostic(severity: .warning, message: "tie on landmark \(record.id) at \(stamp): equal stamps, different content; settled by the fixed rule (tombstone, else greater content)",
                                       file: source, position: at, index: index, id: record.id, field: nil))
                guard a.lexicographicallyPrecedes(b) == false else { return }
            }
        } else {
            select.reset()
        }
        let upsert = try store.connection.cachedStatement(sql: """
            INSERT INTO landmarks (id, name, category, city, state, park, description, image_name, is_featured,
                                   is_favorite, latitude, longitude, extra, updated_ms, counter, node, deleted)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
            ON CONFLICT (id) DO UPDATE SET
                name = excluded.name, category = excluded.category, city = excluded.city, state = excluded.state,
                park = excluded.park, description = excluded.description, image_name = excluded.image_name,
                is_featured = excluded.is_featured, is_favorite = excluded.is_favorite,
                latitude = excluded.latitude, longitude = excluded.longitude, extra = excluded.extra,
                updated_ms = excluded.updated_ms, counter = excluded.counter, node = excluded.node, deleted = excluded.deleted
            """)
        let l = incoming ?? incomingLandmark()
        try upsert.bind(l.id, at: 1)
        try upsert.bind(l.name, at: 2)
        try upsert.bind(l.category, at: 3)
        try upsert.bind(l.city, at: 4)
        try upsert.bind(l.state, at: 5)
        try upsert.bind(l.park, at: 6)
        try upsert.bind(l.description, at: 7)
        try upsert.bind(l.imageName, at: 8)
        try upsert.bind(Int64(l.isFeatured ? 1 : 0), at: 9)
        try upsert.bind(Int64(l.isFavorite ? 1 : 0), at: 10)
        try upsert.bind(l.latitude, at: 11)
        try upsert.bind(l.longitude, at: 12)
        try upsert.bind(l.extraJSON, at: 13)
        try upsert.bind(stamp.wallMilliseconds, at: 14)
        try upsert.bind(stamp.counter, at: 15)
        try upsert.bind(stamp.node, at: 16)
        try upsert.bind(Int64(deleted ? 1 : 0), at: 17)
        try upsert.run()
        counts.landmarksApplied += 1
    }

    /// Whether the stored row (`s`, columns as `landmarkColumns` then the stamp and `deleted`) holds
    /// exactly the snapshot row's content, compared on the bytes: a repeated delivery costs no strings.
    static func sameContent(_ record: RawLandmark, in batch: LandmarkBatch, as s: Statement, deleted: Bool) -> Bool {
        guard (s.int(16) != 0) == deleted, (s.int(8) != 0) == record.isFeatured, (s.int(9) != 0) == record.isFavorite,
              s.double(10) == record.latitude, s.double(11) == record.longitude
        else { return false }
        let storedExtra = s.textBytes(12)
        if let extra = record.extraJSON {
            guard let storedExtra, storedExtra.elementsEqual(extra.utf8) else { return false }
        } else if storedExtra != nil {
            return false
        }
        return batch.bytes.withUnsafeBufferPointer { bytes in
            for field in 0...6 {
                let r = record.texts[field]
                let stored = s.textBytes(field + 1)
                if r.start < 0 {
                    if stored != nil { return false }
                    continue
                }
                guard let stored, stored.count == Int(r.count) else { return false }
                if r.count > 0, memcmp(bytes.baseAddress! + Int(r.start), stored.baseAddress!, Int(r.count)) != 0 { return false }
            }
            return true
        }
    }

    /// A landmark row as snapshot JSON, for the quarantine table.
    static func rowJSON(_ l: Landmark, stamp: HLCStamp, deleted: Bool) -> String {
        var w = JSONWriter()
        l.writeJSON(to: &w, nullStrings: .null, additional: [
            ("counter", String(stamp.counter)), ("deleted", deleted ? "true" : "false"),
            ("node", CatalogStore.jsonString(stamp.node)), ("updatedAt", CatalogStore.jsonString(Timestamp.format(milliseconds: stamp.wallMilliseconds))),
        ])
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// The bytes that order equal-stamped contents: the deletion flag first (a tombstone wins), then
    /// the landmark's canonical JSON (sorted keys, nulls kept).
    static func canonical(_ l: Landmark, deleted: Bool) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 512)
        w.byte(deleted ? 0x31 : 0x30)
        l.writeJSON(to: &w, nullStrings: .null)
        return w.bytes
    }
}
