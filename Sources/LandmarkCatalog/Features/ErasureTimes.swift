/// The erasure records changed since a point of the change sequence, with the collection horizon, for a
/// server that refuses erased users' tokens (docs/serve.md §2): read by hash, never by id.
package struct ErasureTimes: Sendable, Equatable {
    /// Each erased user's hash (``ErasureRule/userHash(_:)``) and its erasure's wall time, ms since the epoch (UTC).
    package var erasedAt: [String: Int64] = [:]
    /// The greatest change sequence number read (pass it as `after` next time).
    package var through: Int64 = 0
    /// The node's collection horizon (ms since the epoch, UTC; 0 before any `gc`).
    package var horizonMilliseconds: Int64 = 0
}

extension UserErasure {
    /// The erasure records whose change sequence number is past `after` (an index range on `seq`, so a
    /// reader that keeps `through` reads only what is new), and the collection horizon; one read transaction.
    /// - Throws: `CatalogError` when the database cannot be read.
    package func erasureTimes(after: Int64) throws -> ErasureTimes {
        try store.read {
            var times = ErasureTimes(through: after, horizonMilliseconds: try store.metaTable.collectionHorizon())
            try store.erasureTable.forEachRecord(changes: (after + 1)...Int64.max) { record, seq in
                times.erasedAt[record.userHash] = record.stamp.wallMilliseconds
                times.through = max(times.through, seq)
            }
            return times
        }
    }
}
