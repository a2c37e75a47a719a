import Foundation

/// What one user may have of the server at a time (docs/serve.md §3): requests in hand, long-polls
/// included, and POSTs through a token bucket, so one user (a device gone wrong, a stolen token) never
/// starves the others.
///
/// A user is known only once the token verified, so a request is counted from then until MHD says it is
/// over (answered, or its connection broke).
final class UserLimits: @unchecked Sendable {
    // Safe: `inHand` and `buckets` are touched only under `lock`.
    private let lock = NSLock()
    private var inHand: [String: Int] = [:]
    private var buckets: [String: (tokens: Double, at: UInt64)] = [:]
    let maxInHand: Int
    let rate: Double
    let burst: Double
    /// Buckets kept at most; past it the full ones (which hold nothing a new bucket would not) go.
    static let bucketLimit = 100_000

    init(maxInHand: Int, rate: Double, burst: Int) {
        self.maxInHand = maxInHand
        self.rate = max(rate, 0.001)  // a rate of 0 would never refill: one every 1,000 s at least
        self.burst = Double(burst)
    }

    /// Counts one more request in hand for `user`; false (nothing counted) when it already has `maxInHand`.
    func enter(_ user: String) -> Bool {
        lock.withLock {
            let n = inHand[user, default: 0]
            guard n < maxInHand else { return false }
            inHand[user] = n + 1
            return true
        }
    }

    /// One request of `user`'s is over.
    func leave(_ user: String) {
        lock.withLock {
            let n = inHand[user, default: 0] - 1
            inHand[user] = n > 0 ? n : nil
        }
    }

    /// Takes a token from `user`'s POST bucket: nil when there was one, else the whole seconds until there
    /// is (at least 1: `Retry-After`).
    func takePost(_ user: String, now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int? {
        lock.withLock {
            var bucket = buckets[user] ?? (burst, now)
            bucket.tokens = min(burst, bucket.tokens + Double(now &- bucket.at) / 1e9 * rate)
            bucket.at = now
            defer {
                buckets[user] = bucket
                if buckets.count > Self.bucketLimit { prune(now) }
            }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(min(86_400, ((1 - bucket.tokens) / rate).rounded(.up))))
        }
    }

    /// Drops the buckets that have filled again since their last POST (under the lock).
    private func prune(_ now: UInt64) {
        buckets = buckets.filter { $0.value.tokens + Double(now &- $0.value.at) / 1e9 * rate < burst }
    }
}
