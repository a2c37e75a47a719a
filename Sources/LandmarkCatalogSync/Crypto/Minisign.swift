internal import CCrypto
import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// Ed25519 (RFC 8032) through libcrypto's raw keys: `EVP_PKEY_new_raw_private_key` /
/// `EVP_PKEY_new_raw_public_key` with `EVP_PKEY_ED25519`, then `EVP_DigestSign` / `EVP_DigestVerify`
/// (https://www.openssl.org/docs/man3.0/man7/Ed25519.html).
///
/// Keys are 32 bytes (the secret one is the seed), signatures 64 bytes.
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

/// A minisign secret key, unencrypted (key derivation `\0\0`, as `minisign -G -W` writes it):
/// `base64("Ed" || "\0\0" || "B2" || salt (32) || opslimit (8) || memlimit (8) || key id (8) ||
/// seed (32) || public key (32) || checksum (32))`.
///
/// minisign leaves the salt, the limits and the checksum of an unencrypted key zero (it computes the
/// checksum, BLAKE2b-256 of `Ed || key id || secret key`, only to check a password); so does this. Its
/// integrity is checked instead by deriving the public key from the seed. Never printed, logged or put in an
/// error message.
package struct MinisignSecretKey: LogSigningKey {
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

    /// Parses a secret key file's text.
    ///
    /// Messages name `source`, never the key.
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
        let fd = try CatalogFiles.openForReading(path)
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

/// Ed25519 and BLAKE2b-512 over libcrypto, for the core's minisign formats (registered by
/// `NetworkSources.register()`).
package struct LibcryptoMinisignAlgorithms: MinisignAlgorithms {
    package init() {}
    package func ed25519Verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        Ed25519.verify(signature, of: message, publicKey: publicKey)
    }
    package func blake2b512(_ bytes: [UInt8]) -> [UInt8] { BLAKE2b512.hash(bytes) }
}
