import Foundation
import LandmarkCatalog

/// A PostgreSQL hub as a side of a repair (docs/repair.md): the ``Reconciler`` runs in this process and
/// reads the hub's rows with range queries — sums, rows, and a range's 16 parts computed in one statement
/// — so no range's rows cross the wire to be split.
final class HubRepairCopy: RepairCopy {
    let hub: HubConnection

    init(hub: HubConnection) { self.hub = hub }

    func collectionHorizon() throws -> Int64 { try HubConnection.mapping(hub.name) { try hub.horizon() } }

    /// One REPEATABLE READ snapshot of the hub, read-only (joining one already open).
    func read<T>(_ body: () throws -> T) throws -> T {
        let pg = hub.pg
        if pg.isInTransaction { return try body() }
        return try HubConnection.mapping(hub.name) {
            try pg.transaction {
                try pg.execute(sql: HubSQL.pullIsolation)
                return try body()
            }
        }
    }

    func rows(_ table: RepairTable, horizon: Int64) -> any RepairRowSet { HubRepairRows(hub: hub, table: table, horizon: horizon) }

    /// The hub's rows of these keys as a snapshot document: read from the hub, checked as a pull checks
    /// them (``HubPullFeed``), staged in a scratch database and written by the one snapshot writer.
    func snapshot(landmarks: [[UInt8]], positions: [[UInt8]], erasures: [[UInt8]]) throws -> [UInt8] {
        let scratch = try CatalogStore.open(path: ":memory:", access: .write)
        let feed = HubPullFeed(source: HubSource(conninfo: hub.conninfo), hub: hub, since: 0, push: nil, pushThrough: 0, dryRun: true)
        try HubConnection.mapping(hub.name) {
            try RepairMerge.stage(into: scratch, source: hub.name) { merger in
                var through: Int64 = 0
                if !landmarks.isEmpty {
                    let result = try hub.pg.execute(
                        sql: "SELECT id, body, updated_ms, counter, node, deleted, seq FROM landmarks WHERE id = ANY ($1::bigint[])",
                        [.text(HubPullFeed.arrayLiteral(landmarks.map { String(RepairRows.id($0)) }))], timeout: hub.limits.bulk)
                    try merger.apply(try feed.landmarkBatch(result, through: &through))
                }
                if !positions.isEmpty {
                    let result = try hub.pg.execute(
                        sql:
                            "SELECT user_id, page, landmark_id, updated_ms, counter, node, deleted, seq FROM positions WHERE user_id = ANY ($1::text[])",
                        [.text(HubPullFeed.arrayLiteral(positions.map(RepairRows.user)))], timeout: hub.limits.bulk)
                    try merger.apply(try feed.positionBatch(result, through: &through))
                }
                if !erasures.isEmpty {
                    let result = try hub.pg.execute(
                        sql: "SELECT user_hash, updated_ms, counter, node FROM hub_erasures WHERE user_hash = ANY ($1::text[])",
                        [.text(HubPullFeed.arrayLiteral(erasures.map(RepairRows.user)))], timeout: hub.limits.bulk)
                    let batch = RowBatch(reserving: false)
                    for row in 0..<result.rowCount {
                        guard let hash = result.text(row, 0), let stamp = try HubPullFeed.stamp(result, row: row, updatedMs: 1, counter: 2, node: 3)
                        else { continue }
                        batch.erasures.append(ErasureRecord(userHash: hash, stamp: stamp))
                    }
                    try merger.apply(batch)
                }
            }
        }
        return try RepairRows.snapshot(store: scratch, landmarks: landmarks, positions: positions, erasures: erasures)
    }
}

/// The rows of one hub table as a repair reads them; which rows take part is the SQL of
/// ``HubSQL/countsInDigest(deleted:)`` at the session's horizon, as ``RepairRows`` decides on a node.
struct HubRepairRows: RepairRowSet {
    let hub: HubConnection
    let table: RepairTable
    let horizon: Int64

    /// `$1` the horizon, `$2` the lower bound, `$3` the upper one when there is one.
    private func arguments(_ lower: [UInt8], _ upper: [UInt8]?) -> [PGValue?] {
        func bound(_ bytes: [UInt8]) -> PGValue { table == .landmarks ? .integer(RepairRows.id(bytes)) : .text(RepairRows.user(bytes)) }
        return [.integer(horizon), bound(lower)] + (upper.map { [bound($0)] } ?? [])
    }

    /// A key column's bytes: a landmark id as ``RepairRows/key(id:)``, else the text's UTF-8.
    private func key(_ result: PGResult, row: Int, column: Int) throws -> [UInt8] {
        table == .landmarks ? RepairRows.key(id: try result.int64(row, column) ?? 0) : Array((result.text(row, column) ?? "").utf8)
    }

    func sums(_ lower: [UInt8], _ upper: [UInt8]?) throws -> LaneSums {
        try HubConnection.mapping(hub.name) {
            // The whole table: the kept totals (docs/repair.md §1), not a pass over it.
            if lower.isEmpty && upper == nil { return try hub.keptSums(table, horizonMilliseconds: horizon) }
            let result = try hub.pg.execute(sql: HubSQL.rangeSums(table, upper: upper != nil), arguments(lower, upper), timeout: hub.limits.bulk)
            return try HubConnection.sums(result, row: 0)
        }
    }

    func forEach(_ lower: [UInt8], _ upper: [UInt8]?, _ body: ([UInt8], RowHash) throws -> Void) throws {
        let result = try HubConnection.mapping(hub.name) {
            try hub.pg.execute(sql: HubSQL.rangeRows(table, upper: upper != nil), arguments(lower, upper), timeout: hub.limits.bulk)
        }
        for row in 0..<result.rowCount {
            let lanes = try HubConnection.mapping(hub.name) { try (1...4).map { UInt32(truncatingIfNeeded: try result.int64(row, $0) ?? 0) } }
            try body(try HubConnection.mapping(hub.name) { try key(result, row: row, column: 0) }, RowHash(lanes[0], lanes[1], lanes[2], lanes[3]))
        }
    }

    func separator(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        RepairRows.separator(a, b, table: table)
    }

    /// Erasure records are few: split from their rows.
    ///
    /// Landmarks and positions: `ntile` in one statement.
    func parts(_ lower: [UInt8], _ upper: [UInt8]?, count: Int) throws -> [RepairPart]? {
        guard table != .erasures else { return nil }
        return try HubConnection.mapping(hub.name) {
            let result = try hub.pg.execute(
                sql: HubSQL.rangeParts(table, upper: upper != nil),
                arguments(lower, upper) + [.integer(Int64(count))], timeout: hub.limits.bulk)
            return try (0..<result.rowCount).map { row in
                RepairPart(
                    sums: try HubConnection.sums(result, row: row), first: try key(result, row: row, column: 5),
                    last: try key(result, row: row, column: 6))
            }
        }
    }
}

/// A PostgreSQL hub as a repair's peer (docs/repair.md §5): the hub's side of the exchange runs in this
/// process against PostgreSQL (``Reconciler`` over ``HubRepairCopy``); the rows the node sends are taken
/// as a push takes them — the same upserts, under the push lock, with the hub's quarantine, drift and
/// expiry rules, one transaction per message — and the hub's digest after is read from its kept totals.
///
/// Built from the connection settings a sync of the hub uses, for `catalog repair postgres://…` and for
/// a sync that repairs after it runs.
package final class HubRepairPeer: RepairPeer {
    let hub: HubConnection
    /// The repairing node's id: the hub's bookkeeping names it as the pusher of the rows it takes.
    let node: String
    let maxDriftMilliseconds: Int64
    let dryRun: Bool
    /// The role may only read the hub (docs/hub.md §4): the repair goes one way, the hub's rows to the
    /// node; rows the hub lacks stay where they are, as a pull-only sync leaves them.
    package let pullOnly: Bool
    private var side: Reconciler?
    /// Where the hub stood when this peer connected, before the repair read anything.
    ///
    /// Its identity, the last sequence number issued and the history mark at it (docs/hub.md §9). A sync
    /// that repairs in place of a re-read goes on from here (``cursorAfterRepair(held:localThrough:)``).
    private var startedAt: (hub: String, sequence: Int64, mark: String?)?
    /// Rows the hub refused as expired (stamped before its horizon for keys it no longer holds).
    package private(set) var expired = 0
    /// Rows the hub quarantined (stamped beyond the drift allowance of its clock).
    package private(set) var quarantined = 0

    /// Connects to the hub at `conninfo` (migrating its schema unless `dryRun`, as a sync does).
    /// - Parameters:
    ///   - conninfo: a libpq URI or keyword string (a password from it, `~/.pgpass` or `PGPASSFILE`).
    ///   - options: the timeouts and the drift allowance, as `catalog sync` takes them.
    ///   - node: the repairing node's id.
    ///   - dryRun: take no rows (the hub's answers do not depend on them).
    /// - Throws: `CatalogError` as a sync's connection: 69 unreachable, 76 an incompatible hub, 77 refused;
    ///   69 for a hub that keeps no digest yet (a dry run against a hub not yet migrated).
    package init(conninfo: String, options: SyncOptions, node: String, dryRun: Bool) throws {
        let name = HubSourceKind.locator(conninfo).description
        let hub = try HubConnection(
            conninfo: conninfo, name: name, limits: HubLimits(options: options), migrate: !dryRun, cancellation: options.cancellation)
        try HubConnection.mapping(name) { try hub.requireKeptDigest() }
        let sequence = hub.lastSequence
        let mark = try HubConnection.mapping(name) { () throws -> String? in
            guard hub.hasHistory else { return nil }
            let history = try hub.pg.execute(sql: HubSQL.historyMark, [.integer(sequence)])
            guard history.rowCount == 1, let seq = try history.int64(0, 0), let token = history.text(0, 1) else { return nil }
            return "\(seq):\(token)"
        }
        startedAt = (hub.hubID, sequence, mark)
        pullOnly = try HubConnection.mapping(name) { try hub.pg.execute(sql: HubSQL.canPush).bool(0, 0) != true }
        self.hub = hub
        self.node = node
        maxDriftMilliseconds = options.maxDriftMilliseconds
        self.dryRun = dryRun
    }

    package func exchange(_ message: [UInt8]) throws -> [UInt8] {
        let m = try RepairMessage(decoding: message)
        if let key = m.key { side = try Reconciler(copy: HubRepairCopy(hub: hub), key: key) }
        guard let side else { throw CatalogError(.dataInvalid, "a repair message before the opening one, \(hub.name)") }
        if !m.rows.isEmpty {
            side.received(try take(m.rows))
        }
        return try side.answer(m).encoded()
    }

    /// Takes `rows` (a snapshot document) into the hub as a push.
    ///
    /// Staged in a scratch database by the
    /// merge rule, then pushed from it in one PostgreSQL transaction. Nothing in a dry run.
    /// - Returns: the rows seen.
    private func take(_ rows: [UInt8]) throws -> Int {
        let scratch = try CatalogStore.open(path: ":memory:", access: .write)
        let merged = try RepairMerge.apply(rows, to: scratch, source: node, dryRun: false, maxDriftSeconds: 1e9, grant: .all)
        guard !dryRun, !pullOnly else { return merged.seen }
        let report = try HubConnection.mapping(hub.name) {
            try hub.push(from: scratch, since: 0, maxDriftMilliseconds: maxDriftMilliseconds, node: node)
        }
        expired += report.expired
        quarantined += report.quarantined
        return merged.seen
    }

    package func digest(horizonMilliseconds: Int64) throws -> StateDigest {
        try HubConnection.mapping(hub.name) { try hub.keptDigest(horizonMilliseconds: horizonMilliseconds) }
    }

    /// The hub's cursor after a repair that took the place of a re-read (docs/repair.md §7).
    ///
    /// Pulled through the sequence number the hub had issued before the repair read anything, with that
    /// point's history mark, and pushed through `localThrough`. A row committed on the hub during the repair lies past it
    /// and comes with the next pull.
    package func cursorAfterRepair(held: SourceCursor?, localThrough: Int64) -> SourceCursor? {
        guard let startedAt else { return nil }
        var next = held ?? SourceCursor()
        next["hub"] = startedAt.hub
        next["pullThrough"] = String(startedAt.sequence)
        next["history"] = startedAt.mark
        next["pushThrough"] = String(localThrough)
        return next
    }
}

/// `catalog repair postgres://…` (docs/repair.md §5): a repair against a PostgreSQL hub.
package enum HubRepair {
    /// Whether `source` names a hub (`postgres://`, `postgresql://`, or a libpq keyword string).
    package static func names(_ source: String) -> Bool {
        guard case .claimed(let claim)? = try? SourceLocator.parse(source) else { return false }
        return claim.kind is HubSourceKind
    }

    /// Repairs `store` against the hub at `source`, both ways.
    ///
    /// The connection string is the one given, or the saved remote's whose display name it is (so a
    /// password kept in a remote's URL works), as `catalog status` finds it. Rows from the hub are merged
    /// like rows a sync pulls from it (the saved remote's write grant, the drift allowance, the merge rule);
    /// a remote that must be signed is refused, as a sync of it is.
    /// - Returns: the report; `peer` tells what the hub refused or held back.
    /// - Throws: `CatalogError` — 64 for a source that is not a hub, 69 unreachable or a hub without the
    ///   kept digest, 76 an incompatible hub, 77 a role refused, 65 a malformed row.
    package static func run(
        store: CatalogStore, source: String, options: SyncOptions, dryRun: Bool, diagnostics: @escaping (Diagnostic) -> Void
    ) throws -> (report: RepairReport, peer: HubRepairPeer) {
        let locator = try SourceLocator.parse(source)
        guard let given = HubSourceKind.conninfo(of: locator) else {
            throw CatalogError(.usage, "not a PostgreSQL hub: \(SourceLocator.redacted(source))")
        }
        let name = locator.description
        let saved = try RemoteBook(store).remotes()
        let conninfo = saved.first { redactedURL($0.url) == given }?.url ?? given
        let context = SyncContext(store: store, options: options, standardInput: -1, diagnostics: diagnostics)
        let trust = try RemoteBook(store).trustForSource(key: name)
        var checked = context
        checked.trustedKeys = trust.keys
        try checked.requireUnsigned("a PostgreSQL hub's change feed", source: name)
        let peer = try HubRepairPeer(conninfo: conninfo, options: options, node: try store.nodeID(), dryRun: dryRun)
        let report = try Repair.run(
            store: store, peer: peer, source: name, dryRun: dryRun, maxDriftSeconds: Double(options.maxDriftMilliseconds) / 1000,
            grant: trust.allow)
        return (report, peer)
    }
}
