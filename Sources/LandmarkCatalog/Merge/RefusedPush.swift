extension RowMerger {
    /// Removes this node's rows that a peer refused as expired when they were pushed (a hub collected the
    /// deletion that made them stale, docs/erasure.md §7), inside the merge's transaction: this copy then
    /// holds what the peer holds, as a device drops a row the server refused.
    ///
    /// A row changed here since it was pushed (another stamp) is kept. The change numbers the removed rows
    /// held are not handed out again (the change floor); each removal moves the kept digest (docs/repair.md §1).
    /// - Parameters:
    ///   - landmarks: the refused landmarks, by id and the stamp pushed.
    ///   - positions: the refused positions, by user and the stamp pushed.
    /// - Returns: how many rows were removed.
    /// - Throws: `CatalogError` from the database.
    @discardableResult
    package func dropRefused(landmarks: [(id: Int64, stamp: HLCStamp)], positions: [(user: String, stamp: HLCStamp)]) throws -> Int {
        guard !landmarks.isEmpty || !positions.isEmpty else { return 0 }
        try store.metaTable.raiseChangeFloor(to: max(nextSeq - 1, try store.lastChangeSequence()))
        var removed = 0
        for row in landmarks where try store.landmarkTable.forget(id: row.id, ifStamp: row.stamp) { removed += 1 }
        for row in positions where try store.positionTable.forget(user: row.user, ifStamp: row.stamp) { removed += 1 }
        return removed
    }
}
