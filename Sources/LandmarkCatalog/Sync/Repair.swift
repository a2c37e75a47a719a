import Foundation

/// Carries repair messages (``RepairMessage``) to the other copy and back: another database in this
/// process, the hub, a serve.
package protocol RepairPeer {
    /// Sends one encoded message and returns the peer's encoded answer; the peer merges the message's
    /// rows (unless the repair is a dry run).
    func exchange(_ message: [UInt8]) throws -> [UInt8]
    /// The peer's state digest at `horizonMilliseconds`, read after the repair.
    func digest(horizonMilliseconds: Int64) throws -> StateDigest
    /// After a repair that ran because the source forgot this node (docs/repair.md §7): the cursor
    /// to go on from incrementally, taken at the repair's start (`held`: the stored one;
    /// `localThrough`: this database's change sequence before the repair). Nil keeps the stored one.
    func cursorAfterRepair(held: SourceCursor?, localThrough: Int64) -> SourceCursor?
}

extension RepairPeer {
    package func cursorAfterRepair(held: SourceCursor?, localThrough: Int64) -> SourceCursor? { nil }
}

/// What a repair did (docs/repair.md §5): `catalog repair --json` prints it.
public struct RepairReport: Sendable {
    /// Request–answer exchanges.
    public var roundTrips = 0
    /// Bytes of the repair's own messages sent and received, rows excluded.
    public var bytesSent = 0
    public var bytesReceived = 0
    /// Rows sent to the peer and received from it (applied or not: the merge rule decides).
    public var rowsSent = 0
    public var rowsReceived = 0
    /// Rows received that this database applied (in a dry run: would apply).
    public var rowsApplied = 0
    /// The two state digests after the repair, both at the session's horizon (the greater of the two
    /// sides' collection horizons, docs/erasure.md §5).
    public var localDigest = StateDigest()
    public var peerDigest = StateDigest()
    /// The session's horizon (ms since the epoch, UTC).
    public var horizonMilliseconds: Int64 = 0

    /// Whether both digests after the repair are equal: the copies agree.
    public var agrees: Bool { localDigest == peerDigest }

    /// The warning for copies a repair left apart (kind `digests-apart`), or nil when they agree
    /// (docs/repair.md §7): a row one side would not take stays where it is.
    /// - Parameter source: the peer's name.
    /// - Returns: the warning, or nil.
    public func apartWarning(source: String) -> Diagnostic? {
        guard !agrees else { return nil }
        return Diagnostic(
            severity: .warning,
            message:
                "the digests still differ after the repair: rows one side would not take stay apart — quarantined as stamped ahead of its clock ('catalog quarantine list'), refused as stamped before its collection horizon, outside the source's write grant, or landmarks a serve does not take from a node (docs/repair.md §7)",
            file: source, kind: "digests-apart")
    }
}

/// Range-fingerprint reconciliation between this catalog and another copy (docs/repair.md): only the
/// rows that differ move, each merged by the merge rule like any row from that source.
package enum Repair {
    /// The most round trips a repair takes before it gives up on the peer (65).
    package static let maxRoundTrips = 32
    /// Repairs `store` against `peer`, both ways.
    /// - Parameters:
    ///   - store: this catalog.
    ///   - peer: the other copy.
    ///   - source: the peer's name in messages, quarantine and conflicts.
    ///   - dryRun: find and count the differing rows; change nothing on either side.
    ///   - maxDriftSeconds: rows stamped further ahead of this machine's clock are quarantined.
    ///   - grant: what the peer may write here (docs/trust.md §4).
    /// - Returns: the report.
    /// - Throws: `CatalogError` when either side cannot be read or written; 65 for a malformed answer.
    package static func run(
        store: CatalogStore, peer: any RepairPeer, source: String, dryRun: Bool, maxDriftSeconds: Double = 300,
        grant: WriteGrant = .all
    ) throws -> RepairReport {
        var report = RepairReport()
        let local = try Reconciler(store: store, key: Reconciler.makeKey())
        var message = try local.opening()
        while true {
            // Each round splits the differing ranges 16 ways: a table of 2⁶⁴ rows is listed by the 17th. A
            // peer whose answers never settle (lying, or broken) ends here.
            guard report.roundTrips < Self.maxRoundTrips else {
                throw CatalogError(
                    .dataInvalid, "the repair with \(source) did not settle within \(Self.maxRoundTrips) round trips: its answers are not a copy's")
            }
            let out = message.encoded()
            report.roundTrips += 1
            report.bytesSent += out.count - message.rows.count
            let answerBytes = try peer.exchange(out)
            let answer: RepairMessage
            do {
                answer = try RepairMessage(decoding: answerBytes)
            } catch let error as RepairMessageError {
                throw CatalogError(.dataInvalid, "\(error.description), \(source)")
            }
            report.bytesReceived += answerBytes.count - answer.rows.count
            if !answer.rows.isEmpty {
                let merged = try RepairMerge.apply(
                    answer.rows, to: store, source: source, dryRun: dryRun, maxDriftSeconds: maxDriftSeconds, grant: grant)
                report.rowsReceived += merged.seen
                report.rowsApplied += merged.applied
            }
            if answer.isFinal { break }
            message = try local.answer(answer)
            if message.isFinal && message.rows.isEmpty && message.horizon == nil { break }
        }
        report.rowsSent = local.rowsSent
        report.horizonMilliseconds = local.horizon
        report.localDigest = try StateDigest(of: store, horizonMilliseconds: local.horizon)
        report.peerDigest = try peer.digest(horizonMilliseconds: local.horizon)
        return report
    }
}

/// Merges a repair message's rows into a store, in one transaction, by the merge rule (docs/merge-rules.md).
package enum RepairMerge {
    /// Merges `rows` (a snapshot document) into `store`.
    /// - Returns: the rows seen and applied.
    /// - Throws: `CatalogError` (65 for malformed rows); nothing is kept then.
    package static func apply(
        _ rows: [UInt8], to store: CatalogStore, source: String, dryRun: Bool, maxDriftSeconds: Double, grant: WriteGrant
    ) throws -> (seen: Int, applied: Int) {
        try store.transaction {
            var merger = try RowMerger(
                store: store, source: source,
                quarantineAfter: store.wallClock.nowMilliseconds() + Int64(maxDriftSeconds * 1000), diagnostics: { _ in })
            merger.allow = grant
            try SnapshotFeed(bytes: rows, name: source).merge(into: &merger)
            if let failure = merger.failure() { throw failure }
            if merger.maxSeen.wall > 0 || merger.maxSeen.counter > 0 {
                try store.observeRemoteStamp(wall: merger.maxSeen.wall, counter: merger.maxSeen.counter)
            }
            let c = merger.counts
            let result = (c.landmarksSeen + c.positionsSeen, c.landmarksApplied + c.positionsApplied)
            return dryRun ? .rollback(result) : .commit(result)
        }
    }
}

extension RepairMerge {
    /// Stages another copy's rows in `store` (a scratch database), in one transaction: `body` hands them
    /// to the merger; no drift allowance applies (the copy that sends them on applies its own).
    /// - Throws: what `body` throws; `CatalogError` for a row the merger refuses as malformed.
    package static func stage(into store: CatalogStore, source: String, _ body: (inout RowMerger) throws -> Void) throws {
        try store.transaction {
            var merger = try RowMerger(store: store, source: source, quarantineAfter: .max, diagnostics: { _ in })
            try body(&merger)
            if let failure = merger.failure() { throw failure }
            return .commit(())
        }
    }
}

/// Another catalog database on this machine as a repair's peer: its side of the exchange runs here,
/// on its own store.
package final class DatabaseRepairPeer: RepairPeer {
    let store: CatalogStore
    let name: String
    let dryRun: Bool
    var side: Reconciler?

    /// The peer database `store`; rows sent to it are merged under the source name `name`.
    package init(store: CatalogStore, name: String, dryRun: Bool) {
        self.store = store
        self.name = name
        self.dryRun = dryRun
    }

    package func exchange(_ message: [UInt8]) throws -> [UInt8] {
        let m = try RepairMessage(decoding: message)
        if let key = m.key { side = try Reconciler(store: store, key: key) }
        guard let side else { throw CatalogError(.dataInvalid, "a repair message before the opening one, \(name)") }
        if !m.rows.isEmpty {
            let merged = try RepairMerge.apply(m.rows, to: store, source: name, dryRun: dryRun, maxDriftSeconds: 300, grant: .all)
            side.received(merged.seen)
        }
        return try side.answer(m).encoded()
    }

    package func digest(horizonMilliseconds: Int64) throws -> StateDigest { try StateDigest(of: store, horizonMilliseconds: horizonMilliseconds) }
}

/// Repairs a catalog against another copy (docs/repair.md).
///
/// ```swift
/// let report = try Repairer(store).repair(withDatabase: "/srv/backup/catalog.sqlite")
/// ```
public struct Repairer {
    /// The catalog it repairs.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }

    /// Repairs the catalog against the catalog database at `path`, both ways (docs/repair.md §5): only
    /// the rows that differ are read and written, each merged by the merge rule.
    /// - Parameters:
    ///   - path: the other database's file.
    ///   - dryRun: count what differs; change neither database.
    /// - Returns: round trips, bytes and rows moved, and both digests after.
    /// - Throws: `CatalogError` — 66 when `path` cannot be opened, 75 when either database is busy.
    public func repair(withDatabase path: String, dryRun: Bool = false) throws -> RepairReport {
        let other = try CatalogStore.open(path: path, access: .write, wallClock: store.wallClock)
        return try Repair.run(
            store: store, peer: DatabaseRepairPeer(store: other, name: store.path, dryRun: dryRun), source: path, dryRun: dryRun)
    }
}
