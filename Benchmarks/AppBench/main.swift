// What the Swift library costs an app, each figure beside a baseline measured in the same run:
//
//     catalog-app-bench CATALOG_BINARY SEEDS [--observers N] [--commits N] [--seconds S]
//
// 1. N observers (one `Catalog`, N `observe` loops) on one database; another connection commits a change
//    of the observed user's page: time until all N have yielded (p50, p95 over the commits), against
//    the time until one observer alone yields.
// 2. The process's CPU with N idle observers over S seconds, as % of one core.
// 3. Idle wake-ups: the process's voluntary context switches per second (summed over
//    /proc/self/task/*/status) over S seconds with one observer and one `CarouselModel`, against the same
//    process with nothing observing (the Swift runtime's own floor: libdispatch wakes once a second).
// 4. `featured()` from 8 tasks for S seconds, calls per second, against `catalog featured --json` run as a
//    process (what a script gets), per second.
// Prints a Markdown table. Run by Benchmarks/run.sh --observe.
import Foundation
import LandmarkCatalog

@main
struct AppBench {
    static func main() async throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2 else {
            FileHandle.standardError.write(Data("usage: catalog-app-bench CATALOG_BINARY SEEDS [--observers N] [--commits N] [--seconds S]\n".utf8))
            exit(64)
        }
        let binary = arguments.removeFirst()
        let seeds = arguments.removeFirst()
        func option(_ name: String, _ fallback: Int) -> Int {
            arguments.firstIndex(of: name).flatMap { Int(arguments[$0 + 1]) } ?? fallback
        }
        let observers = option("--observers", 100)
        let commits = option("--commits", 50)
        let seconds = option("--seconds", 10)
        let work = FileManager.default.temporaryDirectory.appending(path: "app-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let path = work.appending(path: "catalog.sqlite").path
        let catalog = try Catalog(path: path)
        try await catalog.importLandmarks(from: .file(seeds))
        let pageCount = try await catalog.featured().count
        // "Another connection": seen through inotify on the directory, then PRAGMA data_version.
        let other = try CatalogStore.open(path: path)

        // 1. Commit → every observer yielded.
        func latencies(observing n: Int) async throws -> [Double] {
            let counts = Counter(n)
            let tasks = (0..<n).map { i in
                Task {
                    for try await _ in catalog.observe({ try await $0.position(user: "bench")?.currentPage }) { counts.bump(i) }
                }
            }
            defer { for task in tasks { task.cancel() } }
            while counts.minimum < 1 { try await Task.sleep(for: .milliseconds(1)) }
            var result: [Double] = []
            for c in 0..<commits {
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...60)))
                let target = counts.minimum + 1
                try Positions(other).setPosition(user: "bench", to: .page((c + 1) % pageCount))
                let start = ContinuousClock.now
                while counts.minimum < target { try await Task.sleep(for: .microseconds(200)) }
                let d = ContinuousClock.now - start
                result.append(Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
            }
            return result.sorted()
        }
        let one = try await latencies(observing: 1)
        let many = try await latencies(observing: observers)

        // 2. Idle CPU with the observers subscribed.
        let idleTasks = (0..<observers).map { _ in
            Task { for try await _ in catalog.observe({ try await $0.featured().count }) {} }
        }
        try await Task.sleep(for: .milliseconds(200))
        let cpuBefore = cpuSeconds()
        let wallBefore = ContinuousClock.now
        try await Task.sleep(for: .seconds(seconds))
        let idleShare = (cpuSeconds() - cpuBefore) / elapsed(since: wallBefore) * 100
        for task in idleTasks { task.cancel() }

        // 3. Idle wake-ups, nothing observing, then one observer and one CarouselModel. A second lets the
        // cancelled observers end (and the monitor's thread with them), and the started ones settle (the
        // monitor checks again up to 0.5 s after the last file event).
        try await Task.sleep(for: .seconds(1))
        let floor = try await switchesPerSecond(over: seconds)
        let observer = Task { for try await _ in catalog.observe({ try await $0.featured().count }) {} }
        let model = await MainActor.run { CarouselModel(catalog: catalog, user: "bench-idle") }
        while !(await MainActor.run { model.isLoaded }) { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .seconds(1))
        let observed = try await switchesPerSecond(over: seconds)
        observer.cancel()
        await MainActor.run { model.stop() }

        // 4. featured() from 8 tasks against the CLI per process.
        let readsStart = ContinuousClock.now
        let reads = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var n = 0
                    while ContinuousClock.now - readsStart < .seconds(seconds) {
                        _ = try await catalog.featured()
                        n += 1
                    }
                    return n
                }
            }
            var total = 0
            for try await n in group { total += n }
            return total
        }
        let readRate = Double(reads) / elapsed(since: readsStart)
        let cliStart = ContinuousClock.now
        var runs = 0
        while ContinuousClock.now - cliStart < .seconds(seconds) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["--db", path, "featured", "--json"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            runs += 1
        }
        let cliRate = Double(runs) / elapsed(since: cliStart)

        func ms(_ s: Double) -> String { String(format: "%.1f ms", s * 1000) }
        func p(_ v: [Double], _ q: Double) -> Double { v[Int(q * Double(v.count - 1))] }
        print("| case | figure | baseline (same run) | ratio |")
        print("| --- | --- | --- | --- |")
        print(
            "| another connection's commit → all \(observers) observers yielded, p50 (\(commits) commits) | \(ms(p(many, 0.5))) | 1 observer \(ms(p(one, 0.5))) | \(String(format: "%.2f", p(many, 0.5) / p(one, 0.5))) |"
        )
        print("| same, p95 | \(ms(p(many, 0.95))) | 1 observer \(ms(p(one, 0.95))) | \(String(format: "%.2f", p(many, 0.95) / p(one, 0.95))) |")
        print("| \(observers) idle observers, process CPU over \(seconds) s | \(String(format: "%.2f", idleShare)) % of a core | | |")
        print(
            "| idle process with 1 observer + 1 CarouselModel, voluntary context switches over \(seconds) s | \(String(format: "%.2f", observed))/s | nothing observing: \(String(format: "%.2f", floor))/s | \(floor > 0 ? String(format: "%.2f", observed / floor) : "–") |"
        )
        print(
            "| featured() from 8 tasks | \(Int(readRate)) calls/s | `catalog featured --json` processes: \(String(format: "%.1f", cliRate))/s | \(String(format: "%.0f", readRate / cliRate))× |"
        )
        catalog.close()
    }

    /// This process's voluntary context switches per second over `seconds`: each thread's
    /// `voluntary_ctxt_switches` (/proc/self/task/TID/status) at the end less at the start, summed (a thread
    /// that ended meanwhile counts for nothing, rather than subtracting its total).
    static func switchesPerSecond(over seconds: Int) async throws -> Double {
        func sample() -> [String: Int] {
            var result: [String: Int] = [:]
            for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
                guard let status = try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8) else { continue }
                for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
                    result[tid] = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
                }
            }
            return result
        }
        let before = sample()
        let start = ContinuousClock.now
        try await Task.sleep(for: .seconds(seconds))
        let after = sample()
        let switches = after.reduce(0) { sum, entry in sum + max(0, entry.value - (before[entry.key] ?? 0)) }
        return Double(switches) / elapsed(since: start)
    }

    /// User + system CPU time of this process, in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func elapsed(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}

/// How many values each observer has yielded.
final class Counter: @unchecked Sendable {
    // Safe: `counts` is touched only under `lock`.
    private let lock = NSLock()
    private var counts: [Int]
    init(_ n: Int) { counts = Array(repeating: 0, count: n) }
    func bump(_ i: Int) { lock.withLock { counts[i] += 1 } }
    var minimum: Int { lock.withLock { counts.min() ?? 0 } }
}
