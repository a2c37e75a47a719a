import Foundation

/// `sync --repair` (docs/repair.md §7): after a source's sync, a repair against the source when it can
/// answer one.
///
/// The repair's opening round is the check: copies that agree cost one round trip (56 bytes), and only
/// copies that differ go on. When the source forgot this node (a serve restored or replaced), its sync
/// left the re-read out and the repair brings the copies together; the source's cursor then moves to
/// where the source stood when the repair began, so later syncs go on incrementally from there.
package struct SyncRepair {
    /// The catalog repaired.
    package let store: CatalogStore

    package init(store: CatalogStore) { self.store = store }

    /// Whether `locator` names a file that starts with SQLite's header, another catalog database.
    package static func isDatabaseFile(_ locator: SourceLocator) -> Bool {
        guard case .file(let path) = locator else { return false }
        return isDatabase(path: path)
    }

    /// Whether the file at `path` starts with SQLite's 16-byte header, "SQLite format 3\0"
    /// (https://sqlite.org/fileformat.html#the_database_header).
    package static func isDatabase(path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        return header == Data("SQLite format 3\0".utf8)
    }

    /// The one place a SOURCE yields its repair peer: another catalog database by its path, else what
    /// the source's kind answers (``SourceKind/repairPeer(_:context:)``: a serve with an edge token, a hub);
    /// nil for standard input, a snapshot file or log, and a kind that cannot answer a repair.
    ///
    /// - Parameters:
    ///   - locator: the source.
    ///   - context: the run's options (the dry run, the token file) and trust.
    /// - Returns: the peer, or nil.
    /// - Throws: `CatalogError` when the other database cannot be opened or a token file read.
    package func peer(for locator: SourceLocator, context: SyncContext) throws -> (any RepairPeer)? {
        switch locator {
        case .standardInput: return nil
        case .file(let path):
            guard Self.isDatabase(path: path) else { return nil }
            let other = try CatalogStore.open(path: path, access: .write, wallClock: store.wallClock)
            return DatabaseRepairPeer(store: other, name: store.path, dryRun: context.options.dryRun)
        case .claimed(let claim): return try claim.kind.repairPeer(claim, context: context)
        }
    }

    /// Repairs against source `locator` after its sync, when the sync succeeded.
    ///
    /// A source that cannot answer a repair gets one warning (kind `no-repair`) and its sync stands.
    /// A repair that fails marks the source failed with the repair's status (its rows merged so far
    /// stay: each message's rows are one transaction, as a sync's are).
    /// - Parameters:
    ///   - locator: the source.
    ///   - report: the source's sync report; a failure, or `merged` when the repair applied or sent rows.
    ///   - context: the run's options and diagnostics.
    /// - Returns: what the repair did, or nil when none ran.
    package func afterSync(_ locator: SourceLocator, report: inout SourceReport, context: SyncContext) -> RepairReport? {
        guard report.error == nil else { return nil }
        let key = locator.description
        do {
            guard let peer = try peer(for: locator, context: context) else {
                context.diagnostics(
                    Diagnostic(
                        severity: .warning,
                        message:
                            "\(key) cannot answer a repair (a snapshot file or log, standard input, or a user token): synced without one",
                        file: key, kind: "no-repair"))
                return nil
            }
            let trust = try RemoteBook(store).trustForSource(key: key)
            let localThrough = try store.changeSequence()
            let repaired = try Repair.run(
                store: store, peer: peer, source: key, dryRun: context.options.dryRun,
                maxDriftSeconds: Double(context.options.maxDriftMilliseconds) / 1000, grant: trust.allow)
            if repaired.rowsApplied > 0 || repaired.rowsSent > 0 { report.outcome = .merged }
            if !context.options.dryRun, let warning = repaired.apartWarning(source: key) { context.diagnostics(warning) }
            let now = store.wallClock.nowMilliseconds()
            if report.sourceForgot, !context.options.dryRun,
                let cursor = peer.cursorAfterRepair(held: try store.read { try store.sourceTable.cursor(key) }, localThrough: localThrough)
            {
                try store.write { try SyncLedger(store: store).noteSourceSuccess(locator, cursor: cursor, outcome: .merged, at: now) }
            } else if Self.isDatabaseFile(locator), !context.options.dryRun {
                // The repair was this source's sync: its last good sync is now (it keeps no cursor).
                let outcome = report.outcome
                try store.write { try SyncLedger(store: store).noteSourceSuccess(locator, cursor: nil, outcome: outcome, at: now) }
            }
            return repaired
        } catch {
            let failure = SourceSync.failure(error, source: key, path: store.path)
            report.error = failure
            report.outcome = .failed
            if !context.options.dryRun { try? SyncLedger(store: store).noteSourceFailure(locator, error: failure) }
            return nil
        }
    }
}
