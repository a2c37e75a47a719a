#if canImport(CryptoKit)
    import CryptoKit
#elseif os(Linux)
    internal import CCrypto

    /// SHA-256's implementation, fetched once (safe to share between threads: it is only read).
    nonisolated(unsafe) private let fetchedSHA256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil) ?? EVP_sha256()
#endif

/// A streaming SHA-256 hasher (FIPS 180-4): the one hash the core computes (a snapshot log's files, the
/// state digest).
///
/// On Apple platforms it is CryptoKit's `SHA256`; on Linux, OpenSSL's EVP digest API
/// (`EVP_DigestInit_ex`, `EVP_DigestUpdate`, `EVP_DigestFinal_ex`;
/// https://www.openssl.org/docs/man3.0/man3/EVP_DigestInit.html). No hash is written here.
///
/// Bytes go to the library a buffer at a time (no per-byte Swift work), with the CPU's SHA extensions
/// where it has them. The value owns its context, so it cannot be copied; it is not `Sendable` (use one
/// hasher per thread).
///
/// ```swift
/// var hasher = SHA256()
/// hasher.update(Array("abc".utf8))
/// SHA256.hex(hasher.finalize())   // "ba7816bf…f20015ad"
/// ```
package struct SHA256: ~Copyable {
    /// Length of a digest in bytes.
    static let byteCount = 32

    #if canImport(CryptoKit)
        private var hasher = CryptoKit.SHA256()

        /// A hasher with nothing hashed yet.
        package init() {}

        /// Adds the bytes of `buffer` to the hashed input.
        package mutating func update(_ buffer: UnsafeRawBufferPointer) {
            guard buffer.count > 0 else { return }
            hasher.update(bufferPointer: buffer)
        }

        /// The digest (32 bytes) of everything added so far.
        ///
        /// The hasher is left as it was: more bytes can be added and `finalize()` called again for the
        /// digest of the longer input.
        package func finalize() -> [UInt8] {
            Array(hasher.finalize())
        }
    #elseif os(Linux)
        /// The `EVP_MD_CTX *`, freed by `deinit`.
        private let context: OpaquePointer

        /// A hasher with nothing hashed yet.
        ///
        /// Traps if OpenSSL cannot allocate or initialise a context (out of memory, or a crypto
        /// policy without SHA-256): nothing sensible can continue then.
        package init() {
            guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new failed (out of memory)") }
            guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
                EVP_MD_CTX_free(context)
                preconditionFailure("EVP_DigestInit_ex(SHA-256) failed")
            }
            self.context = context
        }

        deinit { EVP_MD_CTX_free(context) }

        /// Adds the bytes of `buffer` to the hashed input.
        package mutating func update(_ buffer: UnsafeRawBufferPointer) {
            guard let base = buffer.baseAddress, buffer.count > 0 else { return }
            let ok = EVP_DigestUpdate(context, base, buffer.count)
            precondition(ok == 1, "EVP_DigestUpdate failed")
        }

        /// The digest (32 bytes) of everything added so far.
        ///
        /// The hasher is left as it was: more bytes can be added and `finalize()` called again for the
        /// digest of the longer input.
        package func finalize() -> [UInt8] {
            guard let copy = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new failed (out of memory)") }
            defer { EVP_MD_CTX_free(copy) }
            precondition(EVP_MD_CTX_copy_ex(copy, context) == 1, "EVP_MD_CTX_copy_ex failed")
            var digest = [UInt8](repeating: 0, count: Self.byteCount)
            var length: UInt32 = 0
            let ok = digest.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(copy, $0.baseAddress, &length) }
            precondition(ok == 1 && length == UInt32(Self.byteCount), "EVP_DigestFinal_ex failed")
            return digest
        }
    #else
        #error("SHA-256 needs CryptoKit (Apple platforms) or libcrypto (Linux)")
    #endif

    /// Adds `bytes` to the hashed input.
    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Calls `body` with the SHA-256 digest (32 bytes) of `input`, held on the stack: no array is
    /// allocated, so hashing one short text per row costs only the hash itself.
    static func withDigest<T>(of input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &digest) { out in
            #if canImport(CryptoKit)
                let hash = CryptoKit.SHA256.hash(data: input)
                hash.withUnsafeBytes { out.copyMemory(from: $0) }
            #else
                var length: UInt32 = 0
                let ok = EVP_Digest(
                    input.baseAddress, input.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, fetchedSHA256, nil)
                precondition(ok == 1 && length == UInt32(Self.byteCount), "EVP_Digest failed")
            #endif
            return body(UnsafeRawBufferPointer(out))
        }
    }

    /// The SHA-256 digest (32 bytes) of `bytes`.
    static func hash(_ bytes: [UInt8]) -> [UInt8] {
        #if !canImport(CryptoKit) && os(Linux)
            // One call, with the implementation fetched once: a row hash per write makes the per-call
            // fetch and context copy of the streaming path measurable
            // (https://www.openssl.org/docs/man3.0/man7/crypto.html, "Performance").
            var digest = [UInt8](repeating: 0, count: Self.byteCount)
            var length: UInt32 = 0
            let ok = bytes.withUnsafeBytes { input in
                digest.withUnsafeMutableBufferPointer { EVP_Digest(input.baseAddress, input.count, $0.baseAddress, &length, fetchedSHA256, nil) }
            }
            precondition(ok == 1 && length == UInt32(Self.byteCount), "EVP_Digest failed")
            return digest
        #else
            var hasher = SHA256()
            hasher.update(bytes)
            return hasher.finalize()
        #endif
    }

    /// `bytes` as lowercase hexadecimal, two digits per byte (the usual way to print a digest).
    package static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (i, byte) in bytes.enumerated() {
                out[2 * i] = digits[Int(byte >> 4)]
                out[2 * i + 1] = digits[Int(byte & 0x0f)]
            }
            return bytes.count * 2
        }
    }
}

@available(*, unavailable, message: "one hasher per thread")
extension SHA256: Sendable {}

extension SHA256 {
    /// HMAC-SHA-256 of `message` under `key` (RFC 2104, https://www.rfc-editor.org/rfc/rfc2104): the keyed
    /// fingerprints of a repair (docs/repair.md §3).
    /// - Parameters:
    ///   - key: the key, at most 64 bytes (a longer key would first be hashed; callers pass 16).
    ///   - message: the bytes to authenticate.
    /// - Returns: the 32-byte tag.
    package static func hmac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        precondition(key.count <= 64, "HMAC keys here are at most one block")
        let block = key + [UInt8](repeating: 0, count: 64 - key.count)
        var inner = SHA256()
        inner.update(block.map { $0 ^ 0x36 })
        inner.update(message)
        var outer = SHA256()
        outer.update(block.map { $0 ^ 0x5c })
        outer.update(inner.finalize())
        return outer.finalize()
    }
}
