import Foundation

/// User ids: non-empty and not only whitespace, at most 256 bytes of UTF-8, no control characters and no
/// U+FFFD (the mark of invalid UTF-8), compared after Unicode
/// normalisation form C (UAX #15), so the same name typed in NFD or NFC addresses one row.
public enum UserID {
    /// The NFC form of `raw`.
    /// - Throws: `CatalogError.usage` (64) for an empty, blank, over-long, control-character or U+FFFD id.
    public static func normalize(_ raw: String) throws -> String {
        // Printable ASCII is already NFC and has no control characters: the common case, kept cheap.
        if raw.utf8.count <= 256, raw.utf8.contains(where: { $0 != 0x20 }), raw.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            return raw
        }
        let nfc = raw.precomposedStringWithCanonicalMapping
        guard !nfc.isEmpty else { throw CatalogError(.usage, "user id must not be empty", reason: .invalidUser) }
        guard nfc.utf8.count <= 256 else {
            throw CatalogError(.usage, "user id is \(nfc.utf8.count) bytes of UTF-8; at most 256 are allowed", reason: .invalidUser)
        }
        if let bad = nfc.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            throw CatalogError(
                .usage, "user id contains the control character U+\(String(bad.value, radix: 16, uppercase: true))", reason: .invalidUser)
        }
        if nfc.unicodeScalars.contains("\u{FFFD}") {
            // What invalid UTF-8 decodes to: two different byte strings would become one user.
            throw CatalogError(.usage, "user id contains U+FFFD (invalid UTF-8 in the input?)", reason: .invalidUser)
        }
        if nfc.allSatisfy(\.isWhitespace) {
            throw CatalogError(.usage, "user id must not be only whitespace", reason: .invalidUser)
        }
        return nfc
    }
}
