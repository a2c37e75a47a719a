/// What `catalog status --check` found: healthy, or the problems, each one sentence.
public struct HealthCheck: Sendable, Equatable {
    /// Why the node is not healthy; empty when it is.
    public var problems: [String]
    /// One line for a healthy node: the last run and what was checked.
    public var summary: String
    /// True when there is no problem.
    public var healthy: Bool { problems.isEmpty }
}

/// What an operator watches in a catalog.
///
/// `status`, the run ledger (`catalog log`), the health check (`status --check`) and the metrics
/// (docs/operations.md). Each call is one read transaction.
///
/// ```swift
/// let health = try CatalogMonitor(store).checkHealth()
/// ```
public struct CatalogMonitor {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension CatalogMonitor {
    /// Tries in a row a source may find its manifest behind its cursor before `status --check` says so.
    public static let staleRunsLimit = 3

    /// Checks the sync's health for alerting on staleness, not on every transient failure (docs/operations.md §3).
    ///
    /// Not healthy when no sync run is recorded; without `maxAgeMilliseconds`, when the last run failed;
    /// with it, when a source of the last run has not had a good sync for longer than that (or never had
    /// one), or — for a run with no sources (a node that only publishes) or only `<stdin>` — when the last
    /// run that succeeded is older than that (or there is none). With `maxAgeMilliseconds`, one failed run
    /// whose sources all synced within it is healthy, and the summary says that the last run failed.
    ///
    /// "The last run" is the one `status` and the metrics show: runs that found another sync holding the
    /// lock (`busy`, exit 75) are not looked at, and a run still going has no outcome yet. Sources are
    /// those of the last run, so a source no longer synced does not alert forever; `<stdin>` has no last
    /// good sync and is not checked.
    ///
    /// Either way, not healthy when a source of the last run last failed with 77 (a manifest not signed by
    /// a key it trusts: a forgery or a re-keyed publisher alerts at once), or has found its log's
    /// manifest behind its cursor in more than ``staleRunsLimit`` tries in a row (a copy that never
    /// catches up, or a cursor a forged manifest moved too far: `sync --reset-cursor`).
    /// - Parameter maxAgeMilliseconds: the largest age of a last good sync, in ms; nil to check only the
    ///   last run's outcome.
    /// - Returns: the problems (empty when healthy) and a one-line summary.
    /// - Throws: `CatalogError` when the database cannot be read.
    public func checkHealth(maxAgeMilliseconds: Int64? = nil) throws -> HealthCheck {
        try store.read {
            let now = store.wallClock.nowMilliseconds()
            let lastRun = try store.runLedger.run(id: try lastEndedRunID() ?? 0).map {
                (id: $0.id, finished: $0.finishedAt, outcome: $0.outcome, status: $0.exitStatus, message: $0.message)
            }
            guard let run = lastRun else { return HealthCheck(problems: ["no sync run is recorded yet"], summary: "") }
            let failed = [RunOutcome.failed, .interrupted].contains { $0.rawValue == run.outcome }
            let failure =
                "the last sync (run \(run.id), finished \(run.finished)) failed with exit \(run.status)\(run.message.map { ": \($0)" } ?? "")"
            let names = try RemoteBook(store).remoteNamesBySourceKey()
            var sourceProblems: [String] = []
            for key in try store.runLedger.sourceNames(ofRun: run.id) where key != SourceLocator.standardInput.description {
                let source = names[key].map { "\($0) (\(key))" } ?? key
                if let row = try store.sourceTable.source(key), row.lastStatus == Int(CatalogError.Kind.untrusted.rawValue) {
                    sourceProblems.append("source \(source) last failed with exit 77 (not trusted)\(row.lastError.map { ": \($0)" } ?? "")")
                }
                let behind = LogReader.behindCount(try store.sourceTable.cursor(key))
                if behind > Self.staleRunsLimit {
                    sourceProblems.append(
                        "source \(source) has found its manifest behind this database's cursor in \(behind) tries in a row: a copy that does not catch up, or a cursor moved too far (catalog sync --reset-cursor \(names[key] ?? key))"
                    )
                }
            }
            guard let maxAge = maxAgeMilliseconds else {
                if failed || !sourceProblems.isEmpty {
                    return HealthCheck(problems: (failed ? [failure] : []) + sourceProblems, summary: "")
                }
                return HealthCheck(problems: [], summary: "healthy: the last sync (run \(run.id)) finished at \(run.finished) (\(run.outcome))")
            }
            let limit = Durations.describe(milliseconds: maxAge)
            var problems: [String] = sourceProblems
            var checked = 0
            for key in try store.runLedger.sourceNames(ofRun: run.id) where key != SourceLocator.standardInput.description {
                let source = names[key].map { "\($0) (\(key))" } ?? key
                checked += 1
                guard let text = try store.sourceTable.source(key)?.lastSuccess, let last = Timestamp.parse(text) else {
                    problems.append("source \(source) has never had a good sync")
                    continue
                }
                if now - last > maxAge {
                    problems.append(
                        "source \(source) last had a good sync at \(text), \(Durations.describe(milliseconds: now - last)) ago (more than \(limit))")
                }
            }
            if checked == 0 {
                // No source to judge by: the last run that succeeded is the last good sync.
                let good = try store.runLedger.lastSucceeded().map { (id: $0.id, finished: $0.finishedAt) }
                if let good, let finished = Timestamp.parse(good.finished) {
                    if now - finished > maxAge {
                        problems.append(
                            "the last good sync (run \(good.id)) finished at \(good.finished), \(Durations.describe(milliseconds: now - finished)) ago (more than \(limit))"
                        )
                    }
                } else {
                    problems.append("no sync run has succeeded yet")
                }
            }
            if failed && !problems.isEmpty { problems.insert(failure, at: 0) }
            var summary = failed ? "healthy: \(failure)" : "healthy: the last sync (run \(run.id)) finished at \(run.finished) (\(run.outcome))"
            summary +=
                checked == 0
                ? (failed ? "; the last good sync was within \(limit)" : ", within \(limit)")
                : checked == 1
                    ? "; its source had a good sync within \(limit)"
                    : "; its \(checked) sources had a good sync within \(limit)"
            return HealthCheck(problems: problems, summary: problems.isEmpty ? summary : "")
        }
    }
}

/// Durations in words for messages.
public enum Durations {
    /// `45 s`, `15 min`, `2 h 5 min`, `3 d 4 h` (rounded down to the unit shown).
    /// - Parameter ms: a duration in ms (a negative one is shown as `0 s`).
    /// - Returns: the duration in at most two units.
    public static func describe(milliseconds ms: Int64) -> String {
        let s = max(0, ms / 1000)
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min" + (s % 60 == 0 ? "" : " \(s % 60) s") }
        if s < 86_400 { return "\(s / 3600) h" + (s / 60 % 60 == 0 ? "" : " \(s / 60 % 60) min") }
        return "\(s / 86_400) d" + (s / 3600 % 24 == 0 ? "" : " \(s / 3600 % 24) h")
    }
}
