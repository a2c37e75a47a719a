// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    @_spi(Testing) import CatalogCLI
    import Foundation
    import Synchronization
    import Testing

    @testable import LandmarkCatalog
    @testable import LandmarkCatalogSync

    /// Paths, temporary databases and an in-process CLI runner shared by the suites.
    package enum Support {
        /// HTTP and hub sources and libcrypto's minisign, registered as the CLI does at start: an in-process
        /// test of an http:// or hub source must not depend on another suite having registered them first (a
        /// `--filter` run of NginxInteropTests alone failed with 64, "need the LandmarkCatalogSync library").
        ///
        /// Touched by ``temporaryDirectory()``, which every such test calls.
        package static let networkSources: Void = NetworkSources.register()
        /// The package root (three levels above this file).
        package static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        /// Our own small fixtures.
        package static func fixture(_ name: String) -> String { root.appending(path: "Tests/Fixtures/\(name)").path }

        /// Starts `python3 Tests/Support/SCRIPT ARGUMENTS…` with `input` as its standard input (the server
        /// exits when it closes) and returns the port it prints on its first line once it listens.
        /// - Throws: `CatalogError` (70) when the script ends or prints anything else first.
        package static func startPythonServer(_ process: Process, script: String, _ arguments: [String], input: Pipe) throws -> Int {
            let output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", root.appending(path: "Tests/Support/\(script)").path] + arguments
            process.standardOutput = output
            process.standardInput = input
            try process.run()
            var line = Data()
            while true {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { break }
                line.append(byte)
            }
            guard let port = Int(String(decoding: line, as: UTF8.self)) else {
                throw CatalogError(.software, "\(script) did not start")
            }
            return port
        }
        /// `../shared/fixtures/landmarks` (present in CI, maybe not on a fresh clone).
        package static let sharedLandmarks = root.deletingLastPathComponent().appending(path: "shared/fixtures/landmarks")
        package static var hasSharedLandmarks: Bool { FileManager.default.fileExists(atPath: sharedLandmarks.path) }
        package static func shared(_ name: String) -> String { sharedLandmarks.appending(path: name).path }

        /// A fresh temporary directory, inside this process's ``temporaryRoot`` (removed when the process
        /// exits), so a run leaves nothing behind.
        package static func temporaryDirectory() -> URL {
            _ = networkSources
            let url = temporaryRoot.appending(path: UUID().uuidString)
            // No test can run without its temporary directory: failing to make one stops the run.
            // swift-format-ignore: NeverUseForceTry
            try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            return url
        }

        /// The prefix of this process's parent of every temporary directory:
        /// `$TMPDIR/catalog-tests-RUN-PID-`, RUN being `$CATALOG_TEST_RUN` (set by `scripts/test`, which then
        /// checks that no directory of its run is left) or `run`.
        ///
        /// Other runs on the machine (other engineers' suites) have other PIDs, so a check looks at this
        /// process's own directories only.
        package static let temporaryRootPrefix: String = {
            let run = ProcessInfo.processInfo.environment["CATALOG_TEST_RUN"].flatMap { $0.isEmpty ? nil : $0 } ?? "run"
            return FileManager.default.temporaryDirectory.appending(path: "catalog-tests-\(run)-\(getpid())-").path
        }()

        /// This process's parent of every temporary directory, made on first use and removed, with all it
        /// holds, when the process exits (`atexit`): a test that forgets its directory still leaves nothing.
        package static let temporaryRoot: URL = {
            let url = URL(fileURLWithPath: temporaryRootPrefix + UUID().uuidString.prefix(8).lowercased(), isDirectory: true)
            // No test can run without the temporary root: failing to make it stops the run.
            // swift-format-ignore: NeverUseForceTry
            try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            temporaryRootPath.withLock { $0 = url.path }
            atexit { removeTemporaryRoot() }
            return url
        }()

        /// The path `atexit` removes (a C callback cannot capture it).
        package static let temporaryRootPath = Mutex<String?>(nil)

        /// Removes ``temporaryRoot`` and everything in it (at exit, or by a test of this very mechanism).
        package static func removeTemporaryRoot() {
            guard let path = temporaryRootPath.withLock({ $0 }) else { return }
            try? FileManager.default.removeItem(atPath: path)
        }

        /// A fresh database file path in a new temporary directory.
        package static func temporaryDatabase() -> String { temporaryDirectory().appending(path: "catalog.sqlite").path }

        /// The built `catalog` executable beside the test bundle.
        package static var catalogBinary: URL {
            let candidates = [
                Bundle.main.bundleURL.deletingLastPathComponent().appending(path: "catalog"),
                root.appending(path: ".build/debug/catalog"),
            ]
            return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[1]
        }

        /// `catalog` with the test hooks (`CATALOG_TEST_*` variables), built beside it.
        package static var harnessBinary: URL { catalogBinary.deletingLastPathComponent().appending(path: "catalog-test-harness") }
    }

    /// What one in-process CLI run printed and returned.
    package struct CLIResult {
        package var status: Int32
        package var stdout: String
        package var stderr: String

        /// A run that exited with `status` and wrote `stdout` and `stderr`.
        package init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    /// Runs `catalog ARGS` in-process against `db`.
    package func runCLI(
        _ arguments: [String], db: String? = nil, stdinFD: Int32 = 0, clock: any WallClock = SystemClock(),
        environment: [String: String] = [:]
    ) -> CLIResult {
        let out = MemorySink()
        let err = MemorySink()
        let hooks = TestHooks(
            backoffSeconds: environment["CATALOG_TEST_BACKOFF_SECONDS"].flatMap(Double.init),
            pauseBeforeCommitMilliseconds: environment["CATALOG_TEST_PAUSE_BEFORE_COMMIT_MS"].flatMap(Int.init) ?? 0)
        let context = CLIContext(stdout: out, stderr: err, stdinFD: stdinFD, environment: environment, wallClock: clock, testHooks: hooks)
        let status = CatalogCLI.run((db.map { ["--db", $0] } ?? []) + arguments, context: context)
        return CLIResult(status: status, stdout: out.text, stderr: err.text)
    }

    /// `runProcess` for async tests: waits on a Dispatch thread, not on one of Swift's cooperative threads
    /// (there are as many as cores, 2 here: two tests blocked in `waitUntilExit` stalled every other task,
    /// an observer's first value among them, for tens of seconds on a loaded CI run).
    package func runProcessAsync(
        _ executable: URL, _ arguments: [String], in directory: URL? = nil,
        environment: [String: String]? = nil
    ) async throws -> CLIResult {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try runProcess(executable, arguments, in: directory, environment: environment) })
            }
        }
    }

    /// Runs an executable and captures its output.
    ///
    /// Standard error is read on a thread of its own (a child that filled the stderr pipe while this read
    /// stdout to its end used to wait on us forever), and a child still running after `limit` seconds is
    /// killed (SIGKILL, exit status 9 as a signal), so no test waits on a process for ever: CI was once held
    /// for its whole 90 minutes by one hung test.
    package func runProcess(
        _ executable: URL, _ arguments: [String], in directory: URL? = nil,
        environment: [String: String]? = nil, stdin: Data? = nil, limit: Double = 300
    ) throws -> CLIResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
        defer { watchdog.cancel() }
        let errRead = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        errRead.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            errRead.leave()
        }
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        errRead.wait()
        process.waitUntilExit()
        return CLIResult(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// A wall clock tests can set and step, including backwards.
    package final class ManualClock: WallClock, @unchecked Sendable {
        private let lock = NSLock()
        private var now: Int64
        package init(_ now: Int64) { self.now = now }
        package func nowMilliseconds() -> Int64 { lock.withLock { now } }
        package func set(_ value: Int64) { lock.withLock { now = value } }
        package func advance(_ delta: Int64) { lock.withLock { now += delta } }
    }

    /// Every row of a query, all columns: to compare database content before and after.
    ///
    /// A database that is not there has no rows (a command that failed leaves none it created behind).
    package func dumpRows(_ path: String, sql: String) throws -> [[SQLValue]] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let connection = try Connection(path: path)
        let s = try connection.makeStatement(sql: sql)
        var rows: [[SQLValue]] = []
        while try s.step() { rows.append((0..<s.columnCount).map { s.value($0) }) }
        return rows
    }

    /// Every landmark row, all columns, in id order.
    package func dumpLandmarks(_ path: String) throws -> [[SQLValue]] { try dumpRows(path, sql: "SELECT * FROM landmarks ORDER BY id") }

    /// Every position row, all columns, in user order.
    package func dumpPositions(_ path: String) throws -> [[SQLValue]] { try dumpRows(path, sql: "SELECT * FROM positions ORDER BY user_id") }

    /// The replicated columns (all but each database's own `seq`) of every landmark, for comparing two databases.
    package func replicatedLandmarks(_ path: String) throws -> [[SQLValue]] {
        try dumpRows(path, sql: "SELECT \(LandmarkColumn.selectList.replacingOccurrences(of: ", seq", with: "")) FROM landmarks ORDER BY id")
    }

    /// The replicated columns of every position, for comparing two databases.
    package func replicatedPositions(_ path: String) throws -> [[SQLValue]] {
        try dumpRows(path, sql: "SELECT \(PositionColumn.selectList.replacingOccurrences(of: ", seq", with: "")) FROM positions ORDER BY user_id")
    }

    /// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014):
    /// small and seedable, so a failing randomized test can be replayed from its printed seed.
    package struct SplitMix64: RandomNumberGenerator {
        package var state: UInt64
        package init(seed: UInt64) { state = seed }
        package mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Ids of the featured landmarks as the CLI reports them.
    package func featuredIDs(_ db: String) throws -> [Int64] {
        try LandmarkReader(CatalogStore.open(path: db)).featuredIDs()
    }

    /// The error of ``bounded(_:_:_:)``: the operation did not end within its bound.
    package struct TimedOut: Error, CustomStringConvertible {
        package let what: String
        package let seconds: Double
        package var description: String { "\(what) did not end within \(seconds) s" }

        /// `what` did not end within `seconds`.
        package init(what: String, seconds: Double) {
            self.what = what
            self.seconds = seconds
        }
    }

    /// Runs `operation`, throwing ``TimedOut`` after `seconds` (the operation is then cancelled and left to
    /// end on its own), so a test never awaits for ever something that has no bound of its own — a
    /// `SyncSession.flush()`, a `stop()`.
    ///
    /// The timer is a Dispatch timer, not a task: it fires even while Swift's few cooperative threads are
    /// all busy.
    package func bounded<T: Sendable>(
        _ seconds: Double = 60, _ what: String = "the operation", _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let once = ResumeOnce<T>()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            once.set(continuation)
            let task = Task {
                do { once.resume(.success(try await operation())) } catch { once.resume(.failure(error)) }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                if once.resume(.failure(TimedOut(what: what, seconds: seconds))) { task.cancel() }
            }
        }
    }

    /// A continuation resumed by the first of several callers.
    private final class ResumeOnce<T: Sendable>: @unchecked Sendable {
        // Safe: `continuation` and `result` are touched only under `lock`.
        private let lock = NSLock()
        private var continuation: CheckedContinuation<T, any Error>?
        private var result: Result<T, any Error>?
        private var done = false

        package func set(_ continuation: CheckedContinuation<T, any Error>) {
            lock.lock()
            if let result {
                lock.unlock()
                continuation.resume(with: result)
                return
            }
            self.continuation = continuation
            lock.unlock()
        }

        /// Resumes with `result` if nothing did yet; returns whether this call did.
        @discardableResult
        package func resume(_ result: Result<T, any Error>) -> Bool {
            lock.lock()
            guard !done else {
                lock.unlock()
                return false
            }
            done = true
            guard let continuation else {
                self.result = result
                lock.unlock()
                return true
            }
            self.continuation = nil
            lock.unlock()
            continuation.resume(with: result)
            return true
        }
    }

    /// Polls `condition` every 5 ms until it holds, for `seconds` of wall time and at least `turns` turns of
    /// this task: a bound in turns as well as in time, so that a test starved of Swift's cooperative threads
    /// by its neighbours still gives the task it waits on the turns it needs before giving up.
    package func waitTurns(seconds: Double = 60, turns minimum: Int = 2000, _ condition: () -> Bool) async -> Bool {
        var turns = 0
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !condition() && (ContinuousClock.now < deadline || turns < minimum) {
            turns += 1
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }
#endif
