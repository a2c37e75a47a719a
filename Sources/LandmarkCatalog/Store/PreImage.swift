import Foundation

/// The landmarks as they were before this import, read in id order through a second, read-only
/// connection (in WAL mode it sees the last committed state, not the import's own writes).
///
/// A file sorted by id is then compared with the stored rows by one forward scan instead of a seek per
/// record; out-of-order ids re-seek. Rows that match the record exactly are not even offered to the
/// upsert, which is what makes re-importing an unchanged file cheap.
final class PreImage {
    private let connection: Connection
    private let scan: Statement
    private var current: Int64?
    private var positioned = false
    /// The scan ran off the end after a seek to this id: larger ids are absent.
    private var exhaustedAfter: Int64?

    init(store: CatalogStore) throws {
        connection = try store.sideConnection(mode: .readOnly)
        try connection.execute(sql: "PRAGMA cache_size = -8192")
        scan = try LandmarksTable.scanFromID(on: connection)
    }

    deinit { scan.reset() }

    /// Moves to the stored row with `id`.
    ///
    /// Returns true when it exists (its columns are then readable).
    func seek(_ id: Int64) throws -> Bool {
        if positioned, let at = current {
            if at == id { return true }
            if at < id {
                for _ in 0..<8 {
                    guard try scan.step() else {
                        current = nil
                        exhaustedAfter = id
                        return false
                    }
                    let next = scan.int(LandmarkColumn.id)
                    current = next
                    if next >= id { return next == id }
                }
            }
        } else if positioned, let end = exhaustedAfter, id >= end {
            return false
        }
        scan.reset()
        try scan.bind(id, at: 1)
        positioned = true
        exhaustedAfter = nil
        guard try scan.step() else {
            current = nil
            exhaustedAfter = id
            return false
        }
        current = scan.int(LandmarkColumn.id)
        return current == id
    }

    /// Whether the current row already holds exactly what `record` would store (keys absent from the
    /// record keep stored values, so only present keys are compared).
    ///
    /// A tombstone never matches, nor does a record with unknown keys (those go through the upsert,
    /// which merges them).
    func matches(_ record: RawLandmark, in batch: RowBatch) -> Bool {
        if scan.bool(LandmarkColumn.deleted) || record.has(.extra) { return false }
        return batch.withView(record) { view in
            for column in LandmarkColumn.contentColumns {
                switch column.kind {
                case .id, .extra, .stamp: continue
                case .coordinate:
                    guard scan.double(column) == record.double(column) else { return false }
                case .bool:
                    guard !record.has(column) || scan.bool(column) == record.flag(column) else { return false }
                case .int:
                    guard !record.has(column) || (scan.isNull(column) == record.isNull(column) && scan.int(column) == record.int(column)) else {
                        return false
                    }
                case .double:
                    guard !record.has(column) || (scan.isNull(column) == record.isNull(column) && scan.double(column) == record.double(column))
                    else { return false }
                case .text(let required):
                    guard !required && !record.has(column) || OptionalBytes.equal(view.slot(column.textSlot), scan.textBytes(column)) else {
                        return false
                    }
                }
            }
            return true
        }
    }
}
