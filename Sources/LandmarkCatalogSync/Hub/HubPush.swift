import Foundation
import LandmarkCatalog

/// What one push to the hub did.
struct HubPushReport {
    /// Rows sent (staged with `COPY`).
    var sentLandmarks = 0
    var sentPositions = 0
    var sentErasures = 0
    /// Of them, rows that won by last-writer-wins and were written to the hub.
    var written = 0
    /// Of them, rows the hub held back in its quarantine (stamped beyond the drift allowance).
    var quarantined = 0
    /// Rows released from the hub's quarantine by this push (their stamps are no longer too far ahead).
    var released = 0
    /// Of them, the rows the hub refused as expired (docs/erasure.md §7), by key and the stamp pushed:
    /// the pull that follows removes them from this node's copy when they are unchanged.
    var expiredLandmarks: [(id: Int64, stamp: HLCStamp)] = []
    var expiredPositions: [(user: String, stamp: HLCStamp)] = []
    /// The local change sequence number the push covered: every local change numbered at or below it is
    /// on the hub (or in its quarantine).
    var through: Int64
    /// The hub sequence numbers this push's own rows took (nil when none won): nothing else can hold a
    /// number in this range, so the pull that follows skips it (it would read back our own rows).
    var ownSequence: ClosedRange<Int64>?
    /// Whether a push transaction ran (false when there was nothing to send).
    var pushed = false

    var sent: Int { sentLandmarks + sentPositions + sentErasures }
    var expired: Int { expiredLandmarks.count + expiredPositions.count }
}

extension HubConnection {
    /// Pushes this node's changes numbered after `since` to the hub in ONE PostgreSQL transaction, in four steps.
    ///
    /// 1. The rows are read from one SQLite read snapshot with a range read on the `seq` indexes, and
    ///    streamed with `COPY … FROM STDIN` into temporary staging tables (`ON COMMIT DROP`): memory stays
    ///    at one COPY chunk whatever the row count (PostgreSQL "COPY").
    /// 2. The transaction-scoped advisory lock ``HubSQL/pushLockKey`` is taken (`pg_advisory_xact_lock`),
    ///    and held until COMMIT. Every `nextval` of the hub sequence happens under it, so pushes take
    ///    their numbers one after another and commit before the next push takes any: a puller that
    ///    sees number n committed sees every number below n committed too (the commit-order gap; see
    ///    PostgreSQL "Explicit Locking", Advisory Locks, and "Sequence Manipulation Functions": `nextval`
    ///    is never rolled back and not ordered by commit). The lock is taken after staging, not before: the
    ///    staging tables are private to this transaction, so only the numbered part is serialised and
    ///    concurrent pushes still stream their rows in parallel.
    /// 3. Rows stamped more than `maxDriftMilliseconds` ahead of the hub's clock go to `hub_quarantine`;
    ///    quarantined rows that are due now are released; then one `INSERT … SELECT … ON CONFLICT … DO
    ///    UPDATE … WHERE` per table applies last-writer-wins (``LastWriterWins/sqlIncomingWins(incoming:stored:content:)``),
    ///    each written row taking `nextval`.
    /// 4. The edge's bookkeeping row (`hub_edges`) is updated, and the transaction commits.
    ///
    /// Killed anywhere before COMMIT, the hub has none of it (the server rolls an abandoned transaction back).
    ///
    /// - Parameters:
    ///   - store: this edge's database.
    ///   - since: the local change sequence number the last push covered (0: push everything).
    ///   - maxDriftMilliseconds: the allowance for stamps ahead of the hub's clock.
    ///   - hooks: test hooks (none in production).
    ///   - node: the pushing node's id for the hub's quarantine and history (nil: `store`'s own; a repair
    ///     pushes rows staged in a scratch database on behalf of the node that sent them, and leaves that
    ///     node's row in `hub_edges` as its own pushes left it).
    ///   - progress: rows and bytes sent so far, every 4,096 rows while they stream into `COPY`.
    /// - Returns: what was sent and written, and the range to store as the push cursor.
    /// - Throws: `PGError`; `CatalogError` (69 when another edge's push holds the lock longer than the
    ///   statement timeout; SQLite failures reading the rows).
    func push(
        from store: CatalogStore, since: Int64, maxDriftMilliseconds: Int64, hooks: HubTestHooks = HubTestHooks(), node: String? = nil,
        progress: (_ rows: Int, _ bytes: Int64) -> Void = { _, _ in }
    ) throws -> HubPushReport {
        try store.read {
            let through = try store.lastChangeSequence()
            // A cursor past the database's changes means another database file: send everything.
            let since = since > through ? 0 : since
            var report = HubPushReport(through: through)
            let limit = try hubNowMilliseconds() &+ maxDriftMilliseconds
            let due = try pg.execute(sql: HubSQL.quarantineDue, [.integer(limit)]).bool(0, 0) == true
            guard through > since || due else { return report }
            let onBehalf = node != nil
            let node = try node ?? store.currentNode()
            let pg = self.pg
            try pg.transaction {
                try pg.execute(
                    sql: "SELECT set_config('statement_timeout', $1, true)",
                    [.text(String(PGConnection.milliseconds(limits.bulk)))])
                try pg.executeScript(sql: HubSQL.createStaging)
                let newest = through > since ? try stage(from: store, since: since, through: through, report: &report, progress: progress) : Int64.min
                // The critical section: from the first nextval to COMMIT.
                if !hooks.skipPushLock { try takePushLock() }
                if newest > limit {
                    for (kind, count) in [("landmark", report.sentLandmarks), ("position", report.sentPositions)] where count > 0 {
                        let held = try pg.execute(sql: HubSQL.quarantine(kind: kind), [.integer(limit), .text(node)], timeout: limits.bulk)
                        report.quarantined += Int(try held.int64(0, 0) ?? 0)
                    }
                }
                if due {
                    for kind in ["landmark", "position"] {
                        report.released += try pg.execute(sql: HubSQL.releaseQuarantine(kind: kind), [.integer(limit)], timeout: limits.bulk)
                            .affectedRows
                    }
                }
                let before = try pg.execute(sql: HubSQL.lastSequence).int64(0, 0) ?? 0
                // Erasures first (docs/erasure.md): the positions upsert below then refuses the erased users' older rows.
                if through > since {
                    var erasures: [ErasureRecord] = []
                    try store.erasureTable.forEachRecord(changes: (since + 1)...through) { record, _ in erasures.append(record) }
                    for e in erasures {
                        let stamp: [PGValue?] = [
                            .text(e.userHash), .integer(e.stamp.wallMilliseconds), .integer(e.stamp.counter), .text(e.stamp.node),
                        ]
                        report.sentErasures += 1
                        report.written += try pg.execute(sql: HubSQL.upsertErasure, stamp, timeout: limits.bulk).affectedRows
                        _ = try pg.execute(sql: HubSQL.eraseUser, stamp, timeout: limits.bulk)
                    }
                }
                try readExpired(&report, limit: limit)
                for (sql, count) in [
                    (HubSQL.upsertLandmarks(from: "catalog_push_landmarks"), report.sentLandmarks),
                    (HubSQL.upsertPositions(from: "catalog_push_positions"), report.sentPositions),
                ] where count > 0 {
                    report.written += try pg.execute(sql: sql, [.integer(limit)], timeout: limits.bulk).affectedRows
                }
                if report.written > 0 {
                    // Under the lock nobody else takes numbers: before+1…after are this push's (some unused:
                    // rows that lost by last-writer-wins took a number too).
                    let after = try pg.execute(sql: HubSQL.lastSequence).int64(0, 0) ?? 0
                    if !hooks.skipPushLock && after > before {
                        report.ownSequence = (before + 1)...after
                        // The hub's history gains this push (docs/hub.md, "Restoring a hub").
                        _ = try pg.execute(sql: HubSQL.noteHistory, [.integer(after), .text(node)])
                    }
                }
                try beforeCommit(report, node: node, through: through, onBehalf: onBehalf)
                hooks.beforePushCommit?()
            }
            report.pushed = true
            return report
        }
    }

    /// The push's last statements before COMMIT, under the lock: the kept digest's fold, the notification
    /// and the edge's bookkeeping row.
    /// - Throws: `PGError`.
    private func beforeCommit(_ report: HubPushReport, node: String, through: Int64, onBehalf: Bool) throws {
        // The kept digest's appended moves, folded now and then.
        if report.written > 0 { try pg.execute(sql: HubSQL.foldTotals) }
        // Followers LISTEN on this channel; the notification is delivered at COMMIT (docs/live-sync.md §3).
        if report.written > 0 { try pg.execute(sql: "NOTIFY \(HubListener.channel)") }
        // A push on another node's behalf (a repair's rows, staged in a scratch database) leaves that
        // node's bookkeeping alone: `through` numbers the scratch database's changes, not the node's.
        guard !onBehalf else { return }
        try pg.execute(
            sql: HubSQL.notePush,
            [
                .text(node), .integer(through), .integer(Int64(report.sent)),
                .integer(Int64(report.written)), .text(CatalogVersion.string),
            ])
    }

    /// Streams this edge's rows changed in `since+1…through` into the staging tables (`COPY`), counting
    /// them in `report`.
    ///
    /// - Parameters:
    ///   - store: this edge's database (inside its read transaction).
    ///   - since: the local change sequence number the last push covered.
    ///   - through: the newest local change sequence number this push covers.
    ///   - report: gains `sentLandmarks` and `sentPositions`.
    ///   - progress: rows and bytes sent so far, every 4,096 rows.
    /// - Returns: the newest stamp (wall ms) among the rows sent, `Int64.min` when none.
    /// - Throws: `PGError`; `CatalogError` for SQLite failures reading the rows.
    private func stage(
        from store: CatalogStore, since: Int64, through: Int64, report: inout HubPushReport,
        progress: (_ rows: Int, _ bytes: Int64) -> Void
    ) throws -> Int64 {
        var newest = Int64.min
        let landmarks = try store.landmarkTable.changes(since: since, through: through)
        var (rows, bytes) = (0, Int64(0))
        func sent(_ buffer: [UInt8], from start: Int) {
            rows += 1
            bytes += Int64(buffer.count - start)
            if rows % 4096 == 0 { progress(rows, bytes) }
        }
        report.sentLandmarks = try pg.copyIn(sql: HubSQL.copyLandmarks, timeout: limits.statement) { buffer in
            guard try landmarks.step() else { return false }
            newest = max(newest, landmarks.int(LandmarkColumn.updatedMs))
            let start = buffer.count
            try Self.appendLandmark(landmarks, to: &buffer)
            sent(buffer, from: start)
            return true
        }
        let positions = try store.positionTable.changes(since: since, through: through)
        report.sentPositions = try pg.copyIn(sql: HubSQL.copyPositions, timeout: limits.statement) { buffer in
            guard try positions.step() else { return false }
            newest = max(newest, positions.int(PositionColumn.updatedMs))
            let start = buffer.count
            try Self.appendPosition(positions, to: &buffer)
            sent(buffer, from: start)
            return true
        }
        if rows > 0 { progress(rows, bytes) }
        return newest
    }

    /// Reads the staged rows the upserts will refuse as expired (``HubSQL/expiredRows(kind:)``) into
    /// `report`; run under the push lock, right before the upserts, so both see the same horizon and rows.
    /// - Throws: `PGError`; `CatalogError` (65) for a stamp that is not valid.
    private func readExpired(_ report: inout HubPushReport, limit: Int64) throws {
        for (kind, count) in [("landmark", report.sentLandmarks), ("position", report.sentPositions)] where count > 0 {
            let result = try pg.execute(sql: HubSQL.expiredRows(kind: kind), [.integer(limit)], timeout: limits.bulk)
            for row in 0..<result.rowCount {
                guard let key = result.text(row, 0), let stamp = try HubPullFeed.stamp(result, row: row, updatedMs: 1, counter: 2, node: 3)
                else { throw CatalogError(.dataInvalid, "the hub answered a refused row without a valid key or stamp, \(name)") }
                if kind == "landmark" {
                    guard let id = Int64(key) else { continue }
                    report.expiredLandmarks.append((id, stamp))
                } else {
                    report.expiredPositions.append((key, stamp))
                }
            }
        }
    }

    /// Takes the push lock, waiting at most the statement timeout for another edge's push to commit.
    /// - Throws: `CatalogError` 69 when it is not granted in time; `PGError`.
    private func takePushLock() throws {
        do {
            try pg.advisoryTransactionLock(HubSQL.pushLockKey, timeout: limits.statement)
        } catch let error as PGError where error.kind == .timedOut || error.sqlState == .queryCanceled || error.sqlState == .lockNotAvailable {
            throw CatalogError(
                .unavailable,
                "another edge's push held the hub's push lock for more than \(PGConnection.describe(limits.statement)), \(name)",
                hint: "the hub is busy; the next run retries (or raise --timeout)")
        }
    }

    /// Appends one landmark as a staging row in COPY's text format: id, canonical content JSON
    /// (``LandmarkJSONShape/content``), updated_ms, counter, node, deleted.
    /// - Throws: `PGError` for a NUL byte in a text (which SQLite allows and PostgreSQL cannot store).
    static func appendLandmark(_ s: Statement, to buffer: inout [UInt8]) throws {
        PGCopyText.appendInteger(s.int(LandmarkColumn.id), to: &buffer)
        buffer.append(UInt8(ascii: "\t"))
        let body = LandmarkJSON.bytes(LandmarkRow(statement: s), shape: .content)
        try body.withUnsafeBufferPointer { try PGCopyText.appendText($0, to: &buffer) }
        try appendStamp(s, updatedMs: LandmarkColumn.updatedMs, counter: .counter, node: .node, deleted: .deleted, to: &buffer)
    }

    /// Appends one position as a staging row: user_id, page, landmark_id, updated_ms, counter, node, deleted.
    /// - Throws: `PGError` for a NUL byte in a text.
    static func appendPosition(_ s: Statement, to buffer: inout [UInt8]) throws {
        try PGCopyText.appendText(s.textBytes(PositionColumn.userID), to: &buffer)
        buffer.append(UInt8(ascii: "\t"))
        PGCopyText.appendInteger(s.int(PositionColumn.page), to: &buffer)
        buffer.append(UInt8(ascii: "\t"))
        PGCopyText.appendInteger(s.optionalInt(PositionColumn.landmarkID), to: &buffer)
        try appendStamp(s, updatedMs: PositionColumn.updatedMs, counter: .counter, node: .node, deleted: .deleted, to: &buffer)
    }

    /// Appends `\t updated_ms \t counter \t node \t deleted \n`.
    private static func appendStamp<C: TableColumn>(
        _ s: Statement, updatedMs: C, counter: C, node: C, deleted: C,
        to buffer: inout [UInt8]
    ) throws {
        buffer.append(UInt8(ascii: "\t"))
        PGCopyText.appendInteger(s.int(updatedMs), to: &buffer)
        buffer.append(UInt8(ascii: "\t"))
        PGCopyText.appendInteger(s.int(counter), to: &buffer)
        buffer.append(UInt8(ascii: "\t"))
        try PGCopyText.appendText(s.textBytes(node), to: &buffer)
        buffer.append(UInt8(ascii: "\t"))
        buffer.append(s.bool(deleted) ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        buffer.append(UInt8(ascii: "\n"))
    }
}
