internal import CCrypto
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Ed25519 (RFC 8032) through libcrypto's raw keys: `EVP_PKEY_new_raw_private_key` /
/// `EVP_PKEY_new_raw_public_key` with `EVP_PKEY_ED25519`, then `EVP_DigestSign` / `EVP_DigestVerify`
/// (https://www.openssl.org/docs/man3.0/man7/Ed25519.html). Keys are 32 bytes (the secret one is the seed),
/// signatures 64 bytes.
package enum Ed25519 {
    /// The public key of a 32-byte seed, or nil when libcrypto refuses it (a seed of the wrong length).
    package static func publicKey(seed: [UInt8]) -> [UInt8]? {
        guard seed.count == 32, let key = seed.withUnsafeBufferPointer({ EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress, 32) })
        else { return nil }
        defer { EVP_PKEY_free(key) }
        var out = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(key, &out, &length) == 1, length == 32 else { return nil }
        return out
    }

    /// The 64-byte signature of `message` by the key of `seed`, or nil when libcrypto fails.
    package static func sign(_ message: [UInt8], seed: [UInt8]) -> [UInt8]? {
        guard seed.count == 32, let key = seed.withUnsafeBufferPointer({ EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress, 32) })
        else { return nil }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else { return nil }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = 64
        let ok = message.withUnsafeBufferPointer { EVP_DigestSign(context, &signature, &length, $0.baseAddress, $0.count) }
        return ok == 1 && length == 64 ? signature : nil
    }

    /// Whether `signature` is `publicKey`'s signature of `message`.
    package static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 32,
            let key = publicKey.withUnsafeBufferPointer({ EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, 32) })
        else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return false }
        return message.withUnsafeBufferPointer { m in
            signature.withUnsafeBufferPointer { EVP_DigestVerify(context, $0.baseAddress, 64, m.baseAddress, m.count) }
        } == 1
    }

    /// `count` bytes from libcrypto's CSPRNG (`RAND_bytes`).
    package static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        precondition(RAND_bytes(&out, Int32(count)) == 1, "RAND_bytes failed")
        return out
    }
}

/// BLAKE2b-512 (RFC 7693) through libcrypto (`EVP_blake2b512`): what minisign signs (a prehashed signature).
package enum BLAKE2b512 {
    package static func hash(_ bytes: [UInt8]) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new failed (out of memory)") }
        defer { EVP_MD_CTX_free(context) }
        precondition(EVP_DigestInit_ex(context, EVP_blake2b512(), nil) == 1, "EVP_DigestInit_ex(BLAKE2b-512) failed")
        let ok = bytes.withUnsafeBufferPointer { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        precondition(ok == 1, "EVP_DigestUpdate failed")
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        precondition(EVP_DigestFinal_ex(context, &digest, &length) == 1 && length == 64, "EVP_DigestFinal_ex failed")
        return digest
    }
}

/// minisign's formats (https://jedisct1.github.io/minisign/, docs/trust.md §1): a public key, an unencrypted
/// secret key and a prehashed signature, byte for byte as `minisign` 0.11 writes and reads them.
package enum Minisign {
    /// `Ed`: the key algorithm (and a legacy, not prehashed, signature).
    static let keyAlgorithm: [UInt8] = [0x45, 0x64]
    /// `ED`: a signature of the file's BLAKE2b-512.
    static let prehashedAlgorithm: [UInt8] = [0x45, 0x44]
    /// `B2`: the secret key's checksum algorithm.
    static let checksumAlgorithm: [UInt8] = [0x42, 0x32]
    static let untrustedPrefix = "untrusted comment: "
    static let trustedPrefix = "trusted comment: "

    /// The key id as minisign prints it: the 8 bytes read as a little-endian integer, in upper-case hex.
    package static func keyIDText(_ id: [UInt8]) -> String {
        id.reversed().map { String(format: "%02X", $0) }.joined()
    }

    /// The lines of `text` that are not blank, trimmed.
    static func dataLines(_ text: String) -> [Substring] {
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
        let fd = try CatalogStore.openForReading(given)
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

/// A minisign secret key, unencrypted (key derivation `\0\0`, as `minisign -G -W` writes it):
/// `base64("Ed" || "\0\0" || "B2" || salt (32) || opslimit (8) || memlimit (8) || key id (8) ||
/// seed (32) || public key (32) || checksum (32))`. minisign leaves the salt, the limits and the checksum of
/// an unencrypted key zero (it computes the checksum, BLAKE2b-256 of `Ed || key id || secret key`, only
/// to check a password); so does this. Its integrity is checked instead by deriving the public key from
/// the seed. Never printed, logged or put in an error message.
package struct MinisignSecretKey: Sendable {
    package let keyID: [UInt8]
    let seed: [UInt8]
    package let publicKey: MinisignPublicKey

    /// A new key pair from libcrypto's CSPRNG, with a random key id (as minisign makes one).
    package static func generate() -> MinisignSecretKey {
        let seed = Ed25519.randomBytes(32)
        let id = Ed25519.randomBytes(8)
        guard let pk = Ed25519.publicKey(seed: seed) else { preconditionFailure("Ed25519 key generation failed in libcrypto") }
        return MinisignSecretKey(keyID: id, seed: seed, publicKey: MinisignPublicKey(keyID: id, key: pk))
    }

    private init(keyID: [UInt8], seed: [UInt8], publicKey: MinisignPublicKey) {
        self.keyID = keyID
        self.seed = seed
        self.publicKey = publicKey
    }

    /// The key file: a comment line, then the base64 line.
    package var fileText: String {
        let zeros = [UInt8](repeating: 0, count: 32 + 8 + 8)
        let payload =
            Minisign.keyAlgorithm + [0, 0] + Minisign.checksumAlgorithm + zeros + keyID + seed + publicKey.key
            + [UInt8](repeating: 0, count: 32)
        return
            "\(Minisign.untrustedPrefix)catalog secret key \(publicKey.id) (unencrypted, minisign format)\n\(Data(payload).base64EncodedString())\n"
    }

    /// Parses a secret key file's text. Messages name `source`, never the key.
    /// - Throws: `CatalogError` 65 for anything that is not an unencrypted minisign Ed25519 key whose seed
    ///   gives its public key (an encrypted one is named as such).
    package init(text: String, source: String) throws {
        let lines = Minisign.dataLines(text).filter { !$0.hasPrefix("untrusted comment:") }
        guard lines.count == 1, let bytes = Data(base64Encoded: String(lines[0])).map(Array.init), bytes.count == 158,
            Array(bytes[0..<2]) == Minisign.keyAlgorithm, Array(bytes[4..<6]) == Minisign.checksumAlgorithm
        else {
            throw CatalogError(.dataInvalid, "not a minisign secret key, \(source)", hint: "make one with 'catalog key generate --output FILE'")
        }
        guard bytes[2] == 0 && bytes[3] == 0 else {
            throw CatalogError(
                .dataInvalid, "the secret key is encrypted with a password, which catalog does not read, \(source)",
                hint: "remove its password with 'minisign -C -W -s \(source)', or make a key with 'catalog key generate'")
        }
        let id = Array(bytes[54..<62])
        let seed = Array(bytes[62..<94])
        let pk = Array(bytes[94..<126])
        guard Ed25519.publicKey(seed: seed) == pk else {
            throw CatalogError(.dataInvalid, "the secret key is damaged (its two halves do not match), \(source)")
        }
        self.init(keyID: id, seed: seed, publicKey: MinisignPublicKey(keyID: id, key: pk))
    }

    /// Loads a secret key file, refusing one that others may read (as ssh refuses such a private key).
    /// - Throws: `CatalogError` 66 when it is missing or unreadable, or readable or writable by the group
    ///   or others; 65 when it is not an unencrypted minisign key.
    package static func load(path: String) throws -> MinisignSecretKey {
        let fd = try CatalogStore.openForReading(path)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw CatalogError(.noInput, "cannot read the secret key (\(errorText(errno))), \(path)") }
        if info.st_mode & 0o077 != 0 {
            throw CatalogError(
                .noInput, "the secret key may be read by others (mode \(String(info.st_mode & 0o777, radix: 8))); refusing to use it, \(path)",
                hint: "chmod 600 \(path), and make a new key if others may have read it")
        }
        let bytes = try DirectoryLogFetcher.readAll(fd, name: path, limit: 4096)
        return try MinisignSecretKey(text: String(decoding: bytes, as: UTF8.self), source: path)
    }

    /// A prehashed minisign signature of `message` with `trustedComment` (one line, no trailing blanks).
    package func sign(_ message: [UInt8], trustedComment: String) -> MinisignSignature {
        guard let signature = Ed25519.sign(BLAKE2b512.hash(message), seed: seed),
            let global = Ed25519.sign(signature + Array(trustedComment.utf8), seed: seed)
        else {
            preconditionFailure("Ed25519 signing failed in libcrypto")
        }
        return MinisignSignature(keyID: keyID, signature: signature, trustedComment: trustedComment, globalSignature: global, prehashed: true)
    }
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
        // minisign trims trailing blanks of the trusted comment before it checks its signature.
        var comment = Substring(lines[2].dropFirst(Minisign.trustedPrefix.count))
        while let last = comment.last, last == " " || last == "\t" { comment = comment.dropLast() }
        trustedComment = String(comment)
        globalSignature = global
        prehashed = algorithm == Minisign.prehashedAlgorithm
    }

    init(keyID: [UInt8], signature: [UInt8], trustedComment: String, globalSignature: [UInt8], prehashed: Bool) {
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
    package func commentVerifies(with key: MinisignPublicKey) -> Bool {
        key.keyID == keyID && Ed25519.verify(globalSignature, of: signature + Array(trustedComment.utf8), publicKey: key.key)
    }

    /// Whether this is `key`'s signature of `message`, trusted comment included (the key ids must match).
    package func verifies(_ message: [UInt8], with key: MinisignPublicKey) -> Bool {
        guard key.keyID == keyID else { return false }
        let signed = prehashed ? BLAKE2b512.hash(message) : message
        return Ed25519.verify(signature, of: signed, publicKey: key.key)
            && Ed25519.verify(globalSignature, of: signature + Array(trustedComment.utf8), publicKey: key.key)
    }
}
