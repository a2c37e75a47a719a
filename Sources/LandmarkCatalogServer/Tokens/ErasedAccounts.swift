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
    /// - Returns: the hashes of the users whose erasure is new or later than the one held.
    @discardableResult
    package func merge(_ times: ErasureTimes) -> Set<String> {
        lock.withLock {
            var changed: Set<String> = []
            for (hash, time) in times.erasedAt where time > erasedAt[hash] ?? .min {
                erasedAt[hash] = time
                changed.insert(hash)
            }
            through = max(through, times.through)
            if times.horizonMilliseconds > horizon {
                horizon = times.horizonMilliseconds
                erasedAt = erasedAt.filter { $0.value >= horizon }
            }
            return changed
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
        let iatMilliseconds = identity.issuedAt.map { $0.multipliedReportingOverflow(by: 1000).partialValue }
        // The erasure first: a token of an erased account is told so even when it is also older than the horizon.
        if !empty, let erased = lock.withLock({ erasedAt[ErasureRule.userHash(identity.user)] }),
            iatMilliseconds.map({ erased >= $0 }) ?? true
        {
            return TokenRefusal(reason: "the account this token was issued to was erased; sign in again", cause: .accountErased)
        }
        if let iat = iatMilliseconds, horizon > 0, iat < horizon {
            return TokenRefusal(
                reason:
                    "the token was issued before this server's collection horizon (\(Timestamp.format(milliseconds: horizon))); ask for a new one",
                cause: .beforeHorizon)
        }
        return nil
    }

    /// When `userHash`'s erasure held here was stamped (ms since the epoch, UTC), nil when none is held.
    package func erasedAt(userHash: String) -> Int64? { lock.withLock { erasedAt[userHash] } }
}
