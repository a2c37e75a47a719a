/// A repair carried by `POST /v1/repair` (docs/protocol.md §6b, docs/repair.md §5): the headers both
/// sides use, and the answering side's one stateless step.
///
/// Each request is answered on its own: the session's key and horizon travel in headers with every
/// request (the opening message also carries them), so the answering side keeps nothing between requests.
package enum RepairOverHTTP {
    /// The request header holding the session key: 32 lowercase hex digits.
    package static let keyHeader = "Catalog-Repair-Key"
    /// The request header holding the session's horizon: ms since the epoch, decimal digits.
    package static let horizonHeader = "Catalog-Repair-Horizon"
    /// The answer header holding the answering side's state digest after the request, at the session's
    /// horizon: 32 hex digits, `:`, the row count.
    package static let digestHeader = "Catalog-Repair-Digest"
    /// The answer header to an opening message: where the answering side's edge cursors stood.
    ///
    /// Read before anything for the answer: the landmarks cursor, a space, the positions cursor
    /// (docs/protocol.md §3, §6b). A node whose serve forgot it goes on syncing from them after the repair.
    package static let cursorsHeader = "Catalog-Repair-Cursors"
    /// The media type of a request's and an answer's body: one encoded repair message.
    package static let mediaType = "application/octet-stream"

    /// `bytes` as lowercase hex digits.
    package static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The 16-byte session key that `text` spells in hex (either case), or nil.
    package static func key(hex text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count == 32 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: 32, by: 2) {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }

    /// A horizon header's value: 1 to 18 decimal digits, or nil.
    package static func horizon(_ text: String) -> Int64? {
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// A digest as the answer's digest header spells it.
    package static func digestText(_ digest: StateDigest) -> String { "\(digest.hex):\(digest.rows)" }

    /// The digest a digest header spells, or nil.
    package static func digest(_ text: String) -> StateDigest? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count == 32, let rows = Int64(parts[1]), rows >= 0,
            let high = UInt64(parts[0].prefix(16), radix: 16), let low = UInt64(parts[0].suffix(16), radix: 16)
        else { return nil }
        return StateDigest(rows: rows, high: high, low: low)
    }

    /// The answering side's step for one request whose rows the caller has merged (or, in a dry run,
    /// skipped: the answer reads only ranges they do not lie in).
    ///
    /// - Parameters:
    ///   - message: the request's message, its `key` and `horizon` filled from the headers when it had none.
    ///   - store: the answering side's catalog.
    /// - Returns: the encoded answer and the store's digest at the session's horizon.
    /// - Throws: `CatalogError` when the store cannot be read; 65 for a message with no key.
    package static func answer(_ message: RepairMessage, store: CatalogStore) throws -> (answer: [UInt8], digest: StateDigest) {
        guard let key = message.key else { throw CatalogError(.dataInvalid, "a repair message without a session key") }
        let side = try Reconciler(store: store, key: key)
        let reply = try side.answer(message)
        return (reply.encoded(), try StateDigest(of: store, horizonMilliseconds: side.horizon))
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }
}
