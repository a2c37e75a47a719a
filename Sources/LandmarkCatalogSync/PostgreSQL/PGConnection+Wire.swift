internal import CLibPQ
import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// The non-blocking machinery under `PGConnection`: sending, flushing, reading results, each wait a
/// `poll(2)` against a deadline; and what happens when a deadline passes (cancel, drain or close).
/// libpq "Asynchronous Command Processing" (https://www.postgresql.org/docs/15/libpq-async.html), "Canceling Queries in Progress"
/// (https://www.postgresql.org/docs/15/libpq-cancel.html).
extension PGConnection {
    /// What one wait on the socket came to.
    enum SocketWait: Equatable {
        case ready
        case expired
        case failed(String)
        /// `cancellation` was cancelled (a follower's SIGTERM) while waiting.
        case cancelled
    }

    /// Waits until `fd` is ready for `events` (readable, writable, or in error — which the next libpq call
    /// reports) or `deadline` passes.
    ///
    /// Restarts after `EINTR`. With `cancellation`, it waits in slices of at most 100 ms and returns
    /// `.cancelled` within one of its cancel (a follower's SIGTERM waited out a frozen hub's
    /// connect or statement timeout, 28 s).
    static func waitSocket(
        _ fd: Int32, events: Int16, until deadline: ContinuousClock.Instant, cancellation: TransferCancellation? = nil
    ) -> SocketWait {
        guard fd >= 0 else { return .failed("the connection has no socket") }
        while true {
            if cancellation?.isCancelled == true { return .cancelled }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return .expired }
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let slice = cancellation == nil ? milliseconds(remaining) + 1 : min(milliseconds(remaining) + 1, 100)
            let rc = poll(&descriptor, 1, Int32(clamping: slice))
            if rc > 0 { return .ready }
            if rc < 0 && errno != EINTR { return .failed("poll: \(String(cString: strerror(errno)))") }
        }
    }

    /// `duration` in whole milliseconds, rounded down.
    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(clamping: seconds) &* 1000 &+ Int(attoseconds / 1_000_000_000_000_000)
    }

    /// `2 s`, `0.5 s`: a duration for messages.
    static func describe(_ duration: Duration) -> String {
        let ms = milliseconds(duration)
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(Double(ms) / 1000) s"
    }

    /// The open `PGconn`.
    /// - Throws: `PGError` (`.lostConnection`) once the connection has been closed.
    func liveHandle(statement: String?) throws -> OpaquePointer {
        guard let handle else {
            throw PGError(
                kind: .lostConnection, message: "the connection is closed (an earlier failure or deadline closed it)",
                statement: statement, target: target)
        }
        return handle
    }

    /// Refuses text holding a NUL byte: libpq passes C strings, which would silently end at the NUL.
    func checkNoNUL(_ text: String, statement: String, what: String = "the statement") throws {
        if text.utf8.contains(0) {
            throw PGError(
                kind: .client, message: "\(what) holds a NUL byte, which PostgreSQL text cannot store",
                statement: statement, target: target)
        }
    }

    /// Queues `sql` with its parameters (`PQsendQueryParams`, text format, untyped: the server infers types).
    func sendParameterised(_ conn: OpaquePointer, sql: String, params: [PGValue?]) throws {
        try checkNoNUL(sql, statement: sql)
        var storage: [UInt8] = []
        var offsets: [Int?] = []
        offsets.reserveCapacity(params.count)
        for (index, value) in params.enumerated() {
            guard let value else {
                offsets.append(nil)
                continue
            }
            let text = value.textForm
            try checkNoNUL(text, statement: sql, what: "parameter $\(index + 1)")
            offsets.append(storage.count)
            storage.append(contentsOf: text.utf8)
            storage.append(0)
        }
        let sent = storage.withUnsafeBufferPointer { buffer -> Int32 in
            let base = buffer.baseAddress.map(UnsafeRawPointer.init)
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset.flatMap { offset in base.map { $0.advanced(by: offset).assumingMemoryBound(to: CChar.self) } }
            }
            return PQsendQueryParams(conn, sql, Int32(clamping: params.count), nil, values, nil, nil, 0)
        }
        guard sent == 1 else { throw sendFailure(conn, statement: sql) }
    }

    /// The error when libpq refuses to send (the connection broke, too many parameters…).
    func sendFailure(_ conn: OpaquePointer, statement: String) -> PGError {
        let message = Self.oneLine(String(cString: PQerrorMessage(conn)))
        if PQstatus(conn) == CONNECTION_BAD {
            close()
            return PGError(kind: .lostConnection, message: message, statement: statement, target: target)
        }
        return PGError(kind: .client, message: message, statement: statement, target: target)
    }

    /// Sends whatever libpq has queued (`PQflush` until it returns 0), reading input meanwhile so the
    /// server is never blocked writing to us while we write to it.
    /// - Throws: `PGError` — `.timedOut` (after cancelling) at `deadline`; `.lostConnection`.
    func flush(_ conn: OpaquePointer, statement: String?, deadline: ContinuousClock.Instant, timeout: Duration) throws {
        while true {
            switch PQflush(conn) {
            case 0: return
            case 1: break
            default: throw lost(conn, statement: statement)
            }
            switch Self.waitSocket(PQsocket(conn), events: Int16(POLLIN | POLLOUT), until: deadline, cancellation: cancellation) {
            case .ready: break
            case .expired: throw expire(statement: statement, timeout: timeout)
            case .failed(let reason): throw lost(conn, statement: statement, reason: reason)
            case .cancelled: throw stopped(statement: statement)
            }
            guard PQconsumeInput(conn) == 1 else { throw lost(conn, statement: statement) }
        }
    }

    /// Closes the connection (a command in flight is left to the server, which rolls it back) and says the
    /// wait was ended by a stop.
    func stopped(statement: String?) -> PGError {
        close()
        return PGError(kind: .lostConnection, message: "stopped while waiting for the hub (SIGTERM)", statement: statement, target: target)
    }

    /// The next result of the command in flight (`PQgetResult` once `PQisBusy` says it would not block),
    /// or nil when the command is complete.
    /// - Throws: `PGError` — `.timedOut` (after cancelling) at `deadline`.
    func nextResult(
        _ conn: OpaquePointer, statement: String?, deadline: ContinuousClock.Instant,
        timeout: Duration
    ) throws -> OpaquePointer? {
        while PQisBusy(conn) == 1 {
            switch Self.waitSocket(PQsocket(conn), events: Int16(POLLIN), until: deadline, cancellation: cancellation) {
            case .ready: break
            case .expired: throw expire(statement: statement, timeout: timeout)
            case .failed(let reason): throw lost(conn, statement: statement, reason: reason)
            case .cancelled: throw stopped(statement: statement)
            }
            // A failed read means the connection broke; PQgetResult then returns the error (with the
            // server's SQLSTATE when it said why, 57P01 for a shutdown) without blocking.
            if PQconsumeInput(conn) == 0 { break }
        }
        return PQgetResult(conn)
    }

    /// Waits for every result of the command sent, up to the final nil, and returns the last one.
    ///
    /// - Parameters:
    ///   - conn: the libpq connection.
    ///   - statement: the command sent, for messages.
    ///   - deadline: when waiting stops (the command is then cancelled).
    ///   - timeout: the timeout `deadline` came from, for messages.
    ///   - pending: a result already read (by `copyIn`) that counts as the first.
    ///   - allowEmpty: an empty query is fine (a script of only comments).
    /// - Returns: the last result.
    /// - Throws: the first failing result's `PGError`, after reading the rest, so the connection is ready
    ///   for the next command; `.lostConnection` (and the connection closed) when it broke.
    func finish(
        _ conn: OpaquePointer, statement: String, deadline: ContinuousClock.Instant, timeout: Duration,
        pending: OpaquePointer? = nil, allowEmpty: Bool = false
    ) throws -> PGResult {
        try flush(conn, statement: statement, deadline: deadline, timeout: timeout)
        var failure: PGError?
        var last: PGResult?
        var next = pending
        if next == nil { next = try nextResult(conn, statement: statement, deadline: deadline, timeout: timeout) }
        while let raw = next {
            let result = PGResult(owning: raw)
            switch PQresultStatus(raw) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
                last = result
            case PGRES_EMPTY_QUERY:
                if allowEmpty {
                    last = result
                } else {
                    failure = failure ?? PGError(kind: .client, message: "empty statement", statement: statement, target: target)
                }
            case PGRES_COPY_IN:
                failure =
                    failure
                    ?? PGError(
                        kind: .client, message: "COPY … FROM STDIN goes through copyIn(sql:rows:)",
                        statement: statement, target: target)
                if PQputCopyEnd(conn, "COPY FROM STDIN sent outside copyIn") < 0 { throw lost(conn, statement: statement) }
                try flush(conn, statement: statement, deadline: deadline, timeout: timeout)
            case PGRES_COPY_OUT, PGRES_COPY_BOTH:
                close()  // never used by this layer; simplest to drop the connection than to drain the copy
                throw PGError(
                    kind: .client, message: "COPY TO STDOUT is not supported; the connection was closed",
                    statement: statement, target: target)
            default:
                let broken = PQstatus(conn) == CONNECTION_BAD
                failure = failure ?? PGError(result: raw, statement: statement, target: target, connectionBroken: broken)
            }
            next = try nextResult(conn, statement: statement, deadline: deadline, timeout: timeout)
        }
        if PQstatus(conn) == CONNECTION_BAD {
            // The server said why before closing (57P01 for a shutdown), or libpq noticed the loss.
            var error = failure ?? lost(conn, statement: statement)
            error.kind = .lostConnection
            close()
            throw error
        }
        if let failure { throw failure }
        guard let last else {
            throw PGError(kind: .client, message: "the server sent no result", statement: statement, target: target)
        }
        return last
    }

    /// The error for a broken connection, which is closed: libpq's message on one line.
    func lost(_ conn: OpaquePointer, statement: String?, reason: String? = nil) -> PGError {
        let message = reason ?? Self.oneLine(String(cString: PQerrorMessage(conn)))
        close()
        return PGError(
            kind: .lostConnection, message: connInfo.redact(message.isEmpty ? "connection lost" : message),
            statement: statement, target: target)
    }

    /// What to do when a statement's deadline passes: ask the server to cancel it (best effort, at most
    /// 2 s), then read what is left of the command for at most 2 s more.
    ///
    /// When that completes the connection is idle and usable again; otherwise (a stopped or unreachable
    /// server) it is closed.
    /// - Returns: the `.timedOut` error to throw, saying which of the two happened.
    func expire(statement: String?, timeout: Duration) -> PGError {
        var message = "no answer within \(Self.describe(timeout))"
        if let conn = handle, PQstatus(conn) == CONNECTION_OK {
            Self.cancelBestEffort(conn, within: .seconds(2))
            if drain(conn, until: ContinuousClock.now + .seconds(2)) {
                message += "; the statement was cancelled and the connection stays usable"
            } else {
                close()
                message += "; the connection was closed"
            }
        } else {
            close()
        }
        return PGError(kind: .timedOut, message: message, statement: statement, target: target)
    }

    /// Reads and discards the rest of the command in flight until `deadline` (ending a `COPY FROM STDIN`).
    /// - Returns: whether the connection is idle again.
    func drain(_ conn: OpaquePointer, until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            while PQflush(conn) == 1 {
                guard Self.waitSocket(PQsocket(conn), events: Int16(POLLIN | POLLOUT), until: deadline) == .ready,
                    PQconsumeInput(conn) == 1
                else { return false }
            }
            while PQisBusy(conn) == 1 {
                guard Self.waitSocket(PQsocket(conn), events: Int16(POLLIN), until: deadline) == .ready,
                    PQconsumeInput(conn) == 1
                else { return false }
            }
            guard let raw = PQgetResult(conn) else { return PQstatus(conn) == CONNECTION_OK }
            let status = PQresultStatus(raw)
            PQclear(raw)
            if status == PGRES_COPY_IN {
                guard PQputCopyEnd(conn, "cancelled: the client's deadline passed") == 1 else { return false }
            } else if status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
                return false
            }
        }
    }

    /// Sends a cancel request for the command running on `conn` (`PQcancel`), waiting at most `limit`.
    ///
    /// `PQcancel` in libpq 15 blocks with no timeout of its own: it opens a new connection, sends the
    /// request, then waits for the server to close it. So it runs on its own thread, which owns the
    /// `PGcancel` (freed when `PQcancel` returns, however late) and is abandoned after `limit`: a hung
    /// server then costs one parked thread, never a hung caller.
    static func cancelBestEffort(_ conn: OpaquePointer, within limit: Duration) {
        guard let cancel = PQgetCancel(conn) else { return }
        let request = CancelRequest(cancel)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            request.send()
            done.signal()
        }
        _ = done.wait(timeout: .now() + .milliseconds(milliseconds(limit)))
    }

    /// libpq's multi-line messages (`…Connection refused\n\tIs the server running…`) on one line.
    static func oneLine(_ text: String) -> String {
        joinedLines(text.split(whereSeparator: \.isNewline).map { String($0).trimmingWhitespace() })
    }

    /// Lines joined into one sentence-like line: `; ` after a line that ends without punctuation (libpq
    /// ends its lines without a full stop: "Connection refused" then "Is the server running…"), else a space.
    static func joinedLines(_ lines: [String]) -> String {
        var out = ""
        for line in lines where !line.isEmpty {
            if let last = out.last { out += ".:;,".contains(last) ? " " : "; " }
            out += line
        }
        return out
    }
}

/// A `PGcancel` handed to the thread that sends it.
///
/// libpq documents `PQcancel` as safe to call from another thread (it was made to be called from a
/// signal handler); the thread is its only user.
private final class CancelRequest: @unchecked Sendable {
    private let handle: OpaquePointer
    init(_ handle: OpaquePointer) { self.handle = handle }

    func send() {
        var message = [CChar](repeating: 0, count: 256)
        _ = PQcancel(handle, &message, Int32(message.count))
        PQfreeCancel(handle)
    }
}
