#if os(Linux)
    import Glibc
#endif

/// `catalog_meta`, this database's key/value facts — `node` (its node id, docs/merge-rules.md §1) and
/// `digest` (the state digest's cache, docs/merge-rules.md §8) — and `hlc_clock`, the hybrid logical
/// clock's persisted state (one row).
///
/// Every statement that touches them.
package struct MetaTable {
    let db: Connection

    /// The value of `key`, or nil.
    func value(_ key: String) throws -> String? {
        try db.scalarText(sql: "SELECT value FROM catalog_meta WHERE key = ?", [.text(key)])
    }

    /// Sets `key` to `value`.
    func set(_ key: String, _ value: String) throws {
        try db.execute(
            sql: "INSERT INTO catalog_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [.text(key), .text(value)])
    }

    /// Gives this database a new random `serve-id` (16 hex digits), its identity for serve's cursors
    /// (docs/protocol.md §3).
    /// - Returns: the new id.
    func newServeID() throws -> String {
        var bytes = [UInt8](repeating: 0, count: 8)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        let id = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        try set("serve-id", id)
        return id
    }

    /// The change sequence's floor: the highest number a removed row held (`catalog gc`, an erased row a
    /// device forgets), so numbers are never handed out twice; 0 when none was recorded.
    func changeFloor() throws -> Int64 {
        try db.scalarInt(sql: "SELECT CAST(value AS INTEGER) FROM catalog_meta WHERE key = 'change_floor'") ?? 0
    }

    /// Raises the change sequence's floor to `seq` (never lowers it).
    func raiseChangeFloor(to seq: Int64) throws {
        guard seq > (try changeFloor()) else { return }
        try set("change_floor", String(seq))
    }

    /// The horizon this node collected up to (`catalog gc`, docs/erasure.md §4), ms since the epoch (UTC);
    /// 0 when it never collected.
    func collectionHorizon() throws -> Int64 {
        try value("gc_horizon_ms").flatMap { Int64($0) } ?? 0
    }

    /// Records the horizon collected up to (the caller never moves it back).
    func setCollectionHorizon(_ horizon: Int64) throws { try set("gc_horizon_ms", String(horizon)) }

    /// The clock's persisted state (zero before the first write).
    func clock() throws -> HybridLogicalClock {
        try db.firstRow(sql: "SELECT wall_ms, counter FROM hlc_clock WHERE id = 1") { s in
            HybridLogicalClock(wall: s.int(0), counter: s.int(1))
        } ?? HybridLogicalClock(wall: 0, counter: 0)
    }

    /// Persists the clock's state.
    func setClock(_ clock: HybridLogicalClock) throws {
        try db.execute(sql: "UPDATE hlc_clock SET wall_ms = ?, counter = ? WHERE id = 1", [.integer(clock.wall), .integer(clock.counter)])
    }

}

extension CatalogStore {
    /// `catalog_meta`'s statements on this store's connection.
    package var metaTable: MetaTable { MetaTable(db: connection) }
}

extension MetaTable {
    /// Writes a cached value to `catalog_meta` of `store`'s database through a side connection that waits
    /// at most 100 ms, outside any transaction of the store's; a busy or read-only database leaves the cache
    /// as it was.
    static func storeCache(key: String, value: String, beside store: CatalogStore) {
        let cache = try? store.sideConnection(
            mode: access(store.path, W_OK) == 0 ? .readWrite : .readOnly, busyTimeoutMilliseconds: 100)
        try? cache.map { try MetaTable(db: $0).set(key, value) }
    }
}
