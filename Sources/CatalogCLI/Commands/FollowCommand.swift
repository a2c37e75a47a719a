import Dispatch
import Foundation
@_spi(Testing) import LandmarkCatalog
@_spi(Testing) import LandmarkCatalogSync

extension CatalogCLI {
    /// `--interval` goes with `--follow`; `--follow` does not go with `--dry-run`.
    static func validateFollow(_ p: ParsedArguments) throws {
        if p.given(SyncOptionsTable.interval) && !p[SyncOptionsTable.follow] {
            throw UsageError(message: "--interval goes with --follow", path: p.path)
        }
        if p[SyncOptionsTable.follow] && p[Options.dryRun] {
            throw UsageError(message: "--follow and --dry-run cannot be combined", path: p.path)
        }
    }

    /// `catalog sync --follow` (docs/live-sync.md): runs the follower until SIGTERM or SIGINT, then exits 0.
    ///
    /// Prints a line (a JSON object with `--json`) per cycle that changed something, nothing with
    /// `--quiet`; a source's failure is printed when it is new, not at every retry.
    static func runFollow(_ i: Invocation, options sync: SyncOptions) throws -> Int32 {
        var options = FollowOptions()
        options.sync = sync
        if let s = i[SyncOptionsTable.interval] { options.intervalSeconds = s }
        options.cycleEndHook = i.context.testHooks.followCycleEnd
        // SIGHUP reads it again (a rotated key); absolute, as a relative path names the same file then.
        options.signingKeyFile = i[TrustOptionsTable.sign].map { CatalogFiles.absolutePath($0, in: FileManager.default.currentDirectoryPath) }
        let store = try i.openStore()
        let control = try FollowControl()
        let handlers = takeFollowSignals(control)
        defer {
            for source in handlers { source.cancel() }
            for number in [SIGTERM, SIGINT, SIGHUP] { signal(number, SIG_DFL) }
        }
        let lines = FollowLines(i, store: store, options: options)
        try SyncRunner(store: store).follow(sources: i[SyncArguments.sources], options: options, control: control, diagnostics: i.report) {
            lines.cycleEnded($0)
        }
        return 0
    }

    /// Takes SIGTERM and SIGINT (stop) and SIGHUP (reload) for the follower; the caller cancels the sources.
    ///
    /// Signals are taken by dispatch sources (the handlers only set a flag and write the follower's pipe):
    /// the source in hand finishes its transaction, the cycle is recorded, and the command exits 0.
    static func takeFollowSignals(_ control: FollowControl) -> [any DispatchSourceSignal] {
        var handlers: [any DispatchSourceSignal] = []
        for (number, stop) in [(SIGTERM, true), (SIGINT, true), (SIGHUP, false)] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { if stop { control.stop() } else { control.reload() } }
            source.resume()
            handlers.append(source)
        }
        return handlers
    }
}

/// What `sync --follow` prints as its cycles end (the follower calls it on its own thread only): a line
/// when following begins, each new failure and recovery, and a line (or a JSON object) per recorded cycle.
private final class FollowLines {
    let i: Invocation
    let store: CatalogStore
    let options: FollowOptions
    let remotes: [String: String]
    /// Each kind of warning shows at most --max-diagnostics lines a window (an hour), then a count.
    let window: ContinuousClock.Duration
    var windowStarted = ContinuousClock.now
    /// Sources whose failure was printed: a later good poll prints that they recovered (an operator saw
    /// the failure and never its end).
    var failing = Set<String>()
    var started = false

    init(_ i: Invocation, store: CatalogStore, options: FollowOptions) {
        self.i = i
        self.store = store
        self.options = options
        remotes = (try? RemoteBook(store).remoteNames()) ?? [:]
        window = .milliseconds(Int64((i.context.testHooks.followDiagnosticsWindowSeconds ?? 3600) * 1000))
    }

    /// Prints what `cycle` brought.
    func cycleEnded(_ cycle: FollowCycle) {
        // Each cycle's line goes out as it is made, to a pipe or journald too, not when the follower
        // exits (0 bytes for 90 s on a pipe, then everything at SIGTERM).
        defer {
            i.stdout.flush()
            if ContinuousClock.now - windowStarted >= window {
                i.reporter.closeWindow()
                windowStarted = .now
            }
        }
        let now = Timestamp.format(milliseconds: store.wallClock.nowMilliseconds())
        if !started {
            started = true
            // One line when following begins (text only: --json prints one object per recorded cycle).
            if !i[Options.quiet] && !i[Options.json] { i.stdout.line(beginning(cycle, now: now)) }
        }
        for source in cycle.newFailures {
            if let error = source.error { i.reporter.error(error.message, hint: error.hint, kind: "source-failed", source: source.source) }
            failing.insert(source.source)
        }
        for source in cycle.report.sources where source.error == nil && failing.contains(source.source) {
            failing.remove(source.source)
            if !i[Options.quiet] && !i[Options.json] { i.stdout.line("\(now) \(CatalogCLI.sourceLabel(source.source, remotes)): recovered") }
        }
        if let error = cycle.newPublishError { i.reporter.error(error.message, hint: error.hint) }
        guard cycle.recorded, !i[Options.quiet] else { return }
        if i[Options.json] {
            i.stdout.write(CatalogCLI.reportJSON(cycle.report, remotes: remotes))
        } else if let line = recorded(cycle.report) {
            i.stdout.line(line)
        }
    }

    /// The line when following begins: the sources, where it publishes, how often.
    func beginning(_ cycle: FollowCycle, now: String) -> String {
        let labels = cycle.report.sources.map { CatalogCLI.sourceLabel($0.source, remotes) }
        var line = "\(now) following \(labels.isEmpty ? "no source" : labels.joined(separator: ", "))"
        if let publish = options.sync.publishPath { line += ", publishing to \(publish)" }
        line += " (every \(String(format: "%g", options.intervalSeconds)) s; SIGTERM stops)"
        return line
    }

    /// A recorded cycle's line, or nil when it merged, pushed and published nothing.
    func recorded(_ report: SyncReport) -> String? {
        let merged = report.sources.filter { $0.outcome == .merged }
        guard
            !merged.isEmpty || report.logPublish?.changed == true || report.published != nil && report.logPublish == nil
                || report.sources.contains(where: { $0.pushed.map { $0.sent > 0 } ?? false })
                || !CatalogCLI.repairedPhrase(report.repairs).isEmpty
        else { return nil }
        var line = "\(Timestamp.format(milliseconds: store.wallClock.nowMilliseconds())) "
        line +=
            merged.isEmpty
            ? "nothing merged"
            : "\(merged.map { CatalogCLI.sourceLabel($0.source, remotes) }.joined(separator: ", ")): \(CatalogCLI.describe(report.counts))"
        let pushes = report.sources.compactMap(\.pushed)
        if !pushes.isEmpty {
            let sent = pushes.map(\.sent).reduce(0, +)
            let written = pushes.map(\.written).reduce(0, +)
            let erasures = pushes.map(\.erasures).reduce(0, +)
            line += "; pushed \(CatalogCLI.pushedThings(rows: sent - erasures, erasures: erasures)) (\(written) written)"
        }
        line += CatalogCLI.repairedPhrase(report.repairs)
        if let log = report.logPublish, log.changed {
            line += "; published \(log.directory) through change \(log.manifest.through)"
        } else if report.logPublish == nil, let published = report.published {
            line += "; published \(published)"
        }
        return line
    }
}
