import Foundation

/// A kind of sync source beyond the core's own (local files, logs in a directory, standard input):
/// HTTP(S) and PostgreSQL hubs, which the `LandmarkCatalogSync` library registers so that the core
/// links neither libcurl nor libpq (docs/architecture.md).
///
/// A new kind is one file conforming to this protocol plus its registration.
package protocol SourceKind: Sendable {
    /// The source for `locator`, or nil when it is not of this kind.
    func makeSource(_ locator: SourceLocator) -> (any SyncSource)?
    /// Checks a remote's URL of this kind when it is saved (`catalog remote add`).
    /// - Throws: `CatalogError` 64 naming what is wrong.
    func checkRemote(_ locator: SourceLocator) throws
    /// This kind's own errors as a `CatalogError` with its documented status, or nil for others.
    func failure(_ error: any Error, source: String) -> CatalogError?
    /// For `sync --follow`: something that says when the source changed (a hub's `LISTEN`), or nil to
    /// poll it at the interval. The default is nil.
    /// - Throws: `CatalogError` when the source cannot be listened to now (unreachable): tried again later.
    func makeListener(_ locator: SourceLocator, options: SyncOptions) throws -> (any ChangeListener)?
}

extension SourceKind {
    package func makeListener(_ locator: SourceLocator, options: SyncOptions) throws -> (any ChangeListener)? { nil }
}

/// A follower's push channel from one source (docs/live-sync.md §3): a descriptor to poll, read when it
/// is readable.
package protocol ChangeListener: AnyObject {
    /// The descriptor to poll for reading (-1 once the channel is broken).
    var descriptor: Int32 { get }
    /// Reads what arrived. - Returns: true when the source said it changed, or the channel broke (then
    /// ``descriptor`` is -1 and the source should be polled and listened to again later).
    func consume() -> Bool
    /// The follower synced the source (its cursor as stored, and the run's context): a listener that
    /// asks the source for changes after a cursor (a serve's long-poll) asks from here. The default
    /// does nothing.
    ///
    /// - Parameters:
    ///   - cursor: the source's stored cursor.
    ///   - context: the follower's context (on the store's thread).
    func synced(cursor: SourceCursor?, context: SyncContext)
}

extension ChangeListener {
    package func synced(cursor: SourceCursor?, context: SyncContext) {}
}

/// Thrown by ``SourceKind/makeListener(_:options:)`` when the source can never notify this connection
/// (pgbouncer in transaction pooling mode): the follower says so once and polls at the interval.
package struct ListenUnsupported: Error {
    package var reason: String
    package init(reason: String) { self.reason = reason }
}

/// The registered source kinds (see ``SourceKind``).
package enum SourceKinds {
    /// Guarded by its lock: registration happens once at start-up, reads on every sync.
    private final class Registry: @unchecked Sendable {
        // @unchecked: `kinds` is only read or written while `lock` is held.
        let lock = NSLock()
        var kinds: [any SourceKind] = []
    }
    private static let registry = Registry()

    /// Registers `kind` once per type (registering again is harmless).
    package static func register(_ kind: any SourceKind) {
        registry.lock.withLock {
            if !registry.kinds.contains(where: { type(of: $0) == type(of: kind) }) { registry.kinds.append(kind) }
        }
    }

    /// Every registered kind, in registration order.
    package static var all: [any SourceKind] { registry.lock.withLock { registry.kinds } }
}
