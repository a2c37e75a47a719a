import Foundation

/// What releasing quarantined rows did.
public struct QuarantineRelease: Sendable, Equatable {
    /// Rows taken out of the quarantine and merged.
    public var released = 0
    /// What merging them did by last-writer-wins (a released row that is older than the stored one is
    /// counted as stale, and changes nothing).
    public var counts = MergeCounts()
    /// Rows still in the quarantine afterwards.
    public var remaining = 0

    public init() {}
}

/// The rows a catalog holds in quarantine (stamped beyond the drift allowance, docs/merge-rules.md §6):
/// list them, release them into the catalog, drop them, and the upkeep after each sync run.
public struct Quarantine {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension Quarantine {
    /// The quarantined rows, oldest first (by row id).
    /// - Parameter limit: at most this many rows; nil for all.
    /// - Returns: the rows with their stamps, sources and reasons.
    /// - Throws: `CatalogError` when the database cannot be read.
    public func quarantinedRows(limit: Int? = nil) throws -> [QuarantinedRow] {
        try store.read { try store.quarantineTable.rows(limit: limit) }
    }

    /// Releases quarantined rows: merges them by the normal rule (last-writer-wins, ties
    /// recorded) and the source's write grant as it is now, in one transaction, then removes them from the
    /// quarantine (a row outside the grant is counted as not allowed and not applied).
    ///
    /// The clock moves past what was merged, so a later local write still wins (docs/merge-rules.md §5).
    ///
    /// - Parameters:
    ///   - ids: the row ids to release; nil for every row whose stamp is now within the allowance.
    ///   - force: apply the named rows even when they are still beyond the allowance. The clock then
    ///     moves to their stamp: this node's later writes are stamped after it.
    ///   - maxDriftMilliseconds: the allowance (ms ahead of this machine's clock), as `sync --max-drift`.
    ///   - diagnostics: ties met while merging.
    /// - Returns: how many rows were released, what merging them did, and how many are left.
    /// - Throws: `CatalogError` 64 when a named row is not in the quarantine, or `force` names no rows;
    ///   65 when a named row is still beyond the allowance and `force` is not set (nothing is released);
    ///   73 / 74 / 75 when the database cannot be written.
    public func releaseQuarantine(
        rows ids: [Int64]? = nil, force: Bool = false, maxDriftMilliseconds: Int64 = 300_000,
        diagnostics: @escaping (Diagnostic) -> Void = { _ in }
    ) throws -> QuarantineRelease {
        if force && ids == nil {
            throw CatalogError(.usage, "--force applies only rows named by their id", hint: "catalog quarantine list shows them")
        }
        return try store.write {
            let now = store.wallClock.nowMilliseconds()
            let allowance = now &+ maxDriftMilliseconds
            var selected: [QuarantinedRow] = []
            if let ids {
                for id in Self.unique(ids) {
                    guard let row = try store.quarantineTable.row(id: id) else {
                        throw CatalogError(.usage, "no quarantined row \(id)", hint: "catalog quarantine list shows the rows and their ids")
                    }
                    if !force && row.stamp.wallMilliseconds > allowance {
                        let ahead = Double(row.stamp.wallMilliseconds - allowance) / 1000
                        throw CatalogError(
                            .dataInvalid,
                            "quarantined row \(id) (\(row.kind) \(row.key)) is stamped \(Timestamp.format(milliseconds: row.stamp.wallMilliseconds)), still \(ahead) s beyond the allowed clock drift; nothing was released",
                            hint: "wait until the clock has caught up, or --force to apply it now (this node's clock then jumps to its stamp)")
                    }
                    selected.append(row)
                }
            } else {
                selected = try store.quarantineTable.rows(stampedAtOrBefore: allowance)
            }
            var result = QuarantineRelease()
            if !selected.isEmpty {
                result.counts = try merge(selected, quarantineAfter: force ? Int64.max : allowance, diagnostics: diagnostics)
                for row in selected { _ = try store.quarantineTable.delete(id: row.id) }
                result.released = selected.count
            }
            result.remaining = try store.quarantineTable.count()
            return result
        }
    }

    /// Removes quarantined rows without applying them.
    /// - Parameter ids: the row ids; nil for every row.
    /// - Returns: how many were removed.
    /// - Throws: `CatalogError` 64 when a named row is not in the quarantine (nothing is removed).
    public func dropQuarantine(rows ids: [Int64]?) throws -> Int {
        try store.write {
            guard let ids else { return try store.quarantineTable.deleteAll() }
            var dropped = 0
            for id in Self.unique(ids) {
                guard try store.quarantineTable.delete(id: id) else {
                    throw CatalogError(
                        .usage, "no quarantined row \(id); nothing was dropped", hint: "catalog quarantine list shows the rows and their ids")
                }
                dropped += 1
            }
            return dropped
        }
    }

    /// Applies the rows that are now within the allowance and prunes old conflicts: what each sync run
    /// does after merging its sources (inside no other transaction).
    ///
    /// Neither fails the run: a release that cannot be done is reported as a warning (kind
    /// `quarantine-release`) and tried again by the next run.
    /// - Returns: what releasing did, or nil when it could not be done.
    package func maintainAfterSync(maxDriftMilliseconds: Int64, diagnostics: @escaping (Diagnostic) -> Void) -> QuarantineRelease? {
        var released: QuarantineRelease?
        do {
            released = try releaseQuarantine(maxDriftMilliseconds: maxDriftMilliseconds, diagnostics: diagnostics)
        } catch {
            diagnostics(
                Diagnostic(
                    severity: .warning, message: "quarantined rows within the allowance were not released: \(error); the next sync tries again",
                    file: "", kind: "quarantine-release"))
        }
        _ = try? Conflicts(store).pruneConflicts()
        return released
    }

    /// Merges quarantined rows, one ``RowMerger`` per source (so ties are recorded with the source the
    /// row came from), inside the caller's transaction; then moves the clock past them.
    private func merge(_ rows: [QuarantinedRow], quarantineAfter: Int64, diagnostics: @escaping (Diagnostic) -> Void) throws -> MergeCounts {
        var sources: [String] = []
        var bySource: [String: [QuarantinedRow]] = [:]
        for row in rows {
            if bySource[row.source] == nil { sources.append(row.source) }
            bySource[row.source, default: []].append(row)
        }
        var counts = MergeCounts()
        var maxSeen = HybridLogicalClock(wall: 0, counter: 0)
        for source in sources {
            let group = bySource[source] ?? []
            var merger = try RowMerger(store: store, source: source, quarantineAfter: quarantineAfter, diagnostics: diagnostics)
            // The grant is the source's now, not when the row arrived: a remote narrowed since (`remote
            // add --allow`) may no longer write what it sent (docs/trust.md §4).
            merger.allow = try RemoteBook(store).trustForSource(key: source).allow
            try InMemorySnapshotFeed(name: "quarantine (\(source))", bytes: Self.snapshotDocument(group)).merge(into: &merger)
            counts = counts + merger.counts
            if (merger.maxSeen.wall, merger.maxSeen.counter) > (maxSeen.wall, maxSeen.counter) { maxSeen = merger.maxSeen }
        }
        if maxSeen.wall > 0 || maxSeen.counter > 0 { try store.observeRemoteStamp(wall: maxSeen.wall, counter: maxSeen.counter) }
        return counts
    }

    /// The rows as one snapshot document (docs/snapshot-format.md §3): the stored row texts are snapshot rows already.
    static func snapshotDocument(_ rows: [QuarantinedRow]) -> [UInt8] {
        var w = JSONWriter()
        w.raw("{\"format\":")
        w.string(SnapshotFormat.name)
        w.raw(",\"version\":")
        w.int(SnapshotFormat.version)
        for kind in ["landmark", "position"] {
            w.raw(kind == "landmark" ? ",\"landmarks\":[" : ",\"positions\":[")
            var first = true
            for row in rows where row.kind == kind {
                if !first { w.byte(0x2C) }
                first = false
                w.raw(row.rowJSON)
            }
            w.byte(0x5D)
        }
        w.byte(0x7D)
        return w.bytes
    }

    static func unique(_ ids: [Int64]) -> [Int64] {
        var seen: Set<Int64> = []
        return ids.filter { seen.insert($0).inserted }
    }
}

/// A snapshot document held in memory, decoded on a reading thread like a file's (``SnapshotFeed``).
final class InMemorySnapshotFeed: ChangeFeed {
    let name: String
    let bytes: [UInt8]

    init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    func merge(into merger: inout RowMerger) throws {
        let decoder = SnapshotDecoder(source: name)
        let bytes = self.bytes
        let reading = ReadingThread { queue in
            decoder.run(reader: JSONPullReader(bytes: bytes, options: .init(allowTrailingCommas: false, maxDepth: 64)), queue: queue)
        }
        defer { reading.finish() }
        try reading.mergeAll(into: &merger)
    }
}
