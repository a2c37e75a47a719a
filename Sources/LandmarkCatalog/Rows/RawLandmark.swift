/// A landmark record decoded straight from a JSON reader, field by field, with its strings kept as
/// UTF-8 byte ranges in its batch's shared buffer (no `String` per field): the import's and the
/// merge's fast path.
///
/// Snapshot rows also carry their last-writer-wins stamp.
package struct RawLandmark {
    /// Which optional content columns the record had (bit `1 << column.rawValue`).
    ///
    /// An import keeps the stored value of the columns a record lacks; a snapshot row is whole (absent
    /// means null).
    var present: UInt32 = 0
    var index: Int
    var position: SourcePosition
    package var id: Int64 = 0
    /// Byte ranges in `RowBatch.bytes`: the text columns by `textSlot`, then the stamp's node.
    package var texts = TextRanges()
    /// The boolean columns' values (bit ``LandmarkColumn/bit``, set for true).
    var flags: UInt32 = 0
    /// The number columns' values by `numberSlot`: the coordinates and the integer and double fields.
    var numbers = NumberSlots()
    /// The number fields that are null (bit ``LandmarkColumn/bit``): all nullable ones until their key is
    /// read, so a snapshot row without one holds null.
    var nulls: UInt32 = RawLandmark.initialNulls
    /// Unknown keys as a compact JSON object text, or nil.
    var extraJSON: String?
    /// Snapshot rows: the stamp (ms since the epoch, counter; the node is at ``TextRanges/nodeSlot``).
    package var updatedMs: Int64 = 0
    package var counter: Int64 = 0
    package var deleted = false
    /// Set when this id already appeared in the file: the index of its first record.
    var duplicateOf: Int?

    static func bit(_ column: LandmarkColumn) -> UInt32 { column.bit }
    func has(_ column: LandmarkColumn) -> Bool { present & column.bit != 0 }
    mutating func mark(_ column: LandmarkColumn) { present |= column.bit }

    /// Boolean column `column`.
    func flag(_ column: LandmarkColumn) -> Bool { flags & column.bit != 0 }
    mutating func setFlag(_ column: LandmarkColumn, _ value: Bool) {
        if value { flags |= column.bit } else { flags &= ~column.bit }
    }
    var isFeatured: Bool {
        get { flag(.isFeatured) }
        set { setFlag(.isFeatured, newValue) }
    }
    var isFavorite: Bool {
        get { flag(.isFavorite) }
        set { setFlag(.isFavorite, newValue) }
    }

    static let initialNulls: UInt32 = LandmarkColumn.nullableNumbers.reduce(0) { $0 | $1.bit }

    /// Whether number column `column` is null.
    func isNull(_ column: LandmarkColumn) -> Bool { nulls & column.bit != 0 }
    /// Sets number column `column` to null.
    mutating func setNull(_ column: LandmarkColumn) { nulls |= column.bit }
    /// Integer column `column`'s value (0 when null).
    func int(_ column: LandmarkColumn) -> Int64 { numbers[column.numberSlot] }
    /// Double or coordinate column `column`'s value (0 when null).
    func double(_ column: LandmarkColumn) -> Double { Double(bitPattern: UInt64(bitPattern: numbers[column.numberSlot])) }
    /// Sets integer column `column` (not null).
    mutating func set(_ column: LandmarkColumn, int value: Int64) {
        numbers[column.numberSlot] = value
        nulls &= ~column.bit
    }
    /// Sets double or coordinate column `column` (not null).
    mutating func set(_ column: LandmarkColumn, double value: Double) {
        numbers[column.numberSlot] = Int64(bitPattern: value.bitPattern)
        nulls &= ~column.bit
    }
    var latitude: Double { double(.latitude) }
    var longitude: Double { double(.longitude) }
}

/// The number columns' values stored inline (no array allocation per record), each as 64 bits: an
/// `Int64`, or a `Double`'s bit pattern.
struct NumberSlots {
    private var slots: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0, 0, 0)
    static let capacity: Int = {
        precondition(LandmarkColumn.numberColumns.count <= 8, "NumberSlots needs a slot per number column")
        return 8
    }()

    subscript(i: Int) -> Int64 {
        get { withUnsafeBytes(of: slots) { $0.load(fromByteOffset: i * 8, as: Int64.self) } }
        set {
            precondition(i >= 0 && i < Self.capacity)
            withUnsafeMutableBytes(of: &slots) { $0.storeBytes(of: newValue, toByteOffset: i * 8, as: Int64.self) }
        }
    }
}

/// Byte ranges stored inline (no array allocation per record): one per text column, one for a node id.
package struct TextRanges {
    private var ranges: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) =
        (-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)
    static let capacity = 12
    /// The slot of a snapshot row's node id.
    package static let nodeSlot: Int = {
        precondition(LandmarkColumn.textColumns.count < capacity, "TextRanges needs a slot per text column and one for the node")
        return LandmarkColumn.textColumns.count
    }()

    /// The range of slot `i`; `start < 0` means null.
    package subscript(i: Int) -> (start: Int32, count: Int32) {
        get {
            let v = withUnsafeBytes(of: ranges) { $0.load(fromByteOffset: i * 8, as: Int64.self) }
            return v < 0 ? (-1, 0) : (Int32(truncatingIfNeeded: v >> 32), Int32(truncatingIfNeeded: v & 0xFFFF_FFFF))
        }
        set {
            precondition(i >= 0 && i < Self.capacity)
            let v = newValue.start < 0 ? -1 : (Int64(newValue.start) << 32) | Int64(UInt32(bitPattern: newValue.count))
            withUnsafeMutableBytes(of: &ranges) { $0.storeBytes(of: v, toByteOffset: i * 8, as: Int64.self) }
        }
    }
}

/// One position row with its stamp, as snapshots, logs and the hub carry it.
///
/// Kept small (a merge holds 100,000 of them at a time): where it was read is packed into three 32-bit
/// numbers.
package struct PositionRecord: Sendable {
    var user: String { didSet { aheadHash = nil } }
    var page: Int64 { didSet { aheadHash = nil } }
    var landmark: Int64? { didSet { aheadHash = nil } }
    var stamp: HLCStamp { didSet { aheadHash = nil } }
    var deleted: Bool { didSet { aheadHash = nil } }
    /// The row hash of the fields above, when computed ahead (``hashAhead(with:)``); any change to a
    /// field clears it, so it is never stale.
    private var aheadHash: RowHash?
    private var packedIndex: Int32 = -1
    private var line: Int32 = 0
    private var column: Int32 = 0

    package init(user: String, page: Int64, landmark: Int64?, stamp: HLCStamp, deleted: Bool, index: Int? = nil, position: SourcePosition? = nil) {
        self.user = user
        self.page = page
        self.landmark = landmark
        self.stamp = stamp
        self.deleted = deleted
        if let index { packedIndex = Int32(clamping: index) }
        if let position {
            line = Int32(clamping: position.line)
            column = Int32(clamping: position.column)
        }
    }

    /// Puts `rows` in the order a merge applies them: by user, equal users in input order (NFC strings
    /// compare in scalar order, which is UTF-8 byte order).
    ///
    /// A reading thread sorts each batch before handing it on, so the writer's own sort finds one run.
    static func sortForMerge(_ rows: inout [PositionRecord]) { rows.sort { $0.user < $1.user } }

    /// Computes the row hash now (on a reading thread) for ``rowHash`` to return later.
    mutating func hashAhead(with hasher: inout RowHasher) { aheadHash = hasher.position(self) }

    /// The row hash (docs/repair.md §1): the one computed ahead, else computed now.
    var rowHash: RowHash { aheadHash ?? RowHash(position: self) }

    /// Its index in the snapshot's `positions` array, when it came from one.
    var index: Int? { packedIndex < 0 ? nil : Int(packedIndex) }
    /// Where it was read (line and column; the byte offset is not kept), when it came from a file.
    var position: SourcePosition? { line == 0 ? nil : SourcePosition(line: Int(line), column: Int(column), offset: 0) }

    /// The snapshot row (docs/snapshot-format.md §3), keys sorted: the one writer of this shape.
    func writeJSON(to w: inout JSONWriter) {
        w.raw("{\"counter\":")
        w.int(stamp.counter)
        w.raw(",\"deleted\":")
        w.bool(deleted)
        w.raw(",\"landmarkId\":")
        w.int(landmark)
        w.raw(",\"node\":")
        w.string(stamp.node)
        w.raw(",\"page\":")
        w.int(page)
        w.raw(",\"updatedAt\":")
        Timestamp.write(milliseconds: stamp.wallMilliseconds, to: &w)
        w.raw(",\"user\":")
        w.string(user)
        w.byte(0x7D)
    }

    var json: String {
        var w = JSONWriter(reservingCapacity: 160)
        writeJSON(to: &w)
        return String(decoding: w.bytes, as: UTF8.self)
    }
}

/// Decoded rows and the diagnostics found while decoding them, handed from a reading thread to the
/// writing one.
package final class RowBatch: @unchecked Sendable {
    // Safe: a batch has one owner at a time — the reading thread fills it, hands it over through a
    // `BatchQueue` (whose lock orders the accesses) and never touches it again; the writer then owns it.
    package var bytes: [UInt8] = []
    package var landmarks: [RawLandmark] = []
    /// The row hash of each of `landmarks` as an import writes it, when a thread before the writer
    /// computed them (docs/repair.md §1); else empty.
    var landmarkHashes: [RowHash] = []
    package var positions: [PositionRecord] = []
    /// Erasure records (docs/snapshot-format.md §3), applied before the batch's positions.
    package var erasures: [ErasureRecord] = []
    /// Diagnostics in input order, each after the landmark it concerns (`afterRecord` = count of landmarks before it).
    package var diagnostics: [(afterRecord: Int, diagnostic: Diagnostic)] = []
    /// The reading failed: a syntax, read or format error that ends the run.
    package var failure: (any Error)?
    /// True for the last batch.
    package var isLast = false
    /// Records read so far (valid or not).
    var recordsRead = 0
    /// Input bytes consumed so far (for progress).
    package var bytesRead = 0
    /// With the last batch of an import: every id in the file, for `--prune`.
    var seen = SeenIDs()
    /// The snapshot's `node` (its publisher), once read.
    var sourceNode: String?
    /// With the last batch of a device protocol answer: its `cursor` and `more` (docs/protocol.md §4).
    var pageCursor: String?
    var pageMore = false

    /// - Parameter reserving: reserve room for a batch of landmarks (2 MiB of text, 2,000 records) up front.
    package init(reserving: Bool = true) {
        if reserving {
            bytes.reserveCapacity(1 << 21)
            landmarks.reserveCapacity(LandmarkDecoder.batchSize)
        }
    }

    /// The text in slot `slot` of `record`, or nil when null.
    func text(_ record: RawLandmark, slot: Int) -> String? {
        let r = record.texts[slot]
        guard r.start >= 0 else { return nil }
        return bytes.withUnsafeBufferPointer {
            String(decoding: UnsafeBufferPointer(rebasing: $0[Int(r.start)..<Int(r.start + r.count)]), as: UTF8.self)
        }
    }

    func text(_ record: RawLandmark, _ column: LandmarkColumn) -> String? { text(record, slot: column.textSlot) }

    /// Calls `body` with a view of `record` that ``LandmarkJSON`` and the upserts read.
    func withView<T>(_ record: RawLandmark, _ body: (RawLandmarkView) throws -> T) rethrows -> T {
        try bytes.withUnsafeBufferPointer { try body(RawLandmarkView(record: record, bytes: $0)) }
    }
}

/// A decoded record and the buffer its texts live in.
struct RawLandmarkView: LandmarkFields {
    let record: RawLandmark
    let bytes: UnsafeBufferPointer<UInt8>

    /// Binds the landmark's content columns — the id, every text column, the flags, the numbers and the
    /// coordinates — to a statement made from ``LandmarkColumn`` (an upsert); `extra`, the stamp and `seq`
    /// are the caller's (an import and a merge take them from different places).
    @inline(__always) func bindContent(to upsert: Statement) throws {
        for column in LandmarkColumn.contentColumns {
            switch column.kind {
            case .id: try upsert.bind(record.id, to: column)
            case .text: try upsert.bindStatic(slot(column.textSlot), to: column)
            case .bool: try upsert.bind(record.flag(column), to: column)
            case .int(let optional):
                if optional && record.isNull(column) { try upsert.bindNull(to: column) } else { try upsert.bind(record.int(column), to: column) }
            case .double(let optional):
                if optional && record.isNull(column) { try upsert.bindNull(to: column) } else { try upsert.bind(record.double(column), to: column) }
            case .coordinate: try upsert.bind(record.double(column), to: column)
            case .extra, .stamp: continue
            }
        }
    }

    @inline(__always) func slot(_ i: Int) -> UnsafeBufferPointer<UInt8>? {
        let r = record.texts[i]
        guard r.start >= 0, let base = bytes.baseAddress else { return r.start >= 0 ? UnsafeBufferPointer(start: nil, count: 0) : nil }
        return UnsafeBufferPointer(start: base + Int(r.start), count: Int(r.count))
    }

    func withText<T>(_ column: LandmarkColumn, _ body: (UnsafeBufferPointer<UInt8>?) -> T) -> T {
        switch column.kind {
        case .extra:
            guard var extra = record.extraJSON else { return body(nil) }
            return extra.withUTF8 { body($0) }
        case .stamp(.node): return body(slot(TextRanges.nodeSlot))
        case .text: return body(slot(column.textSlot))
        case .id, .bool, .int, .double, .coordinate, .stamp: preconditionFailure("\(column) is not a text column")
        }
    }

    func int(_ column: LandmarkColumn) -> Int64 {
        switch column.kind {
        case .id: return record.id
        case .bool: return record.flag(column) ? 1 : 0
        case .int: return record.int(column)
        case .stamp(.updatedMs): return record.updatedMs
        case .stamp(.counter): return record.counter
        case .stamp(.deleted): return record.deleted ? 1 : 0
        case .text, .double, .coordinate, .extra, .stamp(.node), .stamp(.seq):
            preconditionFailure("\(column) is not an integer column")
        }
    }

    func double(_ column: LandmarkColumn) -> Double { record.double(column) }

    func isNull(_ column: LandmarkColumn) -> Bool { record.isNull(column) }

    /// The stamp of a snapshot row.
    var stamp: HLCStamp {
        HLCStamp(
            wallMilliseconds: record.updatedMs, counter: record.counter,
            node: slot(TextRanges.nodeSlot).map { String(decoding: $0, as: UTF8.self) } ?? "")
    }
}

/// Ids seen so far in one file, in memory that grows with the number of *runs* of consecutive ids in
/// consecutive records (one run for a typical file), not with the number of records; out-of-order ids
/// fall back to a dictionary.
///
/// Remembers each id's first record index, for the duplicate-id message.
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
        var low = 0
        var high = runs.count - 1
        while low <= high {
            let mid = (low + high) / 2
            let run = runs[mid]
            if id < run.lo {
                high = mid - 1
            } else if id > run.hi {
                low = mid + 1
            } else {
                return run.firstIndex + Int(id - run.lo)
            }
        }
        return nil
    }

    func contains(_ id: Int64) -> Bool { firstIndex(of: id) != nil }
}
