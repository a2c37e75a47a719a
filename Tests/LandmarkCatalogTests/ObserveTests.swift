import Foundation
import Testing

@testable import LandmarkCatalog

/// `Catalog.observe` under cancellation, and how its monitor finds other connections' commits
/// (docs/swift-library.md §observe).
@Suite("observe: cancellation and file events")
struct ObserveTests {
    /// One round's hand-off between the test and the monitor's hooks.
    final class Round: Sendable {
        let tasks: [Task<Void, any Error>]
        /// Signalled by each cancellation handler as it starts.
        let cancelling = DispatchSemaphore(value: 0)
        private let armed = Protected(true)
        init(_ tasks: [Task<Void, any Error>]) { self.tasks = tasks }
        /// True the first time only.
        func fire() -> Bool {
            armed.withLock { armed in
                defer { armed = false }
                return armed
            }
        }
    }

    /// Ends the test process with `message` unless ``disarm()`` is called within `seconds`.
    ///
    /// A plain thread, not a task or a Dispatch timer: a deadlocked monitor blocks every cooperative
    /// thread (each observer task that touches it), so a `bounded` round could never report its timeout
    /// (the planted old code hung the run so, at round 0).
    final class Watchdog: Sendable {
        private let done = DispatchSemaphore(value: 0)
        init(seconds: Int, _ message: String) {
            Thread.detachNewThread { [done] in
                guard done.wait(timeout: .now() + .seconds(seconds)) == .timedOut else { return }
                FileHandle.standardError.write(Data("ObserveTests: \(message) did not end within \(seconds) s (a deadlock)\n".utf8))
                abort()
            }
        }
        func disarm() { done.signal() }
    }

    /// Regression: `ChangeMonitor` resumed waiters while holding its lock, and a waiter's cancellation
    /// handler (run inside `Task.cancel()`, which holds the task's status lock) takes that lock; resuming
    /// the task needs its status lock: 20 observers cancelled during a delivery deadlocked in ~2 % of rounds.
    ///
    /// The hook makes every round hit the window: between taking the waiters out and resuming them, the
    /// delivering thread starts cancelling all 20 tasks on another thread and goes on only once a
    /// cancellation handler is running. With the old code planted back, round 0 deadlocked (the watchdog
    /// ended the run).
    @Test("20 observers cancelled while a commit is delivered all end, 300 rounds")
    func cancelDuringDelivery() async throws {
        let (catalog, _) = try await CatalogLibraryTests.seededCatalog()
        let monitor = catalog.monitor
        let current = Protected<Round?>(nil)
        monitor.hooks.withLock { hooks in
            hooks.willCancel = { current.withLock { $0 }?.cancelling.signal() }
            hooks.willResume = { _ in
                guard let round = current.withLock({ $0 }), round.fire() else { return }
                Thread.detachNewThread { for task in round.tasks { task.cancel() } }
                _ = round.cancelling.wait(timeout: .now() + 5)
            }
        }
        for n in 0..<300 {
            let watchdog = Watchdog(seconds: 60, "round \(n) of cancelDuringDelivery")
            defer { watchdog.disarm() }
            do {
                try await bounded(30, "round \(n)") {
                    let tasks = (0..<20).map { _ in
                        Task { for try await _ in catalog.observe({ try await $0.position(user: "u")?.currentPage }) {} }
                    }
                    // Every observer has read once and waits in the monitor.
                    guard await waitTurns({ monitor.waiterCount == 20 }) else { throw TimedOut(what: "20 waiters", seconds: 60) }
                    current.withLock { $0 = Round(tasks) }
                    try await catalog.setPosition(user: "u", to: .page(n % 4))
                    for task in tasks { _ = await task.result }
                }
            } catch {
                // A deadlock leaves the monitor locked: the catalog is left as it is, not closed.
                Issue.record("round \(n): \(error)")
                return
            }
            #expect(monitor.waiterCount == 0)
        }
        catalog.close()
    }
}
