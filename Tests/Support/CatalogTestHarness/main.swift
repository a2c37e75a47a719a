// `catalog` with the test suite's hooks: the process tests (a sync killed inside its transaction, two
// syncs at once, fast HTTP retries, a commit inside a follower's cycle) run this binary. The product
// binary reads none of these variables.
@_spi(Testing) import CatalogCLI
import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

signal(SIGPIPE, SIG_IGN)
let environment = ProcessInfo.processInfo.environment

/// `CATALOG_TEST_FOLLOW_CYCLE_END`: a JSON array (a program and its arguments) run to its end once, at the
/// end of the follower's first cycle that starts after `CATALOG_TEST_FOLLOW_CYCLE_END_AFTER` exists (a
/// file the test creates; at the first cycle when unset).
///
/// `CATALOG_TEST_FOLLOW_CYCLE_END_STOP=1`: then stop the follower as its SIGTERM handler does, still inside
/// the cycle.
final class CycleEndHook: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    let command: [String]
    let after: String?
    let stop: Bool

    init?(_ environment: [String: String]) {
        guard let text = environment["CATALOG_TEST_FOLLOW_CYCLE_END"],
            let command = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String], !command.isEmpty
        else { return nil }
        self.command = command
        after = environment["CATALOG_TEST_FOLLOW_CYCLE_END_AFTER"]
        stop = environment["CATALOG_TEST_FOLLOW_CYCLE_END_STOP"] == "1"
    }

    func run(_ control: FollowControl) {
        if let after, !FileManager.default.fileExists(atPath: after) { return }
        let first = lock.withLock {
            defer { done = true }
            return !done
        }
        guard first else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()
        } catch {
            FileHandle.standardError.write(Data("catalog-test-harness: cannot run \(command[0]): \(error)\n".utf8))
        }
        if stop { control.stop() }
    }
}

let cycleEnd = CycleEndHook(environment)
let followCycleEnd: (@Sendable (FollowControl) -> Void)? = cycleEnd.map { hook in { @Sendable control in hook.run(control) } }
/// `CATALOG_TEST_SERVE_HOLD_AFTER_POST_COMMIT`: a file serve creates once a POST's rows are committed,
/// then the request's thread waits forever before answering (a server killed between commit and answer).
let serveAfterPostCommit: (@Sendable () -> Void)? = environment["CATALOG_TEST_SERVE_HOLD_AFTER_POST_COMMIT"].map { marker in
    { @Sendable in
        _ = FileManager.default.createFile(atPath: marker, contents: Data("committed\n".utf8))
        while true { pause() }
    }
}
/// `CATALOG_TEST_SERVE_HUB_PUSH_START`: a file serve creates once, when `serve --hub`'s follower is about to
/// push this database's changes to the hub; the follower then waits (at most 60 s) until it is stopped, as
/// the drain of a SIGTERM stops it, and the push goes on with its transfers cut (a SIGTERM while the push
/// of a POST just answered is in flight).
final class PushStartHook: @unchecked Sendable {
    // Safe: `done` is only touched under `lock`.
    private let lock = NSLock()
    private var done = false
    let marker: String

    init(marker: String) { self.marker = marker }

    func run(_ control: FollowControl) {
        let first = lock.withLock {
            defer { done = true }
            return !done
        }
        guard first else { return }
        _ = FileManager.default.createFile(atPath: marker, contents: Data("pushing\n".utf8))
        let deadline = Date().addingTimeInterval(60)
        while !control.isStopping, Date() < deadline { usleep(5_000) }
    }
}

let serveHubPushStart: (@Sendable (FollowControl) -> Void)? = environment["CATALOG_TEST_SERVE_HUB_PUSH_START"].map { marker in
    let hook = PushStartHook(marker: marker)
    return { @Sendable control in hook.run(control) }
}
/// The test hooks the environment asks for.
///
/// `CATALOG_TEST_SERVE_PROBE_MS`: how often serve's long-poll dispatcher probes for other processes' commits
/// (a long interval: what serve answers before the dispatcher has read a commit).
///
/// `CATALOG_TEST_SERVE_GC_MS`: how often serve collects tombstones and erasure records (daily without it).
let hooks = TestHooks(
    backoffSeconds: environment["CATALOG_TEST_BACKOFF_SECONDS"].flatMap(Double.init),
    pauseBeforeCommitMilliseconds: environment["CATALOG_TEST_PAUSE_BEFORE_COMMIT_MS"].flatMap(Int.init) ?? 0,
    followCycleEnd: followCycleEnd,
    followDiagnosticsWindowSeconds: environment["CATALOG_TEST_FOLLOW_DIAGNOSTICS_WINDOW_S"].flatMap(Double.init),
    serveAfterPostCommit: serveAfterPostCommit, serveHubPushStart: serveHubPushStart,
    serveProbeMilliseconds: environment["CATALOG_TEST_SERVE_PROBE_MS"].flatMap(Int.init),
    serveCollectionMilliseconds: environment["CATALOG_TEST_SERVE_GC_MS"].flatMap(Int.init))
let status = CatalogCLI.run(
    Array(processArguments().dropFirst()),
    context: CLIContext(
        stdout: FileDescriptorSink(fd: 1), stderr: FileDescriptorSink(fd: 2),
        stderrIsTerminal: isatty(2) == 1, testHooks: hooks))
exit(status)
