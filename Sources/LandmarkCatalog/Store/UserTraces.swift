/// What a node recorded about a user — the user's row and every quarantined row, recorded tie and ledger
/// message that names them — removed when the user is erased, and the checkpoint and vacuum that leave
/// no copy of deleted bytes (docs/erasure.md §3).
///
/// The writes of an erasure, below the rule that decides them (`ErasureRule`) and the features that
/// call them (`UserErasure`, `Collector`, the merger).
package struct UserTraces {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    package init(_ store: CatalogStore) { self.store = store }

    /// Removes, inside the caller's write transaction, `user`'s row when stamped at or before `stamp`, and
    /// every quarantined row, recorded tie and ledger message that names the user.
    /// - Returns: whether a row was removed, and how many other records were.
    /// - Throws: `CatalogError` from the database.
    @discardableResult
    package func forget(user: String, stampedAtOrBefore stamp: HLCStamp) throws -> (row: Bool, records: Int) {
        let row = try store.positionTable.erase(user: user, stampedAtOrBefore: stamp)
        var records = try store.quarantineTable.forget(user: user)
        records += try store.conflictTable.forget(user: user)
        records += try store.runLedger.redact(mentioning: user)
        return (row, records)
    }

    /// Checkpoints the WAL into the database file and truncates it to zero bytes.
    ///
    /// `PRAGMA wal_checkpoint(TRUNCATE)`: deleted content (zeroed in place by `secure_delete`) then leaves
    /// no copy in the WAL. A reader holding an old snapshot keeps the checkpoint from finishing: it is then
    /// done again by the next erasure or `catalog gc` (https://sqlite.org/pragma.html#pragma_wal_checkpoint).
    package func scrub() {
        guard store.path != ":memory:" else { return }
        _ = try? store.connection.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Rebuilds the database file without its free pages (`VACUUM`, https://sqlite.org/lang_vacuum.html).
    /// - Throws: `CatalogError` from the database (75 busy, 74 full).
    package func vacuum() throws {
        try store.connection.execute(sql: "VACUUM")
    }
}
