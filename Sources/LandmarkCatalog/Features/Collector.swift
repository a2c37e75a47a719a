/// What a collection removed (docs/erasure.md §4).
public struct CollectionSummary: Sendable, Equatable {
    /// The horizon collected up to: ms since 1970-01-01 UTC.
    public var horizonMilliseconds: Int64
    /// Landmark tombstones removed.
    public var landmarkTombstones = 0
    /// Position tombstones removed.
    public var positionTombstones = 0
    /// Erasure records removed.
    public var erasures = 0
    /// The database file's size before the collection, in bytes.
    public var bytesBefore: Int64 = 0
    /// The database file's size after the collection and its vacuum, in bytes.
    public var bytesAfter: Int64 = 0

    /// Everything removed.
    public var removed: Int { landmarkTombstones + positionTombstones + erasures }

    /// Nothing removed yet, collected up to `horizonMilliseconds`.
    package init(horizonMilliseconds: Int64) { self.horizonMilliseconds = horizonMilliseconds }
}

/// Collects tombstones and erasure records older than a horizon (`catalog gc`, docs/erasure.md §4).
///
/// The node remembers the horizon it collected up to (it never moves back): afterwards a row stamped
/// before it, for a key that has no row, is refused as expired (`ErasureRule`), so nothing deleted
/// comes back however long a device or node was away.
public struct Collector {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

/// What `catalog status` shows of collection (docs/operations.md §3): the erasure records held, the
/// horizon and when the node last collected.
public struct CollectionState: Sendable, Equatable {
    /// Erasure records stored (docs/erasure.md §2).
    public var erasureRecords: Int
    /// The horizon collected up to, ms since the epoch (UTC); 0 when the node never collected.
    public var horizonMilliseconds: Int64
    /// When the last collection (`catalog gc`, or serve's and `--follow`'s own) ran, ms since the epoch
    /// (UTC); nil when none is recorded.
    public var lastRunMilliseconds: Int64?
}

extension Collector {
    /// `catalog_meta`'s key of the last collection's wall-clock time (ms since the epoch).
    static let lastRunKey = "gc_last_ms"

    /// The erasure records held, the horizon and the last collection's time, in one read.
    /// - Throws: `CatalogError` from the database.
    public func state() throws -> CollectionState {
        try store.read {
            CollectionState(
                erasureRecords: try store.erasureTable.count(), horizonMilliseconds: try store.metaTable.collectionHorizon(),
                lastRunMilliseconds: try store.metaTable.value(Self.lastRunKey).flatMap { Int64($0) })
        }
    }

    /// The horizon this node collected up to (ms since the epoch, UTC), or 0 when it never collected.
    /// - Throws: `CatalogError` from the database.
    public func horizon() throws -> Int64 {
        try store.read { try store.metaTable.collectionHorizon() }
    }

    /// Removes, in one transaction, the tombstones and erasure records stamped before `now − age` (the
    /// node's clock), records the new horizon, then vacuums the database and truncates its WAL so the
    /// freed pages leave the files.
    /// - Parameters:
    ///   - age: the horizon's age in ms (default 30 days); 0 collects everything deleted so far.
    ///   - vacuum: rebuild the file afterwards (`VACUUM`) when anything was removed.
    /// - Returns: what was removed and the file's size before and after.
    /// - Throws: `CatalogError.usage` for a negative age; `CatalogError` from the database (75 busy, 74 full).
    @discardableResult
    public func collect(olderThan age: Int64 = 30 * 24 * 3600 * 1000, vacuum: Bool = true) throws -> CollectionSummary {
        guard age >= 0 else { throw CatalogError(.usage, "the horizon must not be negative") }
        let before = try store.databaseBytes()
        var summary = try store.write {
            let stored = try store.metaTable.collectionHorizon()
            // Measured from the newest stamp the rows hold when the wall clock is past it: a clock far ahead
            // (a VM restore, a bad NTP step) must not collect what peers have not seen yet, nor pin the horizon
            // in the future (docs/erasure.md §4). Not the clock's last stamp, which a merge moves to the wall
            // clock; not merged erasure records, applied however far ahead they are stamped. A merged row's
            // stamp passed the drift check, so the rows hold no stamp far ahead but this node's own; its own
            // erasures count as its own rows do.
            let newest = max(
                try store.positionTable.newestWallMilliseconds(), try store.landmarkTable.newestWallMilliseconds(),
                try store.erasureTable.newestWallMilliseconds(node: try store.nodeID()))
            let horizon = ErasureRule.collectionHorizon(
                stored: stored, nowMilliseconds: store.wallClock.nowMilliseconds(), newestMilliseconds: newest, age: age)
            var summary = CollectionSummary(horizonMilliseconds: horizon)
            // The removed rows may hold the newest numbers: they are not handed out again.
            try store.metaTable.raiseChangeFloor(to: try store.lastChangeSequence())
            summary.landmarkTombstones = try store.landmarkTable.collectTombstones(before: horizon)
            summary.positionTombstones = try store.positionTable.collectTombstones(before: horizon)
            summary.erasures = try store.erasureTable.collect(before: horizon)
            try store.metaTable.setCollectionHorizon(horizon)
            try store.metaTable.set(Self.lastRunKey, String(store.wallClock.nowMilliseconds()))
            return summary
        }
        summary.bytesBefore = before
        if vacuum && summary.removed > 0 && store.path != ":memory:" {
            try UserTraces(store).vacuum()
        }
        UserTraces(store).scrub()
        summary.bytesAfter = try store.databaseBytes()
        return summary
    }
}
