import Foundation
import LandmarkCatalog

/// The erased users a running serve refuses tokens of (docs/serve.md §2, docs/erasure.md §6): each erasure
/// record's user hash and time, and the collection horizon, held in memory so the check on each request is
/// one hash of the token's user and one dictionary look-up, never a read.
///
/// Filled at start from `user_erasures`, then from the records whose change sequence number is new
/// (``ServeWatch``, when `PRAGMA data_version` moved), and at once by serve's own `DELETE /v1/users/…`.
///
/// A user token is refused when its user has an erasure stamped at or after its `iat` (or it has no `iat`):
/// the account it was issued to is gone. A token issued after the erasure is a new user's. A token whose
/// `iat` is before the horizon is refused too: an erasure below the horizon may have been collected, so
/// this server can no longer tell.
package final class ErasedAccounts: @unchecked Sendable {
    // Safe: `erasedAt`, `through` and `horizon` are touched only while `lock` is held.
    private let lock = NSLock()
    private var erasedAt: [String: Int64] = [:]
    private var through: Int64 = 0
    private var horizon: Int64 = 0

    package init() {}

    /// How many erased users are held.
    package var count: Int { lock.withLock { erasedAt.count } }

    /// The change sequence number read up to (the next ``merge(_:)`` reads past it).
    package var readThrough: Int64 { lock.withLock { through } }

    /// Takes in what ``UserErasure/erasureTimes(after:)`` read: the later time of a user wins; entries below
    /// a horizon that moved are dropped (they refuse nothing the horizon does not).
    package func merge(_ times: ErasureTimes) {
        lock.withLock {
            for (hash, time) in times.erasedAt { erasedAt[hash] = max(erasedAt[hash] ?? .min, time) }
            through = max(through, times.through)
            if times.horizonMilliseconds > horizon {
                horizon = times.horizonMilliseconds
                erasedAt = erasedAt.filter { $0.value >= horizon }
            }
        }
    }

    /// Records one erasure made by this server (in force before the erasing request is answered).
    /// - Parameters:
    ///   - userHash: ``ErasureRule/userHash(_:)`` of the user.
    ///   - milliseconds: the erasure's wall time (ms since the epoch, UTC).
    package func note(userHash: String, milliseconds: Int64) {
        lock.withLock { erasedAt[userHash] = max(erasedAt[userHash] ?? .min, milliseconds) }
    }

    /// The refusal of a user token whose account was erased after it was issued, or that was issued before
    /// the collection horizon; nil otherwise, and for edge tokens (never the id in the reason).
    func refusal(_ identity: TokenIdentity) -> TokenRefusal? {
        guard !identity.isEdge else { return nil }
        let (empty, horizon) = lock.withLock { (erasedAt.isEmpty, self.horizon) }
        if let iat = identity.issuedAt, horizon > 0, iat.multipliedReportingOverflow(by: 1000).partialValue < horizon {
            return TokenRefusal(
                reason:
                    "the token was issued before this server's collection horizon (\(Timestamp.format(milliseconds: horizon))); ask for a new one",
                cause: .beforeHorizon)
        }
        if empty { return nil }
        let hash = ErasureRule.userHash(identity.user)
        guard let erased = lock.withLock({ erasedAt[hash] }) else { return nil }
        if let iat = identity.issuedAt, erased < iat.multipliedReportingOverflow(by: 1000).partialValue { return nil }
        return TokenRefusal(reason: "the account this token was issued to was erased; sign in again", cause: .accountErased)
    }
}
