import Foundation
import LandmarkCatalog

extension CatalogCLI {
    static var watchCommand: CommandSpec {
        CommandSpec(
            name: "watch",
            abstract: "Print the featured landmarks (or a user's page) now and a line at each change.",
            discussion:
                "Changes are this process's or any other's (a cron sync, an import), found within about 50 ms; a commit that changes nothing shown prints nothing. Runs until interrupted (SIGINT or SIGTERM: exit 0) or until standard output is closed (exit 0, nothing more printed).",
            options: [
                Options.user.with(help: "Watch this user's current page (as position get resolves it) instead of the featured set.").spec,
                Options.json.with(
                    help: "One JSON value per line: the featured array (as featured --json), or the user's position (as position get --json)."
                ).spec,
            ],
            run: runWatch)
    }

    /// What `watch --user` shows: the resolved page (the stamp alone changing is not a change here).
    struct WatchedPage: Equatable, Sendable {
        var position: CarouselPosition?
        var pageCount: Int
        static func == (a: WatchedPage, b: WatchedPage) -> Bool {
            a.pageCount == b.pageCount && a.position?.currentPage == b.position?.currentPage
                && a.position?.landmarkID == b.position?.landmarkID && (a.position == nil) == (b.position == nil)
        }
    }

    /// The watching task's output and outcome.
    ///
    /// `@unchecked Sendable` is safe: only the watching task touches it until it signals `finished`, and the
    /// command reads `error` only after waiting for that signal.
    final class WatchState: @unchecked Sendable {
        let sink: any OutputSink
        var error: (any Error)?
        let finished = DispatchSemaphore(value: 0)
        init(sink: any OutputSink) { self.sink = sink }

        /// Writes one line and pushes it out; false once standard output is gone.
        func emit(_ bytes: [UInt8]) -> Bool {
            sink.write(bytes + [0x0A])
            sink.flush()
            return sink.writeError == nil
        }
    }

    static func runWatch(_ i: Invocation) throws -> Int32 {
        let user = try i[Options.user].map(UserID.normalize)
        let json = i[Options.json]
        let catalog = try Catalog(path: i.databasePath, access: .read, wallClock: i.context.wallClock)
        defer { catalog.close() }
        let state = WatchState(sink: i.stdout)
        let task = Task {
            defer { state.finished.signal() }
            do {
                // A value can change where its line does not (a featured landmark renamed: the text line
                // lists ids only); such a line is not printed again.
                var last: [UInt8]?
                func show(_ line: [UInt8]) -> Bool {
                    guard line != last else { return true }
                    last = line
                    return state.emit(line)
                }
                if let user {
                    let pages = catalog.observe { catalog in
                        try await catalog.read {
                            WatchedPage(position: try Positions($0).position(user: user), pageCount: try LandmarkReader($0).featuredIDs().count)
                        }
                    }
                    for try await page in pages where !show(watchLine(page, user: user, json: json)) { return }
                } else {
                    for try await featured in catalog.observe({ try await $0.featured() }) where !show(watchLine(featured, json: json)) {
                        return
                    }
                }
            } catch {
                state.error = error
            }
        }
        // SIGINT / SIGTERM end the watch (exit 0), as does a standard output nobody reads any more (a pipe
        // whose reader exited reports POLLERR; checked twice a second, so `watch | head -1` ends promptly).
        var sources: [any DispatchSourceProtocol] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { task.cancel() }
            source.resume()
            sources.append(source)
        }
        if let fd = (i.stdout as? FileDescriptorSink)?.fd {
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + 0.5, repeating: 0.5)
            timer.setEventHandler {
                var descriptor = pollfd(fd: fd, events: 0, revents: 0)
                if poll(&descriptor, 1, 0) > 0, descriptor.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { task.cancel() }
            }
            timer.resume()
            sources.append(timer)
        }
        defer {
            for source in sources { source.cancel() }
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
        }
        state.finished.wait()
        if let error = state.error { throw error }
        return 0
    }

    /// `featured: 1001, 1003, 1006` (or `featured: none`); with `json`, the array `featured --json` prints.
    static func watchLine(_ featured: [Landmark], json: Bool) -> [UInt8] {
        guard json else {
            return Array(("featured: " + (featured.isEmpty ? "none" : featured.map { String($0.id) }.joined(separator: ", "))).utf8)
        }
        // The landmarks in the core library's shape (as featured --json writes them), in an array.
        return JSONObject.array(
            json: featured.map { landmark in
                var w = JSONWriter(reservingCapacity: 512)
                landmark.writeJSON(to: &w)
                return w.bytes
            })
    }

    /// `u-1: page 2 of 4 (landmark 1007)` as `position get` prints it; with `json`, its JSON object.
    static func watchLine(_ page: WatchedPage, user: String, json: Bool) -> [UInt8] {
        guard json else { return Array((page.position.map(describe) ?? "\(user): no position").utf8) }
        return (page.position.map(positionJSON) ?? noPositionJSON(user: user, pageCount: page.pageCount)).bytes
    }
}
