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
///
/// A message whose body would exceed the serve's body limit is sent as several requests
/// (``RepairMessage/split(maxBytes:)``: rows only first, then the ranges in key order), each part's
/// rows merged there as one push is and each part's ranges answered on their own; the answers are
/// joined into one. The bound starts at serve's default `--max-body` and is halved after a `413`,
/// which writes nothing (docs/repair.md §4). Landmark rows are not sent: the serve takes none.
final class ServeRepairPeer: RepairPeer {
    let client: ServeHTTP
    let url: String
    /// The session key, hex, and the session's horizon: from the opening message, the horizon raised
    /// when an answer raises it.
    private var key: String?
    private var horizon: Int64?
    private var lastDigest: StateDigest?
    /// The serve's edge cursors from its answer to the opening message: where it stood before the
    /// repair read anything (docs/protocol.md §6b).
    private(set) var cursors: (landmarks: String, positions: String)?
    /// The largest request body sent, in bytes.
    private(set) var maxBody: Int
    /// Requests made: more than the repair's round trips when a message was split.
    private(set) var requests = 0

    /// serve's default `--max-body` (docs/limits.md): 1 MiB.
    static let defaultMaxBody = 1 << 20
    /// Below this a 413 is not answered by halving again (one row is a few hundred bytes).
    static let smallestBody = 4096

    init(client: ServeHTTP, base: String, dryRun: Bool, maxBody: Int = ServeRepairPeer.defaultMaxBody) {
        self.client = client
        self.maxBody = maxBody
        url = base + "/repair" + (dryRun ? "?dryRun=1" : "")
    }

    func exchange(_ message: [UInt8]) throws -> [UInt8] {
        var decoded = try RepairMessage(decoding: message)
        if key == nil, let k = decoded.key {
            key = RepairOverHTTP.hex(k)
            horizon = decoded.horizon
        }
        // The serve takes no landmark rows (docs/protocol.md §6b): they stay here.
        decoded = try decoded.withoutLandmarkRows()
        var pending = [decoded][...]
        var answers: [[UInt8]] = []
        while let part = pending.first {
            let bytes = part.encoded()
            // A part that cannot be divided further goes as it is: the serve may take it.
            if bytes.count > maxBody, case let parts = try part.split(maxBytes: maxBody), parts.count > 1 {
                pending = parts[...] + pending.dropFirst()
                continue
            }
            do {
                answers.append(try post(bytes))
                pending.removeFirst()
            } catch is ServeBodyTooLarge {
                maxBody = try lowered(after: bytes.count, part: part)
            }
        }
        // Each part's ranges were answered on their own: one answer for the exchange.
        guard answers.count > 1 else { return answers.first ?? [] }
        do {
            return try RepairMessage.combined(answers.map(RepairMessage.init(decoding:))).encoded()
        } catch let error as RepairMessageError {
            throw CatalogError(.dataInvalid, "\(error.description), \(client.name)")
        }
    }

    /// The body bound after a 413 to a `part` of `size` bytes: half of it, at least ``smallestBody``.
    /// - Throws: `CatalogError` 65 when the part cannot be sent smaller: it is one row or one range, or
    ///   the bound is already at ``smallestBody``.
    private func lowered(after size: Int, part: RepairMessage) throws -> Int {
        let next = max(Self.smallestBody, min(maxBody, size) / 2)
        if next < size, try part.split(maxBytes: next).count > 1 { return next }
        let what =
            next < size
            ? "it holds \(part.undividedContent), which cannot be sent in parts" : "a repair sends up to \(Self.smallestBody) bytes a request"
        throw CatalogError(
            .dataInvalid, "the serve refused a repair request of \(size) bytes as too large (HTTP 413), \(client.name): \(what)",
            hint: "its --max-body is below \(size) bytes; raise it (docs/limits.md)")
    }

    /// One `POST /v1/repair` of `body`: the answer's bytes; the digest, cursors and horizon it carries kept.
    private func post(_ body: [UInt8]) throws -> [UInt8] {
        var headers: [String] = []
        if let key { headers.append("\(RepairOverHTTP.keyHeader): \(key)") }
        if let horizon { headers.append("\(RepairOverHTTP.horizonHeader): \(horizon)") }
        requests += 1
        guard
            let answer = try client.request(
                "POST", url, body: body, contentType: RepairOverHTTP.mediaType, extraHeaders: headers, splitsTooLarge: true)
        else {
            preconditionFailure("a POST without If-None-Match answered as not modified")
        }
        let bytes = [UInt8](try answer.data())
        guard let text = answer.headers[RepairOverHTTP.digestHeader.lowercased()], let digest = RepairOverHTTP.digest(text) else {
            throw CatalogError(.dataInvalid, "the answer to POST /v1/repair has no \(RepairOverHTTP.digestHeader) header, \(client.name)")
        }
        lastDigest = digest
        if cursors == nil, let text = answer.headers[RepairOverHTTP.cursorsHeader.lowercased()] {
            let both = text.split(separator: " ")
            if both.count == 2 { cursors = (String(both[0]), String(both[1])) }
        }
        if let raised = (try? RepairMessage(decoding: bytes))?.horizon, raised > horizon ?? .min { horizon = raised }
        return bytes
    }

    func digest(horizonMilliseconds: Int64) throws -> StateDigest {
        guard let lastDigest else { throw CatalogError(.dataInvalid, "no answer from the serve, \(client.name)") }
        return lastDigest
    }

    /// The serve's cursors from before the repair read anything, and `localThrough` pushed through: rows
    /// committed there or here after them reach the other side by the syncs that follow.
    func cursorAfterRepair(held: SourceCursor?, localThrough: Int64) -> SourceCursor? {
        guard let cursors else { return nil }
        var next = held ?? SourceCursor()
        next["landmarks"] = cursors.landmarks
        next["positions"] = cursors.positions
        next["pushThrough"] = String(localThrough)
        next["reader"] = ServeSource.reader(client.token)
        return next
    }
}
