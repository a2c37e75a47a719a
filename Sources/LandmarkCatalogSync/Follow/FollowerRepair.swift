import Foundation
import LandmarkCatalog

extension Follower {
    /// Under `sync --follow --repair`, repairs against source `n` after its poll when a check is due.
    ///
    /// When (docs/repair.md §7, docs/live-sync.md §2): at the source's first good poll, after a poll in which
    /// the source forgot this node, and after a good poll that ends a run of failures (the source may
    /// have been restored while it was away). An idle source costs nothing. Another catalog database has
    /// no feed: each of its polls is a repair.
    ///
    /// - Parameters:
    ///   - n: the source's index in `followed`.
    ///   - r: its poll's report; a failed repair fails it, as in ``SyncRepair/afterSync(_:report:context:)``.
    ///   - context: the poll's context.
    ///   - cycle: rows the repair applied make the other pushing sources due, as a merge's do.
    func repairIfDue(_ n: Int, after r: inout SourceReport, context: SyncContext, in cycle: inout Cycle) {
        let due = !followed[n].repairChecked || r.sourceForgot || followed[n].failures > 0 || SyncRepair.isDatabaseFile(followed[n].locator)
        // Stopping (SIGTERM): no check is started that the stop would cut short; the next run makes it.
        guard r.error == nil, due, !control.isStopping else { return }
        let repaired = SyncRepair(store: store).afterSync(followed[n].locator, report: &r, context: context)
        followed[n].repairChecked = r.error == nil
        guard let repaired else { return }
        cycle.report.repairs[r.source] = repaired
        if repaired.rowsApplied > 0 {
            wantPush(except: n)
            for h in followed.indices where followed[h].pushes && h != n { cycle.pushNeeded.insert(h) }
        }
    }
}
