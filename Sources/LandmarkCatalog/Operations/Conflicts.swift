/// How long ties are kept for `catalog conflicts`: pruned at the end of every sync run to those met in
/// the last ``maxAgeMilliseconds``, and of those at most the newest ``maxRows``.
///
/// A tie pruned and met again (its loser delivered again) is recorded, and reported, once more.
public enum ConflictRetention {
    /// 30 days, in ms.
    public static let maxAgeMilliseconds: Int64 = 30 * 86_400_000
    /// The newest 10,000 ties.
    public static let maxRows = 10_000
}

extension CatalogStore {
    /// The recorded ties, newest first.
    /// - Parameter limit: at most this many; nil for all that are kept (see ``ConflictRetention``).
    /// - Returns: the recorded ties.
    /// - Throws: `CatalogError` when the database cannot be read.
    public func conflicts(limit: Int? = nil) throws -> [ConflictRecord] {
        try read { try conflictTable.all(limit: limit) }
    }

    /// How many ties are kept (see ``ConflictRetention``).
    public func conflictCount() throws -> Int {
        try read { try conflictTable.count() }
    }

    /// Prunes the recorded ties to those met within `maxAgeMilliseconds` of now and, of those, the newest
    /// `maxRows` (by row id, the order they were recorded in).
    /// - Returns: how many were removed.
    /// - Throws: `CatalogError` when the database cannot be written.
    @discardableResult
    public func pruneConflicts(
        maxAgeMilliseconds: Int64 = ConflictRetention.maxAgeMilliseconds,
        maxRows: Int = ConflictRetention.maxRows
    ) throws -> Int {
        try write {
            let cutoff = Timestamp.format(milliseconds: wallClock.nowMilliseconds() - maxAgeMilliseconds)
            return try conflictTable.prune(before: cutoff, keepingNewest: maxRows)
        }
    }
}
