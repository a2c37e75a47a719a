// What the app's own sync costs (LandmarkCatalogClient), measured against a real `catalog serve` on 127.0.0.1:
//
//     catalog-device-bench CATALOG_BINARY SEEDS [--swipes N] [--idle S] [--hang S]
//
// 1. Two devices: two `Catalog`s on two databases, each with a `SyncSession` for one user through one serve.
//    A's `CarouselModel` page is set (a swipe, with the default configuration); the time until B's
//    `CarouselModel` shows it: p50, p95, max over N swipes, and whether B ends on A's last page.
// 2. Both sessions and both models idle for S seconds: requests per minute per session (serve's access
//    log), this process's CPU (% of one core, getrusage), and its voluntary context switches per second
//    (getrusage's ru_nvcsw: every thread, those that ended included; /proc/self/task/*/status, which the
//    figure was first read from, loses threads that end during the interval).
// 3. One session against a server that accepts and never answers, for S seconds (--hang): CPU % of a core
//    and requests per minute.
// Prints a Markdown table. Run by Benchmarks/run.sh --serve.
import Foundation
import LandmarkCatalog
import LandmarkCatalogClient

@main
struct DeviceBench {
    static func main() async throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        // The baseline: an idle Swift process that has used Dispatch (libdispatch's workqueue monitor on
        // Linux wakes it about once a second, whatever the program does).
        if arguments.first == "--baseline", arguments.count == 2, let seconds = Double(arguments[1]) {
            DispatchQueue.global().async {}
            usleep(UInt32(seconds * 1_000_000))
            return
        }
        guard arguments.count >= 2 else {
            FileHandle.standardError.write(Data("usage: catalog-device-bench CATALOG_BINARY SEEDS [--swipes N] [--idle S]\n".utf8))
            exit(64)
        }
        let binary = arguments.removeFirst()
        let seeds = arguments.removeFirst()
        func option(_ name: String, _ fallback: Int) -> Int {
            arguments.firstIndex(of: name).flatMap { Int(arguments[$0 + 1]) } ?? fallback
        }
        let swipes = option("--swipes", 50)
        let idle = option("--idle", 60)
        let hang = option("--hang", 20)
        let work = FileManager.default.temporaryDirectory.appending(path: "device-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        func path(_ name: String) -> String { work.appending(path: name).path }

        // The server: the seed database, an Ed25519 key from openssl, a token from `catalog token issue`.
        try run(binary, ["--db", path("server.sqlite"), "import", "--quiet", seeds])
        try run("/usr/bin/openssl", ["genpkey", "-algorithm", "ed25519", "-out", path("key.pem")])
        try run("/usr/bin/openssl", ["pkey", "-in", path("key.pem"), "-pubout", "-out", path("key.pub")])
        let token = try run(binary, ["token", "issue", "--key", path("key.pem"), "--user", "ann"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let serve = Process()
        serve.executableURL = URL(fileURLWithPath: binary)
        serve.arguments = [
            "--db", path("server.sqlite"), "serve", "--listen", "127.0.0.1:0", "--auth-key", path("key.pub"),
            // The swipes of one user back to back: above the per-user POST rate (docs/serve.md §3).
            "--post-burst", "1000000",
        ]
        _ = FileManager.default.createFile(atPath: path("serve.log"), contents: nil)
        serve.standardError = try FileHandle(forWritingTo: work.appending(path: "serve.log"))
        serve.standardOutput = FileHandle.nullDevice
        try serve.run()
        defer {
            serve.terminate()
            serve.waitUntilExit()
        }
        func serveLog() -> [[String: Any]] {
            let text = (try? String(contentsOfFile: path("serve.log"), encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        var port = 0
        let started = Date()
        while port == 0 {
            if let listen = serveLog().first(where: { $0["event"] as? String == "listening" })?["listen"] as? String {
                port = Int(listen.split(separator: ":").last ?? "") ?? 0
            } else if Date().timeIntervalSince(started) > 30 || !serve.isRunning {
                throw BenchError("serve did not start")
            } else {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        guard let server = URL(string: "http://127.0.0.1:\(port)") else { throw BenchError("no URL for port \(port)") }

        // Two devices, each its own database, landmarks from the server.
        let a = try Catalog(path: path("a.sqlite"))
        let b = try Catalog(path: path("b.sqlite"))
        let sessionA = try await a.startSync(server: server) { token }
        let sessionB = try await b.startSync(server: server) { token }
        var waited = 0
        func bothHaveLandmarks() async throws -> Bool {
            let (fa, fb) = (try await a.featured(), try await b.featured())
            return !fa.isEmpty && !fb.isEmpty
        }
        while try await !bothHaveLandmarks() {
            waited += 1
            if waited > 3000 { throw BenchError("the devices never got the landmarks") }
            try await Task.sleep(for: .milliseconds(10))
        }
        let modelA = CarouselModel(catalog: a, user: "ann")
        let modelB = CarouselModel(catalog: b, user: "ann")
        while !(modelA.isLoaded && modelB.isLoaded) { try await Task.sleep(for: .milliseconds(10)) }
        let pages = modelA.pageCount
        guard pages >= 2 else { throw BenchError("fewer than 2 featured landmarks") }

        // 1. A's swipe → B's model.
        var latencies: [Double] = []
        var last = modelA.currentPage
        for _ in 0..<swipes {
            var page = Int.random(in: 0..<pages)
            if page == last { page = (page + 1) % pages }
            last = page
            let start = ContinuousClock.now
            await MainActor.run { modelA.currentPage = page }
            while modelB.currentPage != page {
                if ContinuousClock.now - start > .seconds(30) { throw BenchError("B never showed page \(page)") }
                try await Task.sleep(for: .milliseconds(2))
            }
            latencies.append(seconds(ContinuousClock.now - start) * 1000)
            try await Task.sleep(for: .milliseconds(Int.random(in: 300...700)))
        }
        await modelA.flush()
        let endsOnLast = modelB.currentPage == last
        latencies.sort()

        // 2. Idle: requests per minute per session; the process's CPU and context switches (two sessions
        //    and two live models: an app holds one of each, so per app is half of it).
        try await Task.sleep(for: .seconds(1))  // the last swipe's long-poll answers settle
        let baseline = Process()
        baseline.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        baseline.arguments = ["--baseline", String(idle + 3)]
        try baseline.run()
        try await Task.sleep(for: .seconds(1))
        let baseline0 = threadSwitches(of: baseline.processIdentifier)
        let before = serveLog().filter { $0["route"] != nil }.count
        let cpu0 = cpuSeconds()
        let switches0 = voluntarySwitches()
        let wall0 = ContinuousClock.now
        try await Task.sleep(for: .seconds(idle))
        let elapsed = seconds(ContinuousClock.now - wall0)
        let cpu = (cpuSeconds() - cpu0) / elapsed * 100
        let switches = Double(voluntarySwitches() - switches0) / elapsed
        let baselineSwitches = Double(threadSwitches(of: baseline.processIdentifier) - baseline0) / elapsed
        baseline.terminate()
        baseline.waitUntilExit()
        let requests = serveLog().filter { $0["route"] != nil }.count - before
        let perMinute = Double(requests) / 2 / (elapsed / 60)

        modelA.stop()
        modelB.stop()
        await sessionA.stop()
        await sessionB.stop()
        a.close()
        b.close()

        // 3. A server that accepts and never answers.
        let silent = try SilentServer()
        let c = try Catalog(path: path("c.sqlite"))
        guard let silentURL = URL(string: "http://127.0.0.1:\(silent.port)") else { throw BenchError("no URL") }
        let sessionC = try await c.startSync(server: silentURL) { token }
        try await Task.sleep(for: .seconds(1))
        let hangCPU0 = cpuSeconds()
        let hangRequests0 = silent.requests
        let hangWall0 = ContinuousClock.now
        try await Task.sleep(for: .seconds(hang))
        let hangElapsed = seconds(ContinuousClock.now - hangWall0)
        let hangCPU = (cpuSeconds() - hangCPU0) / hangElapsed * 100
        let hangPerMinute = Double(silent.requests - hangRequests0) / (hangElapsed / 60)
        let stopStart = ContinuousClock.now
        await sessionC.stop()
        let stopMs = seconds(ContinuousClock.now - stopStart) * 1000
        c.close()

        func p(_ q: Double) -> Double { latencies[min(latencies.count - 1, Int((q * Double(latencies.count - 1)).rounded()))] }
        print("| case | figure | note |")
        print("| --- | --- | --- |")
        print(
            String(
                format:
                    "| A's CarouselModel swipe → B's CarouselModel, ms p50 / p95 / max (%d swipes) | %.1f / %.1f / %.1f | default configuration; B ends on A's last page: %@ |",
                swipes, p(0.5), p(0.95), latencies.last ?? 0, endsOnLast ? "yes" : "NO"))
        print(
            String(
                format:
                    "| idle over %.0f s, two sessions + two live CarouselModels in one process: requests per minute per session / CPU %% of a core / voluntary context switches per second | %.2f / %.3f / %.2f | baseline, an idle Swift process that used Dispatch (same run): %.2f switches/s; long-poll wait %d s |",
                elapsed, perMinute, cpu, switches, baselineSwitches, SyncSession.Configuration().longPollSeconds))
        print(
            String(
                format:
                    "| a session against a server that accepts and never answers, %.0f s: CPU %% of a core / requests per minute / stop() ms | %.3f / %.1f / %.0f | target ≤ 0.5 %% |",
                hangElapsed, hangCPU, hangPerMinute, stopMs))
        if !endsOnLast { exit(1) }
    }

    /// Voluntary context switches of this process, all its threads, those that ended included
    /// (getrusage's `ru_nvcsw`; summing /proc/self/task/*/status loses the threads that end meanwhile,
    /// such as Dispatch's idle workers, and can even go down).
    static func voluntarySwitches() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_nvcsw
    }

    /// Voluntary context switches of process `pid`, summed over its threads (/proc/PID/task/*/status).
    static func threadSwitches(of pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var total = 0
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
                total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return total
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw BenchError("\(executable) \(arguments.joined(separator: " ")) exited \(p.terminationStatus)") }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A TCP server on 127.0.0.1 that accepts connections, reads what is sent and never answers; it counts
/// request lines.
final class SilentServer: @unchecked Sendable {
    // Safe: `count` is touched only under `lock`.
    let port: Int
    private let lock = NSLock()
    private var count = 0
    var requests: Int { lock.withLock { count } }

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw BenchError("cannot listen on 127.0.0.1") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { [self] in
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while true {
                        let n = read(client, &buffer, buffer.count)
                        guard n > 0 else { return }
                        let text = String(decoding: buffer[0..<n], as: UTF8.self)
                        let lines = text.components(separatedBy: "\r\n").filter { $0.hasPrefix("GET ") || $0.hasPrefix("POST ") }.count
                        lock.withLock { count += lines }
                    }
                }
            }
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
