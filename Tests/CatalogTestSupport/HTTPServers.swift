// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import Testing

    @testable import LandmarkCatalog
    @testable import LandmarkCatalogSync

    /// Tests/Support/hostile_server.py on 127.0.0.1 (optionally speaking TLS with a self-signed certificate).
    ///
    /// `stop()` ends it; every test calls it in a `defer`.
    package final class HostileServer {
        private let process: Process
        private let input: Pipe
        package let port: Int
        package let scheme: String

        package init(tls: Bool = false) throws {
            let (process, input) = (Process(), Pipe())
            port = try Support.startPythonServer(
                process, script: "hostile_server.py",
                tls ? ["--tls", Support.root.appending(path: "Tests/Support/selfsigned.pem").path] : [], input: input)
            (self.process, self.input) = (process, input)
            scheme = tls ? "https" : "http"
        }

        /// The URL of `path`, with `userInfo@` before the host when given.
        package func url(_ path: String, userInfo: String? = nil) -> String {
            "\(scheme)://\(userInfo.map { $0 + "@" } ?? "")127.0.0.1:\(port)\(path)"
        }

        /// Every request the server has seen (fetched with the client under test, over plain HTTP).
        package func log() throws -> [[String: String]] {
            let client = HTTPClient(limits: HTTPLimits(stallTimeout: 5, deadline: 10), spoolDirectory: NSTemporaryDirectory())
            guard case .fetched(let body) = try client.get("http://127.0.0.1:\(port)/log", validators: nil, log: { _ in }) else {
                throw CatalogError(.software, "no /log")
            }
            let entries = try JSONSerialization.jsonObject(with: Data(contents(body))) as? [[String: Any]] ?? []
            return entries.map { $0.compactMapValues { $0 as? String } }
        }

        /// How many requests for exactly `path` the server has seen.
        package func requests(_ path: String) throws -> Int { try log().filter { $0["path"] == path }.count }

        package func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }

        deinit { if process.isRunning { process.terminate() } }
    }

    /// The bytes of a downloaded body, read with `pread(2)` (the descriptor's offset is left alone).
    package func contents(_ body: HTTPBody) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Int(body.bytes) + 1)
        var total = 0
        while total < bytes.count {
            // `bytes` has at least one byte, so it has a base address.
            // swift-format-ignore: NeverForceUnwrap
            let n = bytes.withUnsafeMutableBytes { pread(body.fd, $0.baseAddress! + total, $0.count - total, off_t(total)) }
            if n <= 0 { break }
            total += n
        }
        return Array(bytes[..<total])
    }

    /// The byte pattern hostile_server.py streams: byte i is i % 251.
    package func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8($0 % 251) } }

    /// What one `get` did.
    package struct FetchRun {
        package var outcome: HTTPOutcome?
        package var error: CatalogError?
        package var log: [String]
        package var seconds: Double
        /// Every line this run produced: the error's message and hint, and the log.
        package var text: [String] { log + [error?.message, error?.hint].compactMap { $0 } }
    }

    /// Runs one GET with a fresh, empty spool directory and checks the directory is still empty afterwards
    /// (while the body is alive too: the spool file is unlinked at once).
    package func fetch(
        _ url: String, _ limits: HTTPLimits = .tests, validators: HTTPValidators? = nil,
        makeSpool: (@Sendable (String) throws -> Int32)? = nil
    ) -> FetchRun {
        let spool = Support.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: spool) }
        var client = HTTPClient(limits: limits, spoolDirectory: spool.path)
        if let makeSpool { client.makeSpoolFile = makeSpool }
        var lines: [String] = []
        let started = ContinuousClock.now
        var run = FetchRun(log: [], seconds: 0)
        do {
            run.outcome = try client.get(url, validators: validators) { lines.append($0) }
        } catch let error as CatalogError {
            run.error = error
        } catch {
            Issue.record("not a CatalogError: \(error)")
        }
        let elapsed = ContinuousClock.now - started
        run.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        run.log = lines
        let left = (try? FileManager.default.contentsOfDirectory(atPath: spool.path)) ?? ["(unreadable)"]
        #expect(left.isEmpty, "spool directory not empty after \(url): \(left)")
        return run
    }

    extension HTTPOutcome {
        package var body: HTTPBody? { if case .fetched(let body) = self { body } else { nil } }
    }

    extension HTTPLimits {
        /// Small timeouts and backoff, so the suite stays fast.
        package static let tests = HTTPLimits(stallTimeout: 2, deadline: 10, maxBytes: 1 << 20, retries: 2, backoff: 0.05, maxRetryAfter: 60)

        package func with(_ change: (inout HTTPLimits) -> Void) -> HTTPLimits {
            var copy = self
            change(&copy)
            return copy
        }
    }

    /// The test HTTP server (Tests/Support/snapshot_server.py) on 127.0.0.1, serving `directory`.
    package final class TestHTTPServer {
        package let process: Process
        package let input: Pipe
        package let port: Int

        package init(directory: URL) throws {
            let (process, input) = (Process(), Pipe())
            port = try Support.startPythonServer(process, script: "snapshot_server.py", [directory.path], input: input)
            (self.process, self.input) = (process, input)
        }

        package func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

        /// Requests the server has seen: path and conditional headers.
        package func log() throws -> [[String: String?]] {
            let data = try Data(contentsOf: #require(URL(string: url("/log"))))
            return (try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []).map { entry in
                entry.mapValues { $0 as? String }
            }
        }

        deinit {
            try? input.fileHandleForWriting.close()
            process.terminate()
            process.waitUntilExit()
        }
    }
#endif
