// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import Testing

    @testable import LandmarkCatalog
    @testable import LandmarkCatalogSync

    /// What one run of a built binary did.
    package struct BinaryRun: CustomStringConvertible {
        /// The exit status; 128 + N when the process died of signal N (a trap is 132 or 133).
        package var status: Int32
        package var stdoutBytes: [UInt8]
        package var stderr: String
        /// Wall time from start to exit, in seconds.
        package var seconds: Double
        /// True when the watchdog had to kill it: a hang, always a failure.
        package var killed: Bool

        package var stdout: String { String(decoding: stdoutBytes, as: UTF8.self) }
        package var description: String {
            "exit \(status) after \(String(format: "%.2f", seconds)) s\(killed ? " (killed by the watchdog)" : ""); stderr: \(stderr)"
        }
    }

    /// A process started by ``Sandbox/start(_:db:binary:environment:)`` and not yet waited for.
    package struct StartedProcess {
        package let process: Process
        package let stdout: URL
        package let stderr: URL
        package let started: ContinuousClock.Instant

        package var pid: Int32 { process.processIdentifier }

        /// Kills the process if it is still running and reaps it (for `defer`, when a test ends early).
        package func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }

        /// Sends SIGTERM and waits for the exit, killing it `limit` seconds after the signal (not after the
        /// start: a server that ran for 97 s under a loaded CI was killed the moment it was asked to stop).
        package func terminate(limit: Double = 20) -> BinaryRun {
            kill(process.processIdentifier, SIGTERM)
            return finish(limit: limit, from: .now)
        }

        /// Waits for the process (killing it `limit` seconds after `from`, by default its start) and collects
        /// its output.
        package func finish(limit: Double = 60, from: ContinuousClock.Instant? = nil) -> BinaryRun {
            let deadline = (from ?? started) + .milliseconds(Int(limit * 1000))
            var killed = false
            while process.isRunning {
                if ContinuousClock.now >= deadline {
                    kill(process.processIdentifier, SIGKILL)
                    killed = true
                    break
                }
                usleep(5_000)
            }
            process.waitUntilExit()
            let elapsed = ContinuousClock.now - started
            let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
            return BinaryRun(
                status: status, stdoutBytes: [UInt8]((try? Data(contentsOf: stdout)) ?? Data()),
                stderr: String(decoding: (try? Data(contentsOf: stderr)) ?? Data(), as: UTF8.self),
                seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18, killed: killed)
        }
    }

    /// One test's files: a directory holding the database, `tmp/` (every run's `TMPDIR`, which must be
    /// empty after each run) and `io/` (captured output).
    ///
    /// Runs get a minimal environment, as under cron. Removed when released (after any mount inside it
    /// is gone).
    package final class Sandbox {
        package let root: URL
        /// The runs' `TMPDIR`.
        package let tmp: URL
        private let io: URL
        private var runs = 0

        package init() throws {
            root = Support.temporaryDirectory()
            tmp = root.appending(path: "tmp")
            io = root.appending(path: "io")
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: io, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(at: root) }

        /// `root/name`.
        package func path(_ name: String) -> String { root.appending(path: name).path }

        /// What is left in `tmp/` (must be nothing).
        package var tmpContents: [String] { (try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? ["(unreadable)"] }

        /// The environment of a run: PATH, HOME and TMPDIR only, then `extra`.
        package func environment(_ extra: [String: String]) -> [String: String] {
            ["PATH": "/usr/bin:/bin", "HOME": root.path, "TMPDIR": tmp.path].merging(extra) { $1 }
        }

        /// Starts `binary [--db db] arguments` (as `user` through runuser(1) when given).
        package func start(
            _ arguments: [String], db: String? = nil, binary: URL = Support.catalogBinary, environment extra: [String: String] = [:],
            user: String? = nil, stdin: String? = nil
        ) throws -> StartedProcess {
            runs += 1
            let out = io.appending(path: "\(runs).out")
            let err = io.appending(path: "\(runs).err")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            _ = FileManager.default.createFile(atPath: err.path, contents: nil)
            let process = Process()
            let command = [binary.path] + (db.map { ["--db", $0] } ?? []) + arguments
            if let user {
                process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
                process.arguments = ["-u", user, "--"] + command
            } else {
                process.executableURL = binary
                process.arguments = Array(command.dropFirst())
            }
            process.environment = environment(extra)
            process.currentDirectoryURL = root
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            if let stdin {
                let file = io.appending(path: "\(runs).in")
                try Data(stdin.utf8).write(to: file)
                process.standardInput = try FileHandle(forReadingFrom: file)
            } else {
                process.standardInput = FileHandle.nullDevice
            }
            let started = ContinuousClock.now
            try process.run()
            return StartedProcess(process: process, stdout: out, stderr: err, started: started)
        }

        /// Runs `binary [--db db] arguments` to its end, killing it after `limit` seconds.
        package func run(
            _ arguments: [String], db: String? = nil, binary: URL = Support.catalogBinary, environment extra: [String: String] = [:],
            user: String? = nil, stdin: String? = nil, limit: Double = 60
        ) throws -> BinaryRun {
            try start(arguments, db: db, binary: binary, environment: extra, user: user, stdin: stdin).finish(limit: limit)
        }

        /// A database holding the seed landmarks and one position (ann on page 1), made with the binary.
        package func seededDatabase(_ name: String = "catalog.sqlite") throws -> String {
            let db = path(name)
            let imported = try run(["import", Support.root.appending(path: "Seeds/landmarkData.json").path], db: db)
            try #require(imported.status == 0, "\(imported)")
            let set = try run(["position", "set", "--user", "ann", "--page", "1"], db: db)
            try #require(set.status == 0, "\(set)")
            return db
        }

        /// Writes `text` to `root/name` and returns its path.
        package func write(_ text: String, to name: String) throws -> String {
            let url = root.appending(path: name)
            try Data(text.utf8).write(to: url)
            return url.path
        }
    }

    /// Everything a sync may not change when it fails: every landmark and position row and the clock.
    package func catalogState(_ db: String) throws -> [[SQLValue]] {
        try dumpLandmarks(db) + dumpPositions(db) + dumpRows(db, sql: "SELECT * FROM hlc_clock")
    }

    /// `mount(8)` and `umount(8)` for tmpfs file systems the tests create (root only).
    package enum Mounts {
        /// Runs `/usr/bin/<tool> arguments`; nil on success, else what it printed.
        @discardableResult
        package static func run(_ tool: String, _ arguments: [String]) -> String? {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/\(tool)")
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            do { try process.run() } catch { return "\(tool): \(error)" }
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus != 0 else { return nil }
            let text = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return text.isEmpty ? "\(tool) exited \(process.terminationStatus)" : text
        }

        /// Mounts a new tmpfs of `size` (e.g., `1m`) on `directory`, creating it; nil on success, else why not.
        package static func tmpfs(at directory: URL, size: String) -> String? {
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            guard getuid() == 0 else { return "not root" }
            return run("mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", directory.path])
        }

        /// Remounts `directory` read-only; nil on success.
        package static func remountReadOnly(_ directory: URL) -> String? { run("mount", ["-o", "remount,ro", directory.path]) }

        /// Unmounts `directory` (lazily if it is still busy), so no mount outlives its test.
        package static func unmount(_ directory: URL) {
            if run("umount", [directory.path]) != nil { run("umount", ["-l", directory.path]) }
        }
    }

    /// Checks `bytes` with Tests/Support/strict_json.py, a parser independent of the catalog's: nil when it is
    /// JSON with no repeated key in any object, else the checker's message.
    package func strictJSONProblem(_ bytes: [UInt8]) throws -> String? {
        let file = Support.temporaryDirectory().appending(path: "check.json")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(bytes).write(to: file)
        let result = try runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", Support.root.appending(path: "Tests/Support/strict_json.py").path, file.path])
        return result.status == 0 ? nil : result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The JSON objects of `--json` output.
    package func jsonObject(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
    }

    /// RFC 3339 text for `milliseconds` from now.
    package func stampFromNow(_ milliseconds: Int64) -> String { Timestamp.format(milliseconds: SystemClock().nowMilliseconds() + milliseconds) }
#endif
