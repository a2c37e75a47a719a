import Foundation

/// A kind of sync source beyond the core's own: the SOURCEs it claims, its noun and what it can do.
///
/// The core's own are local files, logs in a directory and standard input (docs/architecture.md §4). The
/// `LandmarkCatalogSync` library registers HTTP(S), PostgreSQL hubs and `catalog serve`, so that the core
/// links neither libcurl nor libpq.
///
/// A new kind is one type conforming to this protocol plus its registration (`SourceKinds.register(_:)`):
/// the core parses its SOURCEs, stores its cursors and ledger rows under its ``name``, lists its ``forms``
/// in hints, and the follower, `remote` and the publisher ask its ``capabilities``; none of them names a kind.
package protocol SourceKind: Sendable {
    /// The kind's noun: the `kind` stored with each of its sources and ledger rows, the metrics' `kind`
    /// label, and the word its messages use (`http`, `hub`, `serve`). Stored rows carry it: a shipped
    /// kind's name never changes.
    var name: String { get }
    /// The URL schemes it claims, lowercase, without `://` (`postgres`, `postgresql`).
    var schemes: [String] { get }
    /// How its SOURCEs are written, as the unsupported-scheme hint and the remote help list them
    /// (`postgres://`, `'host=H dbname=D'`). The default is each scheme with `://`.
    var forms: [String] { get }
    /// The phrase `catalog sync --help` gives it in its list of SOURCEs. The default lists ``forms``.
    var help: String { get }
    /// What it can do, which the follower, `remote` and the publisher ask. The default is none.
    var capabilities: SourceCapabilities { get }
    /// Why `--trust` (a signed snapshot log, docs/trust.md §3) cannot apply to its sources, or nil when it
    /// may carry one. The default is nil.
    var trustRefusal: String? { get }
    /// The merger's words for a source of this kind whose rows fail to decode, after its name
    /// (`is not a valid snapshot`, the default).
    var invalidRows: String { get }
    /// Whether it claims `text`, a SOURCE without a scheme that is not `-` (a libpq keyword string); an
    /// existing file of that name is the file all the same. The default claims none.
    func claims(bare text: String) -> Bool
    /// Parses a SOURCE it claimed: the text its sources read and the key they are stored under.
    /// - Parameter text: the SOURCE as written (one of ``schemes``, or a text ``claims(bare:)`` took).
    /// - Returns: the claim (``SourceLocator/claimed(_:)``'s value).
    /// - Throws: `CatalogError` 64 naming what is wrong (a malformed URL).
    func locate(_ text: String) throws -> ClaimedSource
    /// The source for one of its claims.
    func makeSource(_ claim: ClaimedSource) -> any SyncSource
    /// Checks a remote's URL of this kind when it is saved (`catalog remote add`). The default accepts it.
    /// - Throws: `CatalogError` 64 naming what is wrong.
    func checkRemote(_ claim: ClaimedSource) throws
    /// This kind's own errors as a `CatalogError` with its documented status, or nil for others. The
    /// default maps none.
    func failure(_ error: any Error, source: String) -> CatalogError?
    /// For `sync --follow`, when ``capabilities`` has ``SourceCapabilities/notifies``: something that says
    /// when the source changed (a hub's `LISTEN`, a serve's long-poll), or nil to poll it at the interval.
    /// The default is nil.
    /// - Throws: `CatalogError` when the source cannot be listened to now (unreachable): tried again later;
    ///   ``ListenUnsupported`` when it never can.
    func makeListener(_ claim: ClaimedSource, options: SyncOptions) throws -> (any ChangeListener)?
    /// For `sync --repair` (docs/repair.md §7): the source as a repair's peer, or nil when it cannot
    /// answer a repair (a snapshot log, a token that may not repair). The default is nil. Asked only
    /// through ``SyncRepair/peer(for:context:)``.
    /// - Throws: `CatalogError` when the source's credentials cannot be read.
    func repairPeer(_ claim: ClaimedSource, context: SyncContext) throws -> (any RepairPeer)?
}

extension SourceKind {
    package var forms: [String] { schemes.map { $0 + "://" } }
    package var help: String { forms.joined(separator: ", ") }
    package var capabilities: SourceCapabilities { [] }
    package var trustRefusal: String? { nil }
    package var invalidRows: String { "is not a valid snapshot" }
    package func claims(bare text: String) -> Bool { false }
    package func checkRemote(_ claim: ClaimedSource) throws {}
    package func failure(_ error: any Error, source: String) -> CatalogError? { nil }
    package func makeListener(_ claim: ClaimedSource, options: SyncOptions) throws -> (any ChangeListener)? { nil }
    package func repairPeer(_ claim: ClaimedSource, context: SyncContext) throws -> (any RepairPeer)? { nil }

    /// A claim of this kind: the text its sources read and the key they are stored under.
    package func claim(_ text: String, key: String) -> ClaimedSource { ClaimedSource(kind: self, text: text, key: key) }
}

/// What a source kind can do (`SourceKind.capabilities`): the follower, `remote` and the publisher ask
/// these, never a kind's name.
package struct SourceCapabilities: OptionSet, Sendable {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }

    /// Its fetch needs no database while it runs (what it pushes is read before, by
    /// ``SyncSource/prepareDetached(since:context:)``): a follower fetches it on a worker thread, so a
    /// slow or hung server holds up no other source (HTTP, a serve).
    package static let fetchesDetached = SourceCapabilities(rawValue: 1 << 0)
    /// Each sync pushes this database's changes to it (a hub, a serve): a follower polls it at once when
    /// this database changed or another source merged rows (docs/live-sync.md §5), and `--publish` to it
    /// is refused with a hint to sync with it instead.
    package static let pushes = SourceCapabilities(rawValue: 1 << 1)
    /// It can tell a follower it changed (`SourceKind.makeListener(_:options:)`: a hub's `LISTEN`, a
    /// serve's long-poll; docs/live-sync.md §3).
    package static let notifies = SourceCapabilities(rawValue: 1 << 2)
    /// It is reached with a bearer token read from a file (`--token-file`, docs/protocol.md §9): a
    /// remote of it needs one, and no other remote takes one.
    package static let bearerToken = SourceCapabilities(rawValue: 1 << 3)
}

/// A SOURCE that a registered `SourceKind` claimed: the kind, the text its sources read (a URL, a
/// connection string, a serve's base URL) and the key its cursor, last good sync and ledger rows are
/// stored under (``SourceLocator/description``: never a password).
public struct ClaimedSource: Sendable, Equatable {
    /// The kind that claimed it.
    package let kind: any SourceKind
    /// What its sources read: a URL, a connection string, a serve's base URL.
    public let text: String
    /// The key it is stored under, which messages show: no password.
    public let key: String

    /// The kind's noun (`SourceKind.name`).
    public var kindName: String { kind.name }

    package init(kind: any SourceKind, text: String, key: String) {
        (self.kind, self.text, self.key) = (kind, text, key)
    }

    /// One kind (by name) and one text.
    public static func == (a: ClaimedSource, b: ClaimedSource) -> Bool { a.kind.name == b.kind.name && a.text == b.text }
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

/// Thrown by `SourceKind.makeListener(_:options:)` when the source can never notify this connection
/// (pgbouncer in transaction pooling mode): the follower says so once and polls at the interval.
package struct ListenUnsupported: Error {
    package var reason: String
    package init(reason: String) { self.reason = reason }
}

/// The registered source kinds (see `SourceKind`).
package enum SourceKinds {
    /// Guarded by its lock: registration happens once at start-up, reads on every sync.
    private final class Registry: @unchecked Sendable {
        // @unchecked: `kinds` is only read or written while `lock` is held.
        let lock = NSLock()
        var kinds: [any SourceKind] = []
    }
    private static let registry = Registry()

    /// The nouns of the core's own sources, which no registered kind may take (their rows carry them).
    static let coreNames: Set<String> = ["file", "stdin"]

    /// Registers `kind` once per type (registering again is harmless).
    ///
    /// A kind whose name or a scheme another registered kind (or the core: `file`, `stdin`, `file://`)
    /// already has is a bug in the program: it traps.
    package static func register(_ kind: any SourceKind) {
        registry.lock.withLock {
            guard !registry.kinds.contains(where: { type(of: $0) == type(of: kind) }) else { return }
            precondition(
                !coreNames.contains(kind.name) && !kind.schemes.contains("file"), "source kind '\(kind.name)' takes a core kind's name or scheme")
            for other in registry.kinds {
                precondition(other.name != kind.name, "two source kinds are named '\(kind.name)'")
                precondition(Set(other.schemes).isDisjoint(with: kind.schemes), "source kinds '\(other.name)' and '\(kind.name)' claim one scheme")
            }
            registry.kinds.append(kind)
        }
    }

    /// Every registered kind, in registration order.
    package static var all: [any SourceKind] { registry.lock.withLock { registry.kinds } }

    /// The registered kind that claims `scheme` (lowercase, without `://`), if any.
    package static func kind(claiming scheme: String) -> (any SourceKind)? { all.first { $0.schemes.contains(scheme) } }

    /// The registered kind that claims `text`, a SOURCE without a scheme (`SourceKind.claims(bare:)`).
    package static func kind(claimingBare text: String) -> (any SourceKind)? { all.first { $0.claims(bare: text) } }

    /// Why `directory` cannot be published to when a registered kind that takes pushes claims its
    /// scheme (a hub): such a peer is kept in step by syncing with it, not by a log written into it.
    ///
    /// Other schemes are refused by ``LogPublisher/publishLog(to:options:progress:)`` itself.
    /// - Returns: the usage error (64) with the `catalog sync` line to run instead, or nil.
    package static func publishRefusal(_ directory: String) -> CatalogError? {
        guard let scheme = urlScheme(of: directory), let kind = kind(claiming: scheme), kind.capabilities.contains(.pushes) else {
            return nil
        }
        return LogPublisher.schemeRefusal(
            directory, hint: "a \(kind.name) takes this database's changes when synced with: catalog sync \(redactedURL(directory))")
    }

    /// How a SOURCE is written, the core's forms and then each kind's (`SourceKind.forms`): the
    /// unsupported-scheme hint, in registration order.
    /// - Parameter kinds: the kinds to list (the registered ones by default).
    /// - Returns: the hint's sentence, `a SOURCE is a path, file://, … - or a saved remote's name`.
    package static func sourceForms(_ kinds: [any SourceKind]? = nil) -> String {
        let kinds = kinds ?? all
        var hint = "a SOURCE is a path, file://, " + kinds.flatMap(\.forms).map { $0 + ", " }.joined() + "- or a saved remote's name"
        if kinds.isEmpty { hint += "; network sources need LandmarkCatalogSync and its NetworkSources.register()" }
        return hint
    }
}
