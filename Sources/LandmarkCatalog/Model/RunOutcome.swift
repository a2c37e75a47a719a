/// How a run ended, as the ledger stores it in `sync_runs.outcome` and `catalog log --json` prints it
/// (``SyncRun/outcome`` holds the raw value).
package enum RunOutcome: String, Sendable, CaseIterable {
    /// Every source synced (or nothing to sync but publishing).
    case ok
    /// Every source answered that nothing changed, and the run changed nothing else.
    case notModified = "not-modified"
    /// A source, or the publish, failed: the run's exit status is the first failure's.
    case failed
    /// Another sync held the lock, or the database's write lock outlived the busy timeout: nothing was done.
    case busy
    /// Not ended yet (the run's first ledger row).
    case running
    /// Its process died while it was `running` (marked so by the next run).
    case interrupted

    /// The one rule for an ended run, `catalog sync`'s and a `--follow` cycle's.
    ///
    /// - Parameters:
    ///   - sources: the sources the ledger row lists.
    ///   - failed: whether a source or the publish failed (``SyncReport/firstError``).
    ///   - changedBeyondSources: whether the run changed something its sources' outcomes do not show (rows
    ///     released, pushed or published). A follow cycle passes what it changed, so a cycle that only
    ///     published is `ok`; `sync` passes false: a run whose every source was not modified is
    ///     `not-modified`, whatever it published.
    /// - Returns: `failed`, `not-modified` (every source not modified, at least one, nothing else changed),
    ///   else `ok`.
    package static func ended(sources: [SourceReport], failed: Bool, changedBeyondSources: Bool) -> RunOutcome {
        if failed { return .failed }
        let unchanged = !sources.isEmpty && sources.allSatisfy { $0.outcome == .notModified }
        return unchanged && !changedBeyondSources ? .notModified : .ok
    }
}
