import Foundation
import LandmarkCatalog

/// The network sources of `catalog sync`: HTTP(S) URLs (libcurl) and PostgreSQL hubs (libpq).
///
/// The core library, `LandmarkCatalog`, syncs with local files, log directories and standard input
/// only, so an app that stores and reads links neither C library. A program that also syncs over the
/// network links this library and registers its sources once, before its first sync:
///
/// ```swift
/// import LandmarkCatalogSync
/// NetworkSources.register()
/// ```
public enum NetworkSources {
    /// Registers the HTTP(S), PostgreSQL hub and `catalog serve` source kinds, and the signature
    /// algorithms (Ed25519, BLAKE2b-512) that check a signed snapshot log (docs/trust.md §3); idempotent,
    /// thread-safe.
    public static func register() {
        for kind in kinds { SourceKinds.register(kind) }
        SignatureAlgorithms.register(LibcryptoMinisignAlgorithms())
    }

    /// The kinds ``register()`` registers, in that order: what `catalog`'s help lists (the same in any
    /// process, whatever else a test registers).
    package static let kinds: [any SourceKind] = [HTTPSourceKind(), HubSourceKind(), ServeSourceKind()]
}

/// `http://` and `https://` sources: a snapshot or a snapshot log's manifest, fetched with conditional GET.
struct HTTPSourceKind: SourceKind {
    var name: String { "http" }
    var schemes: [String] { ["http", "https"] }
    var help: String { "http://, https:// (a snapshot or a snapshot log)" }
    /// Its fetch reads no database.
    var capabilities: SourceCapabilities { .fetchesDetached }

    /// A URL with a host, stored under the URL without its password.
    ///
    /// A log's directory URL (ending in `/`) stands for its manifest: one source, one cursor, either way.
    func locate(_ text: String) throws -> ClaimedSource {
        guard let url = URL(string: text), let host = url.host, !host.isEmpty else {
            throw CatalogError(.usage, "not a valid URL: \(SourceLocator.redacted(text))")
        }
        let full = text.hasSuffix("/") ? text + LogManifest.fileName : text
        return claim(full, key: SourceLocator.redacted(full))
    }

    /// The locator of the snapshot or manifest at `url`.
    static func locator(_ url: String) -> SourceLocator { .claimed(HTTPSourceKind().claim(url, key: SourceLocator.redacted(url))) }

    func makeSource(_ claim: ClaimedSource) -> any SyncSource { HTTPSource(url: claim.text) }
}

/// PostgreSQL hubs (docs/hub.md): `postgres://`, `postgresql://` or a libpq keyword/value string.
package struct HubSourceKind: SourceKind {
    package var name: String { "hub" }
    package var schemes: [String] { ["postgres", "postgresql"] }
    package var forms: [String] { ["postgres://", "postgresql://", "'host=H dbname=D'"] }
    package var help: String {
        "a PostgreSQL hub (postgres://, postgresql:// or a libpq keyword string: this node's changes are pushed, then the hub's pulled)"
    }
    /// Pushes on each sync; `LISTEN catalog_hub` tells a follower of a change.
    package var capabilities: SourceCapabilities { [.pushes, .notifies] }
    package var trustRefusal: String? { "a PostgreSQL hub's rows are not signed (its roles are its access control, docs/trust.md §6)" }
    package var invalidRows: String { "holds rows that are not valid" }

    package init() {}

    /// A libpq keyword/value string (`host=… dbname=…`).
    package func claims(bare text: String) -> Bool { HubConnInfo.isKeywordString(text) }

    /// The connection string as given, stored under it without its password.
    package func locate(_ text: String) throws -> ClaimedSource { claim(text, key: SourceLocator.redacted(text)) }

    /// The locator of the hub at `conninfo` (a URI or keyword/value string).
    package static func locator(_ conninfo: String) -> SourceLocator {
        .claimed(HubSourceKind().claim(conninfo, key: SourceLocator.redacted(conninfo)))
    }

    /// The connection string of a hub's locator, nil for a locator of another kind.
    package static func conninfo(of locator: SourceLocator) -> String? {
        guard case .claimed(let claim) = locator, claim.kind is HubSourceKind else { return nil }
        return claim.text
    }

    package func makeSource(_ claim: ClaimedSource) -> any SyncSource { HubSource(conninfo: claim.text) }

    /// Parses the connection string as libpq does (`PQconninfoParse`): a mistake is 64 at `remote add`.
    package func checkRemote(_ claim: ClaimedSource) throws {
        do { _ = try PGConnInfo(parsing: claim.text) } catch let error as PGError { throw CatalogError(error) }
    }

    /// `LISTEN catalog_hub` on a connection of its own (docs/live-sync.md §3); nil when the hub cannot
    /// deliver notifications (pgbouncer in transaction mode: its self-test notification never arrives).
    package func makeListener(_ claim: ClaimedSource, options: SyncOptions) throws -> (any ChangeListener)? {
        do {
            return try HubListener(conninfo: claim.text, timeoutSeconds: max(1, Int(options.timeoutSeconds.rounded(.up))))
        } catch is HubListener.Unsupported {
            throw ListenUnsupported(reason: "it is reached through a connection pooler (pgbouncer), where LISTEN does not outlive a transaction")
        } catch let error as PGError {
            throw CatalogError(error)
        }
    }

    /// `sync --repair` against a hub (docs/repair.md §7): the hub's side of a repair, on a connection of
    /// its own with the sync's settings (``HubRepairPeer``).
    package func repairPeer(_ claim: ClaimedSource, context: SyncContext) throws -> (any RepairPeer)? {
        try HubRepairPeer(
            conninfo: claim.text, options: context.options, node: try context.store.nodeID(), dryRun: context.options.dryRun)
    }

    package func failure(_ error: any Error, source: String) -> CatalogError? {
        guard let error = error as? PGError else { return nil }
        var mapped = CatalogError(error)
        if !mapped.message.contains(source) { mapped.message += " (hub \(source))" }
        return mapped
    }
}
