#if os(Linux)
    internal import CCurl
    import Foundation
    import Glibc
    import LandmarkCatalog

    /// A session's requests on Linux over libcurl's multi interface.
    ///
    /// (https://curl.se/libcurl/c/libcurl-multi.html) One thread per transport runs every transfer, waiting in `curl_multi_poll` until a socket is ready,
    /// libcurl's next timer is due, or `curl_multi_wakeup` says a request came or went. A transfer that
    /// waits for its answer (a long-poll, a server that never answers) costs no wake-up until something
    /// happens: FoundationNetworking's `URLSession` spins a core in the same wait (see ``HTTPTransport``).
    ///
    /// Connections are kept alive between requests by the multi handle's connection cache, so a long-poll
    /// goes on the connection of the one before it.
    final class CurlTransport: HTTPTransport, @unchecked Sendable {
        // Safe: `queued`, `cancelled`, `waiting`, `isClosed` and `nextID` are touched only while `lock` is held;
        // `multi` and `running` only on the transfer thread (and `multi` by `curl_multi_wakeup`, which
        // libcurl allows from any thread).
        private let lock = NSLock()
        private let multi: UnsafeMutableRawPointer
        private var queued: [Transfer] = []
        private var cancelled: Set<UInt64> = []
        private var waiting: [UInt64: CheckedContinuation<TransportAnswer, any Error>] = [:]
        private var isClosed = false
        private var threadStarted = false
        private var nextID: UInt64 = 0
        /// The transfers libcurl runs, by easy handle (the transfer thread only).
        private var running: [UnsafeMutableRawPointer: Transfer] = [:]
        /// Answers larger than this are refused (a server cannot fill the app's memory): 64 MiB.
        static let maximumBody = 64 << 20

        /// `curl_global_init`, once per process before any other libcurl call.
        private static let globalInit: UInt32 = ccurl_global_init().rawValue

        init() {
            _ = Self.globalInit
            // curl_multi_init fails only when out of memory.
            // swift-format-ignore: NeverForceUnwrap
            multi = curl_multi_init()!
        }

        func send(_ request: TransportRequest) async throws -> TransportAnswer {
            let id = lock.withLock { () -> UInt64 in
                nextID += 1
                return nextID
            }
            let transfer = try Transfer(id: id, request: request)
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TransportAnswer, any Error>) in
                    lock.lock()
                    if isClosed || Task.isCancelled {
                        lock.unlock()
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    waiting[id] = continuation
                    queued.append(transfer)
                    let start = !threadStarted
                    threadStarted = true
                    lock.unlock()
                    if start { startThread() }
                    curl_multi_wakeup(multi)
                }
            } onCancel: {
                lock.withLock { _ = cancelled.insert(id) }
                curl_multi_wakeup(multi)
            }
        }

        func close() {
            let started = lock.withLock { () -> Bool in
                isClosed = true
                return threadStarted
            }
            if started {
                curl_multi_wakeup(multi)
            } else {
                curl_multi_cleanup(multi)
            }
        }

        private func startThread() {
            let thread = Thread { [self] in run() }
            thread.name = "LandmarkCatalogClient.CurlTransport"
            thread.stackSize = 256 << 10
            thread.start()
        }

        /// The transfer thread: adds what was queued, drops what was cancelled, runs libcurl, finishes
        /// what completed, and waits; until ``close()``.
        private func run() {
            while true {
                lock.lock()
                let adding = queued
                queued.removeAll()
                let dropping = cancelled
                cancelled.removeAll()
                let closing = isClosed
                lock.unlock()
                for transfer in adding {
                    running[transfer.easy] = transfer
                    curl_multi_add_handle(multi, transfer.easy)
                }
                let ending = running.values.filter { closing || dropping.contains($0.id) }
                for transfer in ending { finish(transfer, .failure(CancellationError())) }
                if closing {
                    curl_multi_cleanup(multi)
                    return
                }
                var active: Int32 = 0
                curl_multi_perform(multi, &active)
                var left: Int32 = 0
                while let message = curl_multi_info_read(multi, &left) {
                    guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle, let transfer = running[easy] else {
                        continue
                    }
                    finish(transfer, transfer.result(message.pointee.data.result))
                }
                // Until a socket is ready, libcurl's next timer (a request's timeout) or a wake-up; an hour
                // when nothing runs.
                var next = -1
                curl_multi_timeout(multi, &next)
                let wait = next < 0 ? 3_600_000 : min(next, 3_600_000)
                if wait > 0 { curl_multi_poll(multi, nil, 0, Int32(wait), nil) }
            }
        }

        private func finish(_ transfer: Transfer, _ result: Result<TransportAnswer, any Error>) {
            curl_multi_remove_handle(multi, transfer.easy)
            running[transfer.easy] = nil
            let continuation = lock.withLock { waiting.removeValue(forKey: transfer.id) }
            continuation?.resume(with: result)
        }
    }

    /// One request's easy handle and what it gathers: the body, the header fields, the status.
    private final class Transfer {
        let id: UInt64
        let easy: UnsafeMutableRawPointer
        private var headerList: UnsafeMutablePointer<curl_slist>?
        private let errorBuffer: UnsafeMutablePointer<CChar>
        var body = Data()
        var headers: [String: String] = [:]
        var tooLarge = false

        init(id: UInt64, request: TransportRequest) throws {
            self.id = id
            guard let easy = curl_easy_init() else { throw TransportFailure(description: "libcurl could not allocate a handle") }
            self.easy = easy
            errorBuffer = .allocate(capacity: ccurl_error_size())
            errorBuffer.initialize(repeating: 0, count: ccurl_error_size())
            var ok = true
            func check(_ code: CURLcode) { ok = ok && code == CURLE_OK }
            check(ccurl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer)))
            check(ccurl_setopt_string(easy, CURLOPT_URL, request.url.absoluteString))
            check(ccurl_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
            check(ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
            check(ccurl_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, Int(request.timeout * 1000))))
            check(ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(min(request.timeout, 30) * 1000))))
            // An answer that says it is over the bound is refused before a byte of it is read.
            check(ccurl_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(CurlTransport.maximumBody)))
            check(ccurl_setopt_string(easy, CURLOPT_USERAGENT, "LandmarkCatalogClient/\(CatalogVersion.string)"))
            // "Expect: 100-continue" would hold a POST's body until the server answers it.
            var fields = request.headers.map { "\($0.key): \($0.value)" } + ["Expect:"]
            fields.sort()
            for field in fields { headerList = curl_slist_append(headerList, field) }
            check(ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList))
            switch request.method {
            case "GET": check(ccurl_setopt_long(easy, CURLOPT_HTTPGET, 1))
            case "POST": check(ccurl_setopt_long(easy, CURLOPT_POST, 1))
            default: check(ccurl_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method))
            }
            if let payload = request.body {
                check(ccurl_setopt_long(easy, CURLOPT_POSTFIELDSIZE, payload.count))
                // COPYPOSTFIELDS: libcurl keeps its own copy, so the body outlives this call.
                payload.withUnsafeBytes { bytes in
                    check(ccurl_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress)))
                }
            }
            let me = Unmanaged.passUnretained(self).toOpaque()
            check(ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, me))
            check(
                ccurl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, user in
                    guard let data, let user else { return 0 }
                    let transfer = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
                    let n = size * count
                    guard transfer.body.count + n <= CurlTransport.maximumBody else {
                        transfer.tooLarge = true
                        return 0
                    }
                    data.withMemoryRebound(to: UInt8.self, capacity: n) { transfer.body.append($0, count: n) }
                    return n
                })
            check(ccurl_setopt_pointer(easy, CURLOPT_HEADERDATA, me))
            check(
                ccurl_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, user in
                    guard let data, let user else { return 0 }
                    let transfer = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
                    let n = size * count
                    let line = data.withMemoryRebound(to: UInt8.self, capacity: n) {
                        String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self)
                    }
                    transfer.header(line)
                    return n
                })
            guard ok else {
                curl_easy_cleanup(easy)
                curl_slist_free_all(headerList)
                errorBuffer.deallocate()
                throw TransportFailure(description: "this libcurl refuses an option the request needs")
            }
        }

        deinit {
            curl_easy_cleanup(easy)
            curl_slist_free_all(headerList)
            errorBuffer.deallocate()
        }

        /// One header line: a status line starts the fields again (an interim `100 Continue`, a redirect).
        func header(_ line: String) {
            if line.hasPrefix("HTTP/") {
                headers.removeAll()
                return
            }
            guard let colon = line.firstIndex(of: ":") else { return }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// The answer, or why there is none.
        func result(_ code: CURLcode) -> Result<TransportAnswer, any Error> {
            guard code == CURLE_OK else {
                if tooLarge || code == CURLE_FILESIZE_EXCEEDED {
                    return .failure(TransportFailure(description: "the answer is larger than 64 MiB", isOffline: false))
                }
                let tls = [CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE]
                return .failure(TransportFailure(description: Self.describe(code), isOffline: !tls.contains(code)))
            }
            var status = 0
            _ = ccurl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            return .success(TransportAnswer(status: status, body: body, headers: headers))
        }

        static func describe(_ code: CURLcode) -> String {
            switch code {
            case CURLE_COULDNT_CONNECT: return "connection refused"
            case CURLE_OPERATION_TIMEDOUT: return "timed out"
            case CURLE_COULDNT_RESOLVE_HOST: return "no such host"
            case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE: return "the connection was lost"
            case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR: return "TLS failed (certificate or handshake)"
            default: return String(cString: curl_easy_strerror(code))
            }
        }
    }
#endif
