@_spi(Testing) import CatalogCLI
import Foundation
import Synchronization
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// Paths, temporary databases and an in-process CLI runner shared by the suites.
enum Support {
    /// The package root (three levels above this file).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// Our own small fixtures.
    static func fixture(_ name: String) -> String { root.appending(path: "Tests/Fixtures/\(name)").path }

    /// Starts `python3 Tests/Support/SCRIPT ARGUMENTS…` with `input` as its standard input (the server
    /// exits when it closes) and returns the port it prints on its first line once it listens.
    /// - Throws: `CatalogError` (70) when the script ends or prints anything else first.
    static func startPythonServer(_ process: Process, script: String, _ arguments: [String], input: Pipe) throws -> Int {
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
    static let sharedLandmarks = root.deletingLastPathComponent().appending(path: "shared/fixtures/landmarks")
    static var hasSharedLandmarks: Bool { FileManager.default.fileExists(atPath: sharedLandmarks.path) }
    static func shared(_ name: String) -> String { sharedLandmarks.appending(path: name).path }

    /// A fresh temporary directory, inside this process's ``temporaryRoot`` (removed when the process
    /// exits), so a run leaves nothing behind.
    static func temporaryDirectory() -> URL {
        let url = temporaryRoot.appending(path: UUID().uuidString)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The prefix of this process's parent of every temporary directory:
    /// `$TMPDIR/catalog-tests-RUN-PID-`, RUN being `$CATALOG_TEST_RUN` (set by `scripts/test`, which then
    /// checks that no directory of its run is left) or `run`. Other runs on the machine (other engineers'
    /// suites) have other PIDs, so a check looks at this process's own directories only.
    static let temporaryRootPrefix: String = {
        let run = ProcessInfo.processInfo.environment["CATALOG_TEST_RUN"].flatMap { $0.isEmpty ? nil : $0 } ?? "run"
        return FileManager.default.temporaryDirectory.appending(path: "catalog-tests-\(run)-\(getpid())-").path
    }()

    /// This process's parent of every temporary directory, made on first use and removed, with all it
    /// holds, when the process exits (`atexit`): a test that forgets its directory still leaves nothing.
    static let temporaryRoot: URL = {
        let url = URL(fileURLWithPath: temporaryRootPrefix + UUID().uuidString.prefix(8).lowercased(), isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        temporaryRootPath.withLock { $0 = url.path }
        atexit { removeTemporaryRoot() }
        return url
    }()

    /// The path `atexit` removes (a C callback cannot capture it).
    static let temporaryRootPath = Mutex<String?>(nil)

    /// Removes ``temporaryRoot`` and everything in it (at exit, or by a test of this very mechanism).
    static func removeTemporaryRoot() {
        guard let path = temporaryRootPath.withLock({ $0 }) else { return }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// A fresh database file path in a new temporary directory.
    static func temporaryDatabase() -> String { temporaryDirectory().appending(path: "catalog.sqlite").path }

    /// The built `catalog` executable beside the test bundle.
    static var catalogBinary: URL {
        let candidates = [
            Bundle.main.bundleURL.deletingLastPathComponent().appending(path: "catalog"),
            root.appending(path: ".build/debug/catalog"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[1]
    }

    /// `catalog` with the test hooks (`CATALOG_TEST_*` variables), built beside it.
    static var harnessBinary: URL { catalogBinary.deletingLastPathComponent().appending(path: "catalog-test-harness") }
}

/// What one in-process CLI run printed and returned.
struct CLIResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `catalog ARGS` in-process against `db`.
func runCLI(
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
func runProcessAsync(
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
func runProcess(
    _ executable: URL, _ arguments: [String], in directory: URL? = nil,
    environment: [String: String]? = nil, stdin: Data? = nil
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
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try input.fileHandleForWriting.close()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CLIResult(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// A wall clock tests can set and step, including backwards.
final class ManualClock: WallClock, @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64
    init(_ now: Int64) { self.now = now }
    func nowMilliseconds() -> Int64 { lock.withLock { now } }
    func set(_ value: Int64) { lock.withLock { now = value } }
    func advance(_ delta: Int64) { lock.withLock { now += delta } }
}

/// Every row of a query, all columns: to compare database content before and after.
/// A database that is not there has no rows (a command that failed leaves none it created behind).
func dumpRows(_ path: String, sql: String) throws -> [[SQLValue]] {
    guard FileManager.default.fileExists(atPath: path) else { return [] }
    let connection = try Connection(path: path)
    let s = try connection.makeStatement(sql: sql)
    var rows: [[SQLValue]] = []
    while try s.step() { rows.append((0..<s.columnCount).map { s.value($0) }) }
    return rows
}

/// Every landmark row, all columns, in id order.
func dumpLandmarks(_ path: String) throws -> [[SQLValue]] { try dumpRows(path, sql: "SELECT * FROM landmarks ORDER BY id") }

/// Every position row, all columns, in user order.
func dumpPositions(_ path: String) throws -> [[SQLValue]] { try dumpRows(path, sql: "SELECT * FROM positions ORDER BY user_id") }

/// The replicated columns (all but each database's own `seq`) of every landmark, for comparing two databases.
func replicatedLandmarks(_ path: String) throws -> [[SQLValue]] {
    try dumpRows(path, sql: "SELECT \(LandmarkColumn.selectList.replacingOccurrences(of: ", seq", with: "")) FROM landmarks ORDER BY id")
}

/// The replicated columns of every position, for comparing two databases.
func replicatedPositions(_ path: String) throws -> [[SQLValue]] {
    try dumpRows(path, sql: "SELECT \(PositionColumn.selectList.replacingOccurrences(of: ", seq", with: "")) FROM positions ORDER BY user_id")
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014):
/// small and seedable, so a failing randomized test can be replayed from its printed seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Ids of the featured landmarks as the CLI reports them.
func featuredIDs(_ db: String) throws -> [Int64] {
    try CatalogStore.open(path: db).featuredIDs()
}
