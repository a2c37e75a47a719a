import Foundation
import LandmarkCatalog

#if os(Linux)
    import Glibc
#endif

/// serve's Prometheus figures (docs/serve.md §6), in the text exposition format: requests by route and
/// status, their durations, auth refusals by cause, active users, open long-polls against the cap,
/// write-to-visible (a row's stamp to the moment a long-poll answer carries it), readiness, and the
/// process's own figures (database bytes, RSS, descriptors, start time, build).
///
/// No label ever holds a user or a token: routes are the fixed names of docs/protocol.md, causes a fixed
/// set (``AuthRefusalCause``). Each request costs one short lock hold and O(1) work: a bucket increment,
/// and for an authenticated request one register of a HyperLogLog sketch (``ActiveUsers``).
package final class ServeMetrics: @unchecked Sendable {
    // Safe: every stored var is touched under `lock`, but the `let`s set in init.
    private let lock = NSLock()
    private var requests: [RequestKey: Int] = [:]
    private struct RequestKey: Hashable, Comparable {
        let route: String
        let status: Int
        static func < (a: Self, b: Self) -> Bool { (a.route, a.status) < (b.route, b.status) }
    }
    private var openLongPolls = 0
    private static let bounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    private var buckets = [Int](repeating: 0, count: ServeMetrics.bounds.count)
    private var visibleCount = 0
    private var visibleSum = 0.0
    private var rowsApplied = 0
    /// Request durations (seconds) by route, long-polls that waited left out (docs/serve.md §6).
    private var durations: [String: Histogram] = [:]
    /// How long the long-polls that waited were held, by route: their own buckets, up to the longest wait.
    private var pollDurations: [String: Histogram] = [:]
    /// The request-duration buckets (s): a "nothing new" answer takes well under a millisecond.
    static let durationBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// The long-poll buckets (s): a poll answered by a change, or held to its `wait`.
    static let pollBounds: [Double] = [0.1, 0.5, 1, 5, 10, 20, 30, 45, 60, 90]
    private var refusals = [Int](repeating: 0, count: AuthRefusalCause.allCases.count)
    private let users = ActiveUsers()
    /// The most long-polls that can be open (the connection cap).
    package var longPollLimit = 0
    /// The database whose size is reported (its `-wal` beside it); empty: none.
    package var databasePath = ""
    /// Seconds since the epoch when the process started.
    package let startTime: Double = ServeMetrics.processStartTime()
    /// With `--hub`: the hub's state (`starting`, `ok`, `failing`), read at each scrape.
    var hubState: (@Sendable () -> String)? {
        get { lock.withLock { hubStateSource } }
        set { lock.withLock { hubStateSource = newValue } }
    }
    private var hubStateSource: (@Sendable () -> String)?
    /// Whether the server takes requests now (not draining, not awaiting its hub, its last write did not
    /// fail), read at each scrape.
    var readiness: (@Sendable () -> Bool)? {
        get { lock.withLock { readinessSource } }
        set { lock.withLock { readinessSource = newValue } }
    }
    private var readinessSource: (@Sendable () -> Bool)?
    /// The per-10-seconds history the operator's page draws (docs/serve.md §12).
    package let history = RequestHistory()

    /// No requests yet; ``longPollLimit`` and ``databasePath`` are set by the server.
    package init() {}

    /// One answered request: its route, status and seconds from its headers to its end; `polled`: it waited
    /// in a long-poll (its duration then goes to the long-poll histogram, not the request one).
    func request(route: String, status: Int, seconds: Double = 0, polled: Bool = false) {
        let s = max(0, seconds)
        let open = lock.withLock {
            requests[RequestKey(route: route, status: status), default: 0] += 1
            if polled {
                pollDurations[route, default: Histogram(Self.pollBounds)].add(s)
            } else {
                durations[route, default: Histogram(Self.durationBounds)].add(s)
            }
            return openLongPolls
        }
        history.add(status: status, seconds: polled ? nil : s, longPolls: open)
    }

    /// A request refused with 401 for `cause`.
    func refused(_ cause: AuthRefusalCause) { lock.withLock { refusals[cause.index] += 1 } }

    /// A request with a verified token of `user` (counted, not kept: ``ActiveUsers``).
    func seen(user: String) {
        var hasher = Hasher()
        hasher.combine(user)
        let hash = UInt64(bitPattern: Int64(hasher.finalize()))
        let now = Date().timeIntervalSince1970
        lock.withLock { users.add(hash: hash, now: now) }
    }

    func longPoll(_ delta: Int) { lock.withLock { openLongPolls += delta } }

    func applied(_ n: Int) { lock.withLock { rowsApplied += n } }

    /// A long-poll answer delivered a row stamped `seconds` ago.
    func writeToVisible(_ seconds: Double) {
        let s = max(0, seconds)
        lock.withLock {
            visibleCount += 1
            visibleSum += s
            for (i, b) in Self.bounds.enumerated() where s <= b { buckets[i] += 1 }
        }
    }

    /// Open long-polls now.
    package var longPolls: Int { lock.withLock { openLongPolls } }

    /// Distinct users with a verified token in the last 5 minutes and the last hour (estimates within about
    /// 2 %; exact for a handful).
    package var activeUsers: (fiveMinutes: Int, hour: Int) {
        let now = Date().timeIntervalSince1970
        return lock.withLock { (users.estimate(minutes: 5, now: now), users.estimate(minutes: 60, now: now)) }
    }

    /// 401s so far by cause, in ``AuthRefusalCause`` order.
    package var refusalsByCause: [(cause: AuthRefusalCause, count: Int)] {
        lock.withLock { AuthRefusalCause.allCases.map { ($0, refusals[$0.index]) } }
    }

    /// Requests answered so far, all routes.
    package var requestsTotal: Int { lock.withLock { requests.values.reduce(0, +) } }

    /// The text exposition (https://prometheus.io/docs/instrumenting/exposition_formats/).
    package func text() -> String {
        let hub = hubState?()
        let ready = readiness?() ?? true
        let active = activeUsers
        let process = ProcessFigures.read()
        let database = ServeMetrics.databaseBytes(databasePath)
        return lock.withLock {
            var out = "# HELP catalog_serve_requests_total Requests answered, by route and status.\n"
            out += "# TYPE catalog_serve_requests_total counter\n"
            for key in requests.keys.sorted() {
                out += "catalog_serve_requests_total{route=\"\(key.route)\",status=\"\(key.status)\"} \(requests[key] ?? 0)\n"
            }
            out += "# HELP catalog_serve_request_duration_seconds From a request's headers to its answer sent, by route "
            out += "(long-polls that waited left out).\n"
            out += "# TYPE catalog_serve_request_duration_seconds histogram\n"
            for route in durations.keys.sorted() { durations[route]?.write("catalog_serve_request_duration_seconds", route: route, to: &out) }
            out += "# HELP catalog_serve_long_poll_duration_seconds How long the long-polls that waited were held, by route.\n"
            out += "# TYPE catalog_serve_long_poll_duration_seconds histogram\n"
            for route in pollDurations.keys.sorted() {
                pollDurations[route]?.write("catalog_serve_long_poll_duration_seconds", route: route, to: &out)
            }
            out += "# HELP catalog_serve_auth_refusals_total Requests refused with 401, by cause.\n"
            out += "# TYPE catalog_serve_auth_refusals_total counter\n"
            for cause in AuthRefusalCause.allCases {
                out += "catalog_serve_auth_refusals_total{cause=\"\(cause.rawValue)\"} \(refusals[cause.index])\n"
            }
            out += "# HELP catalog_serve_active_users Distinct users with a verified token in the last window (an estimate).\n"
            out += "# TYPE catalog_serve_active_users gauge\n"
            out += "catalog_serve_active_users{window=\"5m\"} \(active.fiveMinutes)\n"
            out += "catalog_serve_active_users{window=\"1h\"} \(active.hour)\n"
            out += "# HELP catalog_serve_long_polls Long-polls waiting now.\n# TYPE catalog_serve_long_polls gauge\n"
            out += "catalog_serve_long_polls \(openLongPolls)\n"
            out += "# HELP catalog_serve_long_polls_limit The most long-polls that can wait at once (the connection cap).\n"
            out += "# TYPE catalog_serve_long_polls_limit gauge\ncatalog_serve_long_polls_limit \(longPollLimit)\n"
            out += "# HELP catalog_serve_positions_applied_total Position rows POSTs applied.\n"
            out += "# TYPE catalog_serve_positions_applied_total counter\ncatalog_serve_positions_applied_total \(rowsApplied)\n"
            out += "# HELP catalog_serve_write_to_visible_seconds From a row's stamp to a long-poll answer carrying it.\n"
            out += "# TYPE catalog_serve_write_to_visible_seconds histogram\n"
            for (i, b) in Self.bounds.enumerated() {
                out += "catalog_serve_write_to_visible_seconds_bucket{le=\"\(b)\"} \(buckets[i])\n"
            }
            out += "catalog_serve_write_to_visible_seconds_bucket{le=\"+Inf\"} \(visibleCount)\n"
            out += "catalog_serve_write_to_visible_seconds_sum \(visibleSum)\n"
            out += "catalog_serve_write_to_visible_seconds_count \(visibleCount)\n"
            out += "# HELP catalog_serve_ready 1 while serve takes requests: not draining, not awaiting its hub, its last write did not fail.\n"
            out += "# TYPE catalog_serve_ready gauge\ncatalog_serve_ready \(ready ? 1 : 0)\n"
            if let hub {
                out += "# HELP catalog_serve_hub_up 1 when the hub's last poll succeeded (serve --hub), else 0.\n"
                out += "# TYPE catalog_serve_hub_up gauge\ncatalog_serve_hub_up \(hub == "ok" ? 1 : 0)\n"
            }
            if let database {
                out += "# HELP catalog_serve_database_bytes The database's size on disk: its file and its write-ahead log.\n"
                out += "# TYPE catalog_serve_database_bytes gauge\n"
                out += "catalog_serve_database_bytes{file=\"main\"} \(database.main)\n"
                out += "catalog_serve_database_bytes{file=\"wal\"} \(database.wal)\n"
            }
            if let rss = process.residentBytes {
                out += "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                out += "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes \(rss)\n"
            }
            if let fds = process.openFiles {
                out += "# HELP process_open_fds Number of open file descriptors.\n# TYPE process_open_fds gauge\nprocess_open_fds \(fds)\n"
            }
            if let max = process.maxFiles {
                out += "# HELP process_max_fds Maximum number of open file descriptors.\n# TYPE process_max_fds gauge\nprocess_max_fds \(max)\n"
            }
            out += "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
            out += "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds \(startTime)\n"
            out += "# HELP catalog_build_info The catalog build serving: always 1.\n# TYPE catalog_build_info gauge\n"
            out += "catalog_build_info{version=\"\(CatalogVersion.string)\"} 1\n"
            return out
        }
    }

    /// The sizes of the database file and its `-wal` (0 when absent), or nil without a path.
    package static func databaseBytes(_ path: String) -> (main: Int64, wal: Int64)? {
        guard !path.isEmpty else { return nil }
        func size(_ p: String) -> Int64 {
            var st = stat()
            return stat(p, &st) == 0 ? Int64(st.st_size) : 0
        }
        return (size(path), size(path + "-wal"))
    }

    /// When this process started (seconds since the epoch): from /proc on Linux, else the first call's time.
    static func processStartTime() -> Double {
        #if os(Linux)
            if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")"),
                let boot = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8))?.split(separator: "\n")
                    .first(where: { $0.hasPrefix("btime ") }).flatMap({ Double($0.dropFirst(6)) })
            {
                // Fields after the command: state is field 3; starttime is field 22 (proc(5)), in clock ticks.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                if fields.count > 19, let ticks = Double(fields[19]) {
                    return boot + ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
                }
            }
        #endif
        return Date().timeIntervalSince1970
    }
}

/// Why a request was refused with 401: the `cause` label of `catalog_serve_auth_refusals_total`
/// (docs/serve.md §6).
package enum AuthRefusalCause: String, CaseIterable, Sendable {
    /// No `Authorization` header.
    case missing
    /// An `Authorization` header that is not `Bearer TOKEN`.
    case notBearer = "not_bearer"
    /// Not a compact JWS, not base64url or JSON, too long, or a claim of the wrong type or range.
    case malformed
    /// The header's `alg` is not the server keys' algorithm (`none`, `HS256`, …).
    case algorithm
    /// No key of the server verifies the signature (a forged token, or another key's).
    case badSignature = "bad_signature"
    /// `exp` has passed (beyond the leeway).
    case expired
    /// `nbf` is still ahead (beyond the leeway).
    case notYetValid = "not_yet_valid"
    /// `iat` is ahead of the server's clock (beyond the leeway).
    case issuedInFuture = "issued_in_future"
    /// `exp` or `sub` missing, or `sub` not a user id.
    case claims
    /// Revoked by `catalog token revoke` (docs/serve.md §10).
    case revoked
    /// A user token whose user was erased at or after its `iat` (docs/erasure.md §6): 401 `account_erased`.
    case accountErased = "account_erased"
    /// A user token issued before this server's collection horizon (docs/serve.md §2).
    case beforeHorizon = "before_horizon"

    var index: Int { Self.allCases.firstIndex(of: self) ?? 0 }
}

/// A fixed-bucket histogram (counts per bucket, cumulated when written).
struct Histogram {
    let bounds: [Double]
    var counts: [Int]
    var sum = 0.0
    var count = 0

    init(_ bounds: [Double]) {
        self.bounds = bounds
        counts = [Int](repeating: 0, count: bounds.count)
    }

    mutating func add(_ value: Double) {
        count += 1
        sum += value
        if let i = bounds.firstIndex(where: { value <= $0 }) { counts[i] += 1 }
    }

    func write(_ name: String, route: String, to out: inout String) {
        var cumulative = 0
        for (i, b) in bounds.enumerated() {
            cumulative += counts[i]
            out += "\(name)_bucket{route=\"\(route)\",le=\"\(b)\"} \(cumulative)\n"
        }
        out += "\(name)_bucket{route=\"\(route)\",le=\"+Inf\"} \(count)\n"
        out += "\(name)_sum{route=\"\(route)\"} \(sum)\n"
        out += "\(name)_count{route=\"\(route)\"} \(count)\n"
    }
}

/// Distinct users seen per minute for the last hour, in bounded memory.
///
/// One HyperLogLog sketch (4,096 one-byte registers, a standard error of about 1.6 %) per minute, 60 of them; a window's estimate merges its minutes'
/// sketches. A request costs one register update; nothing grows with the users.
final class ActiveUsers {
    // Not thread-safe: ServeMetrics calls it under its lock.
    private static let bits = 12
    private static let registers = 1 << bits
    private var sketches = [[UInt8]](repeating: [], count: 60)
    private var minuteOf = [Int](repeating: -1, count: 60)

    func add(hash: UInt64, now: Double) {
        let minute = Int(now / 60)
        let slot = minute % 60
        if minuteOf[slot] != minute {
            minuteOf[slot] = minute
            sketches[slot] = [UInt8](repeating: 0, count: Self.registers)
        }
        let index = Int(hash >> UInt64(64 - Self.bits))
        let rest = hash << UInt64(Self.bits)
        let rank = UInt8(min(rest.leadingZeroBitCount, 64 - Self.bits) + 1)
        if sketches[slot][index] < rank { sketches[slot][index] = rank }
    }

    /// Distinct users in the last `minutes` started minutes (the current one included).
    func estimate(minutes: Int, now: Double) -> Int {
        let current = Int(now / 60)
        var merged = [UInt8](repeating: 0, count: Self.registers)
        var any = false
        for slot in 0..<60 where minuteOf[slot] > current - minutes && minuteOf[slot] <= current {
            any = true
            for i in 0..<Self.registers where sketches[slot][i] > merged[i] { merged[i] = sketches[slot][i] }
        }
        guard any else { return 0 }
        let m = Double(Self.registers)
        var sum = 0.0
        var zeros = 0
        for r in merged {
            sum += 1 / Double(UInt64(1) << UInt64(r))
            if r == 0 { zeros += 1 }
        }
        let raw = 0.7213 / (1 + 1.079 / m) * m * m / sum
        // Small cardinalities: linear counting (Flajolet et al. 2007, §4), exact for a handful of users.
        if raw <= 2.5 * m, zeros > 0 { return Int((m * log(m / Double(zeros))).rounded()) }
        return Int(raw.rounded())
    }
}

/// The last hour of requests in 10-second buckets (360 of them, fixed memory), for the operator's page
/// (docs/serve.md §12): answered, 5xx, 401, the summed and the largest duration, long-polls open.
package final class RequestHistory: @unchecked Sendable {
    // Safe: every stored var is touched under `lock`.
    private let lock = NSLock()
    /// A bucket's span in seconds.
    package static let seconds = 10
    /// The buckets kept: an hour.
    package static let slots = 360
    private var slotStart = [Int](repeating: -1, count: RequestHistory.slots)
    private var counts = [Int](repeating: 0, count: RequestHistory.slots)
    private var errors = [Int](repeating: 0, count: RequestHistory.slots)
    private var refused = [Int](repeating: 0, count: RequestHistory.slots)
    private var timed = [Int](repeating: 0, count: RequestHistory.slots)
    private var sums = [Double](repeating: 0, count: RequestHistory.slots)
    private var maxima = [Double](repeating: 0, count: RequestHistory.slots)
    private var polls = [Int](repeating: 0, count: RequestHistory.slots)

    /// One bucket: its start (seconds since the epoch) and figures.
    package struct Bucket: Sendable {
        /// Seconds since the epoch, a multiple of ``RequestHistory/seconds``.
        package var start: Int
        /// Requests answered in the bucket, and of them the 5xx and the 401s.
        package var requests = 0
        package var serverErrors = 0
        package var unauthorized = 0
        /// Mean and largest duration (s) of the requests that did not wait in a long-poll.
        package var meanSeconds = 0.0
        package var maxSeconds = 0.0
        /// The most long-polls open at an answer in the bucket.
        package var longPolls = 0
    }

    private func slot(_ now: Int) -> Int {
        let start = now / Self.seconds * Self.seconds
        let i = (now / Self.seconds) % Self.slots
        if slotStart[i] != start {
            slotStart[i] = start
            counts[i] = 0
            errors[i] = 0
            refused[i] = 0
            timed[i] = 0
            sums[i] = 0
            maxima[i] = 0
            polls[i] = 0
        }
        return i
    }

    func add(status: Int, seconds: Double?, longPolls: Int) {
        let now = Int(Date().timeIntervalSince1970)
        lock.withLock {
            let i = slot(now)
            counts[i] += 1
            if status >= 500 { errors[i] += 1 }
            if status == 401 { refused[i] += 1 }
            if let seconds {
                timed[i] += 1
                sums[i] += seconds
                maxima[i] = max(maxima[i], seconds)
            }
            polls[i] = max(polls[i], longPolls)
        }
    }

    /// The last hour's buckets, oldest first, empty ones included.
    package func buckets() -> [Bucket] {
        let now = Int(Date().timeIntervalSince1970)
        return lock.withLock {
            let current = now / Self.seconds * Self.seconds
            return (0..<Self.slots).reversed().map { back in
                let start = current - back * Self.seconds
                let i = (start / Self.seconds) % Self.slots
                guard slotStart[i] == start else { return Bucket(start: start) }
                return Bucket(
                    start: start, requests: counts[i], serverErrors: errors[i], unauthorized: refused[i],
                    meanSeconds: timed[i] > 0 ? sums[i] / Double(timed[i]) : 0, maxSeconds: maxima[i], longPolls: polls[i])
            }
        }
    }
}

/// The process's own figures, read at a scrape: resident memory, open descriptors and their limit.
struct ProcessFigures {
    var residentBytes: Int64?
    var openFiles: Int?
    var maxFiles: Int?

    static func read() -> ProcessFigures {
        var out = ProcessFigures()
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { out.maxFiles = Int(clamping: limit.rlim_cur) }
        #if os(Linux)
            // statm(5): sizes in pages; the second is the resident set.
            if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
                let fields = statm.split(separator: " ")
                if fields.count > 1, let pages = Int64(fields[1]) { out.residentBytes = pages * Int64(sysconf(Int32(_SC_PAGESIZE))) }
            }
            if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
                out.openFiles = max(0, entries.count - 1)  // less the descriptor reading the directory
            }
        #endif
        return out
    }
}

/// `GET /metrics` on the metrics listener (docs/serve.md §6).
final class MetricsService: HTTPService, @unchecked Sendable {
    let metrics: ServeMetrics
    init(metrics: ServeMetrics) { self.metrics = metrics }

    func begin(_ request: HTTPRequest) -> HTTPAction {
        guard request.path == "/metrics" else { return .reply(HTTPReply(status: 404)) }
        return .reply(
            HTTPReply(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(metrics.text().utf8)))
    }
    func complete(_ request: HTTPRequest) -> HTTPAction { begin(request) }
    func finished(_ request: HTTPRequest, completedNormally: Bool) {}
}
