import Foundation
import LandmarkCatalog

/// The revocations in force for a running serve (docs/serve.md §10): the database's and, with `--hub`, the
/// hub's, held in memory and replaced by ``ServeWatch`` when either changes, so the check on each request
/// is two dictionary look-ups and never a read.
///
/// A token is revoked when its `jti` is revoked, or its user is and the token's `iat` is before the
/// revocation's time (a token without `iat` of a revoked user is revoked). Users are held by the hash of
/// their id, as stored: a request with a user revoked somewhere hashes its token's user once.
package final class RevokedTokens: @unchecked Sendable {
    // Safe: `users` and `ids` are touched only while `lock` is held.
    private let lock = NSLock()
    private var users: [String: Int64] = [:]
    private var ids: Set<String> = []

    package init() {}

    /// Replaces the revocations in force with `revocations` (a user named twice: the later time wins).
    package func replace(_ revocations: [TokenRevocation]) {
        var users: [String: Int64] = [:]
        var ids: Set<String> = []
        for r in revocations {
            switch r.kind {
            case .user:
                let hash = Self.userHash(stored: r.subject)
                users[hash] = max(users[hash] ?? .min, r.before)
            case .jti: ids.insert(r.subject)
            }
        }
        lock.withLock { (self.users, self.ids) = (users, ids) }
    }

    /// The hash a user's revocation is kept under: `subject` as stored (``ErasureRule/userHash(_:)``, 64
    /// lowercase hex digits), or, for a user id still stored in clear (a hub not migrated yet), its hash.
    static func userHash(stored subject: String) -> String {
        let hex = subject.utf8.count == 64 && subject.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        return hex ? subject : ErasureRule.userHash(subject)
    }

    /// How many revocations are in force (users and ids).
    package var count: Int { lock.withLock { users.count + ids.count } }

    /// The refusal of a revoked token, nil for one that is not (never the token in the reason).
    func refusal(_ identity: TokenIdentity) -> TokenRefusal? {
        let revoked: Bool = lock.withLock {
            if users.isEmpty && ids.isEmpty { return false }
            if let id = identity.tokenID, ids.contains(id) { return true }
            guard !users.isEmpty, let before = users[ErasureRule.userHash(identity.user)] else { return false }
            guard let iat = identity.issuedAt else { return true }
            return iat < before
        }
        return revoked ? TokenRefusal(reason: "the token was revoked (catalog token revoke); ask for a new one", cause: .revoked) : nil
    }
}
