import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How `catalog sync` behaves (docs/cli.md §7).
public struct SyncOptions: Sendable {
    /// Merge, report, then roll back: nothing is written (not even the run ledger).
    public var dryRun = false
    /// Rows stamped more than this many ms ahead of this machine's clock are quarantined. Default 300 s.
    public var maxDriftMilliseconds: Int64 = 300_000
    /// HTTP: seconds without progress (connecting, or fewer than 1 KiB/s arriving) before giving up.
    public var timeoutSeconds: Double = 30
    /// HTTP: seconds one source's whole fetch may take, every attempt, backoff and `Retry-After` included.
    public var deadlineSeconds: Double = 600
    /// HTTP: retries on 429 / 5xx after the first attempt.
    public var retries = 3
    /// HTTP: first backoff delay in seconds (doubling).
    public var backoffSeconds: Double = 0.5
    /// Largest body accepted from HTTP, in bytes (decoded), counted as it arrives; 4 GiB by default (the
    /// base of a log of a million landmarks and a million users is about 1.1 GB).
    public var maxBytes: Int64 = 4 << 30
    /// After merging, publish the merged state here: a snapshot log when the path is a directory or does
    /// not end in `.json` (docs/log-format.md §3), else a single snapshot file (docs/snapshot-format.md §6).
    public var publishPath: String?
    /// How a snapshot log is published.
    public var publish = PublishOptions()
    /// `sync --trust KEY` (docs/trust.md §3): for this run, every source must be a snapshot log signed by
    /// one of these keys (besides the keys its saved remote trusts).
    package var trustedKeys: [MinisignPublicKey] = []
    /// Test hook: sleep this many ms inside each source's merge transaction before committing.
    @_spi(Testing) public var pauseBeforeCommitMilliseconds = 0

    public init() {}
}

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
    /// pushed: no local changes, `--dry-run`, or the hub failed first). A push commits before the pull,
    /// so a source whose pull failed may still have pushed.
    public var pushed: PushCounts?

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

    public init(sent: Int, written: Int, quarantined: Int) {
        self.sent = sent
        self.written = written
        self.quarantined = quarantined
    }
}

/// What a sync run did.
public struct SyncReport: Sendable {
    /// Each source, in the order given.
    public var sources: [SourceReport] = []
    /// Rows seen, applied, stale, tied and quarantined, over the sources that merged.
    public var counts = MergeCounts()
    /// True when everything was rolled back (`--dry-run`).
    public var dryRun = false
    /// The path the merged state was published to, if it was.
    public var published: String?
    /// What publishing a snapshot log did, when `--publish` named one.
    public var logPublish: PublishReport?
    /// An empty report: no source, nothing merged or published.
    public init(dryRun: Bool = false) { self.dryRun = dryRun }
    /// Why publishing failed, if it did.
    public var publishError: CatalogError?
    /// What merging the quarantined rows that were within the allowance by the end of the run did (not
    /// part of ``counts``, which are the sources').
    public var released = QuarantineRelease()

    /// The run's exit status: 0, or the first failure's (a source's, else publishing's), so cron still
    /// reports a failing source while the others merge (docs/cli.md §7).
    public var exitStatus: Int32 {
        if let failed = sources.first(where: { $0.error != nil })?.error { return failed.exitStatus }
        return publishError?.exitStatus ?? 0
    }

    /// The first failure, if any.
    public var firstError: CatalogError? { sources.lazy.compactMap(\.error).first ?? publishError }
}
