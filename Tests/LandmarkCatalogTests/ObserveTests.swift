import CatalogTestSupport
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
                    let failures = Protected<[String]>([])
                    let tasks = (0..<20).map { _ in
                        Task {
                            do {
                                for try await _ in catalog.observe({ try await $0.position(user: "u")?.currentPage }) {}
                            } catch is CancellationError {
                            } catch {
                                failures.withLock { $0.append("\(error)") }
                                throw error
                            }
                        }
                    }
                    // Every observer has read once and waits in the monitor. An observer that failed never
                    // waits: say why at once rather than wait out the watchdog.
                    let ready = await waitTurns(seconds: 20) { monitor.waiterCount == 20 || !failures.withLock { $0.isEmpty } }
                    if let failure = failures.withLock({ $0.first }) { throw ObserverFailed(message: failure) }
                    guard ready else { throw TimedOut(what: "20 waiters (\(monitor.waiterCount) waiting)", seconds: 20) }
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

    /// An observer's stream ended with an error before the round's commit.
    struct ObserverFailed: Error, CustomStringConvertible {
        let message: String
        var description: String { "an observer failed: \(message)" }
    }

    // MARK: - This process's writes

    /// With nothing observing, the monitor's thread does not run: only `noteLocalWrite()` can move the
    /// generation, so this shows each write path calls it (observers need no file event for them).
    @Test("every write path of Catalog wakes observers directly when it returns")
    func localWritesWake() async throws {
        let (catalog, db) = try await CatalogLibraryTests.seededCatalog()
        let monitor = catalog.monitor
        let snapshot = URL(fileURLWithPath: db).deletingLastPathComponent().appending(path: "self.json").path
        try await catalog.export(to: snapshot)
        let writes: [(String, @Sendable () async throws -> Void)] = [
            ("setPosition", { _ = try await catalog.setPosition(user: "u", to: .page(1)) }),
            ("clearPosition", { try await catalog.clearPosition(user: "u") }),
            ("importLandmarks", { _ = try await catalog.importLandmarks(from: .file(CatalogLibraryTests.seeds.path)) }),
            ("write {}", { _ = try await catalog.write { try Positions($0).setPosition(user: "v", to: .page(2)) } }),
            ("sync", { _ = try await catalog.sync([snapshot]) }),
        ]
        for (name, write) in writes {
            let before = monitor.currentGeneration
            try await write()
            #expect(monitor.currentGeneration == before + 1, "\(name)")
        }
        catalog.close()
    }

    // MARK: - Commits found through the OS

    /// Records the monitor's checks (why, and whether they found a change).
    final class Checks: Sendable {
        let list = Protected<[(cause: ChangeMonitor.CheckCause, changed: Bool)]>([])
        init(_ monitor: ChangeMonitor) {
            let list = list
            monitor.hooks.withLock { $0.didCheck = { cause, changed in list.withLock { $0.append((cause, changed)) } } }
        }
        func contains(_ cause: ChangeMonitor.CheckCause, changed: Bool? = nil) -> Bool {
            list.withLock { $0.contains { $0.cause == cause && (changed == nil || $0.changed == changed) } }
        }
        func reset() { list.withLock { $0.removeAll() } }
    }

    @Test("another connection's commit, in this process or another, wakes an observer through a file event")
    func otherConnections() async throws {
        let (catalog, db) = try await CatalogLibraryTests.seededCatalog()
        let checks = Checks(catalog.monitor)
        let seen = CatalogLibraryTests.Collector(catalog.observe { try await $0.position(user: "u")?.currentPage })
        #expect(await seen.wait(for: 1))
        // The thread has started watching (and made its first check): what it finds next comes from an event.
        #expect(await waitTurns { checks.contains(.start) })
        checks.reset()

        // Another connection in this process: not a write through `catalog`, so only the OS tells.
        let store = try CatalogStore.open(path: db)
        try Positions(store).setPosition(user: "u", to: .page(2))
        #expect(await seen.wait(for: 2))
        #expect(seen.last == 2)
        // Found by the check an event started, or by one of the checks just after it (the commit's last
        // WAL write comes before it is published in the shared memory index).
        #expect(checks.contains(.fileEvent, changed: true) || checks.contains(.afterFileEvent, changed: true))

        // Another process.
        let run = try await runProcessAsync(Support.catalogBinary, ["--db", db, "position", "set", "--user", "u", "--page", "3"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(await seen.wait(for: 3))
        #expect(seen.last == 3)
        // inotify worked: no check came from the once-a-second fallback.
        #expect(!checks.contains(.interval))
        seen.task.cancel()
        catalog.close()
    }

    @Test("a database replaced by rename is seen through a file event, and read from the new file")
    func replacedByRename() async throws {
        let (catalog, db) = try await CatalogLibraryTests.seededCatalog()
        let checks = Checks(catalog.monitor)
        let seen = CatalogLibraryTests.Collector(catalog.observe { try await $0.featured().map(\.id) })
        #expect(await seen.wait(for: 1))
        #expect(seen.last == [1001, 1003, 1006, 1010])
        #expect(await waitTurns { checks.contains(.start) })
        let other = Support.temporaryDatabase()
        #expect(runCLI(["import", try landmarkFile(featured: [1001, 1002])], db: other).status == 0)
        // A restore done right: the old -wal and -shm go first (SQLite would read a stale -wal into the new
        // file), then the new database is renamed over the old one in one step.
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
        #expect(rename(other, db) == 0)
        #expect(await seen.wait(for: 2))
        #expect(seen.last == [1001, 1002])
        #expect(checks.contains(.fileEvent, changed: true) || checks.contains(.afterFileEvent, changed: true))
        seen.task.cancel()
        catalog.close()
    }

    @Test("without file events (inotify refused) another connection's commit is found by the check once a second")
    func fallbackInterval() async throws {
        let (catalog, db) = try await CatalogLibraryTests.seededCatalog()
        let checks = Checks(catalog.monitor)
        catalog.monitor.hooks.withLock { $0.withoutFileEvents = true }
        let seen = CatalogLibraryTests.Collector(catalog.observe { try await $0.position(user: "u")?.currentPage })
        #expect(await seen.wait(for: 1))
        #expect(await waitTurns { checks.contains(.start) })
        let store = try CatalogStore.open(path: db)
        try Positions(store).setPosition(user: "u", to: .page(1))
        #expect(await seen.wait(for: 2))
        #expect(seen.last == 1)
        #expect(checks.contains(.interval, changed: true))
        #expect(!checks.contains(.fileEvent))
        seen.task.cancel()
        catalog.close()
    }

    /// The sum over threads of `voluntary_ctxt_switches` in `/proc/PID/task/*/status`, by thread id.
    static func voluntarySwitches(pid: Int32) -> [String: Int] {
        let tasks = "/proc/\(pid)/task"
        var result: [String: Int] = [:]
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            guard let status = try? String(contentsOfFile: "\(tasks)/\(tid)/status", encoding: .utf8) else { continue }
            for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
                result[tid] = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
            }
        }
        return result
    }

    /// Whether a thread of `pid` is in `poll(fds, 2, -1)`: ChangeMonitor's thread, idle.
    ///
    /// `/proc/PID/task/TID/syscall` is the system call's number and arguments; 7 is `poll` on x86_64 (elsewhere
    /// the test settles for a thread in a poll of any timeout).
    static func blocksInPollForever(pid: Int32) -> Bool {
        let tasks = "/proc/\(pid)/task"
        return ((try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []).contains { tid in
            #if arch(x86_64)
                let call = ((try? String(contentsOfFile: "\(tasks)/\(tid)/syscall", encoding: .utf8)) ?? "").split(separator: " ")
                return call.count > 3 && call[0] == "7" && call[2] == "0x2" && call[3] == "0xffffffff"
            #else
                return ((try? String(contentsOfFile: "\(tasks)/\(tid)/wchan", encoding: .utf8)) ?? "").hasPrefix("poll_schedule")
            #endif
        }
    }

    /// Before: the monitor thread woke every 50 ms to run `PRAGMA data_version` (40 wake-ups in 2 s).
    ///
    /// Measured in a process of its own, the `Carousel` example (a `CarouselModel`, its observation, a
    /// thread blocked reading keys), so the other tests' threads do not count. It counts switches, not
    /// time, so a loaded machine does not change it; Swift's dispatch runtime itself wakes its manager
    /// thread once a second (a program that only used `DispatchQueue.global()` once does so too), hence 4.
    @Test(
        "an idle observer and CarouselModel make no wake-ups of their own: about libdispatch's 1 a second",
        .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/task"), "counts switches in /proc (Linux)"))
    func idleWakeUps() async throws {
        let (catalog, db) = try await CatalogLibraryTests.seededCatalog()
        catalog.close()
        let carousel = Support.catalogBinary.deletingLastPathComponent().appending(path: "Carousel")
        try #require(FileManager.default.isExecutableFile(atPath: carousel.path), "build the Carousel example first")
        let process = Process()
        let keys = Pipe()
        let screen = Pipe()
        process.executableURL = carousel
        process.arguments = ["--db", db, "--user", "u"]
        process.standardInput = keys
        process.standardOutput = screen
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        let drawn = Protected("")
        Thread.detachNewThread {
            while true {
                let data = screen.fileHandleForReading.availableData
                if data.isEmpty { return }
                drawn.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
        }
        let pid = process.processIdentifier
        // Loaded (its first read drawn), and its monitor thread blocks in poll() with no timeout (the checks
        // that follow the start's file events are over).
        #expect(await waitTurns { drawn.withLock { $0.contains("page 0 of 4") } })
        #expect(await waitTurns { Self.blocksInPollForever(pid: pid) })
        let before = Self.voluntarySwitches(pid: pid)
        let started = ContinuousClock.now
        try await Task.sleep(for: .seconds(2))
        let after = Self.voluntarySwitches(pid: pid)
        let elapsed = ContinuousClock.now - started
        // Per thread: a thread that ended meanwhile (an idle dispatch worker retiring) must not subtract.
        let switches = after.reduce(0) { sum, entry in sum + max(0, entry.value - (before[entry.key] ?? 0)) }
        // libdispatch's workqueue monitor wakes any Linux process that used Dispatch once a second
        // (docs/performance.md §6); on a loaded test run the 2 s sleep can last longer. The 50 ms poll
        // this replaces made 20 a second.
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let bound = Int(seconds * 1.5) + 2
        #expect(
            switches <= bound, "\(switches) voluntary context switches in \(elapsed) (bound \(bound)), by thread before \(before) after \(after)")

        // And it was live all along: another process's page moves it.
        let run = try await runProcessAsync(Support.catalogBinary, ["--db", db, "position", "set", "--user", "u", "--page", "2"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(await waitTurns { drawn.withLock { $0.contains("page 2 of 4") } })
        try keys.fileHandleForWriting.close()  // end of input: it flushes and exits
    }
}
