import Dispatch
import Foundation
import LandmarkCatalog
@_spi(Testing) import LandmarkCatalogSync

/// `serve --hub` (docs/serve.md §8): this server's database kept in step with a PostgreSQL hub by the
/// follower of `sync --follow` (docs/live-sync.md), run on a thread of the server.
///
/// A POST commits to this database and is answered; the follower sees the commit at once (inotify on the
/// database's directory, `PRAGMA data_version`) and pushes it to the hub, whose `NOTIFY` wakes the other
/// servers' followers, which pull it; their commit wakes their long-polls (poked here, and by the
/// dispatcher's `data_version` probe). Reads never touch the hub.
final class HubReplica: @unchecked Sendable {
    // Safe: `state`, `startError`, `warned` and `windowStarted` are only used under `lock`; the rest is
    // set in `init`.
    private let hub: String
    private let databasePath: String
    private let maxDriftMilliseconds: Int64
    private let log: @Sendable (String) -> Void
    private let onApplied: @Sendable () -> Void
    private let pushStart: (@Sendable (FollowControl) -> Void)?
    private let control: FollowControl
    private let lock = NSLock()
    private let firstCycle = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private var state = "starting"
    private var startError: CatalogError?
    private var running = false
    private var warned: [String: Int] = [:]
    private var windowStarted = ContinuousClock.now

    /// The most warnings of one kind logged an hour (as `sync --follow`'s `--max-diagnostics`).
    static let warningsPerHour = 20

    /// - Parameters:
    ///   - hub: the hub's URL (`postgresql://…`) or a saved remote's name.
    ///   - databasePath: the database served.
    ///   - maxDriftMilliseconds: rows pulled from the hub stamped further ahead are quarantined.
    ///   - log: where the replica's JSON event lines go (serve's stderr).
    ///   - onApplied: called after a cycle that merged rows from the hub, to wake long-polls at once.
    ///   - pushStart: tests only, the follower's ``FollowOptions/pushStartHook``.
    /// - Throws: `CatalogError.cantCreate` (73) when the follower's wake-up pipe cannot be made.
    init(
        hub: String, databasePath: String, maxDriftMilliseconds: Int64, log: @escaping @Sendable (String) -> Void,
        onApplied: @escaping @Sendable () -> Void, pushStart: (@Sendable (FollowControl) -> Void)? = nil
    ) throws {
        self.hub = hub
        self.databasePath = databasePath
        self.maxDriftMilliseconds = maxDriftMilliseconds
        self.log = log
        self.onApplied = onApplied
        self.pushStart = pushStart
        control = try FollowControl()
    }

    /// The hub's state for `/v1/healthz` and the metrics: `starting`, `ok` or `failing`.
    var currentState: String { lock.withLock { state } }

    /// Starts following the hub and waits for the first cycle (a fresh database's first pull included).
    ///
    /// - Throws: `CatalogError` when the hub can never be followed as given: 64 (not a hub URL or remote),
    ///   75 (another sync or follower holds this database's sync lock), and a first poll refused for good
    ///   — 77 (a password or TLS refusal), 73 (a role missing its GRANTs), 76 (a hub of another schema).
    ///   A hub that is only unreachable (69) or busy (75) is not thrown: serve starts, logs it, and the
    ///   follower retries with its backoff.
    func start() throws {
        let locator = try SourceLocator.parse(hub, remotes: (try? RemoteBook(CatalogStore.open(path: databasePath)).remotes()) ?? [])
        guard HubSourceKind.conninfo(of: locator) != nil else {
            throw CatalogError(.usage, "--hub needs a PostgreSQL hub: a postgresql:// URL or a saved remote of one, got '\(hub)'")
        }
        var followOptions = FollowOptions()
        followOptions.sync.maxDriftMilliseconds = maxDriftMilliseconds
        followOptions.pushStartHook = pushStart
        let options = followOptions
        lock.withLock { running = true }
        let control = control
        let hub = hub
        let path = databasePath
        Thread.detachNewThread { [self] in
            do {
                // Its own connection: the follower's transactions never share the POSTs' writer.
                let store = try CatalogStore.open(path: path)
                try SyncRunner(store: store).follow(
                    sources: [hub], options: options, control: control, diagnostics: { [self] in warning($0) },
                    onCycle: { [self] in cycle($0) })
            } catch {
                let failure = (error as? CatalogError) ?? CatalogError(.software, "\(error)")
                lock.withLock { if state == "starting" { startError = failure } }
                firstCycle.signal()
            }
            lock.withLock { running = false }
            finished.signal()
        }
        firstCycle.wait()
        if let error = lock.withLock({ startError }) {
            stop()
            throw error
        }
    }

    /// Stops the follower after a last pass that pushes this database's commits not sent yet
    /// (docs/live-sync.md §3), waiting at most `timeoutSeconds`.
    func stop(timeoutSeconds: Double = 15) {
        guard lock.withLock({ running }) else { return }
        control.stop()
        let ended = finished.wait(timeout: .now() + timeoutSeconds) == .success
        // Said at exit so an operator knows nothing is lost (a SIGTERM while the hub was
        // down said nothing): what was not pushed stays here and goes at the next start.
        if !ended || currentState == "failing" {
            log(
                #"{"event":"hub","state":"stopped","message":"the hub could not be reached at exit; this database's rows not pushed yet stay here and are pushed when serve --hub (or sync) runs again"}"#
            )
        }
    }

    private func cycle(_ cycle: FollowCycle) {
        let report = cycle.report
        if report.counts.applied > 0 { onApplied() }
        let polled = report.sources.last
        let wasStarting = lock.withLock { state == "starting" }
        if let error = polled?.error {
            let permanent = [64, 73, 76, 77].contains(error.exitStatus)
            if wasStarting && permanent {
                lock.withLock { startError = error }
                firstCycle.signal()
                return
            }
            let changed = lock.withLock {
                defer { state = "failing" }
                return state != "failing"
            }
            if changed || !cycle.newFailures.isEmpty {
                event(state: "failing", status: error.exitStatus, message: error.message, hint: error.hint)
            }
        } else if polled != nil {
            let recovered = lock.withLock {
                defer { state = "ok" }
                return state != "ok"
            }
            if recovered {
                event(state: "ok", status: nil, message: nil, hint: nil)
            }
        }
        if wasStarting { firstCycle.signal() }
    }

    private func event(state: String, status: Int32?, message: String?, hint: String?) {
        var w = JSONWriter(reservingCapacity: 160)
        w.raw(#"{"event":"hub","state":"#)
        w.string(state)
        if let status { w.raw(#","status":\#(status)"#) }
        if let message {
            w.raw(#","message":"#)
            w.string(message)
        }
        if let hint {
            w.raw(#","hint":"#)
            w.string(hint)
        }
        w.raw("}")
        log(String(decoding: w.bytes, as: UTF8.self))
    }

    /// A follower warning (a quarantined row, a behind manifest, a LISTEN refused): at most
    /// ``warningsPerHour`` of each kind an hour, then the count of those left out when the hour ends.
    private func warning(_ d: Diagnostic) {
        let (show, dropped): (Bool, [String: Int]) = lock.withLock {
            var dropped: [String: Int] = [:]
            if ContinuousClock.now - windowStarted >= .seconds(3600) {
                dropped = warned.filter { $0.value > Self.warningsPerHour }.mapValues { $0 - Self.warningsPerHour }
                warned = [:]
                windowStarted = .now
            }
            warned[d.kind, default: 0] += 1
            return (warned[d.kind, default: 0] <= Self.warningsPerHour, dropped)
        }
        for (kind, count) in dropped.sorted(by: { $0.key < $1.key }) {
            log(#"{"event":"hub-warnings-dropped","kind":"\#(kind)","count":\#(count)}"#)
        }
        guard show else { return }
        var w = JSONWriter(reservingCapacity: 160)
        w.raw(#"{"event":"hub-warning","severity":"#)
        w.string(d.severity.rawValue)
        w.raw(#","kind":"#)
        w.string(d.kind)
        w.raw(#","message":"#)
        w.string(d.message)
        w.raw("}")
        log(String(decoding: w.bytes, as: UTF8.self))
    }
}
