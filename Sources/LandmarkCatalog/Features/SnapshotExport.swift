import Foundation

/// What an export wrote.
public struct ExportSummary: Sendable, Equatable {
    /// Landmark rows written (tombstones included).
    public var landmarks = 0
    /// Position rows written (tombstones included).
    public var positions = 0
    /// Erasure records written (docs/snapshot-format.md §3).
    public var erasures = 0
    /// Bytes written.
    public var bytes: Int64 = 0
    /// The largest change sequence number among the rows written (0 when none).
    public var maxSeq: Int64 = 0
}

/// Writes a catalog as a snapshot (docs/snapshot-format.md): to a function taking the bytes, or to a file
/// replaced atomically.
///
/// ```swift
/// try SnapshotExporter(store).exportSnapshot(toFile: "/srv/www/catalog.json")
/// ```
public struct SnapshotExporter {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension SnapshotExporter {
    /// Writes the catalog — landmarks and positions, tombstones included, each with its last-writer-wins
    /// stamp — as a snapshot (docs/snapshot-format.md §1), streamed in chunks of about 64 KiB; or, with `changes`, only the
    /// rows whose change sequence number lies in that range (a delta of a snapshot log, docs/log-format.md §3).
    ///
    /// Shape: `{"format","version","node","landmarks":[…],"positions":[…],"generatedAt"}`; the format
    /// and version come first so a reader can refuse an unknown format before reading rows. Rows are in
    /// key order (landmarks by id, positions by user id), each row's keys sorted, and `generatedAt` is
    /// the newest stamp among the rows (written last, so the export is one pass): the same state gives
    /// the same bytes, so HTTP validators stay valid.
    ///
    /// - Parameters:
    ///   - changes: only rows with `seq` in this range (both ends included); nil for all rows.
    ///   - output: receives the bytes in order.
    /// - Returns: the counts written.
    /// - Throws: whatever `output` throws; `CatalogError` for database failures.
    @discardableResult
    public func exportSnapshot(changes: ClosedRange<Int64>? = nil, _ output: ([UInt8]) throws -> Void) throws -> ExportSummary {
        try store.read { try exportSnapshotInTransaction(changes: changes, output) }
    }

    /// The export itself, inside the caller's read transaction; `progress` is called after each chunk of
    /// about 64 KiB with the rows and bytes written so far.
    func exportSnapshotInTransaction(
        changes: ClosedRange<Int64>?, progress: (_ rows: Int, _ bytes: Int64) -> Void = { _, _ in },
        _ output: ([UInt8]) throws -> Void
    ) throws -> ExportSummary {
        var summary = ExportSummary()
        var newest = Int64.min
        var w = JSONWriter(reservingCapacity: 1 << 17)
        func flush() throws {
            summary.bytes += Int64(w.bytes.count)
            try output(w.bytes)
            w.bytes.removeAll(keepingCapacity: true)
            progress(summary.landmarks + summary.positions, summary.bytes)
        }
        w.raw("{")
        w.key("format")
        w.string(SnapshotFormat.name)
        w.raw(",")
        w.key("version")
        w.int(SnapshotFormat.version)
        w.raw(",")
        w.key("node")
        w.string(try store.currentNode())
        w.raw(",\n")
        w.key("landmarks")
        w.raw("[")
        var first = true
        try store.landmarkTable.forEachRow(changes: changes) { s in
            w.raw(first ? "\n" : ",\n")
            first = false
            LandmarkJSON.write(LandmarkRow(statement: s), shape: .snapshot, to: &w)
            summary.landmarks += 1
            newest = max(newest, s.int(LandmarkColumn.updatedMs))
            summary.maxSeq = max(summary.maxSeq, s.int(LandmarkColumn.seq))
            if w.bytes.count >= 1 << 16 { try flush() }
        }
        w.raw("],\n")
        w.key("positions")
        w.raw("[")
        first = true
        try store.positionTable.forEachRow(changes: changes) { s in
            w.raw(first ? "\n" : ",\n")
            first = false
            PositionRecord(row: s).writeJSON(to: &w)
            summary.positions += 1
            newest = max(newest, s.int(PositionColumn.updatedMs))
            summary.maxSeq = max(summary.maxSeq, s.int(PositionColumn.seq))
            if w.bytes.count >= 1 << 16 { try flush() }
        }
        w.raw("],\n")
        // Erasure records, only when there are any: a snapshot without them keeps the bytes it always had.
        first = true
        try store.erasureTable.forEachRecord(changes: changes) { record, seq in
            if first { w.key("erasures") }
            w.raw(first ? "[\n" : ",\n")
            first = false
            record.writeJSON(to: &w)
            summary.erasures += 1
            newest = max(newest, record.stamp.wallMilliseconds)
            summary.maxSeq = max(summary.maxSeq, seq)
            if w.bytes.count >= 1 << 16 { try flush() }
        }
        if !first { w.raw("],\n") }
        w.key("generatedAt")
        if newest == Int64.min { w.raw("null") } else { Timestamp.write(milliseconds: newest, to: &w) }
        w.raw("}\n")
        try flush()
        return summary
    }

    /// Writes a snapshot to `path` atomically (temporary file in the same directory, fsync, rename).
    /// - Parameters:
    ///   - path: the file to write.
    ///   - progress: called after each chunk of about 64 KiB with the rows and bytes written so far
    ///     (phase `.writing`, subject `path`).
    /// - Returns: what was written.
    /// - Throws: `CatalogError` 64 for an empty path, 73 when the file cannot be created, 74 on a write error.
    @discardableResult
    public func exportSnapshot(toFile path: String, progress: (CatalogProgress) -> Void = { _ in }) throws -> ExportSummary {
        let file = try AtomicFileWriter(path: path)
        let summary = try store.read {
            try exportSnapshotInTransaction(
                changes: nil,
                progress: { rows, bytes in
                    progress(CatalogProgress(records: rows, bytes: bytes, totalBytes: nil, phase: .writing, subject: path))
                }
            ) { try file.write($0) }
        }
        try file.commit()
        return summary
    }
}

extension PositionRecord {
    /// The position in the current row of `s`, which selects `PositionColumn.selectList`.
    init(row s: Statement) {
        self.init(
            user: s.text(PositionColumn.userID) ?? "", page: s.int(PositionColumn.page), landmark: s.optionalInt(PositionColumn.landmarkID),
            stamp: HLCStamp(
                wallMilliseconds: s.int(PositionColumn.updatedMs), counter: s.int(PositionColumn.counter),
                node: s.text(PositionColumn.node) ?? ""),
            deleted: s.bool(PositionColumn.deleted))
    }
}
