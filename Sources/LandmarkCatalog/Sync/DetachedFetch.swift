import Foundation

/// What one source's fetch and merge need besides the feeds, read on the store's thread.
struct SourceSyncPlan {
    let source: any SyncSource
    /// The cursor stored for the source.
    let stored: SourceCursor?
    /// The cursor the fetch starts from (nil with `--reset-cursor`; without validators after a fresh look).
    let cursor: SourceCursor?
    /// The run's context with the source's trusted keys.
    var context: SyncContext
    /// The source's write grant.
    let allow: WriteGrant
}

/// A follower's fetch of one HTTP source on a worker thread (docs/live-sync.md §3: one hung
/// server held every other source's merge for 28 s).
///
/// ``SourceSync/detachedFetch(_:context:)`` reads the cursor and trust on the store's thread; ``run()``
/// fetches on any thread and touches no database (its warnings are kept, not reported, until
/// ``SourceSync/syncReporting(_:context:)`` merges the result on the store's thread and replays them).
/// A log file gone while it was fetched gets one fresh look, as in `sync`.
package final class DetachedFetch: @unchecked Sendable {
    // @unchecked: the mutable state is read and written under `lock`; `plans` is set before the fetch is
    // handed to its thread and only read after.
    private let lock = NSLock()
    /// The source.
    package let locator: SourceLocator
    /// When the fetch was planned (wall ms).
    let started: Int64
    /// The plan, and the fresh look's (another source object, the cursor without validators).
    var plans: (first: SourceSyncPlan, freshLook: SourceSyncPlan)?
    private var result: Result<(SourceSyncPlan, [any ChangeFeed]?), any Error>?
    private var kept: [Diagnostic] = []
    private var used: [any SyncSource] = []

    init(locator: SourceLocator, started: Int64) {
        self.locator = locator
        self.started = started
    }

    /// Whether ``run()`` has returned (or planning failed).
    package var isFinished: Bool { lock.withLock { result != nil } }

    /// Fetches (on the caller's thread; the store is not used).
    package func run() {
        guard let plans, !isFinished else { return }
        lock.withLock { used = [plans.first.source] }
        do {
            let feeds = try plans.first.source.fetch(since: plans.first.cursor, context: plans.first.context)
            finish(.success((plans.first, feeds)))
        } catch is LogFileGone {
            lock.withLock { used.append(plans.freshLook.source) }
            do {
                let feeds = try plans.freshLook.source.fetch(since: plans.freshLook.cursor, context: plans.freshLook.context)
                finish(.success((plans.freshLook, feeds)))
            } catch {
                finish(.failure(error))
            }
        } catch {
            finish(.failure(error))
        }
    }

    func finish(_ result: Result<(SourceSyncPlan, [any ChangeFeed]?), any Error>) {
        lock.withLock { self.result = result }
    }

    /// What was fetched, once finished.
    ///
    /// - Returns: the plan that fetched and its feeds.
    /// - Throws: what planning or the fetch threw.
    func fetched() throws -> (SourceSyncPlan, [any ChangeFeed]?) {
        guard let result = lock.withLock({ result }) else {
            throw CatalogError(.software, "a detached fetch of \(locator.description) was merged before it finished")
        }
        return try result.get()
    }

    /// Whether the source that fetched has more to do at once (``SyncSource/wantsAgain``).
    package var wantsAgain: Bool { made.last?.wantsAgain ?? false }

    /// The source objects the fetch used (for bytes and notes).
    var made: [any SyncSource] { lock.withLock { used } }

    func keep(_ diagnostic: Diagnostic) { lock.withLock { kept.append(diagnostic) } }

    func takeDiagnostics() -> [Diagnostic] {
        lock.withLock {
            defer { kept = [] }
            return kept
        }
    }
}
