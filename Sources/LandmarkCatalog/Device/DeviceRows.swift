import Foundation

/// One page of changed rows for a device (docs/protocol.md §4), written as snapshot rows.
package struct DeviceRowsPage: Sendable {
    /// The rows, each a snapshot row object, separated by commas (no brackets).
    package var rowsJSON: [UInt8] = []
    package var count = 0
    /// The largest change sequence number among the rows (the cursor's position when there are rows).
    package var through: Int64 = 0
    /// The newest stamp's wall time (ms) among the rows, for the write-to-visible figure.
    package var newestWall: Int64 = 0
    /// More rows follow: ask again at once.
    package var more = false
    /// The erasure records of an edge's page (docs/erasure.md §2), each a snapshot erasure object;
    /// counted in ``count`` and ``through``.
    package var erasureObjects: [[UInt8]] = []
    /// The erasure records as the inside of a JSON array: the objects separated by commas (no brackets).
    package var erasuresJSON: [UInt8] { Array(erasureObjects.joined(separator: Array(",\n".utf8))) }
    /// The position rows of ``count``, without the erasure records.
    package var rowCount: Int { count - erasureObjects.count }

    /// An empty page: nothing after the cursor.
    package init() {}
}

/// What `catalog serve` reads and writes for devices (docs/protocol.md §3–§6).
///
/// Rows changed after a change sequence number, per user or all, and a device's stamped positions merged
/// by the one last-writer-wins rule with each row's outcome. Its statements are the table
/// modules' (`Store/Tables/`).
package struct DeviceRows {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    package init(_ store: CatalogStore) { self.store = store }
}

extension DeviceRows {
    /// This database's identity for cursors (docs/protocol.md §3): a random id kept in `catalog_meta`
    /// under `serve-id`, made the first time (a database restored from another's copy keeps it; the
    /// cursor's sequence number beyond the database's end is taken as no cursor).
    package func serveDatabaseID() throws -> String {
        if let id = try store.read({ try store.metaTable.value("serve-id") }) { return id }
        return try store.write {
            if let id = try store.metaTable.value("serve-id") { return id }
            return try store.metaTable.newServeID()
        }
    }

    /// Gives this database a new random `serve-id`: every cursor handed out before names another database
    /// (a database restored from a backup, docs/serve.md §4).
    /// - Returns: the new id.
    package func newServeDatabaseID() throws -> String {
        try store.write { try store.metaTable.newServeID() }
    }

    /// The position rows changed after `after` (docs/protocol.md §4): `user`'s row alone, or with nil every
    /// row in change-sequence order, at most `limit`.
    ///
    /// Returns also the database's change sequence high-water mark read in the same transaction. With nil
    /// (an edge) the page holds the erasure records numbered in its span too; with `user` and
    /// `ownErasure`, that user's erasure record when it is numbered after `after` (what a user token may
    /// push, docs/protocol.md §9).
    package func devicePositions(user: String?, after: Int64, limit: Int, ownErasure: Bool = false) throws -> (
        page: DeviceRowsPage, highWater: Int64
    ) {
        try store.read {
            var page = DeviceRowsPage()
            var w = JSONWriter(reservingCapacity: 256)
            func add(_ s: Statement) {
                if page.count > 0 { w.raw(",\n") }
                PositionRecord(row: s).writeJSON(to: &w)
                page.count += 1
                page.through = max(page.through, s.int(PositionColumn.seq))
                page.newestWall = max(page.newestWall, s.int(PositionColumn.updatedMs))
            }
            if let user {
                try store.positionTable.forEachChanged(user: user, after: after) { add($0) }
            } else {
                try store.positionTable.forEachChanged(after: after, limit: limit + 1) { s in
                    if page.count == limit {
                        page.more = true
                    } else {
                        add(s)
                    }
                }
            }
            page.rowsJSON = w.bytes
            let highWater = try store.lastChangeSequence()
            // An edge gets the erasure records numbered in the same span, so a node following this server
            // erases too (docs/erasure.md §2); the cursor moves past them. A node pushing with a user token
            // sends its user's own record alone (docs/protocol.md §9).
            let own = user.flatMap { ownErasure ? ErasureRule.userHash($0) : nil }
            if user == nil || own != nil, case let upper = page.more ? page.through : highWater, upper > after {
                try store.erasureTable.forEachRecord(changes: (after + 1)...upper) { record, seq in
                    guard own == nil || own == record.userHash else { return }
                    var e = JSONWriter(reservingCapacity: 160)
                    record.writeJSON(to: &e)
                    page.erasureObjects.append(e.bytes)
                    page.count += 1
                    page.through = max(page.through, seq)
                }
            }
            return (page, highWater)
        }
    }

    /// A user token's cursor (docs/protocol.md §3).
    ///
    /// The change sequence number of `user`'s position row (tombstone included) or of the user's erasure
    /// record, whichever is greater. After an erasure the user has no row, yet the cursor stays where the
    /// erasure put it: 0 would tell the client the server forgot.
    /// - Parameter user: the row's user.
    /// - Returns: the sequence number, or 0 when there is neither a row nor an erasure of `user`.
    /// - Throws: `CatalogError` from reading the database.
    package func positionSequence(user: String) throws -> Int64 {
        try store.read {
            max(try store.positionTable.row(user: user)?.seq ?? 0, try store.erasureTable.seq(userHash: ErasureRule.userHash(user)))
        }
    }

    /// How many position rows of users other than `user` changed after `after` and through `through`: the
    /// rows a push with `user`'s token leaves out (docs/protocol.md §9).
    ///
    /// - Parameters:
    ///   - after: the change sequence number the push started after.
    ///   - through: the high-water mark the push read through.
    ///   - user: the token's user.
    /// - Returns: the number of such rows (tombstones included).
    /// - Throws: `CatalogError` from reading the database.
    package func positionsChanged(after: Int64, through: Int64, otherThan user: String) throws -> Int {
        try store.read { try store.positionTable.changedCount(after: after, through: through, otherThan: user) }
    }

    /// The landmark rows (tombstones included) changed after `after`, in change-sequence order, at most `limit`.
    package func deviceLandmarks(after: Int64, limit: Int) throws -> (page: DeviceRowsPage, highWater: Int64) {
        try store.read {
            var page = DeviceRowsPage()
            var w = JSONWriter(reservingCapacity: 1 << 14)
            try store.landmarkTable.forEachChanged(after: after, limit: limit + 1) { s in
                if page.count == limit {
                    page.more = true
                    return
                }
                if page.count > 0 { w.raw(",\n") }
                LandmarkJSON.write(LandmarkRow(statement: s), shape: .snapshot, to: &w)
                page.count += 1
                page.through = max(page.through, s.int(LandmarkColumn.seq))
                page.newestWall = max(page.newestWall, s.int(LandmarkColumn.updatedMs))
            }
            page.rowsJSON = w.bytes
            return (page, try store.lastChangeSequence())
        }
    }

    /// The change sequence number of the newest landmark row (0: none).
    ///
    /// A landmarks cursor past it is not
    /// one this database handed out for its landmarks (docs/protocol.md §3), whatever positions were
    /// written since: so no cursor tells how far the positions of others have moved the sequence.
    package func landmarksThrough() throws -> Int64 { try store.read { try store.landmarkTable.maxSeq() } }

    /// Where an edge reader's two cursors stand now, read in one transaction: the newest landmark row's
    /// change sequence number (the landmarks cursor) and the database's own point (the positions cursor
    /// of an edge token, docs/protocol.md §3).
    package func cursorPoints() throws -> (landmarks: Int64, positions: Int64) {
        try store.read { (try store.landmarkTable.maxSeq(), try store.lastChangeSequence()) }
    }

    /// What changed after `after`: each changed position's user and change sequence number (passed to
    /// `user`), whether a landmark changed, the high-water mark they were read through, and the newest
    /// erasure record's number among them (0: none) — for waking long-polls and knowing, without a read,
    /// that a user has nothing new (docs/serve.md §4).
    package func deviceChanges(after: Int64, _ user: (String, Int64) -> Void) throws -> (
        landmarks: Bool, highWater: Int64, erasures: Int64
    ) {
        try store.read {
            let high = try store.lastChangeSequence()
            guard high > after else { return (false, high, 0) }
            try store.positionTable.forEachChanged(after: after, through: high) {
                user($0.text(PositionColumn.userID) ?? "", $0.int(PositionColumn.seq))
            }
            // Erasure records are changes of every position for an edge's poll (docs/erasure.md §2).
            var erasures: Int64 = 0
            try store.erasureTable.forEachRecord(changes: (after + 1)...high) { _, seq in erasures = max(erasures, seq) }
            return (try store.landmarkTable.anyChanged(after: after, through: high), high, erasures)
        }
    }

    /// Merges a device's position rows and a node's erasure records in one transaction by the
    /// last-writer-wins and erasure rules (docs/merge-rules.md, docs/erasure.md §1), rows stamped more than
    /// `maxDriftMilliseconds` ahead of this clock quarantined, and says what became of each, in order
    /// (docs/protocol.md §6).
    ///
    /// The erasures are applied first, as a snapshot's are (`RowMerger`): a row of an erased user in the
    /// same request stamped at or before the erasure is refused as `erased`. A row or erasure delivered
    /// again finds itself stored and is `applied`. When an erasure was applied, the WAL is checkpointed
    /// after the commit (``UserErasure/scrub()``).
    /// - Parameters:
    ///   - rows: the device's rows, in the order of its request.
    ///   - erasures: the erasure records, in the order of the request; the caller has checked that the
    ///     writer may send each (`ErasureRule.mayErase`).
    ///   - source: the name recorded with quarantined rows and ties.
    ///   - maxDriftMilliseconds: rows stamped further ahead of this clock are quarantined.
    /// - Returns: the rows' outcomes, the erasures' outcomes (`applied`: it is the stored erasure of its
    ///   user; `stale`: a later one is stored), and the high-water mark after the commit.
    /// - Throws: `CatalogError` (75 when the database is busy, 74 when full); nothing is written then.
    package func mergeDevicePositions(
        _ rows: [PositionRecord], erasures: [ErasureRecord] = [], source: String, maxDriftMilliseconds: Int64
    ) throws -> (outcomes: [DeviceRowOutcome], erasureOutcomes: [DeviceRowOutcome], highWater: Int64) {
        var erasuresApplied = 0
        defer { if erasuresApplied > 0 { UserErasure(store).scrub() } }
        return try store.write {
            let quarantineAfter = store.wallClock.nowMilliseconds() + maxDriftMilliseconds
            var merger = try RowMerger(store: store, source: source, quarantineAfter: quarantineAfter, diagnostics: { _ in })
            var refusals: [String: ErasureRule.Refusal] = [:]
            merger.refused = { user, stamp, why in refusals["\(user)\u{0}\(stamp)"] = why }
            let batch = RowBatch(reserving: false)
            batch.positions = rows
            batch.erasures = erasures
            batch.isLast = true
            try merger.apply(batch)
            erasuresApplied = merger.counts.erasuresApplied
            if merger.maxSeen.wall > 0 || merger.maxSeen.counter > 0 {
                try store.observeRemoteStamp(wall: merger.maxSeen.wall, counter: merger.maxSeen.counter)
            }
            var outcomes: [DeviceRowOutcome] = []
            outcomes.reserveCapacity(rows.count)
            for row in rows {
                if row.stamp.wallMilliseconds > quarantineAfter {
                    outcomes.append(.quarantined)
                    continue
                }
                if let why = refusals["\(row.user)\u{0}\(row.stamp)"] {
                    outcomes.append(why == .erased ? .erased : .expired)
                    continue
                }
                let stored = try store.positionTable.row(user: row.user)?.record
                guard let stored, stored.stamp == row.stamp else {
                    outcomes.append(.stale)
                    continue
                }
                let same = stored.deleted == row.deleted && (row.deleted || (stored.page == row.page && stored.landmark == row.landmark))
                outcomes.append(same ? .applied : .tie)
            }
            let erasureOutcomes: [DeviceRowOutcome] = try erasures.map {
                try store.erasureTable.stamp(userHash: $0.userHash) == $0.stamp ? .applied : .stale
            }
            return (outcomes, erasureOutcomes, try store.lastChangeSequence())
        }
    }
}

/// One user's position row and what the quarantine holds for them, for serve's operator page
/// (docs/serve.md §10).
package struct DeviceUserReport: Sendable {
    /// The stored row: page, landmark, stamp, tombstone flag and change sequence number; nil when the
    /// database holds no row of the user.
    package var row: (page: Int64, landmark: Int64?, stamp: HLCStamp, deleted: Bool, seq: Int64)?
    /// The user's quarantined position rows, newest first (at most the limit asked).
    package var quarantined: [QuarantinedRow] = []
    /// How many quarantined position rows the user has in all.
    package var quarantinedCount = 0
}

extension DeviceRows {
    /// `user`'s row and quarantined rows (at most `limit` of those), read in one transaction.
    /// - Throws: `CatalogError` from reading the database.
    package func userReport(_ user: String, limit: Int = 20) throws -> DeviceUserReport {
        try store.read {
            var report = DeviceUserReport()
            if let (r, seq) = try store.positionTable.row(user: user) {
                report.row = (r.page, r.landmark, r.stamp, r.deleted, seq)
            }
            report.quarantined = try store.quarantineTable.positions(user: user, limit: limit)
            report.quarantinedCount = try store.quarantineTable.positionCount(user: user)
            return report
        }
    }
}
