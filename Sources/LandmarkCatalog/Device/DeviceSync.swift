import Foundation

#if os(Linux)
    import Glibc
#endif

/// What a device's sync session (`LandmarkCatalogClient`, docs/protocol.md) keeps in the database between
/// runs.
///
/// It is one `sync_sources` row per server and user (kind `device`), whose cursor holds
///
/// - `pushed` — the push cursor: the change sequence number through which this device's own position
///   writes are acknowledged by the server. The outbox is the user's row when its `seq` is above it and
///   it still carries this database's node id (a row merged from the server carries another's, and the
///   server has it already);
/// - `positions`, `landmarks` — the server's opaque cursors (docs/protocol.md §3) of the last answers merged;
/// - `landmarksETag` — the validator of the last `/v1/landmarks` answer (§4);
/// - `resend` — the server forgot (an answer's cursor named another database than the one held,
///   docs/protocol.md §3): the user's row is pushed again whoever stamped it, until the server answers.
///
/// Each is written in the transaction that makes it true: a pull's cursor with the rows it merged, the
/// push cursor only once the server's answer is in (never before: a kill between the commit of a write and
/// its acknowledgement leaves the row pending, and it is sent again; the server's stamps make that harmless).
package struct DeviceSyncState: Sendable, Equatable {
    /// The push cursor (0: nothing acknowledged yet).
    package var pushed: Int64 = 0
    package var positionsCursor: String?
    package var landmarksCursor: String?
    package var landmarksETag: String?
    /// The server forgot what it was sent: the user's row is in the outbox whatever node stamped it.
    package var resend = false
    /// The last good exchange with the server (UTC, RFC 3339), from `sync_sources.last_success_at`.
    package var lastSuccess: String?

    package init() {}

    init(cursor: SourceCursor?, lastSuccess: String?) {
        pushed = cursor?["pushed"].flatMap { Int64($0) } ?? 0
        positionsCursor = cursor?["positions"]
        landmarksCursor = cursor?["landmarks"]
        landmarksETag = cursor?["landmarksETag"]
        resend = cursor?["resend"] == "1"
        self.lastSuccess = lastSuccess
    }

    var cursor: SourceCursor {
        var c = SourceCursor()
        c["pushed"] = String(pushed)
        c["positions"] = positionsCursor
        c["landmarks"] = landmarksCursor
        c["landmarksETag"] = landmarksETag
        if resend { c["resend"] = "1" }
        return c
    }
}

/// One row of the outbox: the JSON to POST (docs/snapshot-format.md §3) and the change sequence number to
/// acknowledge once the server has answered for it.
package struct PendingPosition: Sendable, Equatable {
    package var user: String
    package var seq: Int64
    /// The snapshot row, keys sorted.
    package var json: String
}

/// An app's in-process sync with `catalog serve` (LandmarkCatalogClient's `SyncSession`), on the store:
/// its state in `sync_sources`, its outbox, and the merge of each answer (docs/protocol.md §4).
package struct DeviceSync {
    /// The store the session syncs.
    package let store: CatalogStore

    package init(store: CatalogStore) { self.store = store }

    /// The `sync_sources` kind of a device session's row.
    package static let sourceKind = "device"

    /// The device state stored under `key` (an empty state when the session never ran).
    package func state(key: String) throws -> DeviceSyncState {
        try store.read {
            let row = try store.sourceTable.source(key)
            return DeviceSyncState(cursor: try store.sourceTable.cursor(key), lastSuccess: row?.lastSuccess)
        }
    }

    /// The outbox for `user` under `key`: the user's row when it was written here (this node's stamp) and
    /// is above the push cursor, or whatever stamped it while the server has forgotten (`resend`); empty
    /// otherwise.
    ///
    /// At most one row, since a user has one position row.
    /// - Throws: `CatalogError` 64 for a bad user id; database failures.
    package func pendingPositions(user: String, key: String) throws -> [PendingPosition] {
        let user = try UserID.normalize(user)
        return try store.read {
            let state = DeviceSyncState(cursor: try store.sourceTable.cursor(key), lastSuccess: nil)
            guard let (record, seq) = try store.positionTable.row(user: user) else { return [] }
            let node = try store.currentNode()
            guard state.resend || (seq > state.pushed && record.stamp.node == node) else { return [] }
            return [PendingPosition(user: user, seq: seq, json: record.json)]
        }
    }

    /// Records the server's answer for the outbox rows through `seq` (the push cursor only moves forward;
    /// a re-send is done) and the exchange as a success, in one transaction.
    package func acknowledgePositions(key: String, through seq: Int64) throws {
        try store.write {
            var state = DeviceSyncState(cursor: try store.sourceTable.cursor(key), lastSuccess: nil)
            state.pushed = max(state.pushed, seq)
            state.resend = false
            try store.sourceTable.noteSuccess(
                key, kind: Self.sourceKind, cursor: state.cursor, outcome: Outcome.pushed.rawValue, at: store.wallClock.nowMilliseconds())
        }
    }

    /// What merging one answer did.
    package struct MergedAnswer: Sendable {
        /// The answer's cursor, `more`, and row count (docs/protocol.md §4).
        package var page: AnswerPage
        /// What the merge did to the rows.
        package var counts: MergeCounts
        /// The answer's cursor named another database than the one held: the server forgot, and the
        /// user's row is in the outbox again (docs/protocol.md §3).
        package var serverForgot: Bool
    }

    /// Merges one answer of `GET /v1/positions` or `/v1/landmarks` (a snapshot document with `cursor` and
    /// `more`, docs/protocol.md §4), decoded once as it is merged by last-writer-wins, and stores its cursor
    /// in the same transaction: the rows and the cursor that names them commit together or not at all.
    ///
    /// The cursor rules are applied here for every answer: a page that says `more` without moving its
    /// cursor is refused, and a positions cursor naming another database than the one held puts the
    /// user's row back in the outbox (`resend`). An answer with no rows that moves nothing writes nothing.
    /// - Parameters:
    ///   - body: the answer's bytes.
    ///   - route: `.positions` or `.landmarks`.
    ///   - key: the `sync_sources` key of this server and user.
    ///   - server: the server's name in messages.
    ///   - after: the cursor the request was sent with.
    ///   - etag: a landmarks answer's `ETag`, stored with its cursor.
    ///   - maxDriftMilliseconds: rows stamped further ahead of this device's clock are quarantined.
    ///   - diagnostics: receives the warnings found in the body.
    /// - Returns: the page, the merge's counts, and whether the server forgot.
    /// - Throws: `CatalogError` 65/76 for a body that is not a valid answer (nothing is written); database
    ///   failures.
    package func mergeAnswer(
        _ body: [UInt8], route: DeviceRoute, key: String, server: String, after: String?, etag: String? = nil,
        maxDriftMilliseconds: Int64 = 300_000, diagnostics: @escaping (Diagnostic) -> Void = { _ in }
    ) throws -> MergedAnswer {
        let feed = SnapshotFeed(bytes: body, name: "\(server)\(route.path)")
        return try store.transaction {
            let now = store.wallClock.nowMilliseconds()
            var merger = try RowMerger(store: store, source: key, quarantineAfter: now + maxDriftMilliseconds, diagnostics: diagnostics)
            try feed.merge(into: &merger)
            guard let cursor = feed.pageCursor else {
                throw CatalogError(.dataInvalid, "the server \(server) answered \(route.path) without a cursor (docs/protocol.md §4)")
            }
            let page = AnswerPage(cursor: cursor, more: feed.pageMore, rows: merger.counts.seen)
            try page.check(after: after, server: server)
            if merger.maxSeen.wall > 0 || merger.maxSeen.counter > 0 {
                try store.observeRemoteStamp(wall: merger.maxSeen.wall, counter: merger.maxSeen.counter)
            }
            var state = DeviceSyncState(cursor: try store.sourceTable.cursor(key), lastSuccess: nil)
            let before = state
            var forgot = false
            switch route {
            case .positions:
                forgot = ServerCursor.serverForgot(held: state.positionsCursor, answered: cursor)
                if forgot { state.resend = true }
                state.positionsCursor = cursor
            case .landmarks:
                state.landmarksCursor = cursor
                state.landmarksETag = etag
            case .healthz, .readyz, .users, .repair:
                break
            }
            let merged = MergedAnswer(page: page, counts: merger.counts, serverForgot: forgot)
            guard page.rows > 0 || state != before else { return .rollback(merged) }
            try store.sourceTable.noteSuccess(key, kind: Self.sourceKind, cursor: state.cursor, outcome: Outcome.merged.rawValue, at: now)
            return .commit(merged)
        }
    }

    /// A device signing its user out and erasing what it held of them.
    ///
    /// Removes the user's position row (no tombstone: nothing is sent) and this session's state under `key`
    /// (its cursors and outbox), in one transaction. The landmarks stay: they are the catalog's, not the
    /// user's.
    package func forget(user: String, key: String) throws {
        let user = try UserID.normalize(user)
        try store.write {
            try store.positionTable.forget(user: user)
            try store.sourceTable.delete(key)
        }
    }

    /// Removes the rows the server refused as erased that are unchanged since they were sent.
    ///
    /// docs/erasure.md §1: the account they belonged to is gone, so this copy forgets them too (no tombstone).
    /// A row written since is a new user's and stays.
    package func dropErased(_ rows: [PendingPosition]) throws {
        try store.write {
            try store.metaTable.raiseChangeFloor(to: try store.lastChangeSequence())
            for row in rows { _ = try store.positionTable.forget(user: row.user, ifSeq: row.seq) }
        }
    }

    /// The last outcome a session's row in `sync_sources` records: the server answered for the outbox,
    /// or an answer was merged (the raw value of ``SourceReport/Outcome/merged``).
    enum Outcome: String {
        case pushed, merged
    }
}
