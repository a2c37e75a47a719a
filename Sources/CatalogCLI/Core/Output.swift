import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

/// Where the CLI writes: standard output for data, standard error for diagnostics.
///
/// Taken as parameters so tests run commands in-process and read what they printed.
public protocol OutputSink: AnyObject {
    /// Writes bytes (buffered implementations flush on `flush()`).
    func write(_ bytes: [UInt8])
    /// Pushes buffered bytes out.
    func flush()
    /// The `errno` of a failed write, if one failed (a full disk; `EPIPE` when the reader went away).
    var writeError: Int32? { get }
}

extension OutputSink {
    public var writeError: Int32? { nil }

    /// Writes a string as UTF-8.
    public func write(_ text: String) { write(Array(text.utf8)) }
    /// Writes a line (a newline is appended).
    public func line(_ text: String) { write(Array((text + "\n").utf8)) }
}

/// A buffered sink over a file descriptor (1 or 2).
///
/// A closed pipe (`EPIPE`) ends writing quietly.
public final class FileDescriptorSink: OutputSink {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var broken = false
    public private(set) var writeError: Int32?

    public init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(1 << 16)
    }

    public func write(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 16 || fd == 2 { flush() }
    }

    public func flush() {
        guard !broken, !buffer.isEmpty else {
            buffer.removeAll(keepingCapacity: true)
            return
        }
        buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                // `buffer` is not empty (checked above), so it has a base address.
                // swift-format-ignore: NeverForceUnwrap
                let n = Foundation.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    broken = true
                    writeError = errno
                    return
                }
                offset += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// True once a write failed (e.g., the reader of a pipe went away).
    public var failed: Bool { broken }

    deinit { flush() }
}

/// A sink that keeps what was written (tests).
public final class MemorySink: OutputSink {
    public private(set) var bytes: [UInt8] = []
    public init() {}
    public func write(_ bytes: [UInt8]) { self.bytes.append(contentsOf: bytes) }
    public func flush() {}
    /// What was written, decoded as UTF-8.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// Hooks for the test suite only: set through the test harness executable, never read from the
/// environment by the product.
@_spi(Testing) public struct TestHooks: Sendable {
    /// HTTP: the first backoff delay, in seconds (shortened so retry tests run fast).
    public var backoffSeconds: Double?
    /// Sync: sleep this long inside each source's merge transaction before committing (ms).
    public var pauseBeforeCommitMilliseconds = 0
    /// `sync --follow`: called at the end of each cycle, before the follower waits, with the follower's
    /// control (a commit by another process made inside a cycle, a stop at that point).
    public var followCycleEnd: (@Sendable (FollowControl) -> Void)?
    /// `sync --follow`: the window over which each kind of warning shows at most `--max-diagnostics`
    /// lines (s; an hour when nil).
    public var followDiagnosticsWindowSeconds: Double?
    /// `serve`: called after a POST's rows are committed, before the answer is sent (a server killed there).
    public var serveAfterPostCommit: (@Sendable () -> Void)?
    /// `serve --hub`: called before the follower's poll that pushes this database's changes to the hub, with
    /// the follower's control (a SIGTERM that comes while the push is in flight).
    public var serveHubPushStart: (@Sendable (FollowControl) -> Void)?
    /// `serve`: how often the long-poll dispatcher probes the database for other processes' commits (ms;
    /// 50 when nil), made long so a test sees what is answered before the dispatcher has read a commit.
    public var serveProbeMilliseconds: Int?
    /// `serve`: how often it collects tombstones and erasure records (ms; daily when nil), made short so a
    /// test sees serve's own collection.
    public var serveCollectionMilliseconds: Int?
    public init(
        backoffSeconds: Double? = nil, pauseBeforeCommitMilliseconds: Int = 0, followCycleEnd: (@Sendable (FollowControl) -> Void)? = nil,
        followDiagnosticsWindowSeconds: Double? = nil, serveAfterPostCommit: (@Sendable () -> Void)? = nil,
        serveHubPushStart: (@Sendable (FollowControl) -> Void)? = nil, serveProbeMilliseconds: Int? = nil,
        serveCollectionMilliseconds: Int? = nil
    ) {
        self.serveProbeMilliseconds = serveProbeMilliseconds
        self.serveCollectionMilliseconds = serveCollectionMilliseconds
        self.backoffSeconds = backoffSeconds
        self.pauseBeforeCommitMilliseconds = pauseBeforeCommitMilliseconds
        self.followCycleEnd = followCycleEnd
        self.followDiagnosticsWindowSeconds = followDiagnosticsWindowSeconds
        self.serveAfterPostCommit = serveAfterPostCommit
        self.serveHubPushStart = serveHubPushStart
    }
}

/// Everything a command may touch outside its arguments.
public struct CLIContext {
    /// Data only.
    public var stdout: any OutputSink
    /// Diagnostics (`catalog: error: …`, warnings, progress).
    public var stderr: any OutputSink
    /// The descriptor read for `-` (standard input).
    public var stdinFD: Int32
    /// The process environment (`CATALOG_DB`, `XDG_DATA_HOME`, `HOME`).
    public var environment: [String: String]
    /// Whether stderr is a terminal (progress is shown only then, never in a pipe or cron).
    public var stderrIsTerminal: Bool
    /// The wall clock for HLC stamps.
    public var wallClock: any WallClock
    /// Test-only hooks (see ``TestHooks``).
    var testHooks = TestHooks()

    public init(
        stdout: any OutputSink, stderr: any OutputSink, stdinFD: Int32 = 0,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        stderrIsTerminal: Bool = false, wallClock: any WallClock = SystemClock()
    ) {
        self.stdout = stdout
        self.stderr = stderr
        self.stdinFD = stdinFD
        self.environment = environment
        self.stderrIsTerminal = stderrIsTerminal
        self.wallClock = wallClock
    }

    /// A context with test hooks (the test harness executable and in-process tests).
    @_spi(Testing) public init(
        stdout: any OutputSink, stderr: any OutputSink, stdinFD: Int32 = 0,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        stderrIsTerminal: Bool = false, wallClock: any WallClock = SystemClock(), testHooks: TestHooks
    ) {
        self.init(
            stdout: stdout, stderr: stderr, stdinFD: stdinFD, environment: environment, stderrIsTerminal: stderrIsTerminal,
            wallClock: wallClock)
        self.testHooks = testHooks
    }
}
