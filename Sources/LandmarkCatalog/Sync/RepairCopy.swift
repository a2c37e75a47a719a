/// One copy of a catalog as a side of a repair sees it (docs/repair.md §2): its collection horizon, a
/// consistent read, the rows of each table, and rows by key as a snapshot document.
///
/// ``Reconciler`` works on this alone, so the one reconciliation rule runs against a catalog database
/// (``StoreRepairCopy``) and against any other store of the same rows (a PostgreSQL hub).
package protocol RepairCopy {
    /// The copy's collection horizon (ms since the epoch, UTC; 0 before any collection).
    func collectionHorizon() throws -> Int64
    /// Runs `body` in one read snapshot of the copy (joining one already open).
    func read<T>(_ body: () throws -> T) throws -> T
    /// The rows of `table` that take part at the session's horizon `horizon`.
    func rows(_ table: RepairTable, horizon: Int64) -> any RepairRowSet
    /// A snapshot document (docs/snapshot-format.md §2) of the rows with the given keys (in each table's
    /// key bytes, ``RepairRows/key(id:)`` for landmarks, UTF-8 for users and user hashes), tombstones
    /// included.
    func snapshot(landmarks: [[UInt8]], positions: [[UInt8]], erasures: [[UInt8]]) throws -> [UInt8]
}

/// The rows of one table, in key order, as a repair reads them (docs/repair.md §2).
package protocol RepairRowSet {
    /// The row count and lane sums of the rows with keys in `[lower, upper)`.
    func sums(_ lower: [UInt8], _ upper: [UInt8]?) throws -> LaneSums
    /// Each row with a key in `[lower, upper)`, in key order: its key bytes and its row hash.
    func forEach(_ lower: [UInt8], _ upper: [UInt8]?, _ body: ([UInt8], RowHash) throws -> Void) throws
    /// The shortest key bytes above `a` and at most `b` (`a < b`).
    func separator(_ a: [UInt8], _ b: [UInt8]) -> [UInt8]
    /// The rows in `[lower, upper)` cut into `count` parts of about equal row counts, each with its sums
    /// and its first and last key, computed where the rows are; nil to let the caller split them from
    /// ``forEach(_:_:_:)``.
    func parts(_ lower: [UInt8], _ upper: [UInt8]?, count: Int) throws -> [RepairPart]?
}

/// One part of a range split where the rows are: its rows' sums and its first and last key bytes.
package struct RepairPart: Sendable, Equatable {
    package var sums: LaneSums
    package var first: [UInt8]
    package var last: [UInt8]

    package init(sums: LaneSums, first: [UInt8], last: [UInt8]) {
        self.sums = sums
        self.first = first
        self.last = last
    }
}

/// A catalog database as a side of a repair.
package struct StoreRepairCopy: RepairCopy {
    let store: CatalogStore

    package init(_ store: CatalogStore) { self.store = store }

    package func collectionHorizon() throws -> Int64 { try store.read { try store.metaTable.collectionHorizon() } }

    package func read<T>(_ body: () throws -> T) throws -> T { try store.read(body) }

    package func rows(_ table: RepairTable, horizon: Int64) -> any RepairRowSet { RepairRows(store: store, table: table, horizon: horizon) }

    package func snapshot(landmarks: [[UInt8]], positions: [[UInt8]], erasures: [[UInt8]]) throws -> [UInt8] {
        try RepairRows.snapshot(store: store, landmarks: landmarks, positions: positions, erasures: erasures)
    }
}
