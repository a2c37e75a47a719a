import Foundation
import LandmarkCatalog

/// The hub's changes since the last pull, merged inside the engine's SQLite transaction (docs/hub.md §7: each
/// pull is one SQLite transaction): every landmark and position numbered after the pull cursor, read from
/// ONE PostgreSQL snapshot (a `REPEATABLE READ, READ ONLY` transaction; PostgreSQL "Transaction
/// Isolation") through server-side cursors in bounded batches, decoded into ``RowBatch``es and applied
/// by the ``RowMerger`` with the same last-writer-wins rule, tie rule, tombstones and quarantine as any
/// other source.
///
/// Memory: two `FETCH` results and their batches at a time (one being read, one being merged) — landmarks
/// of about 4 MiB of bodies, at most 2,000; or 25,000 positions (~3 MB) — whatever the number of rows.
final class HubPullFeed: ChangeFeed {
    /// Landmarks per `FETCH` at most (bodies are usually a few KiB, but nothing bounds one): the first
    /// `FETCH` asks for ``firstLandmarkBatch``, each next one for as many as held about
    /// ``landmarkBatchBytes`` in the one before.
    static let landmarkBatch = 2_000
    static let firstLandmarkBatch = 200
    static let landmarkBatchBytes = 4 << 20
    /// Positions per `FETCH` (the merger sorts each batch by user id before applying it).
    static let positionBatch = 25_000
    /// At most this many quarantined keys are delivered again per pull.
    static let redeliveryLimit = 10_000

    let source: HubSource
    let hub: HubConnection
    /// The pull cursor: hub sequence numbers at or below it were read (or pushed by us) before.
    let since: Int64
    /// This sync's own push: the hub numbers its rows took (skipped: we have those rows) and the local
    /// change sequence number it covered.
    let push: HubPushReport?
    let pushThrough: Int64
    let dryRun: Bool

    init(source: HubSource, hub: HubConnection, since: Int64, push: HubPushReport?, pushThrough: Int64, dryRun: Bool) {
        self.source = source
        self.hub = hub
        self.since = since
        self.push = push
        self.pushThrough = pushThrough
        self.dryRun = dryRun
    }

    /// Reads the hub's erasures in the pull's range (docs/erasure.md: few, one statement) and merges them;
    /// the merger deletes the users' older rows.
    /// - Returns: the largest hub number among them (0 for none).
    /// - Throws: what the hub or the merger throws.
    private func mergeErasures(_ range: [PGValue?], into merger: inout RowMerger) throws -> Int64 {
        let erasures = try hub.pg.execute(sql: HubSQL.pullErasures, range, timeout: hub.limits.bulk)
        guard erasures.rowCount > 0 else { return 0 }
        var through: Int64 = 0
        let batch = RowBatch(reserving: false)
        for row in 0..<erasures.rowCount {
            guard let hash = erasures.text(row, 0), let stamp = try Self.stamp(erasures, row: row, updatedMs: 1, counter: 2, node: 3)
            else { continue }
            batch.erasures.append(ErasureRecord(userHash: hash, stamp: stamp))
            through = max(through, try erasures.int64(row, 4) ?? 0)
        }
        try merger.apply(batch)
        return through
    }

    /// Reads the hub's changes and merges them; sets the source's next cursor: the pull cursor moves to
    /// the largest hub number read (or taken by our push), and — when nothing changed locally between
    /// the push and this pull — the push cursor moves past the local numbers the merged rows took, so
    /// they are not pushed back (echo suppression).
    ///
    /// Rows our push saw refused as expired leave this copy (docs/erasure.md §7).
    /// - Throws: `CatalogError` — 69 when the hub is unreachable or times out, 65 for a row the hub holds
    ///   that is not valid, 70 otherwise; nothing is kept (the engine rolls the transaction back).
    func merge(into merger: inout RowMerger) throws {
        let localBefore = merger.firstSeq - 1
        let own = push?.ownSequence.map { ($0.lowerBound, $0.upperBound) } ?? (1, 0)  // (1, 0): an empty range
        var through = max(since, push?.ownSequence?.upperBound ?? since)
        let due = try dueQuarantine(merger)
        var mark: String?
        let pg = hub.pg
        let name = hub.name
        try HubConnection.mapping(name) {
            try pg.transaction {
                try pg.execute(sql: HubSQL.pullIsolation)
                guard try pg.execute(sql: "SELECT hub_id FROM hub_identity").text(0, 0) == hub.hubID else {
                    throw CatalogError(.unavailable, "the hub's identity changed during the sync (recreated?), \(name)")
                }
                let range: [PGValue?] = [.integer(since), .integer(own.0), .integer(own.1)]
                // A row that is not valid fails the source: stop reading at the batch that held it.
                through = max(
                    through,
                    try pipelined(
                        pg, sql: HubSQL.pullLandmarks, range, batch: Self.firstLandmarkBatch,
                        nextBatch: Self.nextLandmarkBatch,
                        decode: { try self.landmarkBatch($0, through: &$1) }, into: &merger))
                through = max(
                    through,
                    try pipelined(
                        pg, sql: HubSQL.pullPositions, range, batch: Self.positionBatch,
                        decode: { try self.positionBatch($0, through: &$1) }, into: &merger))
                through = max(through, try mergeErasures(range, into: &merger))
                if !due.landmarks.isEmpty {
                    try pg.forEachBatch(
                        sql: HubSQL.redeliverLandmarks, [.text(Self.arrayLiteral(due.landmarks)), .integer(since)],
                        batch: Self.firstLandmarkBatch, nextBatch: Self.nextLandmarkBatch
                    ) { result in
                        var ignored = since
                        let batch = try landmarkBatch(result, through: &ignored)
                        source.bytesFetched += Int64(batch.bytesRead)
                        try merger.apply(batch)
                    }
                }
                // The hub's history at the new cursor, from the same snapshot (docs/hub.md, "Restoring a hub").
                let history = hub.hasHistory ? try pg.execute(sql: HubSQL.historyMark, [.integer(through)]) : nil
                if let history, history.rowCount == 1, let seq = try history.int64(0, 0), let token = history.text(0, 1) {
                    mark = "\(seq):\(token)"
                }
                if !due.positions.isEmpty {
                    try pg.forEachBatch(
                        sql: HubSQL.redeliverPositions, [.text(Self.arrayLiteral(due.positions)), .integer(since)],
                        batch: Self.positionBatch
                    ) { result in
                        var ignored = since
                        let batch = try positionBatch(result, through: &ignored)
                        source.bytesFetched += Int64(batch.bytesRead)
                        try merger.apply(batch)
                    }
                }
            }
        }
        if let failure = merger.failure() { throw failure }
        if let push, !dryRun { try merger.dropRefused(landmarks: push.expiredLandmarks, positions: push.expiredPositions) }
        if mark == nil, hub.hasHistory, through > 0, !dryRun {
            // No history row at or below the cursor: `hub_history` was emptied by hand. Without a mark a
            // later restore of an older backup went unnoticed once another edge pushed past this cursor,
            // so the history starts again here, as hub migration 2's baseline row does. A role
            // that may not insert leaves it to the next one that may.
            mark = try? HubConnection.mapping(name) {
                let token = try pg.execute(sql: HubSQL.noteBaseline, [.integer(through)]).text(0, 0)
                return try token ?? pg.execute(sql: HubSQL.historyToken, [.integer(through)]).text(0, 0)
            }.map { "\(through):\($0)" }
        }
        if !dryRun {
            // Bookkeeping for operators only: a hub that fails here has still been read correctly.
            _ = try? pg.execute(sql: HubSQL.notePull, [.text(try merger.store.currentNode()), .integer(through)])
        }
        var next = source.baseCursor
        next["pullThrough"] = String(through)
        next["history"] = mark
        next["pulledAt"] = Timestamp.format(milliseconds: merger.store.wallClock.nowMilliseconds())
        next["pushThrough"] = String(pushThrough == localBefore ? merger.nextSeq - 1 : pushThrough)
        source.nextCursor = next
    }

    /// The keys this source's rows were quarantined under here whose stamps are now within the allowance:
    /// the hub delivers each row once (its cursor moves on), so they are read again by key.
    private func dueQuarantine(_ merger: RowMerger) throws -> (landmarks: [String], positions: [String]) {
        var landmarks: [String] = []
        var positions: [String] = []
        do {
            let keys = try merger.store.quarantineTable.keys(
                source: merger.source, stampedAtOrBefore: merger.quarantineAfter, limit: Self.redeliveryLimit)
            for (kind, key) in keys {
                if kind == "landmark" { landmarks.append(key) } else { positions.append(key) }
            }
        } catch let error as SQLiteError {
            throw CatalogError(error, path: merger.store.path)
        }
        return (landmarks.filter { Int64($0) != nil }, positions)
    }

    /// A PostgreSQL array literal of `values` (each double-quoted, `"` and `\` escaped), for `$1::text[]`.
    ///
    /// PostgreSQL "Arrays", Array Value Input.
    static func arrayLiteral(_ values: [String]) -> String {
        "{"
            + values.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            .joined(separator: ",") + "}"
    }

    /// Reads `sql` through a cursor on a reading thread — each `FETCH` decoded into a ``RowBatch`` there
    /// by `decode` — while this thread merges the batch before it (one batch waits between them, as a
    /// file's reader and writer do), so PostgreSQL's sending, libpq's parsing and our validation overlap
    /// SQLite's writing.
    ///
    /// Returns the largest hub sequence number `decode` saw.
    ///
    /// The connection is the reader's alone while it runs: this thread only takes batches and touches
    /// `pg` again after `ReadingThread.finish()` has returned (on every path, by `defer`).
    /// - Throws: the first of: what reading or decoding threw (after the batches before it were merged),
    ///   what merging threw, or the merger's failure after a batch (a row that is not valid: reading stops
    ///   at the batch that held it).
    private func pipelined(
        _ pg: PGConnection, sql: String, _ params: [PGValue?], batch: Int,
        nextBatch: ((PGResult) -> Int)? = nil,
        decode: @escaping (PGResult, inout Int64) throws -> RowBatch,
        into merger: inout RowMerger
    ) throws -> Int64 {
        let handoff = ReaderHandoff(pg: pg, decode: decode, nextBatch: nextBatch, through: since)
        let reading = ReadingThread { queue in
            var failure: (any Error)?
            do {
                try handoff.pg.forEachBatch(sql: sql, params, batch: batch, nextBatch: handoff.nextBatch) { result in
                    let rows = try handoff.decode(result, &handoff.through)
                    guard queue.put(rows) else { throw ReaderHandoff.Stopped() }
                }
            } catch is ReaderHandoff.Stopped {
                return  // the merger gave up: nobody takes a last batch
            } catch {
                failure = error
            }
            let last = RowBatch(reserving: false)
            last.isLast = true
            last.failure = failure
            _ = queue.put(last)
        }
        defer { reading.finish() }
        while true {
            let rows = reading.queue.take()
            source.bytesFetched += Int64(rows.bytesRead)
            if rows.isLast {
                if let failure = rows.failure { throw failure }
                return handoff.through
            }
            try merger.apply(rows)
            merger.progress(merger.counts.seen, source.bytesFetched, nil)
            if let failure = merger.failure() { throw failure }
        }
    }

    /// The landmarks to ask for after `result`: as many as fit ``landmarkBatchBytes`` at its mean row
    /// size, 1…``landmarkBatch`` (memory follows the bodies' bytes, not their count).
    static func nextLandmarkBatch(_ result: PGResult) -> Int {
        let rows = result.rowCount
        guard rows > 0 else { return firstLandmarkBatch }
        var bytes = 0
        for row in 0..<rows { bytes += result.rowLength(row) }
        return min(landmarkBatch, max(1, landmarkBatchBytes / max(1, bytes / rows)))
    }

    // MARK: Rows

    /// Decodes one `FETCH` of landmark rows (id, body, updated_ms, counter, node, deleted, seq): each
    /// body, canonical content JSON, is read on its own by ``LandmarkDecoder`` in `.content` mode (so a
    /// hub row is validated as any snapshot row is, and one body can never run into the next); the
    /// stamp comes from the columns.
    /// - Throws: `CatalogError` (65) for a body that is not one JSON value or a column that is not what
    ///   the schema says; rows that are not valid landmarks are error diagnostics in the batch.
    func landmarkBatch(_ result: PGResult, through: inout Int64) throws -> RowBatch {
        let batch = RowBatch(reserving: false)
        var decoder = LandmarkDecoder(file: hub.name, mode: .content)
        let options = JSONPullReader.Options(allowTrailingCommas: false, maxDepth: 64)
        for row in 0..<result.rowCount {
            batch.bytesRead += result.rowLength(row)
            let id: Int64
            let stamp: HLCStamp?
            let deleted: Bool
            do {
                id = try result.int64(row, 0) ?? 0
                stamp = try Self.stamp(result, row: row, updatedMs: 2, counter: 3, node: 4)
                deleted = try result.bool(row, 5) ?? false
                through = max(through, try result.int64(row, 6) ?? 0)
            } catch let error as PGError {
                throw CatalogError(.dataInvalid, "the hub sent a landmark row this catalog cannot read: \(error.message), \(hub.name)")
            }
            let (landmarks, diagnostics) = (batch.landmarks.count, batch.diagnostics.count)
            let body = result.bytes(row, 1).map(Array.init) ?? Array("null".utf8)
            do {
                let reader = JSONPullReader(bytes: body, options: options)
                try decoder.decode(reader, index: row, into: batch)
                try reader.finish()
            } catch let error as JSONSyntaxError {
                throw CatalogError(.dataInvalid, "the hub's landmark \(id) has a body that is not valid JSON: \(error.message), \(hub.name)")
            }
            for i in diagnostics..<batch.diagnostics.count {  // positions within one body mean nothing to a reader
                batch.diagnostics[i].diagnostic.position = nil
                batch.diagnostics[i].diagnostic.index = nil
                batch.diagnostics[i].diagnostic.id = id
                batch.diagnostics[i].diagnostic.message += " (a landmark body on the hub)"
            }
            guard batch.landmarks.count > landmarks else { continue }
            guard var record = batch.landmarks.last, record.id == id, let stamp else {
                let what =
                    stamp == nil
                    ? "an invalid stamp (a time outside 0000–9999, a counter outside 0…\(HLCStamp.maxCounter) or a bad node id)"
                    : "a body with another id"
                batch.landmarks.removeLast()
                batch.diagnostics.append(
                    (
                        batch.landmarks.count,
                        Diagnostic(
                            severity: .error, message: "the hub's landmark \(id) has \(what)",
                            file: hub.name, id: id)
                    ))
                continue
            }
            record.updatedMs = stamp.wallMilliseconds
            record.counter = stamp.counter
            record.deleted = deleted
            let start = batch.bytes.count
            batch.bytes.append(contentsOf: stamp.node.utf8)
            record.texts[TextRanges.nodeSlot] = (Int32(start), Int32(stamp.node.utf8.count))
            batch.landmarks[batch.landmarks.count - 1] = record
        }
        return batch
    }

    /// One `FETCH` of position rows (user_id, page, landmark_id, updated_ms, counter, node, deleted, seq),
    /// each validated as a snapshot's position is (docs/cli.md §4, docs/snapshot-format.md §3).
    func positionBatch(_ result: PGResult, through: inout Int64) throws -> RowBatch {
        let batch = RowBatch(reserving: false)
        batch.positions.reserveCapacity(result.rowCount)
        do {
            for row in 0..<result.rowCount {
                through = max(through, try result.int64(row, 7) ?? 0)
                let raw = result.text(row, 0) ?? ""
                batch.bytesRead += result.rowLength(row)
                let page = try result.int64(row, 1) ?? -1
                let stamp = try Self.stamp(result, row: row, updatedMs: 3, counter: 4, node: 5)
                let problem: String?
                do {
                    // Compared as bytes: Swift's == would take an NFD id for its NFC form, a different key in SQLite.
                    problem =
                        try UserID.normalize(raw).utf8.elementsEqual(raw.utf8) ? nil : "its user id is not in NFC (Unicode Normalization Form C)"
                } catch let error as CatalogError {
                    problem = "its " + error.message
                }
                guard let stamp, problem == nil, page >= 0 else {
                    let why =
                        problem
                        ?? (page < 0
                            ? "its page \(page) is negative"
                            : "its stamp is not valid (a time outside 0000–9999, a counter outside 0…\(HLCStamp.maxCounter) or a bad node id)")
                    batch.diagnostics.append(
                        (
                            0,
                            Diagnostic(
                                severity: .error,
                                message: "the hub's position of user \(Self.quoted(raw)) is not valid: \(why)", file: hub.name)
                        ))
                    continue
                }
                batch.positions.append(
                    PositionRecord(
                        user: raw, page: page, landmark: try result.int64(row, 2), stamp: stamp,
                        deleted: try result.bool(row, 6) ?? false))
            }
        } catch let error as PGError {
            throw CatalogError(.dataInvalid, "the hub sent a position row this catalog cannot read: \(error.message), \(hub.name)")
        }
        return batch
    }

    /// `text` quoted for a message, at most 64 characters, every scalar outside printable ASCII written
    /// `\u{…}` — a user id not in NFC looks like its NFC form otherwise.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars.prefix(64) {
            switch scalar {
            case "\"", "\\": out += "\\" + String(scalar)
            case " "..."~": out.unicodeScalars.append(scalar)
            default: out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return out + (text.unicodeScalars.count > 64 ? "…\"" : "\"")
    }

    /// The stamp in columns `updatedMs`, `counter`, `node` of `row`, or nil when it is not valid: a time
    /// no RFC 3339 timestamp names (outside ``Timestamp/representable``: it could never be written to a
    /// snapshot), a counter outside 0…``HLCStamp/maxCounter``, a bad node id.
    /// - Throws: `PGError` when a column is not an integer.
    static func stamp(_ result: PGResult, row: Int, updatedMs: Int, counter: Int, node: Int) throws -> HLCStamp? {
        guard let wall = try result.int64(row, updatedMs), let count = try result.int64(row, counter), let node = result.text(row, node) else {
            return nil
        }
        return HLCStamp(validatingWall: wall, counter: count, node: node)
    }
}

/// What a pull's reading thread owns while it runs (see `HubPullFeed.pipelined`): the connection, the
/// decoder and the largest sequence number seen.
///
/// Not `Sendable` by nature (`PGConnection` belongs to one thread at a time); handed over whole to the
/// reader and back when `ReadingThread.finish()` returns.
private final class ReaderHandoff: @unchecked Sendable {
    struct Stopped: Error {}
    let pg: PGConnection
    let decode: (PGResult, inout Int64) throws -> RowBatch
    let nextBatch: ((PGResult) -> Int)?
    var through: Int64

    init(pg: PGConnection, decode: @escaping (PGResult, inout Int64) throws -> RowBatch, nextBatch: ((PGResult) -> Int)?, through: Int64) {
        self.pg = pg
        self.decode = decode
        self.nextBatch = nextBatch
        self.through = through
    }
}
