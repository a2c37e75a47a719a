import Foundation
import LandmarkCatalog

/// serve's own collection of tombstones and erasure records (docs/erasure.md §4): once per interval
/// (daily), `catalog gc` with the default 30-day horizon on a thread of its own, without the vacuum, so the
/// writer is held for the delete alone.
///
/// With `--hub` the replica's follower collects instead (it does so daily itself).
final class ServeCollection: @unchecked Sendable {
    // Safe: `stopped` is used under `condition`'s lock; the rest is set in `init`.
    private let databasePath: String
    private let intervalMilliseconds: Int
    private let log: @Sendable (String) -> Void
    private let condition = NSCondition()
    private var stopped = false
    private var running = false
    /// serve's default: once a day.
    static let dailyMilliseconds = 86_400_000

    init(databasePath: String, intervalMilliseconds: Int, log: @escaping @Sendable (String) -> Void) {
        self.databasePath = databasePath
        self.intervalMilliseconds = max(1, intervalMilliseconds)
        self.log = log
    }

    /// Starts the thread: the first collection one interval after serve started.
    func start() {
        condition.withLock { running = true }
        Thread.detachNewThread { [self] in
            while waitInterval() { collectOnce() }
            condition.withLock {
                running = false
                condition.broadcast()
            }
        }
    }

    /// Stops the thread; a collection in hand finishes first (one transaction).
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
            while running { condition.wait() }
        }
    }

    /// Waits one interval; false once stopped.
    private func waitInterval() -> Bool {
        let deadline = Date().addingTimeInterval(Double(intervalMilliseconds) / 1000)
        return condition.withLock {
            while !stopped && condition.wait(until: deadline) {}
            return !stopped
        }
    }

    /// One collection, logged as an event line; a failure (the database busy) waits for the next interval:
    /// collecting late loses nothing.
    private func collectOnce() {
        var w = JSONWriter(reservingCapacity: 160)
        do {
            let store = try CatalogStore.open(path: databasePath)
            let s = try Collector(store).collect(vacuum: false)
            w.raw(#"{"event":"gc","state":"ok","horizon":"#)
            w.string(Timestamp.format(milliseconds: s.horizonMilliseconds))
            w.raw(#","landmarkTombstones":\#(s.landmarkTombstones),"positionTombstones":\#(s.positionTombstones),"erasures":\#(s.erasures)}"#)
        } catch {
            w.raw(#"{"event":"gc","state":"failing","message":"#)
            w.string((error as? CatalogError)?.message ?? "\(error)")
            w.raw("}")
        }
        log(String(decoding: w.bytes, as: UTF8.self))
    }
}
