import Foundation

/// Applies rows from any source — snapshot files, logs, the hub — to the store, inside the caller's
/// write transaction, by ``LastWriterWins``.
///
/// Rows stamped beyond the drift allowance go to the quarantine; ties are recorded in the conflicts
/// table and reported once; every applied row takes the next change sequence number; afterwards the
/// caller moves the clock past ``maxSeen``.
///
/// Each row costs a point read (to decide, so stale re-deliveries write nothing) and, when it wins, an
/// unguarded upsert (https://sqlite.org/lang_upsert.html). Position batches are applied in user-id
/// order, so B-tree pages are visited in key order.
package struct RowMerger {
    package let store: CatalogStore
    /// The source's display name (no password), as recorded with quarantined rows and conflicts.
    package let source: String
    /// Rows stamped later than this instant (ms since the epoch, UTC) are quarantined.
    package let quarantineAfter: Int64
    let diagnostics: (Diagnostic) -> Void
    /// Called by a feed after each batch: rows seen so far, and the bytes read of the file it reads (of its size, when known).
    package var progress: (_ rows: Int, _ bytes: Int64, _ totalBytes: Int64?) -> Void = { _, _, _ in }
    package var counts = MergeCounts()
    /// Called with each applied row's stamp (wall ms), for the follower's write-to-visible lag.
    var appliedStamp: ((Int64) -> Void)?
    /// Errors the decoder reported (the source then fails and nothing is kept).
    var errors = 0
    let maxErrors = 20
    /// The largest (wall, counter) seen and not quarantined: the clock moves past it.
    var maxSeen = HybridLogicalClock(wall: 0, counter: 0)
    /// The change sequence number the next applied row takes.
    package private(set) var nextSeq: Int64
    /// Change sequence numbers this merger used: `firstSeq..<nextSeq`.
    package let firstSeq: Int64
    /// The largest landmark id stored when the merge began, and the largest id this merge has met:
    /// a row with a greater id than both cannot be stored yet, so it is inserted without a point read
    /// (snapshots list landmarks in id order, so a base merged into an empty database never reads).
    private let storedMaxID: Int64?
    private var seenMaxID = Int64.min
    /// This database's node id, and whether a source published under it was reported.
    private let localNode: String
    private var clashReported = false
    /// What ``failure()`` says of the source after its name when rows failed to decode: its kind's words
    /// (`SourceKind.invalidRows`).
    package var invalidRows = "is not a valid snapshot"
    /// The kinds of rows the source may write (docs/trust.md §4); the others are counted, reported and skipped.
    package var allow = WriteGrant.all
    /// This node's collection horizon (ms since the epoch, UTC; 0 before any): `ErasureRule`.
    let horizonMilliseconds: Int64
    /// Whether any erasure record is stored: rows are checked against them only then.
    private var anyErasure: Bool
    /// Called with each refused row's user (positions) and why, for answers that name each row's outcome.
    package var refused: ((_ user: String, _ stamp: HLCStamp, _ why: ErasureRule.Refusal) -> Void)?
    /// The kept digest's move for the landmark batch being applied (docs/repair.md §1).
    private var landmarkDigest = LaneSums()

    init(store: CatalogStore, source: String, quarantineAfter: Int64, diagnostics: @escaping (Diagnostic) -> Void) throws {
        self.store = store
        self.source = source
        self.quarantineAfter = quarantineAfter
        self.diagnostics = diagnostics
        nextSeq = try store.lastChangeSequence() + 1
        firstSeq = nextSeq
        storedMaxID = try store.landmarkTable.maxID()
        localNode = try store.currentNode()
        horizonMilliseconds = try store.metaTable.collectionHorizon()
        anyErasure = try store.erasureTable.count() > 0
    }

    /// Applies a decoded batch: its diagnostics, then its landmarks, then its positions.
    package mutating func apply(_ batch: RowBatch) throws {
        if !clashReported, let node = batch.sourceNode, node == localNode {
            clashReported = true
            diagnostics(
                Diagnostic(
                    severity: .warning,
                    message:
                        "this source was published under node id \(node), this database's own: if it comes from another database (a copy of this one?), the two share a node id and their writes can tie; give one of them its own id with 'catalog init --node ID'",
                    file: source, kind: "node-clash", details: [.init("node", node)]))
        }
        for (_, d) in batch.diagnostics where d.severity == .error {
            errors += 1
            if errors <= maxErrors { diagnostics(d) }
        }
        guard errors == 0 else { return }  // the source will fail and roll back: skip the writes
        if !batch.landmarks.isEmpty { try applyLandmarks(batch) }
        if !batch.erasures.isEmpty {
            try applyErasures(batch.erasures)
            batch.erasures.removeAll()
        }
        if !batch.positions.isEmpty {
            PositionRecord.sortForMerge(&batch.positions)
            try applyPositions(batch.positions)
            // Its rows are done: the storage is kept for the reader's next batch (BatchQueue.recycle), or
            // freed with the batch.
            batch.positions.removeAll(keepingCapacity: true)
        }
    }

    /// The error that fails the source when the decoder found any.
    package func failure() -> CatalogError? {
        guard errors > 0 else { return nil }
        return CatalogError(
            .dataInvalid,
            "\(source) \(invalidRows) (\(errors == 1 ? "1 error" : errors > maxErrors ? "more than \(maxErrors) errors" : "\(errors) errors")); nothing was merged from it"
        )
    }

    // MARK: Quarantine and conflicts

    /// A position's content in the tie rule's byte order: page, then landmark (none lowest), each as a
    /// big-endian 64-bit number with its sign bit flipped, so comparing the bytes compares the numbers as
    /// `PositionRecord.compareContent(page:landmark:)` does.
    static func positionTieContent(page: Int64, landmark: Int64?) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for value in [page, landmark ?? Int64.min] {
            let ordered = UInt64(bitPattern: value) ^ (1 << 63)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: ordered >> UInt64(shift))) }
        }
        return bytes
    }

    private mutating func note(_ stamp: HLCStamp) {
        if (stamp.wallMilliseconds, stamp.counter) > (maxSeen.wall, maxSeen.counter) {
            maxSeen = HybridLogicalClock(wall: stamp.wallMilliseconds, counter: stamp.counter)
        }
    }

    /// Quarantines a row stamped beyond the drift limit.
    ///
    /// Of the rows delivered for one key and stamp, the quarantine keeps the one the tie rule prefers
    /// (``LastWriterWins/decide(incoming:incomingDeleted:stored:compareContent:)``, as the hub's
    /// quarantine does): a log or a hub delivers each row once, so keeping the first one received would
    /// leave this node on the tie's loser for good.
    /// - Parameters:
    ///   - stamp: the row's stamp.
    ///   - kind: what the row is (`landmark` or `position`), as the quarantine records it.
    ///   - key: the row's key (a landmark's id, a position's user).
    ///   - deleted: whether the row is a tombstone.
    ///   - tieContent: the row's content in the tie rule's byte order (``Self/positionTieContent(page:landmark:)``
    ///     for a position, the canonical content JSON for a landmark).
    ///   - rowJSON: the row as the quarantine stores it.
    /// - Returns: true when the row was quarantined (it is then not merged).
    /// - Throws: `CatalogError` when the quarantine cannot be written.
    private mutating func quarantine(
        _ stamp: HLCStamp, kind: String, key: String, deleted: Bool, tieContent: () -> [UInt8],
        rowJSON: () -> String
    ) throws -> Bool {
        guard stamp.wallMilliseconds > quarantineAfter else {
            note(stamp)
            return false
        }
        counts.quarantined += 1
        let ahead = Double(stamp.wallMilliseconds - quarantineAfter) / 1000
        let at = Timestamp.format(milliseconds: stamp.wallMilliseconds)
        let now = store.wallClock.nowMilliseconds()
        let reason = "stamped \(at), beyond the allowed clock drift by \(ahead) s"
        let identity = QuarantineIdentity(kind: kind, key: key, stamp: stamp)
        let content = tieContent()
        // The same row delivered again (every cron run, say) is kept once and reported once; another row of
        // the same key and stamp replaces it only when the tie rule prefers it.
        if let kept = try store.quarantineTable.held(identity) {
            let decision = LastWriterWins.decide(incoming: stamp, incomingDeleted: deleted, stored: (stamp, kept.deleted)) {
                LastWriterWins.order(bytes: content, kept.tieContent)
            }
            if decision == .tieWon {
                try store.quarantineTable.replace(
                    id: kept.id, source: source, at: now, rowJSON: rowJSON(), reason: reason, deleted: deleted, tieContent: content)
            }
            return true
        }
        let row = try store.quarantineTable.insert(
            identity, source: source, at: now, rowJSON: rowJSON(), reason: reason, deleted: deleted, tieContent: content)
        let dropped = try store.quarantineTable.prune(kind: kind, key: key, keeping: Self.quarantinedPerKey)
        if dropped > 0 {
            diagnostics(
                Diagnostic(
                    severity: .warning,
                    message:
                        "dropped \(dropped) older held \(dropped == 1 ? "row" : "rows") of \(kind) \(key): at most \(Self.quarantinedPerKey) are held per key, the greatest stamps",
                    file: source, id: kind == "landmark" ? Int64(key) : nil, kind: "quarantine-dropped",
                    details: Self.keyDetails(kind: kind, key: key) + [.init("dropped", String(dropped))]))
        }
        diagnostics(
            Diagnostic(
                severity: .warning,
                message: "quarantined \(kind) \(key) as row \(row): stamped \(at), beyond the allowed clock drift; not applied",
                file: source, id: kind == "landmark" ? Int64(key) : nil, kind: "quarantined",
                details: Self.keyDetails(kind: kind, key: key) + [.init("stamp", stamp.description), .init("row", String(row))]))
        return true
    }

    /// Held rows kept per landmark or user: the greatest stamps (docs/limits.md).
    static let quarantinedPerKey = 8

    /// Records a tie in the conflicts table; reports it only the first time it is settled this way.
    private func recordTie(
        kind: String, key: String, stamp: HLCStamp, decision: LWWDecision, incoming: () -> String, stored: () -> String,
        position: SourcePosition?, index: Int?, id: Int64?
    ) throws {
        let winner = decision == .tieWon ? incoming() : stored()
        let loser = decision == .tieWon ? stored() : incoming()
        let tie = ConflictRecord(
            id: 0, detectedAt: "", source: source, kind: kind, key: key, stamp: stamp, winnerJSON: winner, loserJSON: loser,
            rule: LastWriterWins.tieRule)
        guard try store.conflictTable.insert(tie, at: store.wallClock.nowMilliseconds()) else { return }
        diagnostics(
            Diagnostic(
                severity: .warning,
                message: "tie on \(kind) \(key) at \(stamp): \(LastWriterWins.tieRule); kept the \(decision == .tieWon ? "incoming" : "stored") row",
                file: source, position: position, index: index, id: id, kind: "tie",
                details: Self.keyDetails(kind: kind, key: key) + [.init("stamp", stamp.description)]))
    }

    /// The structured field naming the row in machine-readable logs: `user` for a position (a landmark's
    /// `id` is the diagnostic's own field).
    private static func keyDetails(kind: String, key: String) -> [Diagnostic.Detail] {
        kind == "position" ? [.init("user", key)] : []
    }

    /// The stamp stored for the row `key` selects (nil when there is none); the statement is rewound.
    private static func storedStamp<C: TableColumn>(
        _ key: SQLValue, select: Statement, _ wall: C, _ counter: C, _ node: C
    ) throws -> HLCStamp? {
        try select.bind(key, at: 1)
        defer { select.rewind() }
        guard try select.step() else { return nil }
        return HLCStamp(wallMilliseconds: select.int(wall), counter: select.int(counter), node: select.text(node) ?? "")
    }

    /// Counts and reports a row outside the source's grant (bounded by the reporter, like quarantined rows).
    private mutating func notAllowed(kind: String, key: String, id: Int64?) {
        counts.notAllowed += 1
        diagnostics(
            Diagnostic(
                severity: .warning,
                message: "not applied: \(kind) \(key) — this source may write \(allow.rawValue) only (remote add --allow)",
                file: source, id: id, kind: "not-allowed", details: Self.keyDetails(kind: kind, key: key)))
    }

    // MARK: Positions

    private mutating func applyPositions(_ rows: [PositionRecord]) throws {
        // The kept digest's move (docs/repair.md §1): hashes written minus hashes replaced.
        var digest = LaneSums()
        try store.positionTable.withMergeStatements { select, upsert in
            for row in rows {
                counts.positionsSeen += 1
                if !allow.allowsPositions {
                    // A row this node already holds with the same stamp (a peer echoing it back) writes
                    // nothing: stale, as it would be with the grant, not a violation.
                    if try Self.storedStamp(.text(row.user), select: select, PositionColumn.updatedMs, PositionColumn.counter, PositionColumn.node)
                        == row.stamp
                    {
                        counts.stale += 1
                    } else {
                        notAllowed(kind: "position", key: row.user, id: nil)
                    }
                    continue
                }
                if try quarantine(
                    row.stamp, kind: "position", key: row.user, deleted: row.deleted,
                    tieContent: { Self.positionTieContent(page: row.page, landmark: row.landmark) }, rowJSON: { row.json })
                {
                    continue
                }
                try select.bind(row.user, at: 1)
                var stored: (stamp: HLCStamp, deleted: Bool)?
                var storedPage: Int64 = 0
                var storedLandmark: Int64?
                var storedHash: RowHash?
                if try select.step() {
                    storedHash = PositionsTable.storedHash(select)
                    stored = (
                        HLCStamp(
                            wallMilliseconds: select.int(PositionColumn.updatedMs), counter: select.int(PositionColumn.counter),
                            node: select.text(PositionColumn.node) ?? ""),
                        select.bool(PositionColumn.deleted)
                    )
                    storedPage = select.int(PositionColumn.page)
                    storedLandmark = select.optionalInt(PositionColumn.landmarkID)
                }
                select.rewind()
                if let why = ErasureRule.refusal(
                    row: row.stamp, erasure: anyErasure ? try store.erasureTable.stamp(userHash: ErasureRule.userHash(row.user)) : nil,
                    hasStoredRow: stored != nil, horizonMilliseconds: horizonMilliseconds)
                {
                    refuse(why, user: row.user, stamp: row.stamp)
                    continue
                }
                let decision = LastWriterWins.decide(incoming: row.stamp, incomingDeleted: row.deleted, stored: stored) {
                    row.compareContent(page: storedPage, landmark: storedLandmark)
                }
                if decision.isTie, let stored {
                    counts.ties += 1
                    let storedRow = PositionRecord(
                        user: row.user, page: storedPage, landmark: storedLandmark, stamp: stored.stamp,
                        deleted: stored.deleted)
                    try recordTie(
                        kind: "position", key: row.user, stamp: row.stamp, decision: decision, incoming: { row.json },
                        stored: { storedRow.json }, position: row.position, index: row.index, id: nil)
                }
                guard decision.applies else {
                    counts.stale += 1
                    continue
                }
                digest.add(try writePosition(row, upsert: upsert))
                if let storedHash { digest.subtract(storedHash) }
                nextSeq += 1
                counts.positionsApplied += 1
                appliedStamp?(row.stamp.wallMilliseconds)
            }
        }
        try store.digestTotals.add("positions", digest)
    }

    /// Binds every column of `row`, the next change sequence number and the row's hash to the position
    /// upsert, and runs it.
    /// - Returns: the row hash written.
    private func writePosition(_ row: PositionRecord, upsert: Statement) throws -> RowHash {
        try upsert.bind(row.user, to: PositionColumn.userID)
        try upsert.bind(row.page, to: PositionColumn.page)
        if let landmark = row.landmark {
            try upsert.bind(landmark, to: PositionColumn.landmarkID)
        } else {
            try upsert.bindNull(to: PositionColumn.landmarkID)
        }
        try upsert.bind(row.stamp.wallMilliseconds, to: PositionColumn.updatedMs)
        try upsert.bind(row.stamp.counter, to: PositionColumn.counter)
        try upsert.bind(row.stamp.node, to: PositionColumn.node)
        try upsert.bind(row.deleted, to: PositionColumn.deleted)
        try upsert.bind(nextSeq, to: PositionColumn.seq)
        let hash = row.rowHash
        try RowHashColumns.bind(hash, to: upsert, at: PositionsTable.mergeHashParameter)
        try upsert.run()
        return hash
    }

    // MARK: Erasures

    /// Counts a refused row (erased or expired: outcomes, not errors; docs/erasure.md).
    private mutating func refuse(_ why: ErasureRule.Refusal, user: String?, stamp: HLCStamp) {
        switch why {
        case .erased: counts.erased += 1
        case .expired: counts.expired += 1
        }
        if let user { refused?(user, stamp, why) }
    }

    /// Applies erasure records by `ErasureRule`: each one greater than the user's stored erasure is stored
    /// with the next change sequence number, and then every row of an erased user stamped at or before it
    /// is removed, with what the node recorded about the user (`UserTraces`).
    ///
    /// The records name users by hash, so the users' rows are found by hashing the stored user ids: one
    /// pass over the positions per batch that carries erasures.
    private mutating func applyErasures(_ records: [ErasureRecord]) throws {
        var applied: [String: HLCStamp] = [:]
        for record in records {
            counts.erasuresSeen += 1
            if !allow.allowsPositions {
                if try store.erasureTable.stamp(userHash: record.userHash) == record.stamp {
                    counts.stale += 1
                } else {
                    notAllowed(kind: "erasure", key: record.userHash, id: nil)
                }
                continue
            }
            if record.stamp.wallMilliseconds > quarantineAfter {
                // Applied all the same (docs/erasure.md §1): an erasure is not delayed, and every path — the hub
                // takes it too — must agree. Its stamp is not observed, so this node's clock does not jump ahead.
                diagnostics(
                    Diagnostic(
                        severity: .warning,
                        message:
                            "erasure \(record.userHash) stamped \(record.stamp), beyond the allowed clock drift: applied; rows of the user stamped before it are refused until then",
                        file: source, kind: "erasure-ahead"))
            } else {
                note(record.stamp)
            }
            guard ErasureRule.replaces(record.stamp, stored: try store.erasureTable.stamp(userHash: record.userHash)) else {
                counts.stale += 1
                continue
            }
            try store.erasureTable.upsert(record, seq: nextSeq)
            nextSeq += 1
            counts.erasuresApplied += 1
            anyErasure = true
            applied[record.userHash] = record.stamp
            appliedStamp?(record.stamp.wallMilliseconds)
        }
        guard !applied.isEmpty else { return }
        // A record names its user by hash: the ids are found among the rows, and among the held rows and
        // ties of users this node holds no row of (docs/erasure.md §3).
        let named: (String) -> Bool = { applied[ErasureRule.userHash($0)] != nil }
        let users = Set(
            try store.positionTable.users(matching: named) + store.quarantineTable.positionUsers(matching: named)
                + store.conflictTable.positionUsers(matching: named))
        for user in users.sorted() {
            guard let stamp = applied[ErasureRule.userHash(user)] else { continue }
            try UserTraces(store).forget(user: user, stampedAtOrBefore: stamp)
        }
    }

    // MARK: Landmarks

    private mutating func applyLandmarks(_ batch: RowBatch) throws {
        landmarkDigest = LaneSums()
        try store.landmarkTable.withMergeStatements { select, upsert in
            try batch.bytes.withUnsafeBufferPointer { bytes in
                for record in batch.landmarks {
                    let view = RawLandmarkView(record: record, bytes: bytes)
                    try applyLandmark(view, select: select, upsert: upsert)
                }
            }
        }
        try store.digestTotals.add("landmarks", landmarkDigest)
    }

    private mutating func applyLandmark(_ view: RawLandmarkView, select: Statement, upsert: Statement) throws {
        counts.landmarksSeen += 1
        let record = view.record
        if !allow.allowsLandmarks {
            // As for positions: this node's own row echoed back with its stamp is stale, not a violation.
            if try Self.storedStamp(.integer(record.id), select: select, LandmarkColumn.updatedMs, LandmarkColumn.counter, LandmarkColumn.node)
                == view.stamp
            {
                counts.stale += 1
            } else {
                notAllowed(kind: "landmark", key: String(record.id), id: record.id)
            }
            return
        }
        let stamp = view.stamp
        if try quarantine(
            stamp, kind: "landmark", key: String(record.id), deleted: record.deleted,
            tieContent: { LandmarkJSON.bytes(view, shape: .content) },
            rowJSON: {
                String(decoding: LandmarkJSON.bytes(view, shape: .snapshot), as: UTF8.self)
            })
        {
            return
        }
        let unseen = record.id > seenMaxID && (storedMaxID.map { record.id > $0 } ?? true)
        seenMaxID = max(seenMaxID, record.id)
        if unseen, ErasureRule.refusal(row: stamp, erasure: nil, hasStoredRow: false, horizonMilliseconds: horizonMilliseconds) != nil {
            refuse(.expired, user: nil, stamp: stamp)
            return
        }
        if unseen { return try writeLandmark(view, upsert: upsert, replacing: nil) }
        try select.bind(record.id, at: 1)
        defer { select.rewind() }
        var stored: (stamp: HLCStamp, deleted: Bool)?
        var storedHash: RowHash?
        if try select.step() {
            stored = (
                HLCStamp(
                    wallMilliseconds: select.int(LandmarkColumn.updatedMs), counter: select.int(LandmarkColumn.counter),
                    node: select.text(LandmarkColumn.node) ?? ""),
                select.bool(LandmarkColumn.deleted)
            )
            storedHash = LandmarksTable.storedHash(select)
        }
        if let why = ErasureRule.refusal(row: stamp, erasure: nil, hasStoredRow: stored != nil, horizonMilliseconds: horizonMilliseconds) {
            refuse(why, user: nil, stamp: stamp)
            return
        }
        let row = LandmarkRow(statement: select)
        let decision = LastWriterWins.decide(incoming: stamp, incomingDeleted: record.deleted, stored: stored) {
            // A repeated delivery is recognised on the bytes, building no JSON; a real tie compares the
            // canonical content, the same bytes on every node and on the hub.
            if LandmarkJSON.sameContent(view, row) { return .same }
            return LastWriterWins.order(bytes: LandmarkJSON.bytes(view, shape: .content), LandmarkJSON.bytes(row, shape: .content))
        }
        if decision.isTie, let stored {
            counts.ties += 1
            try recordTie(
                kind: "landmark", key: String(record.id), stamp: stamp, decision: decision,
                incoming: { String(decoding: LandmarkJSON.bytes(view, shape: .snapshot), as: UTF8.self) },
                stored: {
                    _ = stored
                    return String(decoding: LandmarkJSON.bytes(row, shape: .snapshot), as: UTF8.self)
                },
                position: record.position, index: record.index, id: record.id)
        }
        guard decision.applies else {
            counts.stale += 1
            return
        }
        select.rewind()
        try writeLandmark(view, upsert: upsert, replacing: storedHash)
    }

    /// Writes `view` with the next change sequence number, moves the kept digest from `replacing` (the
    /// stored row's hash, nil for a new row) to the written row's, and counts it applied.
    private mutating func writeLandmark(_ view: RawLandmarkView, upsert: Statement, replacing storedHash: RowHash?) throws {
        landmarkDigest.add(try bindLandmark(view, seq: nextSeq, to: upsert))
        if let storedHash { landmarkDigest.subtract(storedHash) }
        try upsert.run()
        nextSeq += 1
        counts.landmarksApplied += 1
        appliedStamp?(view.stamp.wallMilliseconds)
    }

    /// Binds every column of `view` (a whole snapshot row) and its row hash to the landmark upsert.
    /// - Returns: the row hash.
    private func bindLandmark(_ view: RawLandmarkView, seq: Int64, to upsert: Statement) throws -> RowHash {
        let record = view.record
        try view.bindContent(to: upsert)
        try upsert.bind(record.extraJSON, to: LandmarkColumn.extra)
        try upsert.bind(record.updatedMs, to: LandmarkColumn.updatedMs)
        try upsert.bind(record.counter, to: LandmarkColumn.counter)
        try upsert.bindStatic(view.slot(TextRanges.nodeSlot), to: LandmarkColumn.node)
        try upsert.bind(record.deleted, to: LandmarkColumn.deleted)
        try upsert.bind(seq, to: LandmarkColumn.seq)
        let hash = RowHash(landmark: view)
        try RowHashColumns.bind(hash, to: upsert, at: LandmarksTable.mergeHashParameter)
        return hash
    }
}
