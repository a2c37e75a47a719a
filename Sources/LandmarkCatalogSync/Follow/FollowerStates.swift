import Foundation
import LandmarkCatalog

extension Follower {
    /// Kinds of warning that describe a source's lasting state, not one event: shown once, and again only
    /// after a poll without it (the state changed and came back).
    ///
    /// `pull-only`: a hub role that may only read (docs/hub.md §4) is said at every `sync` run, but a
    /// follower polls every interval (it warned at every poll).
    static let stateKinds: Set<String> = ["pull-only"]

    /// Syncs source `n` as ``SourceSync/syncReporting(_:context:failed:)`` does, showing a warning of a
    /// ``stateKinds`` kind only when the source was not in that state at its last poll.
    ///
    /// - Parameters:
    ///   - n: the source's index in `followed`.
    ///   - context: the poll's context (its diagnostics are filtered).
    /// - Returns: the source's report.
    func syncSayingStatesOnce(_ n: Int, context: inout SyncContext) -> SourceReport {
        final class Seen { var kinds = Set<String>() }
        let seen = Seen()
        let shown = followed[n].states
        let outer = context.diagnostics
        context.diagnostics = { diagnostic in
            if Self.stateKinds.contains(diagnostic.kind) {
                seen.kinds.insert(diagnostic.kind)
                if shown.contains(diagnostic.kind) { return }
            }
            outer(diagnostic)
        }
        let report = SourceSync(store: store).syncReporting(followed[n].locator, context: context)
        // A failed poll may have stopped before the state was looked at: it changes nothing.
        followed[n].states = report.error == nil ? seen.kinds : shown.union(seen.kinds)
        return report
    }
}
