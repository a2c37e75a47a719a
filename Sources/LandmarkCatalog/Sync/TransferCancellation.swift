import Foundation

/// Ends a follower's network transfers and retry waits from another thread (docs/live-sync.md §3).
///
/// A follower fetches HTTP sources on worker threads and long-polls `catalog serve`; on SIGTERM each
/// transfer must end within about a second whatever the server does (a hung GET held the exit
/// for 28 s). The HTTP code checks ``isCancelled`` from libcurl's progress callback, which libcurl calls
/// at least once a second even when no byte arrives, and waits between retries with ``sleep(seconds:)``.
package final class TransferCancellation: @unchecked Sendable {
    // @unchecked: `cancelled` is only read or written while `condition` is locked.
    private let condition = NSCondition()
    private var cancelled = false

    package init() {}

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }

    /// Ends every transfer and wait that checks this, now and later.
    package func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits `seconds`, or less when cancelled meanwhile.
    ///
    /// - Parameter seconds: how long to wait.
    /// - Returns: false when cancelled (before or during the wait).
    package func sleep(seconds: Double) -> Bool {
        let until = Date().addingTimeInterval(max(0, seconds))
        condition.lock()
        defer { condition.unlock() }
        while !cancelled {
            if !condition.wait(until: until) { break }
        }
        return !cancelled
    }
}
