import Foundation

#if os(Linux)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// minisign's text formats, which the snapshot log's reader and publisher carry (docs/trust.md §1). The
// algorithms behind them (Ed25519, BLAKE2b-512) and the secret key are not the core's: LandmarkCatalogSync
// (Crypto/Minisign.swift) has them over libcrypto and registers them as ``SignatureAlgorithms``; without
// it no signature verifies, and a source that must be signed fails with 77 (``LogReader``).

/// The algorithms that check a minisign signature: Ed25519 (RFC 8032) and BLAKE2b-512 (RFC 7693).
package protocol MinisignAlgorithms: Sendable {
    /// Whether `signature` (64 bytes) is `publicKey`'s (32 bytes) Ed25519 signature of `message`.
    func ed25519Verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool
    /// The BLAKE2b-512 digest (64 bytes) of `bytes`.
    func blake2b512(_ bytes: [UInt8]) -> [UInt8]
}

/// The registered ``MinisignAlgorithms`` (LandmarkCatalogSync's `NetworkSources.register()` registers them).
package enum SignatureAlgorithms {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var algorithms: (any MinisignAlgorithms)?

    /// Registers `algorithms` (the last registration wins).
    package static func register(_ algorithms: any MinisignAlgorithms) {
        lock.withLock { Self.algorithms = algorithms }
    }

    /// The registered algorithms, nil when none are.
    package static var registered: (any MinisignAlgorithms)? { lock.withLock { algorithms } }
}

/// A key that signs a snapshot log's manifest (`publish --sign FILE`): LandmarkCatalogSync's
/// `MinisignSecretKey`.
package protocol LogSigningKey: Sendable {
    /// Its public half.
    var publicKey: MinisignPublicKey { get }
    /// A prehashed minisign signature of `message` with `trustedComment` (one line, no trailing blanks).
    func sign(_ message: [UInt8], trustedComment: String) -> MinisignSignature
}

/// minisign's formats (https://jedisct1.github.io/minisign/, docs/trust.md §1): a public key, an unencrypted
/// secret key and a prehashed signature, byte for byte as `minisign` 0.11 writes and reads them.
package enum Minisign {
    /// `Ed`: the key algorithm (and a legacy, not prehashed, signature).
    package static let keyAlgorithm: [UInt8] = [0x45, 0x64]
    /// `ED`: a signature of the file's BLAKE2b-512.
    package static let prehashedAlgorithm: [UInt8] = [0x45, 0x44]
    /// `B2`: the secret key's checksum algorithm.
    package static let checksumAlgorithm: [UInt8] = [0x42, 0x32]
    package static let untrustedPrefix = "untrusted comment: "
    package static let trustedPrefix = "trusted comment: "

    /// The key id as minisign prints it: the 8 bytes read as a little-endian integer, in upper-case hex.
    package static func keyIDText(_ id: [UInt8]) -> String {
        id.reversed().map { String(format: "%02X", $0) }.joined()
    }

    /// The lines of `text` that are not blank, trimmed.
    package static func dataLines(_ text: String) -> [Substring] {
        text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .map { $0.trimmingCharacters(in: .whitespaces)[...] }
            .filter { !$0.isEmpty }
    }
}

/// A minisign public key: `base64("Ed" || key id (8 bytes) || Ed25519 public key (32 bytes))`, in a file
/// after an `untrusted comment:` line.
package struct MinisignPublicKey: Sendable, Hashable {
    /// The 8-byte key id.
    package var keyID: [UInt8]
    /// The 32-byte Ed25519 public key.
    package var key: [UInt8]

    package init(keyID: [UInt8], key: [UInt8]) {
        self.keyID = keyID
        self.key = key
    }

    /// Parses the base64 line (`RW…`, as `minisign -P` takes it) or a whole `.pub` file's text.
    /// - Throws: `CatalogError` 64 naming `source` when it is not a minisign Ed25519 public key.
    package init(text: String, source: String) throws {
        let lines = Minisign.dataLines(text).filter { !$0.hasPrefix(Minisign.untrustedPrefix) && !$0.hasPrefix("untrusted comment:") }
        guard lines.count == 1, let bytes = Data(base64Encoded: String(lines[0])).map(Array.init), bytes.count == 42,
            Array(bytes[0..<2]) == Minisign.keyAlgorithm
        else {
            throw CatalogError(
                .usage, "not a minisign public key: \(source)",
                hint: "give the key's base64 line (RW…, as 'catalog key generate' prints it) or the path of its .pub file")
        }
        keyID = Array(bytes[2..<10])
        key = Array(bytes[10..<42])
    }

    /// Reads a key given on the command line: the base64 line itself, or the path of a `.pub` file.
    /// - Throws: `CatalogError` 64 for text that is neither, 66 for a file that cannot be read.
    package static func resolve(_ given: String) throws -> MinisignPublicKey {
        if (try? MinisignPublicKey(text: given, source: given)) != nil, !FileManager.default.fileExists(atPath: given) {
            return try MinisignPublicKey(text: given, source: given)
        }
        guard FileManager.default.fileExists(atPath: given) else {
            throw CatalogError(
                .usage, "--trust \(given) is neither a minisign public key (RW…) nor a file",
                hint: "give the key's base64 line or the path of its .pub file")
        }
        let fd = try CatalogFiles.openForReading(given)
        defer { close(fd) }
        let bytes = try DirectoryLogFetcher.readAll(fd, name: given, limit: 4096)
        return try MinisignPublicKey(text: String(decoding: bytes, as: UTF8.self), source: given)
    }

    /// The base64 line.
    package var line: String { Data(Minisign.keyAlgorithm + keyID + key).base64EncodedString() }
    /// The key id as minisign prints it (`D92CAA2EA891E95D`).
    package var id: String { Minisign.keyIDText(keyID) }
    /// The `.pub` file: minisign's comment line, then the base64 line.
    package var fileText: String { "\(Minisign.untrustedPrefix)minisign public key \(id)\n\(line)\n" }
}

/// A minisign signature file: `untrusted comment:` line, `base64("ED" || key id || Ed25519 signature of
/// BLAKE2b-512(file))`, `trusted comment:` line, `base64(Ed25519 signature of signature || trusted comment)`.
package struct MinisignSignature: Sendable, Equatable {
    package var keyID: [UInt8]
    package var signature: [UInt8]
    package var trustedComment: String
    package var globalSignature: [UInt8]
    /// `ED` (the file's BLAKE2b-512 signed) rather than the legacy `Ed` (the file itself).
    package var prehashed: Bool

    /// Parses a `.minisig` file's text.
    /// - Throws: `CatalogError` 77 naming `source`: a signature that cannot be read is no signature.
    package init(text: String, source: String) throws {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        func bad(_ what: String) -> CatalogError {
            CatalogError(.untrusted, "the signature is not a minisign signature (\(what)), \(source)")
        }
        guard lines.count >= 4, lines[0].hasPrefix(Minisign.untrustedPrefix) else { throw bad("no untrusted comment line") }
        guard let sig = Data(base64Encoded: String(lines[1]).trimmingCharacters(in: .whitespaces)).map(Array.init), sig.count == 74 else {
            throw bad("the signature line")
        }
        let algorithm = Array(sig[0..<2])
        // minisign itself verifies a legacy (not prehashed) signature only when told to (-l): so does this.
        guard algorithm == Minisign.prehashedAlgorithm else {
            throw bad(
                algorithm == Minisign.keyAlgorithm ? "a legacy signature, not prehashed; sign again with minisign 0.10 or later" : "unknown algorithm"
            )
        }
        guard lines[2].hasPrefix(Minisign.trustedPrefix) else { throw bad("no trusted comment line") }
        guard let global = Data(base64Encoded: String(lines[3]).trimmingCharacters(in: .whitespaces)).map(Array.init), global.count == 64 else {
            throw bad("the comment signature line")
        }
        keyID = Array(sig[2..<10])
        signature = Array(sig[10..<74])
        // The trusted comment is signed as written: minisign's verifier strips only the line ending ("\n",
        // "\r", done above), so blanks at its end are part of it (docs/trust.md §2).
        trustedComment = String(lines[2].dropFirst(Minisign.trustedPrefix.count))
        globalSignature = global
        prehashed = algorithm == Minisign.prehashedAlgorithm
    }

    package init(keyID: [UInt8], signature: [UInt8], trustedComment: String, globalSignature: [UInt8], prehashed: Bool) {
        self.keyID = keyID
        self.signature = signature
        self.trustedComment = trustedComment
        self.globalSignature = globalSignature
        self.prehashed = prehashed
    }

    /// The file's text, as `minisign -S` writes it.
    package var fileText: String {
        let algorithm = prehashed ? Minisign.prehashedAlgorithm : Minisign.keyAlgorithm
        return "\(Minisign.untrustedPrefix)signature from catalog secret key \(keyIDText)\n"
            + "\(Data(algorithm + keyID + signature).base64EncodedString())\n"
            + "\(Minisign.trustedPrefix)\(trustedComment)\n"
            + "\(Data(globalSignature).base64EncodedString())\n"
    }

    /// The signing key's id as minisign prints it.
    package var keyIDText: String { Minisign.keyIDText(keyID) }

    /// Whether the trusted comment is `key`'s (the comment signature verifies), whatever file was signed.
    ///
    /// False when no ``SignatureAlgorithms`` are registered.
    package func commentVerifies(with key: MinisignPublicKey) -> Bool {
        guard let algorithms = SignatureAlgorithms.registered else { return false }
        return key.keyID == keyID && algorithms.ed25519Verify(globalSignature, of: signature + Array(trustedComment.utf8), publicKey: key.key)
    }

    /// Whether this is `key`'s signature of `message`, trusted comment included (the key ids must match).
    ///
    /// False when no ``SignatureAlgorithms`` are registered.
    package func verifies(_ message: [UInt8], with key: MinisignPublicKey) -> Bool {
        guard key.keyID == keyID, let algorithms = SignatureAlgorithms.registered else { return false }
        let signed = prehashed ? algorithms.blake2b512(message) : message
        return algorithms.ed25519Verify(signature, of: signed, publicKey: key.key)
            && algorithms.ed25519Verify(globalSignature, of: signature + Array(trustedComment.utf8), publicKey: key.key)
    }
}
