import Foundation
import Observation

/// A ``SyncSession``'s status as an `@Observable` value a SwiftUI view reads directly, on the main actor
/// (docs/swift-library.md, "Showing the status").
///
/// ```swift
/// @State private var sync: SyncStatusModel
/// init(session: SyncSession) { _sync = State(initialValue: SyncStatusModel(session: session)) }
/// var body: some View {
///     switch sync.status.state {
///     case .connecting: Text("Connecting…")
///     case .connected where sync.status.lastError?.reason == .clockAhead: Text("Check this device's clock")
///     case .connected: Text(sync.status.pendingChanges == 0 ? "Up to date" : "Syncing…")
///     case .offline: Text("Offline — \(sync.status.pendingChanges) waiting")
///     case .failing: Text(sync.status.lastError?.message ?? "Sync failed")
///     case .accountErased: Text("Your account and its data were deleted.")
///     }
/// }
/// ```
///
/// It follows ``SyncSession/statusUpdates`` until the session stops or the model is released; it costs
/// nothing while the status does not change.
@Observable
@MainActor
public final class SyncStatusModel {
    /// The session's status, updated on the main actor as it changes.
    public private(set) var status: SyncStatus
    @ObservationIgnored private var following: Task<Void, Never>?

    /// Follows `session`'s status.
    public init(session: SyncSession) {
        status = session.status
        following = Task { [weak self] in
            for await status in session.statusUpdates {
                guard let self else { return }
                if self.status != status { self.status = status }
            }
        }
    }

    deinit { following?.cancel() }
}
