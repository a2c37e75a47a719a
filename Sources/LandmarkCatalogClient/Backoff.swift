import Foundation

/// Exponential backoff with jitter, bounded: each failure doubles the delay from `minimum` up to
/// `maximum`, and the wait is drawn uniformly from the upper half of it ("equal jitter"), so devices that
/// lost the server at the same moment do not return at the same moment
/// (https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/).
///
/// A success resets it.
struct Backoff: Sendable {
    let minimum: Double
    let maximum: Double
    private(set) var failures = 0

    init(minimum: Double, maximum: Double) {
        self.minimum = max(minimum, 0.001)
        self.maximum = max(maximum, self.minimum)
    }

    /// The next wait in seconds (never above `maximum`, never below half of `minimum`); `atLeast` (a
    /// server's `Retry-After`) raises it, still bounded by `maximum`.
    mutating func next(atLeast floor: Double? = nil) -> Double {
        let base = min(maximum, minimum * pow(2, Double(min(failures, 30))))
        failures += 1
        let wait = base / 2 + Double.random(in: 0...(base / 2))
        return min(maximum, max(wait, floor ?? 0))
    }

    mutating func reset() { failures = 0 }
}

/// A sleep that another task can cut short (the server answered again: the outbox should not wait out its
/// backoff), and that ends at once when the sleeping task is cancelled.
final class Waker: @unchecked Sendable {
    // Safe: `waiting`, `fired` and `nextID` are touched only while `lock` is held.
    private let lock = NSLock()
    private var waiting: [UInt64: CheckedContinuation<Void, Never>] = [:]
    /// Sleeps whose end came before their continuation was registered.
    private var fired: Set<UInt64> = []
    private var nextID: UInt64 = 0

    /// Sleeps `seconds`, or until ``wake()`` or cancellation.
    func sleep(seconds: Double) async {
        let id = newID()
        let timer = Task { [weak self] in
            try? await Task.sleep(nanoseconds: UInt64(max(seconds, 0) * 1e9))
            self?.resume(id)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                lock.lock()
                if fired.remove(id) != nil {
                    lock.unlock()
                    continuation.resume()
                    return
                }
                waiting[id] = continuation
                lock.unlock()
                if Task.isCancelled { resume(id) }
            }
        } onCancel: {
            resume(id)
        }
        timer.cancel()
        forget(id)
    }

    private func newID() -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        nextID += 1
        return nextID
    }

    private func forget(_ id: UInt64) {
        lock.lock()
        fired.remove(id)
        lock.unlock()
    }

    /// Ends every sleep now.
    func wake() {
        lock.lock()
        let all = waiting
        waiting.removeAll()
        lock.unlock()
        for continuation in all.values { continuation.resume() }
    }

    private func resume(_ id: UInt64) {
        lock.lock()
        let continuation = waiting.removeValue(forKey: id)
        if continuation == nil { fired.insert(id) }
        lock.unlock()
        continuation?.resume()
    }
}
