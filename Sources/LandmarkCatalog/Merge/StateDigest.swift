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
        let hash = SHA256.hash(text)
        var h: UInt64 = 0
        var l: UInt64 = 0
        for i in 0..<8 { h = h << 8 | UInt64(hash[i]) }
        for i in 8..<16 { l = l << 8 | UInt64(hash[i]) }
        high &+= h
        low &+= l
        rows += 1
    }

    /// The canonical text of a landmark row.
    static func landmarkText<F: LandmarkFields>(_ f: F, content: [UInt8]) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: content.count + 64)
        w.raw("L\n")
        w.raw(String(f.int(.id)))
        w.byte(0x0A)
        w.raw(String(f.int(.updatedMs)))
        w.byte(0x0A)
        w.raw(String(f.int(.counter)))
        w.byte(0x0A)
        f.withText(.node) { if let b = $0 { w.bytes.append(contentsOf: b) } }
        w.byte(0x0A)
        w.raw(f.int(.deleted) != 0 ? "1" : "0")
        w.byte(0x0A)
        w.bytes.append(contentsOf: content)
        return w.bytes
    }

    /// The canonical text of an erasure record: `E`, user hash, updated_ms, counter, node.
    static func erasureText(_ e: ErasureRecord) -> [UInt8] {
        Array("E\n\(e.userHash)\n\(e.stamp.wallMilliseconds)\n\(e.stamp.counter)\n\(e.stamp.node)".utf8)
    }

    /// The canonical text of a position row.
    static func positionText(_ p: PositionRecord) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 96)
        w.raw("P\n")
        w.raw(p.user)
        w.byte(0x0A)
        w.raw(String(p.stamp.wallMilliseconds))
        w.byte(0x0A)
        w.raw(String(p.stamp.counter))
        w.byte(0x0A)
        w.raw(p.stamp.node)
        w.byte(0x0A)
        w.raw(p.deleted ? "1" : "0")
        w.byte(0x0A)
        w.raw(String(p.page))
        w.byte(0x0A)
        if let l = p.landmark { w.raw(String(l)) }
        return w.bytes
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
    /// Computing it reads every row (about a second per million); the result at the node's own horizon is
    /// kept with the change sequence number it was computed at, so asking again before anything changes
    /// costs nothing.
    /// - Parameters:
    ///   - store: the catalog to digest.
    ///   - horizonMilliseconds: the horizon (ms since the epoch, UTC); nil for the node's own
    ///     (``Collector/horizon()``).
    /// - Throws: `CatalogError` when the database cannot be read.
    public init(of store: CatalogStore, horizonMilliseconds: Int64? = nil) throws {
        let (digest, seq, cached, useCache) = try store.read { () throws -> (StateDigest, Int64, Bool, Bool) in
            let seq = try store.lastChangeSequence()
            let own = try store.metaTable.collectionHorizon()
            let horizon = horizonMilliseconds ?? own
            let useCache = horizon == own
            if useCache, let text = try store.metaTable.value("digest"),
                let cached = Self.parseCached(text), cached.seq == seq
            {
                return (cached.digest, seq, true, true)
            }
            var digest = StateDigest()
            try store.landmarkTable.forEachRow { s in
                let row = LandmarkRow(statement: s)
                let stamp = HLCStamp(
                    wallMilliseconds: s.int(LandmarkColumn.updatedMs), counter: s.int(LandmarkColumn.counter),
                    node: s.text(LandmarkColumn.node) ?? "")
                guard ErasureRule.countsInDigest(deleted: s.bool(LandmarkColumn.deleted), stamp: stamp, horizonMilliseconds: horizon)
                else { return }
                digest.add(StateDigest.landmarkText(row, content: LandmarkJSON.bytes(row, shape: .content)))
            }
            try store.positionTable.forEachRow { s in
                let p = PositionRecord(row: s)
                guard ErasureRule.countsInDigest(deleted: p.deleted, stamp: p.stamp, horizonMilliseconds: horizon) else { return }
                digest.add(StateDigest.positionText(p))
            }
            try store.erasureTable.forEachRecord { e, _ in
                guard ErasureRule.countsInDigest(deleted: true, stamp: e.stamp, horizonMilliseconds: horizon) else { return }
                digest.add(StateDigest.erasureText(e))
            }
            return (digest, seq, false, useCache)
        }
        if !cached && useCache && store.path != ":memory:" {
            // A cache only: a busy or read-only database just means computing it again next time.
            MetaTable.storeCache(key: "digest", value: "\(seq) \(digest.rows) \(digest.hex)", beside: store)
        }
        self = digest
    }

    static func parseCached(_ text: String) -> (seq: Int64, digest: StateDigest)? {
        let parts = text.split(separator: " ")
        guard parts.count == 3, let seq = Int64(parts[0]), let rows = Int64(parts[1]), parts[2].count == 32,
            let high = UInt64(parts[2].prefix(16), radix: 16), let low = UInt64(parts[2].suffix(16), radix: 16)
        else { return nil }
        return (seq, StateDigest(rows: rows, high: high, low: low))
    }
}
