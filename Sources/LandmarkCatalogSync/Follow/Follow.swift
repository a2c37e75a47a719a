import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// How `catalog sync --follow` runs (docs/live-sync.md).
public struct FollowOptions: Sendable {
    /// What each source's sync and the publish do, as for one `sync` run (`dryRun` is refused).
    public var sync = SyncOptions()
    /// Seconds between polls of a source; default 1 s.
    ///
    /// The interval of HTTP conditional GETs, of a hub's polls and of a local log's (inotify's fallback),
    /// and the longest a commit by another process waits before it is published or pushed.
    public var intervalSeconds: Double = 1
    /// The longest wait before a failing source is tried again, in seconds; default 60 s.
    ///
    /// The wait doubles from the interval up to this.
    public var maxBackoffSeconds: Double = 60
    /// How often an unchanged source's last good sync is written again (ms); default 60 s.
    ///
    /// So `status --check --max-age` sees an idle follower's sources as fresh.
    public var freshnessMilliseconds: Int64 = 60_000
    /// `--sign FILE`: the signing key's file, read again at each ``FollowControl/reload()`` (SIGHUP).
    ///
    /// So a key replaced in the file signs the next publish (docs/live-sync.md §5); `sync.publish`
    /// holds the key as read at the start. A file that cannot be read then keeps the key in use.
    public var signingKeyFile: String?
    /// Test hook: called at the end of every cycle, after its ledger row, before the follower waits.
    @_spi(Testing) public var cycleEndHook: (@Sendable (FollowControl) -> Void)?
    /// Test hook: called before a poll (not the last pass's) of a hub or serve that has this database's
    /// changes to push, with the follower's control (a SIGTERM that comes while that push is in flight).
    @_spi(Testing) public var pushStartHook: (@Sendable (FollowControl) -> Void)?

    public init() {}
}

/// Stops or reloads a running follower from any thread.
///
/// A signal handler's queue calls ``stop()`` for SIGTERM/SIGINT and ``reload()`` for SIGHUP on the control
/// of ``SyncRunner/follow(sources:options:control:diagnostics:onCycle:)``. Each call also writes a byte
/// to a pipe the follower polls, so it wakes at once.
public final class FollowControl: @unchecked Sendable {
    private let lock = NSLock()
    private var stopping = false
    private var reloading = false
    /// The pipe's ends (non-blocking, close-on-exec).
    let readFD: Int32
    private let writeFD: Int32
    /// Ends the follower's transfers (HTTP fetches on worker threads, long-polls) when it stops.
    let transfers = TransferCancellation()

    /// - Throws: `CatalogError.cantCreate` (73) when no pipe can be made (out of descriptors).
    public init() throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw CatalogError(.cantCreate, "cannot make the follower's wake-up pipe (\(String(cString: strerror(errno))))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    /// Asks the follower to finish the source in hand, record the cycle and return.
    public func stop() {
        lock.withLock { stopping = true }
        transfers.cancel()
        wake()
    }

    /// Asks the follower to read the saved remotes and the `--sign` key file again before its next cycle.
    public func reload() {
        lock.withLock { reloading = true }
        wake()
    }

    /// Whether ``stop()`` was called.
    public var isStopping: Bool { lock.withLock { stopping } }

    func takeReload() -> Bool {
        lock.withLock {
            defer { reloading = false }
            return reloading
        }
    }

    /// Wakes the follower (a worker's fetch finished, a signal arrived).
    func wake() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readFD, &buffer, buffer.count) > 0 {}
    }
}

/// What one cycle of a follower did.
public struct FollowCycle: Sendable {
    /// The sources polled in this cycle (in order) with what merging, pushing and publishing did.
    public var report: SyncReport
    /// Whether the cycle went into the run ledger: the first cycle, and any that changed rows, pushed or
    /// published something, or in which a source failed anew or recovered.
    public var recorded: Bool
    /// The failures that are news (the source was fine before, or failed for another reason), to print
    /// once rather than at every retry.
    public var newFailures: [SourceReport]
    /// A publish failure that is news.
    public var newPublishError: CatalogError?
}

extension SyncRunner {
    /// Follows sources into the store until ``FollowControl/stop()`` (docs/live-sync.md): `catalog sync --follow`.
    ///
    /// Holds the sync lock all along (another `sync` exits 75 meanwhile). Each cycle syncs the sources
    /// that are due, each with the same per-source step as ``sync(sources:options:standardInput:diagnostics:progress:)``
    /// (one transaction per source, its cursor stored with its rows), releases quarantined rows that came
    /// due, and publishes to `options.sync.publishPath` when this database changed (rows merged, or
    /// commits by other processes seen through `PRAGMA data_version`). A source is due every interval; a
    /// local log (or snapshot file) also as soon as inotify reports its manifest (or file) written; a hub
    /// also when this database changed (its push sends the change). A failing source waits twice as long
    /// after each failure, up to `maxBackoffSeconds`, while the others go on.
    ///
    /// The ledger gets one run per cycle that changed something, or in which a source failed anew or
    /// recovered, plus the first cycle: an idle follower adds no rows, and its idle polls write nothing
    /// except a source's last good sync once per `freshnessMilliseconds`.
    ///
    /// - Parameters:
    ///   - requested: SOURCE arguments, as for `sync`; empty means the saved remotes (read again after
    ///     ``FollowControl/reload()``).
    ///   - options: the sync options of each cycle and the poll interval (``FollowOptions``).
    ///   - control: how the caller stops it (SIGTERM, SIGINT) or makes it reload (SIGHUP).
    ///   - diagnostics: warnings and errors, as for `sync`.
    ///   - onCycle: after each cycle that polled something.
    /// - Throws: `CatalogError` only for what stops it before the first cycle: 75 when another sync holds
    ///   the lock, 64 for a bad SOURCE, `-`, `dryRun`, an in-memory database or nothing to follow, 73
    ///   when the lock cannot be made. Once following, failures are reported per cycle, never thrown.
    public func follow(
        sources requested: [String], options: FollowOptions, control: FollowControl,
        diagnostics: @escaping (Diagnostic) -> Void = { _ in },
        onCycle: (FollowCycle) -> Void = { _ in }
    ) throws {
        guard store.path != ":memory:" else { throw CatalogError(.usage, "an in-memory database cannot be followed into") }
        guard !options.sync.dryRun else { throw CatalogError(.usage, "--follow cannot be combined with --dry-run") }
        // The run is begun once for the follower's whole life (the lock); each cycle is finished as a
        // `sync` run is (SyncRunner.finish).
        let lock = try SyncLock.acquire(databasePath: store.path, now: store.wallClock.nowMilliseconds(), following: true)
        defer { withExtendedLifetime(lock) {} }
        let follower = try Follower(store: store, requested: requested, options: options, control: control, diagnostics: diagnostics)
        try follower.run(onCycle: onCycle)
    }
}
