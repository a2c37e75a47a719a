/// What happened to one source in a sync run.
public struct SourceReport: Sendable {
    /// `merged`: rows were read and merged; `not-modified`: nothing new (an HTTP 304, a log at its end);
    /// `failed`: the source changed nothing (see `error`).
    public enum Outcome: String, Sendable {
        case merged
        case notModified = "not-modified"
        case failed
    }
    /// The source: an absolute path, a URL without its password, or `<stdin>`.
    public var source: String
    /// What happened to it.
    public var outcome: Outcome
    /// Bytes fetched.
    public var bytes: Int64 = 0
    /// What merging it did (zero for a failed source: its transaction rolled back).
    public var counts = MergeCounts()
    /// Why it failed.
    public var error: CatalogError?
    /// Wall time spent on it, in ms.
    public var durationMilliseconds: Int64 = 0
    /// What to know about an outcome that is no failure: a log's manifest behind this database's cursor
    /// (an old copy served; nothing fetched, the cursor kept).
    public var note: String?
    /// For a PostgreSQL hub: what this node pushed to it (nil for other sources, and when nothing was
    /// pushed: no local changes, `--dry-run`, or the hub failed first).
    ///
    /// A push commits before the pull, so a source whose pull failed may still have pushed.
    public var pushed: PushCounts?
    /// The source answered as one that forgot this node (a serve restored from a backup or replaced)
    /// and, under `sync --repair`, nothing was re-read: the repair that follows brings the copies together.
    public var sourceForgot = false

    package init(source: String, outcome: Outcome) {
        self.source = source
        self.outcome = outcome
    }
}

/// What a push to a hub did.
public struct PushCounts: Sendable, Equatable {
    /// Rows sent (this node's changes since its last push).
    public var sent: Int
    /// Of them, rows that won by last-writer-wins and were written on the hub.
    public var written: Int
    /// Of them, rows the hub held back (stamped beyond its drift allowance).
    public var quarantined: Int
    /// Of them, rows the hub refused as expired: stamped before its collection horizon for a key it has
    /// no row for (docs/erasure.md §7); this node removes them from its own copy too.
    public var expired: Int
    /// Of `sent`, erasure records (docs/erasure.md §2) rather than rows.
    public var erasures: Int

    public init(sent: Int, written: Int, quarantined: Int, expired: Int = 0, erasures: Int = 0) {
        self.sent = sent
        self.written = written
        self.quarantined = quarantined
        self.expired = expired
        self.erasures = erasures
    }
}
