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
    /// Registers the HTTP(S) and PostgreSQL hub source kinds, and the signature algorithms (Ed25519,
    /// BLAKE2b-512) that check a signed snapshot log (docs/trust.md §3); idempotent, thread-safe.
    public static func register() {
        SourceKinds.register(HTTPSourceKind())
        SourceKinds.register(HubSourceKind())
        SourceKinds.register(ServeSourceKind())
        SignatureAlgorithms.register(LibcryptoMinisignAlgorithms())
    }
}

/// `http://` and `https://` sources: a snapshot or a snapshot log's manifest, fetched with conditional GET.
struct HTTPSourceKind: SourceKind {
    func makeSource(_ locator: SourceLocator) -> (any SyncSource)? {
        if case .http(let url) = locator { return HTTPSource(url: url) }
        return nil
    }

    func checkRemote(_ locator: SourceLocator) throws {}

    func failure(_ error: any Error, source: String) -> CatalogError? { nil }
}

/// PostgreSQL hubs (docs/hub.md): `postgres://`, `postgresql://` or a libpq keyword/value string.
struct HubSourceKind: SourceKind {
    func makeSource(_ locator: SourceLocator) -> (any SyncSource)? {
        if case .hub(let conninfo) = locator { return HubSource(conninfo: conninfo) }
        return nil
    }

    /// Parses the connection string as libpq does (`PQconninfoParse`): a mistake is 64 at `remote add`.
    func checkRemote(_ locator: SourceLocator) throws {
        guard case .hub(let conninfo) = locator else { return }
        do { _ = try PGConnInfo(parsing: conninfo) } catch let error as PGError { throw CatalogError(error) }
    }

    /// `LISTEN catalog_hub` on a connection of its own (docs/live-sync.md §3); nil when the hub cannot
    /// deliver notifications (pgbouncer in transaction mode: its self-test notification never arrives).
    func makeListener(_ locator: SourceLocator, options: SyncOptions) throws -> (any ChangeListener)? {
        guard case .hub(let conninfo) = locator else { return nil }
        do {
            return try HubListener(conninfo: conninfo, timeoutSeconds: max(1, Int(options.timeoutSeconds.rounded(.up))))
        } catch is HubListener.Unsupported {
            throw ListenUnsupported(reason: "it is reached through a connection pooler (pgbouncer), where LISTEN does not outlive a transaction")
        } catch let error as PGError {
            throw CatalogError(error)
        }
    }

    func failure(_ error: any Error, source: String) -> CatalogError? {
        guard let error = error as? PGError else { return nil }
        var mapped = CatalogError(error)
        if !mapped.message.contains(source) { mapped.message += " (hub \(source))" }
        return mapped
    }
}
