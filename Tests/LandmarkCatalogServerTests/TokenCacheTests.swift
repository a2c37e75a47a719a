import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogServer

/// The verified-token cache (docs/serve.md §3): a token's signature is checked once, its times on every
/// request, and a token differing in any byte is verified from scratch.
@Suite("serve: verified tokens are cached, their times checked on every request")
struct TokenCacheTests {
    @Test("a cached token still expires, a not-yet-valid one becomes valid, a changed byte is verified again")
    func cachedTokensKeepTheirRules() throws {
        let sandbox = try Sandbox()
        let (privatePath, publicPath) = try ServeKeys.make(sandbox, "k")
        let key = try TokenKey.loadPrivate(path: privatePath)
        let verifier = TokenVerifier(keys: [try TokenKey.loadPublic(path: publicPath)])
        let now: Int64 = 1_800_000_000
        let token = try TokenIssuer.issue(key: key, user: "ann", ttl: 600, scope: nil, now: now)

        #expect(try verifier.verify(token, now: now).get().user == "ann")
        #expect(verifier.verified.count == 1)
        #expect(try verifier.verify(token, now: now + 600).get().expires == now + 600)
        // From the cache: past exp plus the 60 s leeway it is refused as it would be when verified afresh.
        #expect(verifier.verify(token, now: now + 661) == .failure(TokenRefusal(reason: "the token has expired", cause: .expired)))

        // One changed byte of the signature: not the cached token, so verified, and refused.
        var bytes = Array(token.utf8)
        bytes[bytes.count - 2] = bytes[bytes.count - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let forged = String(decoding: bytes, as: UTF8.self)
        #expect(verifier.verify(forged, now: now) == .failure(TokenRefusal(reason: "the token's signature does not verify", cause: .badSignature)))
        #expect(verifier.verified.count == 1)

        // nbf in the future: refused now, valid once the clock gets there.
        let later = try TokenIssuer.issue(key: key, user: "bob", ttl: 600, scope: "edge", now: now + 1000)
        #expect(verifier.verify(later, now: now) == .failure(TokenRefusal(reason: "the token is not valid yet (nbf)", cause: .notYetValid)))
        #expect(
            try verifier.verify(later, now: now + 1000).get() == TokenIdentity(user: "bob", isEdge: true, expires: now + 1600, issuedAt: now + 1000))
    }

    @Test("claim times never overflow: a clock at Int64's ends, the cache's filter, a ttl past the year 9999")
    func timesNeverOverflow() throws {
        let sandbox = try Sandbox()
        let (privatePath, publicPath) = try ServeKeys.make(sandbox, "k")
        let key = try TokenKey.loadPrivate(path: privatePath)
        let verifier = TokenVerifier(keys: [try TokenKey.loadPublic(path: publicPath)], cacheCapacity: 1)
        let now: Int64 = 1_800_000_000
        let token = try TokenIssuer.issue(key: key, user: "ann", ttl: 600, scope: nil, now: now)
        // `now + leeway` and `exp + leeway` saturate: expired at the clock's top, not valid yet at its bottom.
        #expect(verifier.verify(token, now: .max) == .failure(TokenRefusal(reason: "the token has expired", cause: .expired)))
        #expect(verifier.verify(token, now: .min) == .failure(TokenRefusal(reason: "the token is not valid yet (nbf)", cause: .notYetValid)))
        // The cache full (capacity 1): storing another runs its `exp + leeway` filter, without a trap.
        let other = try TokenIssuer.issue(key: key, user: "bob", ttl: 600, scope: nil, now: now)
        #expect(try verifier.verify(other, now: now).get().user == "bob")
        #expect(verifier.verified.count == 1)
        // The issuer refuses times outside 1970…9999 instead of overflowing `now + ttl`.
        #expect(throws: CatalogError.self) { try TokenIssuer.issue(key: key, user: "ann", ttl: .max, scope: nil, now: now) }
        #expect(throws: CatalogError.self) { try TokenIssuer.issue(key: key, user: "ann", ttl: 600, scope: nil, now: -1) }
        #expect(throws: CatalogError.self) {
            try TokenIssuer.issue(key: key, user: "ann", ttl: 1, scope: nil, now: TokenVerifier.numericDates.upperBound)
        }
        #expect(try TokenIssuer.issue(key: key, user: "ann", ttl: 0, scope: nil, now: TokenVerifier.numericDates.upperBound).count > 0)
    }

    @Test("the cache is bounded: past its capacity it is emptied, and every token still verifies")
    func bounded() throws {
        let sandbox = try Sandbox()
        let (privatePath, publicPath) = try ServeKeys.make(sandbox, "k")
        let key = try TokenKey.loadPrivate(path: privatePath)
        let verifier = TokenVerifier(keys: [try TokenKey.loadPublic(path: publicPath)], cacheCapacity: 3)
        let now = Int64(Date().timeIntervalSince1970)
        let tokens = try (0..<7).map { try TokenIssuer.issue(key: key, user: "u\($0)", ttl: 600, scope: nil, now: now) }
        for (i, token) in tokens.enumerated() {
            #expect(try verifier.verify(token, now: now).get().user == "u\(i)")
            #expect(verifier.verified.count <= 3)
        }
        for (i, token) in tokens.enumerated() { #expect(try verifier.verify(token, now: now).get().user == "u\(i)") }
    }
}

@Suite("serve: the request path's text helpers")
struct HTTPTextTests {
    @Test("blanks trimmed as RFC 9110's OWS (spaces and tabs only); milliseconds with two decimals")
    func helpers() {
        #expect(HTTPText.trimmingBlanks(" \tabc.def \t"[...]) == "abc.def")
        #expect(HTTPText.trimmingBlanks("  "[...]) == "")
        #expect(HTTPText.trimmingBlanks("\"x\"\n"[...]) == "\"x\"\n")
        #expect(HTTPText.twoDecimals(12.049) == "12.05")
        #expect(HTTPText.twoDecimals(0.3) == "0.30")
        #expect(HTTPText.twoDecimals(5) == "5.00")
        #expect(HTTPText.twoDecimals(-1) == "0.00")
        #expect(HTTPText.twoDecimals(.nan) == "0.00")
    }
}
