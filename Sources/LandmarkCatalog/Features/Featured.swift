/// The landmarks of a catalog, read.
///
/// The featured carousel's pages in order (as values, or as JSON straight from SQLite), every live
/// landmark, one by id, and the counts. Each call is one read transaction of the store's.
///
/// ```swift
/// let pages = try LandmarkReader(store).featuredLandmarks()
/// ```
public struct LandmarkReader {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension LandmarkReader {
    /// The featured landmarks in `id` order: the carousel's pages, page 0 first.
    ///
    /// Served from the partial index `landmarks_featured` (no table scan, no sort).
    public func featuredLandmarks() throws -> [Landmark] {
        var result: [Landmark] = []
        try forEachFeaturedLandmark { result.append($0) }
        return result
    }

    /// Calls `body` with each featured landmark in `id` order, without holding them all in memory.
    public func forEachFeaturedLandmark(_ body: (Landmark) throws -> Void) throws {
        try store.read {
            try store.landmarkTable.forEachFeatured { try body(Landmark(row: $0)) }
        }
    }

    /// Writes each featured landmark, in page order, as a JSON object of Apple's shape
    /// (``LandmarkJSONShape/apple``), straight from SQLite's column bytes: no `String` per field.
    /// - Parameters:
    ///   - writer: receives the objects, comma-separated (the caller writes the brackets).
    ///   - flush: called whenever the writer holds 64 KiB or more, to pass the bytes on.
    /// - Returns: how many landmarks were written.
    /// - Throws: what `flush` throws; `CatalogError` when the database cannot be read.
    @discardableResult
    public func writeFeaturedJSON(to writer: inout JSONWriter, flush: (inout JSONWriter) throws -> Void) throws -> Int {
        var count = 0
        try store.read {
            try store.landmarkTable.forEachFeatured { s in
                if count > 0 { writer.byte(0x2C) }
                count += 1
                LandmarkJSON.write(LandmarkRow(statement: s), shape: .apple, to: &writer)
                if writer.bytes.count >= 1 << 16 { try flush(&writer) }
            }
        }
        return count
    }

    /// The ids of the featured landmarks, in page order.
    public func featuredIDs() throws -> [Int64] {
        try store.read { try store.landmarkTable.featuredIDs() }
    }

    /// Every live landmark, featured or not, in `id` order (tombstones left out), in one read transaction.
    public func landmarks() throws -> [Landmark] {
        try store.read { try store.landmarkTable.allLive() }
    }

    /// One live landmark by id, or nil (absent or a tombstone).
    public func landmark(id: Int64) throws -> Landmark? {
        try store.read { try store.landmarkTable.live(id: id) }
    }

    /// Counts of live and tombstoned landmarks.
    public func landmarkCounts() throws -> (live: Int, tombstones: Int) {
        try store.read { (try store.landmarkTable.liveCount(), try store.landmarkTable.tombstoneCount()) }
    }
}
