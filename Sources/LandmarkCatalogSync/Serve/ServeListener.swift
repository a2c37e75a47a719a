import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// A follower's long-poll of a `catalog serve` (docs/protocol.md §5 and §9): says when the server has rows
/// after the cursor the follower last stored, so they are pulled at once rather than at the next interval.
///
/// Two threads, one per route (`/v1/landmarks`, `/v1/positions`), each holding a `GET
/// ?after=CURSOR&wait=45&limit=1` open; an answer that moves the cursor writes a byte to a pipe the
/// follower polls (``descriptor``), and the thread waits until the follower has synced the source and
/// handed it the new cursor (``synced(cursor:context:)``). An empty answer (the wait ended) is asked again.
/// A failure (the server down, the token refused) breaks the channel: ``descriptor`` turns -1, the
/// follower polls the source and listens again once a poll succeeds. Released, the threads end within
/// about a second (their transfers are cancelled).
final class ServeListener: ChangeListener {
    private let state: State

    /// Seconds each long-poll waits at the server (docs/protocol.md §5: at most 60; nginx's
    /// `proxy_read_timeout` in contrib/nginx/serve.conf is 75 s).
    static let waitSeconds = 45

    /// - Parameters:
    ///   - locator: the source.
    ///   - base: its `/v1` URL.
    ///   - options: the follower's options (timeouts, limits).
    /// - Throws: 73 when no pipe can be made.
    init(locator: SourceLocator, base: String, options: SyncOptions) throws {
        state = try State(locator: locator, base: base, options: options)
        for route in ["landmarks", "positions"] {
            let state = self.state
            Thread.detachNewThread { state.loop(route: route) }
        }
    }

    deinit { state.stop() }

    var descriptor: Int32 { state.isBroken ? -1 : state.readFD }

    func consume() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64)
        var woke = false
        while read(state.readFD, &buffer, buffer.count) > 0 { woke = true }
        return woke || state.isBroken
    }

    func synced(cursor: SourceCursor?, context: SyncContext) {
        // The token file is read again at each sync (it may have been refreshed).
        let token = try? ServeSource.token(for: state.locator, context: context)
        state.arm(token: token, cursor: cursor)
    }

    /// What the threads share with the listener (which may be released while they run).
    final class State: @unchecked Sendable {
        // @unchecked: the mutable state is read and written only while `condition` is locked; the
        // descriptors are set once.
        let locator: SourceLocator
        let base: String
        let options: SyncOptions
        let readFD: Int32
        private let writeFD: Int32
        private let condition = NSCondition()
        private var token: String?
        private var cursor: SourceCursor?
        /// Bumped at each ``arm(token:cursor:)``.
        private var generation = 0
        private var stopped = false
        private var broken = false
        private let cancellation = TransferCancellation()

        init(locator: SourceLocator, base: String, options: SyncOptions) throws {
            self.locator = locator
            self.base = base
            var options = options
            options.cancellation = cancellation
            self.options = options
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else {
                throw CatalogError(.cantCreate, "cannot make a long-poll's wake-up pipe (\(String(cString: strerror(errno))))")
            }
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
            (readFD, writeFD) = (fds[0], fds[1])
        }

        deinit {
            close(readFD)
            close(writeFD)
        }

        var isBroken: Bool { condition.withLock { broken } }

        func arm(token: String?, cursor: SourceCursor?) {
            condition.withLock {
                (self.token, self.cursor) = (token, cursor)
                generation += 1
                condition.broadcast()
            }
        }

        func stop() {
            condition.withLock {
                stopped = true
                condition.broadcast()
            }
            cancellation.cancel()
        }

        private func signal() {
            var byte: UInt8 = 1
            _ = write(writeFD, &byte, 1)
        }

        /// One route's long-polls, until stopped or broken.
        ///
        /// - Parameter route: `landmarks` or `positions`.
        func loop(route: String) {
            var consumed = 0
            while true {
                condition.lock()
                while !stopped && !broken && generation == consumed { condition.wait() }
                let (token, after, armed, done) = (self.token, cursor?[route], generation, stopped || broken)
                condition.unlock()
                if done { return }
                guard let token, let after else { return fail() }
                do {
                    let client = ServeHTTP(token: token, name: locator.description, options: options)
                    let query = "?after=\(ServeSource.percentEncoded(after))&wait=\(ServeListener.waitSeconds)&limit=1"
                    // No If-None-Match: the answer is always a body.
                    guard let page = try client.request("GET", "\(base)/\(route)\(query)", longPoll: Double(ServeListener.waitSeconds))
                    else { continue }
                    let next = try ServeSource.page(page, name: "\(locator.description)/\(route)").cursor
                    // Rows after the cursor: the follower pulls them; this route waits for its next cursor.
                    // An empty answer (the wait ended) is asked again, with a newer cursor if one came.
                    if next != after {
                        consumed = armed
                        signal()
                    }
                } catch {
                    if cancellation.isCancelled { return }
                    return fail()
                }
            }
        }

        private func fail() {
            condition.withLock {
                broken = true
                condition.broadcast()
            }
            signal()
        }
    }
}
