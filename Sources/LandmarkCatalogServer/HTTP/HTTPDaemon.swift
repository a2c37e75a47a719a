import CMicroHTTPD
import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// The limits of one daemon (docs/protocol.md §8, docs/serve.md §3).
package struct HTTPLimits: Sendable {
    /// Open connections at most (MHD_OPTION_CONNECTION_LIMIT): at the limit MHD stops accepting, and more wait
    /// unanswered in the listen backlog until one closes.
    package var connections = 12_000
    /// A request's headers must be complete this long after the connection opened (or the previous request ended).
    package var headerSeconds = 10.0
    /// A request's body must be complete this long after its headers.
    package var bodySeconds = 30.0
    /// A connection with no traffic this long is closed (MHD_OPTION_CONNECTION_TIMEOUT; suspended long-polls excepted).
    package var idleSeconds = 60
    /// A body larger than this is refused with 413.
    package var bodyBytes = 1 << 20
    /// A request line and headers larger than this are refused by the service with a JSON 431.
    ///
    /// MHD is given room for more (`connectionMemory`), so that it hands such a request on instead of
    /// answering with its own HTML page (docs/serve.md §3).
    package var headerBytes = 32 * 1024
    /// MHD's memory per connection (headers and read buffer; MHD_OPTION_CONNECTION_MEMORY_LIMIT).
    ///
    /// Headers that do not fit get MHD's own 431. An idle connection costs little of it, but one that has
    /// answered a request holds all of it (MHD clears the pool between requests): about 64 KiB of RSS per
    /// kept-alive connection, measured in docs/serve.md §3.
    package var connectionMemory = 64 * 1024
    /// MHD's worker threads (each with its own epoll set).
    package var threads = 2

    package init() {}
}

/// Raises this process's soft limit on open files (RLIMIT_NOFILE) toward `wanted`, up to the hard limit, as
/// servers do at start (getrlimit(2)): a shell's default soft limit (1,024) would refuse connections far below
/// `--max-connections`.
///
/// - Parameter wanted: the descriptors the server may need (its connection cap plus its own files).
/// - Returns: the soft limit in force afterwards.
package func raiseOpenFileLimit(wanted: Int) -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    let target = min(rlim_t(wanted), limit.rlim_max)
    if limit.rlim_cur < target {
        var raised = limit
        raised.rlim_cur = target
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return Int(target) }
    }
    return Int(limit.rlim_cur)
}

/// An HTTP/1.1 server on GNU libmicrohttpd (docs/serve.md §1): epoll worker threads, suspended connections for
/// long-polls (MHD_ALLOW_SUSPEND_RESUME), a connection cap, an idle timeout and a memory limit per connection,
/// and the header and body deadlines MHD does not have, kept here: a sweeper shuts down (`shutdown(2)`, so MHD
/// closes it) a connection whose headers or body are late.
///
/// MHD parses HTTP; this class only routes its calls.
package final class HTTPDaemon: @unchecked Sendable {
    // Safe: `daemon` is set once in `start` and cleared in `stop`, on the owner's thread; the connection table
    // is guarded by `lock`.
    private var daemon: OpaquePointer?
    let service: any HTTPService
    package let limits: HTTPLimits
    private let lock = NSLock()
    /// Open connections: their socket and, while no request is in progress, when its headers are due.
    private var connections: [UnsafeMutableRawPointer: (fd: Int32, due: UInt64?)] = [:]
    /// The user whose token the last request on each connection carried (``own(_:by:)``), and how many open
    /// connections each such user holds, under `lock`.
    private var owners: [UnsafeMutableRawPointer: String] = [:]
    private var ownedCount: [String: Int] = [:]
    private var sweeper: Thread?
    private var stopping = false
    /// The port it listens on.
    package private(set) var port = 0
    /// Where MHD's own messages go once it listens, as JSON lines (`{"event":"http-error",…}`).
    let log: @Sendable (String) -> Void
    /// Set under `lock` once `MHD_start_daemon` succeeded: MHD's messages before (its "Failed to bind to port
    /// 0" for a port in use) are dropped, `start` throws one error naming the address instead.
    private var listening = false

    /// - Parameters:
    ///   - service: what answers the requests.
    ///   - limits: the daemon's limits.
    ///   - log: where MHD's messages go once it listens (one JSON line each; stderr for serve).
    package init(service: any HTTPService, limits: HTTPLimits, log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.service = service
        self.limits = limits
        self.log = log
    }

    /// One message of MHD's (MHD_OPTION_EXTERNAL_LOGGER), kept out of stderr's raw text.
    fileprivate func mhdMessage(_ text: String) {
        guard lock.withLock({ listening }) else { return }
        var w = JSONWriter(reservingCapacity: 96 + text.utf8.count)
        w.raw(#"{"event":"http-error","message":"#)
        w.string(String(text.trimmingCharacters(in: .whitespacesAndNewlines).prefix(300)))
        w.raw("}")
        log(String(decoding: w.bytes, as: UTF8.self))
    }

    /// Listens on `host:port` (an IPv4 address; port 0 picks a free one).
    /// - Throws: `CatalogError` 64 for an address that is not IPv4, 69 when the port cannot be bound.
    package func start(host: String, port: Int) throws {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            throw CatalogError(
                .usage, "--listen needs an IPv4 address and a port (127.0.0.1:8080), got '\(host):\(port)'",
                hint: "a name such as localhost is not looked up: give its address")
        }
        let flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        let me = Unmanaged.passUnretained(self).toOpaque()
        daemon = withUnsafePointer(to: &addr) { a in
            catalog_mhd_start(
                UInt32(flags), a, UInt32(limits.threads), UInt32(limits.connections), UInt32(limits.idleSeconds),
                limits.connectionMemory, accessHandler, me, completedHandler, me, connectionHandler, me, mhdLogger, me)
        }
        guard let daemon else {
            let reason = String(cString: strerror(errno))
            throw CatalogError(
                .unavailable, "cannot listen on \(host):\(port) (\(reason))",
                hint: errno == EADDRINUSE
                    ? "another process listens there (ss -ltnp 'sport = :\(port)'); stop it or give another address" : nil)
        }
        lock.withLock { listening = true }
        self.port = Int(catalog_mhd_port(daemon))
        let thread = Thread { [weak self] in self?.sweep() }
        thread.name = "serve-deadlines"
        sweeper = thread
        thread.start()
    }

    /// Stops accepting connections (MHD_quiesce_daemon); the open ones go on.
    package func quiesce() {
        guard let daemon else { return }
        let fd = MHD_quiesce_daemon(daemon)
        if fd >= 0 { close(fd) }
    }

    /// Makes every pending deadline due now, so the sweeper shuts those connections down within 250 ms: the
    /// idle keep-alive ones (waiting for headers) and the ones still sending a body (SIGTERM's drain: such a
    /// request is not in hand yet; nothing of it was written).
    ///
    /// Requests the service holds are left alone.
    package func expireDeadlines() {
        lock.withLock {
            for (key, c) in connections where c.due != nil { connections[key]?.due = 0 }
        }
    }

    /// Open connections now.
    package var openConnections: Int { lock.withLock { connections.count } }

    /// Stops the daemon: every connection is closed and every request finished.
    package func stop() {
        lock.withLock { stopping = true }
        if let daemon { MHD_stop_daemon(daemon) }
        daemon = nil
    }

    /// Shuts down the connections whose headers or body are late, four times a second.
    private func sweep() {
        while !lock.withLock({ stopping }) {
            usleep(250_000)
            let now = DispatchTime.now().uptimeNanoseconds
            lock.withLock {
                for (_, c) in connections where c.due.map({ $0 < now }) == true {
                    shutdown(c.fd, Int32(SHUT_RDWR))
                }
            }
        }
    }

    fileprivate func connectionEvent(_ connection: OpaquePointer, opened: Bool) {
        let key = UnsafeMutableRawPointer(connection)
        let fd = opened ? catalog_mhd_connection_fd(connection) : -1
        lock.withLock {
            if opened {
                connections[key] = (fd, DispatchTime.now().uptimeNanoseconds + UInt64(limits.headerSeconds * 1e9))
            } else {
                connections[key] = nil
                if let user = owners.removeValue(forKey: key) { disown(user) }
            }
        }
    }

    /// Counts `request`'s connection as `user`'s (a connection counts for the user of its latest request).
    /// - Returns: how many open connections `user` holds with this one.
    package func own(_ request: HTTPRequest, by user: String) -> Int {
        let key = UnsafeMutableRawPointer(request.mhdConnection)
        return lock.withLock {
            guard connections[key] != nil else { return 0 }
            if let previous = owners[key] {
                if previous == user { return ownedCount[user] ?? 1 }
                disown(previous)
            }
            owners[key] = user
            let n = (ownedCount[user] ?? 0) + 1
            ownedCount[user] = n
            return n
        }
    }

    /// One connection fewer for `user`; call under `lock`.
    private func disown(_ user: String) {
        let n = (ownedCount[user] ?? 1) - 1
        ownedCount[user] = n > 0 ? n : nil
    }

    /// The body of the request on `connection` is due by `due` (nil: nothing is due, the service has it).
    private func setDue(_ connection: OpaquePointer, _ due: UInt64?) {
        let key = UnsafeMutableRawPointer(connection)
        lock.withLock {
            if connections[key] != nil { connections[key]?.due = due }
        }
    }

    fileprivate func handle(
        _ connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = context.pointee else {
            let request = HTTPRequest(connection: connection, method: method, path: url)
            request.headerBytes = method.utf8.count + url.utf8.count + catalog_mhd_header_bytes(connection)
            context.pointee = Unmanaged.passRetained(request).toOpaque()
            setDue(connection, nil)
            switch service.begin(request) {
            case .reply(let reply): return queue(reply, for: request)
            case .suspended: return .YES
            case .readBody:
                request.readingBody = true
                setDue(connection, DispatchTime.now().uptimeNanoseconds + UInt64(limits.bodySeconds * 1e9))
                return .YES
            }
        }
        let request = Unmanaged<HTTPRequest>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let n = uploadSize.pointee
            if !request.bodyTooLarge, request.body.count + n <= limits.bodyBytes, let upload {
                upload.withMemoryRebound(to: UInt8.self, capacity: n) { request.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: n)) }
            } else {
                request.bodyTooLarge = true
                request.body = []
            }
            uploadSize.pointee = 0
            return .YES
        }
        guard !request.answered else { return .YES }
        if request.readingBody {
            request.readingBody = false
            setDue(connection, nil)
        }
        switch service.complete(request) {
        case .reply(let reply): return queue(reply, for: request)
        case .suspended, .readBody: return .YES
        }
    }

    private func queue(_ reply: HTTPReply, for request: HTTPRequest) -> MHD_Result {
        request.answered = true
        request.status = reply.status
        request.bytesSent = reply.body.count
        if let prepared = reply.response, !request.closeAfter {
            return MHD_queue_response(request.mhdConnection, UInt32(reply.status), prepared.pointer)
        }
        let response = reply.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        for (name, value) in reply.headers { _ = MHD_add_response_header(response, name, value) }
        // MHD closes the connection once this answer is sent (RFC 9112 §9.6).
        if request.closeAfter { _ = MHD_add_response_header(response, "Connection", "close") }
        return MHD_queue_response(request.mhdConnection, UInt32(reply.status), response)
    }

    fileprivate func completed(
        _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, code: MHD_RequestTerminationCode, connection: OpaquePointer?
    ) {
        guard let context, let raw = context.pointee else { return }
        context.pointee = nil
        let request = Unmanaged<HTTPRequest>.fromOpaque(raw).takeRetainedValue()
        if let connection {
            // The next request's headers are due from now (keep-alive).
            setDue(connection, DispatchTime.now().uptimeNanoseconds + UInt64(max(limits.headerSeconds, Double(limits.idleSeconds)) * 1e9))
        }
        service.finished(request, completedNormally: code == .REQUEST_TERMINATED_COMPLETED_OK)
    }
}

private let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, upload, uploadSize, context in
    guard let cls, let connection, let url, let method, let uploadSize, let context else { return .NO }
    let daemon = Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue()
    return daemon.handle(
        connection, url: String(cString: url), method: String(cString: method), upload: upload, uploadSize: uploadSize, context: context)
}

private let completedHandler: MHD_RequestCompletedCallback = { cls, connection, context, code in
    guard let cls else { return }
    Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue().completed(context, code: code, connection: connection)
}

private let connectionHandler: MHD_NotifyConnectionCallback = { cls, connection, _, code in
    guard let cls, let connection else { return }
    Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue().connectionEvent(connection, opened: code.rawValue == 0)
}

/// MHD's error log (MHD_OPTION_EXTERNAL_LOGGER), formatted here and handed to the daemon.
///
/// It gets `cls`, a printf format and its `va_list`; none of MHD's raw text reaches stderr. `errno` is
/// kept: `start` reads it after a failed `MHD_start_daemon`, whose last message is logged just before.
private let mhdLogger: MHD_LogCallback = { cls, format, arguments in
    let saved = errno
    defer { errno = saved }
    guard let cls, let format, let arguments else { return }
    var buffer = [CChar](repeating: 0, count: 512)
    _ = vsnprintf(&buffer, buffer.count, format, arguments)
    let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress ?? format) }
    Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue().mhdMessage(text)
}
