import Foundation

#if os(Linux)
    import Glibc
#endif

/// A digest of a catalog's replicated state (docs/merge-rules.md §8): equal on every node, SQLite or the hub, that holds
/// the same rows with the same stamps, whatever the order they arrived in.
///
/// Each row — live or tombstone — is written as one canonical text, hashed with SHA-256, and the first
/// 16 bytes of its hash are added (as two big-endian 64-bit numbers, modulo 2⁶⁴) into two sums. Addition
/// commutes, so the digest needs no sort and can be computed inside PostgreSQL as well (`sha256()` and
/// `sum()`); the row count is kept beside it. The row texts, fields joined by LF:
///
/// - landmark: `L`, id, updated_ms, counter, node, deleted (`0`/`1`), the landmark's canonical content
///   (``LandmarkJSONShape/content``: the bytes the tie rule orders, and the hub stores as the body);
/// - position: `P`, user, updated_ms, counter, node, deleted, page, landmark id (empty for none).
///
/// The local change sequence is not part of it (it differs between nodes by design).
public struct StateDigest: Sendable, Equatable, CustomStringConvertible {
    /// Rows hashed.
    public var rows: Int64 = 0
    public var high: UInt64 = 0
    public var low: UInt64 = 0

    public init() {}

    public init(rows: Int64, high: UInt64, low: UInt64) {
        self.rows = rows
        self.high = high
        self.low = low
    }

    /// 32 lowercase hex digits.
    public var hex: String { Self.hex16(high) + Self.hex16(low) }

    /// `<hex> (<rows> rows)`.
    public var description: String { "\(hex) (\(plural(Int(rows), "row")))" }

    static func hex16(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    /// Adds one row's canonical text.
    mutating func add(_ text: [UInt8]) {
        let lanes = RowHash(text: text).values.map { UInt64($0) }
        high &+= lanes[0] << 32 | lanes[1]
        low &+= lanes[2] << 32 | lanes[3]
        rows += 1
    }

    /// The canonical text of a landmark row (``RowHash/landmarkText(_:content:)``).
    static func landmarkText<F: LandmarkFields>(_ f: F, content: [UInt8]) -> [UInt8] { RowHash.landmarkText(f, content: content) }

    /// The canonical text of an erasure record (``RowHash/erasureText(_:)``).
    static func erasureText(_ e: ErasureRecord) -> [UInt8] { RowHash.erasureText(e) }

    /// The canonical text of a position row (``RowHash/positionText(_:)``).
    static func positionText(_ p: PositionRecord) -> [UInt8] { RowHash.positionText(p) }

    /// The digest of kept or recomputed lane sums.
    init(_ sums: LaneSums) {
        let lanes = sums.lanes64
        self.init(rows: sums.rows, high: lanes.high, low: lanes.low)
    }
}

extension StateDigest {
    /// The state digest of the catalog in `store` (docs/merge-rules.md §8), at the node's collection
    /// horizon, or at `horizonMilliseconds` when given.
    ///
    /// Live rows always count; tombstones and erasure records count only when stamped at or after the
    /// horizon (`ErasureRule.countsInDigest(deleted:stamp:horizonMilliseconds:)`), so two nodes that
    /// collected at different times agree when digested at the same horizon — the greater of theirs
    /// (docs/erasure.md §5).
    ///
    /// Each write keeps the sums of every stored row (docs/repair.md §1); the digest at a horizon is those
    /// sums less the tombstones and erasure records stamped below it, read from their partial indexes —
    /// after the node's own collection, few or none. A database whose schema predates the kept digest, or
    /// whose rows are still to be hashed (opened read-only since it was migrated), is digested by reading
    /// every row instead (about a second per million).
    /// - Parameters:
    ///   - store: the catalog to digest.
    ///   - horizonMilliseconds: the horizon (ms since the epoch, UTC); nil for the node's own
    ///     (``Collector/horizon()``).
    /// - Throws: `CatalogError` when the database cannot be read.
    public init(of store: CatalogStore, horizonMilliseconds: Int64? = nil) throws {
        self = try store.read {
            let horizon = try horizonMilliseconds ?? store.metaTable.collectionHorizon()
            if let kept = try store.digestTotals.keptSums() {
                var sums = kept
                sums.subtract(try Self.collectable(store, before: horizon))
                return StateDigest(sums)
            }
            return try Self.recomputed(store, horizonMilliseconds: horizon).digest
        }
    }

    /// The sums of the stored rows that do not count in the digest at `horizon`: tombstones and erasure
    /// records stamped below it (call inside a read).
    static func collectable(_ store: CatalogStore, before horizon: Int64) throws -> LaneSums {
        var sums = try store.landmarkTable.tombstoneSums(before: horizon)
        sums.add(try store.positionTable.tombstoneSums(before: horizon))
        sums.add(try store.erasureTable.sums(before: horizon))
        return sums
    }

    /// The digest at `horizonMilliseconds` recomputed from every row's content, and how many rows' stored
    /// hashes differ from their content, whether they count or not (call inside a read).
    static func recomputed(_ store: CatalogStore, horizonMilliseconds horizon: Int64) throws -> (digest: StateDigest, staleRows: Int) {
        let counts = { (deleted: Bool, stamp: HLCStamp) in
            ErasureRule.countsInDigest(deleted: deleted, stamp: stamp, horizonMilliseconds: horizon)
        }
        let landmarks = try store.landmarkTable.recomputedSums(counts: counts)
        let positions = try store.positionTable.recomputedSums(counts: counts)
        var sums = landmarks.sums
        sums.add(positions.sums)
        try store.erasureTable.forEachRecord { e, _ in
            guard ErasureRule.countsInDigest(deleted: true, stamp: e.stamp, horizonMilliseconds: horizon) else { return }
            sums.add(RowHash(erasure: e))
        }
        return (StateDigest(sums), landmarks.stale + positions.stale)
    }

    /// Recomputes the digest from every row (about a second per million rows) and compares it with the
    /// kept one, both at the node's collection horizon (`catalog status --verify-digest`, docs/repair.md §1).
    /// - Parameter store: the catalog to check.
    /// - Returns: the kept digest, the recomputed one, and how many rows' stored hashes differ from their
    ///   content; the kept digest is right when the two are equal and no row is stale.
    /// - Throws: `CatalogError` when the database cannot be read.
    public static func verify(_ store: CatalogStore) throws -> (kept: StateDigest, recomputed: StateDigest, staleRows: Int) {
        try store.read {
            let horizon = try store.metaTable.collectionHorizon()
            let kept = try StateDigest(of: store, horizonMilliseconds: horizon)
            let (recomputed, stale) = try Self.recomputed(store, horizonMilliseconds: horizon)
            return (kept, recomputed, stale)
        }
    }
}
