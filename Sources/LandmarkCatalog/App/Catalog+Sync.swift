/// `Catalog.sync`: kept in a file of its own, because its sources (HTTP, a PostgreSQL hub) are the part of
/// the library an app that only reads and writes its own database does not need.
extension Catalog {
    /// Syncs with `sources` (docs/cli.md §7): each source is fetched, then merged in one transaction with
    /// last-writer-wins; a source that fails changes nothing and is reported.
    ///
    /// Observers are woken when it returns.
    ///
    /// The sync runs on a write connection and a thread of its own, not the writer's: a fetch may take
    /// up to its deadline, and ``setPosition(user:to:)`` and the other writes go on meanwhile. They wait
    /// only while a source's merge transaction commits (SQLite serialises the two connections with
    /// `BEGIN IMMEDIATE` and the busy timeout, https://sqlite.org/lang_transaction.html). Syncs of one
    /// `Catalog` run one at a time, and the sync lock keeps them one at a time across processes.
    ///
    /// Cancelling the calling task before the sync starts throws `CancellationError`; once started, a sync
    /// runs to its end (each source is one transaction: merged whole or not at all).
    /// - Parameters:
    ///   - sources: paths, log directories or manifests, `-`, or saved remote names; empty means the saved
    ///     remotes. `http(s)://` URLs and PostgreSQL hubs need the `LandmarkCatalogSync` library and its
    ///     `NetworkSources.register()` (without it such a SOURCE is an unsupported scheme: 64).
    ///   - options: dry run, drift allowance, HTTP limits, the publish path (``SyncOptions``).
    ///   - progress: called on the sync's thread while a source merges (phase `.merging`) and while
    ///     `--publish` writes (phase `.writing`).
    ///   - diagnostics: warnings (quarantine, ties, retries) and errors with their location.
    /// - Returns: per-source outcomes and counts; ``SyncReport/exitStatus`` is the first failure's.
    /// - Throws: `CatalogError` 75 when another sync holds the lock, 64 for a bad SOURCE or nothing to
    ///   sync, 73 for a read-only catalog or when the lock file cannot be made.
    @discardableResult
    public func sync(
        _ sources: [String] = [], options: SyncOptions = SyncOptions(),
        progress: @escaping @Sendable (CatalogProgress) -> Void = { _ in },
        diagnostics: @escaping @Sendable (Diagnostic) -> Void = { _ in }
    ) async throws -> SyncReport {
        try await sideWrite { store in
            try SyncRunner(store: store).sync(sources: sources, options: options, diagnostics: diagnostics, progress: progress)
        }
    }
}
