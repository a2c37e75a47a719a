import Foundation
import LandmarkCatalog

/// A PostgreSQL hub as a sync source (docs/hub.md §5): `fetch` connects (migrating the hub's schema when it is
/// behind this binary) and PUSHES this node's changes since its last push in one PostgreSQL transaction
/// (``HubConnection/push(from:since:maxDriftMilliseconds:hooks:)``); the feed it returns PULLS the hub's
/// changes since the last pull inside the engine's SQLite transaction (``HubPullFeed``).
///
/// The cursor (one per hub, kept by the store): `hub` (the hub's identity), `pushThrough` (the local
/// change sequence number pushed through), `pullThrough` (the hub sequence number pulled through),
/// `pushedAt`, `pulledAt` (UTC, RFC 3339). A hub with another identity (dropped and created again) or
/// whose sequence is behind the cursor (restored from an older backup) means starting over: push
/// everything, pull everything — safe, since merging is idempotent.
///
/// A dry run pushes nothing and does not migrate the hub; it pulls and merges, and the engine rolls back.
final class HubSource: SyncSource {
    let locator: SourceLocator
    let conninfo: String
    let hooks: HubTestHooks
    /// Set by the feed once merged; before that, the cursor with this run's push recorded.
    var nextCursor: SourceCursor?
    /// Bytes read from the hub (row values, approximately).
    var bytesFetched: Int64 = 0
    /// The cursor the pull builds on: identity and push fields of this run.
    private(set) var baseCursor = SourceCursor()
    /// This run's push, once done.
    private(set) var lastPush: HubPushReport?
    var pushed: PushCounts? {
        guard let push = lastPush, push.pushed, push.sent > 0 else { return nil }
        return PushCounts(
            sent: push.sent, written: push.written, quarantined: push.quarantined, expired: push.expired, erasures: push.sentErasures)
    }
    /// The hub no longer holds what this database last saw and the run repairs (`sync --repair`): nothing
    /// is re-read, the repair after the sync brings the copies together.
    private(set) var forgotUs = false
    /// The open connection (kept for the pull, closed when the source is released).
    private var connection: HubConnection?

    init(conninfo: String, hooks: HubTestHooks = HubTestHooks()) {
        self.conninfo = conninfo
        self.locator = HubSourceKind.locator(conninfo)
        self.hooks = hooks
    }

    func fetch(since cursor: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]? {
        let options = context.options
        let name = locator.description
        // A hub's rows are not signed (docs/trust.md §6: its roles are the hub's access control).
        try context.requireUnsigned("a PostgreSQL hub's change feed", source: name)
        let hub = try connect(limits: HubLimits(options: options), migrate: !options.dryRun, kept: context.kept, cancellation: options.cancellation)
        connection = hub
        var pushThrough = cursor?["pushThrough"].flatMap { Int64($0) } ?? 0
        var pullThrough = cursor?["pullThrough"].flatMap { Int64($0) } ?? 0
        if try !keepsCursor(cursor, hub: hub, pullThrough: pullThrough, context: context) {
            pushThrough = 0
            pullThrough = 0
        }
        var base = SourceCursor()
        base["hub"] = hub.hubID
        base["pushThrough"] = String(pushThrough)
        base["pullThrough"] = String(pullThrough)
        base["pushedAt"] = cursor?["hub"] == hub.hubID ? cursor?["pushedAt"] : nil
        var push: HubPushReport?
        // Least privilege (docs/hub.md §4): a role that may only read the hub syncs pull-only, said once a
        // run; this node's changes wait (the push cursor stays) until a role that may write syncs.
        let pullOnly = try HubConnection.mapping(name) { try hub.pg.execute(sql: HubSQL.canPush).bool(0, 0) != true }
        if pullOnly {
            context.diagnostics(
                Diagnostic(
                    severity: .warning,
                    message:
                        "this role may only read the hub: synced pull-only, nothing pushed (this node's changes stay here until a role that may write syncs)",
                    file: name, kind: "pull-only"))
        }
        if !options.dryRun && !pullOnly {
            let report = try HubConnection.mapping(name) {
                try hub.push(from: context.store, since: pushThrough, maxDriftMilliseconds: options.maxDriftMilliseconds, hooks: hooks) {
                    rows, bytes in
                    context.progress(CatalogProgress(records: rows, bytes: bytes, totalBytes: nil, phase: .pushing, subject: name))
                }
            }
            if report.quarantined > 0 {
                context.diagnostics(
                    Diagnostic(
                        severity: .warning,
                        message:
                            "the hub quarantined \(report.quarantined) of \(plural(report.sent, "row")) pushed: stamped more than \(options.maxDriftMilliseconds / 1000) s ahead of the hub's clock; they apply once it catches up",
                        file: name, kind: "quarantined"))
            }
            if report.expired > 0 {
                context.diagnostics(
                    Diagnostic(
                        severity: .warning,
                        message:
                            "the hub refused \(report.expired) of \(plural(report.sent, "row")) pushed as expired: stamped before its collection horizon for keys it no longer holds (a deletion collected there); removed here too (docs/erasure.md §7)",
                        file: name, kind: "expired"))
            }
            pushThrough = report.through
            base["pushThrough"] = String(pushThrough)
            base["pushedAt"] = Timestamp.format(milliseconds: context.store.wallClock.nowMilliseconds())
            push = report
            lastPush = report
        }
        baseCursor = base
        nextCursor = base
        if forgotUs {
            // Nothing is pulled: the cursor keeps the hub's old identity, pull point and mark, so a repair
            // that fails finds the same again next time; what was pushed is kept.
            base["hub"] = cursor?["hub"]
            base["history"] = cursor?["history"]
            base["pulledAt"] = cursor?["pulledAt"]
            nextCursor = base
            return (push?.sent ?? 0) > 0 ? [] : nil
        }
        return [HubPullFeed(source: self, hub: hub, since: pullThrough, push: push, pushThrough: pushThrough, dryRun: options.dryRun)]
    }

    /// Whether this run goes on from `cursor`: not when there is none, nor when the hub lost what it names
    /// (docs/hub.md §9) — then everything is pushed and pulled again, one warning (kind `hub-reset`); under
    /// `sync --repair` the cursor stays and the repair after the sync takes the place of the re-read
    /// (docs/repair.md §7, kind `forgot`).
    /// - Throws: `CatalogError` 69 / 70 when the hub cannot be read.
    private func keepsCursor(_ cursor: SourceCursor?, hub: HubConnection, pullThrough: Int64, context: SyncContext) throws -> Bool {
        guard let previous = cursor?["hub"] else { return false }
        guard let reason = try Self.lostHistory(hub, identity: previous, pullThrough: pullThrough, mark: cursor?["history"]) else {
            return true
        }
        let name = locator.description
        if context.options.repair {
            forgotUs = true
            context.diagnostics(
                Diagnostic(
                    severity: .warning, message: "\(reason): repairing instead of pushing and pulling everything (docs/repair.md §7)",
                    file: name, kind: "forgot"))
            return true
        }
        context.diagnostics(
            Diagnostic(
                severity: .warning,
                message: "\(reason): pushing everything this database has and pulling everything (docs/hub.md, \"Restoring a hub\")",
                file: name, kind: "hub-reset"))
        return false
    }

    /// The hub's connection: for a follower (`kept`), the one kept from its last poll when it is still
    /// good — its identity and sequence read again, its schema not checked again — else a new one,
    /// opened, migrated and kept; for a `sync` run, a new one.
    ///
    /// A kept connection that the hub dropped (restarted, a network cut: ``PGError/isUnavailable``) is
    /// opened again, once; when that fails, the poll fails as a first connection would.
    /// - Parameters:
    ///   - limits: this poll's timeouts (a connection opened with others is not reused).
    ///   - migrate: apply pending hub migrations when opening.
    ///   - kept: the follower's kept connections, or nil.
    ///   - cancellation: the follower's stop (a kept connection takes this poll's), or nil.
    /// - Returns: an open connection, identified.
    /// - Throws: `CatalogError` as ``HubConnection/init(conninfo:name:limits:migrate:)``.
    private func connect(
        limits: HubLimits, migrate: Bool, kept: KeptConnections?, cancellation: TransferCancellation?
    ) throws -> HubConnection {
        let name = locator.description
        let open = { try HubConnection(conninfo: self.conninfo, name: name, limits: limits, migrate: migrate, cancellation: cancellation) }
        guard let kept else { return try open() }
        if let hub = kept[name] as? HubConnection, hub.conninfo == conninfo {
            // Another poll's limits (the follower's last pass): a connection of its own; the kept one stays.
            guard hub.limits == limits else { return try open() }
            kept[name] = nil
            hub.pg.cancellation = cancellation
            // A connection left inside a transaction (a failure in the middle of a pull) is not reused.
            if hub.pg.isOpen && !hub.pg.isInTransaction {
                let alive = try HubConnection.mapping(name) { () throws -> Bool in
                    do {
                        try hub.identify()
                        return true
                    } catch let error as PGError where error.isUnavailable {
                        return false  // dropped by the hub since the last poll: opened again below, once
                    }
                }
                if alive {
                    kept[name] = hub
                    return hub
                }
            }
        }
        let hub = try open()
        kept[name] = hub
        return hub
    }

    /// Why the hub no longer holds what this edge last saw, or nil when it does (docs/hub.md, "Restoring a
    /// hub"): another identity (dropped and created again); a history row this edge's cursor names that the
    /// hub no longer has, or has with another token (restored from a backup, even when other edges pushed
    /// since and took the same numbers again); a sequence behind the cursor (a cursor from before the
    /// hub kept a history).
    /// - Throws: `CatalogError` 69 / 70 when the hub cannot be read.
    static func lostHistory(_ hub: HubConnection, identity: String, pullThrough: Int64, mark: String?) throws -> String? {
        if identity != hub.hubID {
            return "the hub is not the one this database last synced with (it was created again)"
        }
        if hub.hasHistory, let mark, let colon = mark.firstIndex(of: ":"), let seq = Int64(mark[..<colon]) {
            let token = String(mark[mark.index(after: colon)...])
            let found = try HubConnection.mapping(hub.name) {
                let result = try hub.pg.execute(sql: HubSQL.historyToken, [.integer(seq)])
                return result.rowCount == 1 ? result.text(0, 0) : nil
            }
            if found != token {
                return "the hub no longer holds the history this database last saw (restored from a backup, or replaced)"
            }
        }
        if pullThrough > hub.lastSequence {
            return "the hub is behind this database's cursor (restored from a backup, or replaced)"
        }
        return nil
    }
}
