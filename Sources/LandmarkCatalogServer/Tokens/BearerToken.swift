import Foundation
import LandmarkCatalog

/// Who a verified token says the caller is (docs/protocol.md §2).
package struct TokenIdentity: Sendable, Equatable {
    /// `sub`: the user whose position row the token may read and write (NFC-normalised as position users are).
    package var user: String
    /// `scope` holds `edge`: the token may read and write every row.
    package var isEdge: Bool
    /// `exp`, in seconds since the epoch.
    package var expires: Int64
    /// `iat`, in seconds since the epoch, when the token has one (a user's revocation compares it).
    package var issuedAt: Int64? = nil
    /// `jti`, when the token has one (`catalog token revoke --id`).
    package var tokenID: String? = nil
}

/// The tokens a ``TokenVerifier`` has verified (exact bytes → identity, `nbf` and `iat`), at most `capacity`; when
/// full, the entries that have expired are dropped, and if none has, all of them (the next request of each
/// device verifies its token once more).
///
/// Tokens are kept only in memory, never logged.
package final class VerifiedTokens: @unchecked Sendable {
    // Safe: `entries` is touched only while `lock` is held.
    package static let defaultCapacity = 20_000
    private let lock = NSLock()
    private var entries: [String: (identity: TokenIdentity, nbf: Int64?, iat: Int64?)] = [:]
    let capacity: Int

    init(capacity: Int) { self.capacity = max(0, capacity) }

    /// Verified tokens held now.
    package var count: Int { lock.withLock { entries.count } }

    func lookup(_ token: String) -> (identity: TokenIdentity, nbf: Int64?, iat: Int64?)? { lock.withLock { entries[token] } }

    func store(_ token: String, identity: TokenIdentity, nbf: Int64?, iat: Int64?) {
        guard capacity > 0 else { return }
        lock.withLock {
            if entries.count >= capacity {
                let now = Int64(Date().timeIntervalSince1970)
                entries = entries.filter { TokenVerifier.plusLeeway($0.value.identity.expires) >= now }
                if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[token] = (identity, nbf, iat)
        }
    }
}

/// Why a token was refused: said in the 401's error body, never with the token in it.
package struct TokenRefusal: Error, Sendable, Equatable {
    package var reason: String
    /// The reason's kind, for the refusals metric (docs/serve.md §6).
    package var cause: AuthRefusalCause = .malformed

    package init(reason: String, cause: AuthRefusalCause = .malformed) {
        self.reason = reason
        self.cause = cause
    }
}

/// Verifies compact JWS JWTs (RFC 7519, RFC 7515) against one or more PEM public keys (two during a key
/// rotation, docs/serve.md §5).
///
/// The algorithm is the key's: a token whose header names another (`none`,
/// `HS256`, …) is refused whatever it is signed with (RFC 8725 §2.1, §3.1). `exp` is required, `nbf` and
/// `iat` are checked when present, all with a leeway of 60 s and each a NumericDate within
/// ``numericDates``; `sub` must be a non-empty user id (docs/protocol.md §2).
package struct TokenVerifier: Sendable {
    package let keys: [TokenKey]
    /// Seconds of clock skew allowed on `exp`, `nbf` and `iat` (docs/protocol.md §2).
    package static let leeway: Int64 = 60
    /// The NumericDates a token's `exp`, `nbf` and `iat` may hold (docs/protocol.md §2).
    ///
    /// 1970-01-01T00:00:00Z through 9999-12-31T23:59:59Z. Any other is refused, so no time arithmetic on a
    /// claim can overflow (a validly signed `exp` of 2^63−1 trapped serve on `exp + leeway`).
    package static let numericDates: ClosedRange<Int64> = 0...253_402_300_799
    /// A longer token is refused before any work (a JWT with these claims is a few hundred bytes).
    package static let maxLength = 8192

    /// Tokens whose signature verified, so a device's next request with the same token costs a dictionary
    /// lookup, not a signature check (docs/serve.md §3).
    ///
    /// Shared by copies of this verifier.
    let verified: VerifiedTokens
    /// The revocations in force (docs/serve.md §10), checked on every request, cached token or not.
    ///
    /// Shared by copies of this verifier.
    package let revoked: RevokedTokens
    /// The erased users and the collection horizon (docs/serve.md §2), checked on every request before the
    /// revocations: an erased account wins over a revocation that also covers the token.
    ///
    /// Shared by copies of this verifier.
    package let erased: ErasedAccounts

    package init(
        keys: [TokenKey], cacheCapacity: Int = VerifiedTokens.defaultCapacity, revoked: RevokedTokens = RevokedTokens(),
        erased: ErasedAccounts = ErasedAccounts()
    ) {
        self.keys = keys
        verified = VerifiedTokens(capacity: cacheCapacity)
        self.revoked = revoked
        self.erased = erased
    }

    /// The identity in `token`, or the refusal.
    ///
    /// A token seen before with a valid signature is not verified
    /// again, only its `exp` and `nbf` checked against `now`: the cache holds the exact token bytes, so a
    /// token differing in any byte is verified from scratch.
    /// - Parameters:
    ///   - token: the compact JWS, as the `Authorization: Bearer` header carried it.
    ///   - now: the time in seconds since the epoch.
    /// - Returns: the token's user and scope, or why it is refused (a 401's reason, docs/serve.md §2).
    /// A revoked token, or an erased user's, is refused whether it was cached or not: the erasures and then
    /// the revocations are looked at after the cache, on every request.
    package func verify(_ token: String, now: Int64) -> Result<TokenIdentity, TokenRefusal> {
        let result: Result<TokenIdentity, TokenRefusal>
        if let hit = verified.lookup(token) {
            result = Self.checkTimes(hit.identity, nbf: hit.nbf, iat: hit.iat, now: now)
        } else {
            result = verifyFully(token, now: now)
        }
        // The erasure first: a device told `account_erased` clears its copy; told "revoked" it would only ask
        // for a new token (docs/protocol.md §2).
        if case .success(let identity) = result, let refusal = erased.refusal(identity) ?? revoked.refusal(identity) {
            return .failure(refusal)
        }
        return result
    }

    /// `time` plus the leeway, saturating at `Int64.max` (never a trap, whatever `now` a caller passes).
    static func plusLeeway(_ time: Int64) -> Int64 {
        let (sum, overflow) = time.addingReportingOverflow(leeway)
        return overflow ? .max : sum
    }

    /// `exp`, `nbf` and `iat` against `now`, with the leeway.
    private static func checkTimes(_ identity: TokenIdentity, nbf: Int64?, iat: Int64?, now: Int64) -> Result<TokenIdentity, TokenRefusal> {
        guard now <= plusLeeway(identity.expires) else { return .failure(TokenRefusal(reason: "the token has expired", cause: .expired)) }
        if let nbf, plusLeeway(now) < nbf { return .failure(TokenRefusal(reason: "the token is not valid yet (nbf)", cause: .notYetValid)) }
        if let iat, plusLeeway(now) < iat {
            return .failure(TokenRefusal(reason: "the token was issued in the future (iat)", cause: .issuedInFuture))
        }
        return .success(identity)
    }

    private func verifyFully(_ token: String, now: Int64) -> Result<TokenIdentity, TokenRefusal> {
        func refuse(_ reason: String, _ cause: AuthRefusalCause = .malformed) -> Result<TokenIdentity, TokenRefusal> {
            .failure(TokenRefusal(reason: reason, cause: cause))
        }
        guard token.utf8.count <= Self.maxLength else { return refuse("the token is too long") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return refuse("the token is not a compact JWS (three base64url parts)") }
        guard let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { return refuse("the token is not base64url") }
        guard let header = Self.object(headerBytes) else { return refuse("the token's header is not a JSON object") }
        guard case .string(let alg)? = header["alg"] else { return refuse("the token's header names no alg", .algorithm) }
        if header["crit"] != nil { return refuse("the token's header has crit extensions this server does not know") }
        let candidates = keys.filter { $0.algorithm.rawValue == alg }
        guard !candidates.isEmpty else {
            return refuse(
                "the token's alg \(Self.quoted(alg)) is not this server's (\(Set(keys.map(\.algorithm.rawValue)).sorted().joined(separator: ", ")))",
                .algorithm)
        }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard candidates.contains(where: { $0.verify(signature, of: signingInput) }) else {
            return refuse("the token's signature does not verify", .badSignature)
        }
        guard let claims = Self.object(payloadBytes) else { return refuse("the token's payload is not a JSON object") }
        var dates: [String: Int64] = [:]
        for name in ["exp", "nbf", "iat"] {
            switch Self.numericDate(claims[name]) {
            case .absent: continue
            case .valid(let value): dates[name] = value
            case .notNumber: return refuse("the token's \(name) is not a NumericDate (a JSON number of seconds)")
            case .outOfRange:
                return refuse(
                    "the token's \(name) is out of range: a NumericDate is from 0 to \(Self.numericDates.upperBound) (the year 9999)")
            }
        }
        guard let exp = dates["exp"] else { return refuse("the token has no exp (a NumericDate)", .claims) }
        let nbf = dates["nbf"]
        let iat = dates["iat"]
        guard case .string(let sub)? = claims["sub"], !sub.isEmpty else { return refuse("the token names no user (sub)", .claims) }
        guard let user = try? UserID.normalize(sub) else { return refuse("the token's sub is not a valid user id", .claims) }
        var edge = false
        if let scope = claims["scope"] {
            guard case .string(let text) = scope else { return refuse("the token's scope is not a string") }
            edge = text.split(separator: " ").contains("edge")
        }
        var tokenID: String?
        if let jti = claims["jti"] {
            guard case .string(let text) = jti, !text.isEmpty else { return refuse("the token's jti is not a non-empty string") }
            tokenID = text
        }
        let identity = TokenIdentity(user: user, isEdge: edge, expires: exp, issuedAt: iat, tokenID: tokenID)
        // Cached once its signature and claims are sound, whatever the time says now: a token not valid yet
        // becomes valid by the clock alone, and an expired one stays refused by `checkTimes`.
        verified.store(token, identity: identity, nbf: nbf, iat: iat)
        return Self.checkTimes(identity, nbf: nbf, iat: iat, now: now)
    }

    /// A short, safe rendering of a header value for a message (never the token).
    private static func quoted(_ text: String) -> String {
        String(reflecting: String(text.prefix(16)))
    }

    /// The members of a JSON object (strict RFC 8259, our reader), or nil; a duplicate key makes it nil (RFC 7515 §5.2).
    private static func object(_ bytes: [UInt8]) -> [String: JSONValue]? {
        let reader = JSONPullReader(bytes: bytes, options: .init(allowTrailingCommas: false, maxDepth: 16))
        guard case .object(let members)? = try? reader.readValue(), (try? reader.finish()) != nil else { return nil }
        var out: [String: JSONValue] = [:]
        for m in members {
            guard out.updateValue(m.value, forKey: m.key) == nil else { return nil }
        }
        return out
    }

    /// What a time claim holds.
    private enum DateClaim {
        case absent
        case valid(Int64)
        /// A string, `null`, an object…
        case notNumber
        /// A number not finite or outside ``TokenVerifier/numericDates``.
        case outOfRange
    }

    /// A NumericDate (RFC 7519 §2): a JSON number of seconds within ``numericDates``; fractions are cut.
    private static func numericDate(_ value: JSONValue?) -> DateClaim {
        guard let value else { return .absent }
        guard case .number(let n) = value else { return .notNumber }
        if let i = n.int64Value { return numericDates.contains(i) ? .valid(i) : .outOfRange }
        // Range-checked as a Double before the conversion, which traps outside Int64.
        let d = n.doubleValue
        guard d.isFinite, d >= Double(numericDates.lowerBound), d < Double(numericDates.upperBound) + 1 else { return .outOfRange }
        return .valid(Int64(d.rounded(.down)))
    }
}

/// Signs tokens for `catalog token issue` (docs/serve.md §5): the header `{"alg":…,"typ":"JWT"}` and the
/// claims `sub`, `iat`, `nbf`, `exp` and, when given, `scope` and `jti`.
package enum TokenIssuer {
    /// A compact JWS JWT.
    /// - Parameters:
    ///   - key: a private key (its type gives the algorithm).
    ///   - user: `sub`.
    ///   - ttl: seconds until `exp`.
    ///   - scope: `scope`, or nil.
    ///   - now: seconds since the epoch.
    ///   - id: `jti`, or nil (`catalog token revoke --id` revokes one token by it).
    /// - Returns: the token, `header.claims.signature` in base64url.
    /// - Throws: `CatalogError` when the key cannot sign, or 64 when `now` or `now + ttl` is not a
    ///   NumericDate serve takes (``TokenVerifier/numericDates``).
    package static func issue(key: TokenKey, user: String, ttl: Int64, scope: String?, now: Int64, id: String? = nil) throws -> String {
        let (exp, overflow) = now.addingReportingOverflow(ttl)
        guard !overflow, TokenVerifier.numericDates.contains(now), TokenVerifier.numericDates.contains(exp) else {
            throw CatalogError(.usage, "the token's times (now \(now), exp now plus \(ttl) s) are outside 1970 to the year 9999")
        }
        var w = JSONWriter()
        w.raw("{\"alg\":")
        w.string(key.algorithm.rawValue)
        w.raw(",\"typ\":\"JWT\"}")
        let header = w.bytes
        w = JSONWriter()
        w.raw("{\"sub\":")
        w.string(user)
        w.raw(",\"iat\":")
        w.int(now)
        w.raw(",\"nbf\":")
        w.int(now)
        w.raw(",\"exp\":")
        w.int(exp)
        if let scope {
            w.raw(",\"scope\":")
            w.string(scope)
        }
        if let id {
            w.raw(",\"jti\":")
            w.string(id)
        }
        w.raw("}")
        let input = Base64URL.encode(header) + "." + Base64URL.encode(w.bytes)
        return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
    }
}
