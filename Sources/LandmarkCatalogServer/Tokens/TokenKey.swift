import COpenSSLKeys
import Foundation
import LandmarkCatalog

/// A JWS algorithm serve accepts (RFC 7518 §3.1, RFC 8037 §3.1): each is fixed by a key's type, never chosen
/// by a token (docs/protocol.md §2).
package enum TokenAlgorithm: String, Sendable {
    /// Ed25519 (RFC 8037).
    case edDSA = "EdDSA"
    /// ECDSA on P-256 with SHA-256; the signature is r‖s, 32 bytes each (RFC 7518 §3.4).
    case es256 = "ES256"
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3).
    case rs256 = "RS256"
}

/// A PEM key (public for verifying, private for `token issue`), loaded with libcrypto; its type names its
/// one algorithm.
///
/// Ed25519, P-256 and RSA of at least 2,048 bits only.
package final class TokenKey: @unchecked Sendable {
    // Safe: the EVP_PKEY is never changed after loading, and libcrypto allows concurrent use of one key
    // for verifying from several threads, each with its own EVP_MD_CTX.
    private let key: OpaquePointer
    /// The algorithm this key verifies or signs.
    package let algorithm: TokenAlgorithm
    /// Where it was loaded from (for messages).
    package let path: String

    private init(key: OpaquePointer, path: String) throws {
        self.key = key
        self.path = path
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_ED25519:
            algorithm = .edDSA
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &name, name.count, &length) == 1,
                String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
            else {
                EVP_PKEY_free(key)
                throw CatalogError(.usage, "\(path) is an EC key on another curve than P-256 (ES256 needs P-256)")
            }
            algorithm = .es256
        case EVP_PKEY_RSA:
            guard EVP_PKEY_get_bits(key) >= 2048 else {
                EVP_PKEY_free(key)
                throw CatalogError(.usage, "\(path) is an RSA key of fewer than 2048 bits (RFC 7518 §3.3)")
            }
            algorithm = .rs256
        default:
            EVP_PKEY_free(key)
            throw CatalogError(.usage, "\(path) is not an Ed25519, P-256 or RSA key")
        }
    }

    deinit { EVP_PKEY_free(key) }

    /// Reads a PEM public key (`-----BEGIN PUBLIC KEY-----`, as `openssl pkey -pubout` writes).
    /// - Throws: `CatalogError` 66 when the file cannot be read, 64 when it holds no key of the three types.
    package static func loadPublic(path: String) throws -> TokenKey {
        try load(path: path, what: "a PEM public key") { bio in PEM_read_bio_PUBKEY(bio, nil, nil, nil) }
    }

    /// Reads a PEM private key (`-----BEGIN PRIVATE KEY-----`, as `openssl genpkey` writes).
    /// - Throws: `CatalogError` 66 when the file cannot be read, 64 when it holds no key of the three types.
    package static func loadPrivate(path: String) throws -> TokenKey {
        try load(path: path, what: "a PEM private key") { bio in PEM_read_bio_PrivateKey(bio, nil, nil, nil) }
    }

    private static func load(path: String, what: String, _ read: (OpaquePointer?) -> OpaquePointer?) throws -> TokenKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CatalogError(.noInput, "cannot read the key file, \(path)")
        }
        let bytes = [UInt8](data)
        let key: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return read(bio)
        }
        ERR_clear_error()
        guard let key else { throw CatalogError(.usage, "\(path) is not \(what)") }
        return try TokenKey(key: key, path: path)
    }

    /// Whether `signature` is this key's signature of `message` by its algorithm.
    ///
    /// Never throws: a malformed
    /// signature is simply not valid.
    package func verify(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        var signature = signature
        if algorithm == .es256 {
            guard let der = Self.derSignature(rawES256: signature) else { return false }
            signature = der
        }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(ctx)
            ERR_clear_error()
        }
        // Ed25519 signs the message itself (no digest: NULL, https://www.openssl.org/docs/man3.0/man7/Ed25519.html).
        guard EVP_DigestVerifyInit(ctx, nil, algorithm == .edDSA ? nil : EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(ctx, signature, signature.count, message, message.count) == 1
    }

    /// This (private) key's JWS signature of `message`: Ed25519's 64 bytes, ES256's r‖s, or RSA's PKCS#1 v1.5.
    /// - Throws: `CatalogError` 70 when libcrypto fails (a public key cannot sign).
    package func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw CatalogError(.software, "out of memory") }
        defer {
            EVP_MD_CTX_free(ctx)
            ERR_clear_error()
        }
        var length = 0
        guard EVP_DigestSignInit(ctx, nil, algorithm == .edDSA ? nil : EVP_sha256(), nil, key) == 1,
            EVP_DigestSign(ctx, nil, &length, message, message.count) == 1
        else { throw CatalogError(.usage, "\(path) cannot sign (is it a private key?)") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &signature, &length, message, message.count) == 1 else {
            throw CatalogError(.software, "signing with \(path) failed")
        }
        signature.removeSubrange(length...)
        if algorithm == .es256 {
            guard let raw = Self.rawSignature(derES256: signature) else { throw CatalogError(.software, "ECDSA signature not DER") }
            return raw
        }
        return signature
    }

    /// JWS's r‖s (32 bytes each) as the DER ECDSA-Sig-Value libcrypto verifies, or nil when it is not 64 bytes.
    static func derSignature(rawES256 raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw[32...].withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>?
        let n = i2d_ECDSA_SIG(sig, &out)
        guard n > 0, let out else { return nil }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(n)))
    }

    /// libcrypto's DER ECDSA signature as JWS's r‖s.
    static func rawSignature(derES256 der: [UInt8]) -> [UInt8]? {
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &p, buffer.count)
        }
        guard let sig else { return nil }
        defer { ECDSA_SIG_free(sig) }
        var high = [UInt8](repeating: 0, count: 32)
        var low = [UInt8](repeating: 0, count: 32)
        guard let r = ECDSA_SIG_get0_r(sig), let s = ECDSA_SIG_get0_s(sig),
            BN_bn2binpad(r, &high, 32) == 32, BN_bn2binpad(s, &low, 32) == 32
        else { return nil }
        return high + low
    }
}
