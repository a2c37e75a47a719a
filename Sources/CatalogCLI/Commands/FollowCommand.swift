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
        // Signals are taken by dispatch sources (the handlers only set a flag and write the follower's
        // pipe): the source in hand finishes its transaction, the cycle is recorded, and the command exits 0.
        var handlers: [any DispatchSourceSignal] = []
        for (number, stop) in [(SIGTERM, true), (SIGINT, true), (SIGHUP, false)] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { if stop { control.stop() } else { control.reload() } }
            source.resume()
            handlers.append(source)
        }
        defer {
            for source in handlers { source.cancel() }
            for number in [SIGTERM, SIGINT, SIGHUP] { signal(number, SIG_DFL) }
        }
        let remotes = (try? RemoteBook(store).remoteNames()) ?? [:]
        // Each kind of warning shows at most --max-diagnostics lines an hour (a window), then a count.
        let window = ContinuousClock.Duration.milliseconds(Int64((i.context.testHooks.followDiagnosticsWindowSeconds ?? 3600) * 1000))
        let windowStarted = Mutable(ContinuousClock.now)
        // Sources whose failure was printed: a later good poll prints that they recovered (an
        // operator saw the failure and never its end).
        let failing = Mutable(Set<String>())
        let started = Mutable(false)
        try SyncRunner(store: store).follow(sources: i[SyncArguments.sources], options: options, control: control, diagnostics: i.report) { cycle in
            // Each cycle's line goes out as it is made, to a pipe or journald too, not when the follower
            // exits (0 bytes for 90 s on a pipe, then everything at SIGTERM).
            defer {
                i.stdout.flush()
                if ContinuousClock.now - windowStarted.value >= window {
                    i.reporter.closeWindow()
                    windowStarted.value = .now
                }
            }
            let now = Timestamp.format(milliseconds: store.wallClock.nowMilliseconds())
            if !started.value {
                started.value = true
                // One line when following begins (text only: --json prints one object per recorded cycle).
                if !i[Options.quiet] && !i[Options.json] {
                    let labels = cycle.report.sources.map { sourceLabel($0.source, remotes) }
                    var line = "\(now) following \(labels.isEmpty ? "no source" : labels.joined(separator: ", "))"
                    if let publish = options.sync.publishPath { line += ", publishing to \(publish)" }
                    line += " (every \(String(format: "%g", options.intervalSeconds)) s; SIGTERM stops)"
                    i.stdout.line(line)
                }
            }
            for source in cycle.newFailures {
                if let error = source.error { i.reporter.error(error.message, hint: error.hint, kind: "source-failed", source: source.source) }
                failing.value.insert(source.source)
            }
            for source in cycle.report.sources where source.error == nil && failing.value.contains(source.source) {
                failing.value.remove(source.source)
                if !i[Options.quiet] && !i[Options.json] { i.stdout.line("\(now) \(sourceLabel(source.source, remotes)): recovered") }
            }
            if let error = cycle.newPublishError { i.reporter.error(error.message, hint: error.hint) }
            guard cycle.recorded, !i[Options.quiet] else { return }
            let report = cycle.report
            if i[Options.json] {
                i.stdout.write(reportJSON(report, remotes: remotes))
                return
            }
            let merged = report.sources.filter { $0.outcome == .merged }
            guard
                !merged.isEmpty || report.logPublish?.changed == true || report.published != nil && report.logPublish == nil
                    || report.sources.contains(where: { $0.pushed.map { $0.sent > 0 } ?? false })
            else { return }
            var line = "\(Timestamp.format(milliseconds: store.wallClock.nowMilliseconds())) "
            line +=
                merged.isEmpty
                ? "nothing merged" : "\(merged.map { sourceLabel($0.source, remotes) }.joined(separator: ", ")): \(describe(report.counts))"
            let pushes = report.sources.compactMap(\.pushed)
            if !pushes.isEmpty {
                let sent = pushes.map(\.sent).reduce(0, +)
                let written = pushes.map(\.written).reduce(0, +)
                line += "; pushed \(plural(sent, "row")) (\(written) written)"
            }
            if let log = report.logPublish, log.changed {
                line += "; published \(log.directory) through change \(log.manifest.through)"
            } else if report.logPublish == nil, let published = report.published {
                line += "; published \(published)"
            }
            i.stdout.line(line)
        }
        return 0
    }
}

/// A value the follower's cycle callback changes (the callback runs on the follower's thread only).
private final class Mutable<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
