import Foundation
import LandmarkCatalog

/// `catalog repair catalog+https://HOST/v1` (docs/repair.md §5): a repair against a serve, each message
/// a `POST /v1/repair` (docs/protocol.md §6b) with the bearer token `catalog sync` uses for that URL.
package enum ServeRepair {
    /// Whether `source` names a serve (`catalog+https://` or `catalog+http://`).
    package static func names(_ source: String) -> Bool {
        guard let scheme = SourceLocator.scheme(of: source) else { return false }
        return ServeSourceKind().schemes.contains(scheme)
    }

    /// Repairs `store` against the serve at `source`, both ways.
    ///
    /// Rows from the serve are merged like rows a sync pulls from it: the saved remote's write grant
    /// (docs/trust.md §4), `options.maxDriftMilliseconds`, the merge rule; a remote that must be signed
    /// is refused, as a sync of it is.
    /// - Parameters:
    ///   - store: this catalog.
    ///   - source: `catalog+https://HOST/v1`.
    ///   - options: the token file (`tokenFile`), the drift allowance, the time and size limits.
    ///   - dryRun: count what differs; the serve is asked not to apply (`?dryRun=1`), this side rolls back.
    ///   - diagnostics: warnings (a token file open to others).
    /// - Returns: the report.
    /// - Throws: `CatalogError` — 64 for a URL that is not a serve's or no token, 66 for an unreadable
    ///   token file, 77 for a token refused (401, or 403 for a user token), 69 when the serve cannot be
    ///   reached, 65 for a malformed answer.
    package static func run(
        store: CatalogStore, source: String, options: SyncOptions, dryRun: Bool, diagnostics: @escaping (Diagnostic) -> Void
    ) throws -> RepairReport {
        let locator = try SourceLocator.parse(source)
        guard case .claimed(let claim) = locator, claim.kind is ServeSourceKind else {
            throw CatalogError(.usage, "not a catalog serve URL: \(SourceLocator.redacted(source))")
        }
        let name = locator.description
        let context = SyncContext(store: store, options: options, standardInput: -1, diagnostics: diagnostics)
        let trust = try RemoteBook(store).trustForSource(key: name)
        var checked = context
        checked.trustedKeys = trust.keys
        try checked.requireUnsigned("a catalog serve's rows", source: name)
        let token = try ServeSource.token(for: locator, context: context)
        let peer = ServeRepairPeer(client: ServeHTTP(token: token, name: name, options: options), base: claim.text, dryRun: dryRun)
        return try Repair.run(
            store: store, peer: peer, source: name, dryRun: dryRun, maxDriftSeconds: Double(options.maxDriftMilliseconds) / 1000,
            grant: trust.allow)
    }
}

/// A serve as a repair's peer: each message one `POST /v1/repair`, the session's key and horizon in
/// headers (the serve keeps nothing between requests), the serve's digest read from the last answer.
final class ServeRepairPeer: RepairPeer {
    let client: ServeHTTP
    let url: String
    /// The session key, hex, and the session's horizon: from the opening message, the horizon raised
    /// when an answer raises it.
    private var key: String?
    private var horizon: Int64?
    private var lastDigest: StateDigest?

    init(client: ServeHTTP, base: String, dryRun: Bool) {
        self.client = client
        url = base + "/repair" + (dryRun ? "?dryRun=1" : "")
    }

    func exchange(_ message: [UInt8]) throws -> [UInt8] {
        if key == nil, let opening = try? RepairMessage(decoding: message), let k = opening.key {
            key = RepairOverHTTP.hex(k)
            horizon = opening.horizon
        }
        var headers: [String] = []
        if let key { headers.append("\(RepairOverHTTP.keyHeader): \(key)") }
        if let horizon { headers.append("\(RepairOverHTTP.horizonHeader): \(horizon)") }
        guard let answer = try client.request("POST", url, body: message, contentType: RepairOverHTTP.mediaType, extraHeaders: headers) else {
            preconditionFailure("a POST without If-None-Match answered as not modified")
        }
        let bytes = [UInt8](try answer.data())
        guard let text = answer.headers[RepairOverHTTP.digestHeader.lowercased()], let digest = RepairOverHTTP.digest(text) else {
            throw CatalogError(.dataInvalid, "the answer to POST /v1/repair has no \(RepairOverHTTP.digestHeader) header, \(client.name)")
        }
        lastDigest = digest
        if let raised = (try? RepairMessage(decoding: bytes))?.horizon, raised > horizon ?? .min { horizon = raised }
        return bytes
    }

    func digest(horizonMilliseconds: Int64) throws -> StateDigest {
        guard let lastDigest else { throw CatalogError(.dataInvalid, "no answer from the serve, \(client.name)") }
        return lastDigest
    }
}
