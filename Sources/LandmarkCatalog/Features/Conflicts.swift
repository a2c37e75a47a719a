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

/// The ties a catalog has recorded (`catalog conflicts`, docs/merge-rules.md §3): read them, count them,
/// prune them (see ``ConflictRetention``).
public struct Conflicts {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension Conflicts {
    /// The recorded ties, newest first.
    /// - Parameter limit: at most this many; nil for all that are kept (see ``ConflictRetention``).
    /// - Returns: the recorded ties.
    /// - Throws: `CatalogError` when the database cannot be read.
    public func conflicts(limit: Int? = nil) throws -> [ConflictRecord] {
        try store.read { try store.conflictTable.all(limit: limit) }
    }

    /// How many ties are kept (see ``ConflictRetention``).
    public func conflictCount() throws -> Int {
        try store.read { try store.conflictTable.count() }
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
        try store.write {
            let cutoff = Timestamp.format(milliseconds: store.wallClock.nowMilliseconds() - maxAgeMilliseconds)
            return try store.conflictTable.prune(before: cutoff, keepingNewest: maxRows)
        }
    }
}
