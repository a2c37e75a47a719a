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
/// - `landmarksETag` — the validator of the last `/v1/landmarks` answer (§4).
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
    /// The last good exchange with the server (UTC, RFC 3339), from `sync_sources.last_success_at`.
    package var lastSuccess: String?

    package init() {}

    init(cursor: SourceCursor?, lastSuccess: String?) {
        pushed = cursor?["pushed"].flatMap { Int64($0) } ?? 0
        positionsCursor = cursor?["positions"]
        landmarksCursor = cursor?["landmarks"]
        landmarksETag = cursor?["landmarksETag"]
        self.lastSuccess = lastSuccess
    }

    var cursor: SourceCursor {
        var c = SourceCursor()
        c["pushed"] = String(pushed)
        c["positions"] = positionsCursor
        c["landmarks"] = landmarksCursor
        c["landmarksETag"] = landmarksETag
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
    /// is above the push cursor; empty otherwise.
    ///
    /// At most one row, since a user has one position row.
    /// - Throws: `CatalogError` 64 for a bad user id; database failures.
    package func pendingPositions(user: String, key: String) throws -> [PendingPosition] {
        let user = try UserID.normalize(user)
        return try store.read {
            let pushed = DeviceSyncState(cursor: try store.sourceTable.cursor(key), lastSuccess: nil).pushed
            guard let (record, seq) = try store.positionTable.row(user: user), seq > pushed, record.stamp.node == (try store.currentNode()) else {
                return []
            }
            return [PendingPosition(user: user, seq: seq, json: record.json)]
        }
    }

    /// Records the server's answer for the outbox rows through `seq` (the push cursor only moves forward)
    /// and the exchange as a success, in one transaction.
    package func acknowledgePositions(key: String, through seq: Int64) throws {
        try store.write {
            var state = DeviceSyncState(cursor: try store.sourceTable.cursor(key), lastSuccess: nil)
            state.pushed = max(state.pushed, seq)
            try store.sourceTable.noteSuccess(
                key, kind: Self.sourceKind, cursor: state.cursor, outcome: Outcome.pushed.rawValue, at: store.wallClock.nowMilliseconds())
        }
    }

    /// Merges the rows of one answer of `GET /v1/positions` or `/v1/landmarks` (a snapshot document,
    /// docs/protocol.md §4) by last-writer-wins and stores the state `update` makes, in one transaction:
    /// the rows and the cursor that names them commit together or not at all.
    /// - Parameters:
    ///   - body: the answer's bytes; `nil` stores the state alone (a 304, an answer with no rows).
    ///   - key: the `sync_sources` key of this server and user.
    ///   - maxDriftMilliseconds: rows stamped further ahead of this device's clock are quarantined.
    ///   - diagnostics: receives the warnings found in the body.
    ///   - update: makes the state to store from the stored one.
    /// - Returns: what merging did.
    /// - Throws: `CatalogError` 65/76 for a body that is not a valid snapshot (nothing is written), 74/73
    ///   when the spool file cannot be made; database failures.
    @discardableResult
    package func mergeAnswer(
        _ body: [UInt8]?, key: String, maxDriftMilliseconds: Int64 = 300_000,
        diagnostics: @escaping (Diagnostic) -> Void = { _ in }, update: (inout DeviceSyncState) -> Void
    ) throws -> MergeCounts {
        var feed: SnapshotFeed?
        if let body {
            let fd = try Spool.makeAnonymousFile(in: Self.spoolDirectory)
            let code = body.withUnsafeBytes { Spool.writeAll(fd, $0) }
            guard code == 0 else {
                close(fd)
                throw Spool.error(code, "cannot spool the server's answer", at: key)
            }
            feed = SnapshotFeed(fd: fd, name: key, owned: true)
        }
        return try store.transaction {
            let now = store.wallClock.nowMilliseconds()
            var counts = MergeCounts()
            if let feed {
                var merger = try RowMerger(store: store, source: key, quarantineAfter: now + maxDriftMilliseconds, diagnostics: diagnostics)
                try feed.merge(into: &merger)
                if merger.maxSeen.wall > 0 || merger.maxSeen.counter > 0 {
                    try store.observeRemoteStamp(wall: merger.maxSeen.wall, counter: merger.maxSeen.counter)
                }
                counts = merger.counts
            }
            var state = DeviceSyncState(cursor: try store.sourceTable.cursor(key), lastSuccess: nil)
            update(&state)
            try store.sourceTable.noteSuccess(key, kind: Self.sourceKind, cursor: state.cursor, outcome: Outcome.merged.rawValue, at: now)
            return .commit(counts)
        }
    }

    /// The last outcome a session's row in `sync_sources` records: the server answered for the outbox,
    /// or an answer was merged (the raw value of ``SourceReport/Outcome/merged``).
    enum Outcome: String {
        case pushed, merged
    }

    /// Where answers are spooled before they are merged: the system's temporary directory.
    static var spoolDirectory: String {
        let directory = NSTemporaryDirectory()
        return directory.isEmpty ? "/tmp" : directory
    }
}
