import Foundation

#if os(Linux)
    import Glibc
#endif

/// How `catalog sync` behaves (docs/cli.md §7).
public struct SyncOptions: Sendable {
    /// Merge, report, then roll back: nothing is written (not even the run ledger).
    public var dryRun = false
    /// Rows stamped more than this many ms ahead of this machine's clock are quarantined.
    ///
    /// Default 300 s.
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
    /// Test hook: makes the source for a locator instead of the built-in kinds when it returns one.
    package var sourceFactory: (@Sendable (SourceLocator) -> (any SyncSource)?)?
    /// `sync --trust KEY` (docs/trust.md §3): for this run, every source must be a snapshot log signed by
    /// one of these keys (besides the keys its saved remote trusts).
    package var trustedKeys: [MinisignPublicKey] = []
    /// `sync --reset-cursor`: each source of the run is read as if never synced (from its start: a log's
    /// base and every delta, an HTTP source unconditionally); the cursor stored with its merge replaces the
    /// old one (docs/cli.md §7).
    ///
    /// Merging is idempotent, so nothing is lost.
    public var resetCursor = false
    /// `--token-file`: the file holding the bearer token for `catalog+https://` sources given on the command
    /// line (a saved remote keeps its own, ``Remote/tokenFile``).
    ///
    /// Read at each sync; never logged.
    public var tokenFile: String?
    /// `sync --repair` (docs/repair.md §7): after each source's sync, a repair against it when it can
    /// answer one (its opening round is the check: one round trip when the copies agree), and, when the
    /// source forgot this node (restored or replaced), a repair instead of pushing and pulling everything.
    public var repair = false
    /// A follower's: ends its transfers and retry waits when it stops (nil: they run to their limits).
    package var cancellation: TransferCancellation?
    /// Test hook: sleep this many ms inside each source's merge transaction before committing.
    @_spi(Testing) public var pauseBeforeCommitMilliseconds = 0

    public init() {}
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
    /// `sync --repair`: what the repair did, by source key (each source's ``SourceReport/source``), for
    /// the sources a repair ran against.
    public var repairs: [String: RepairReport] = [:]

    /// The run's exit status: 0, or the first failure's (a source's, else publishing's), so cron still
    /// reports a failing source while the others merge (docs/cli.md §7).
    public var exitStatus: Int32 {
        if let failed = sources.first(where: { $0.error != nil })?.error { return failed.exitStatus }
        return publishError?.exitStatus ?? 0
    }

    /// The first failure, if any.
    public var firstError: CatalogError? { sources.lazy.compactMap(\.error).first ?? publishError }
}
