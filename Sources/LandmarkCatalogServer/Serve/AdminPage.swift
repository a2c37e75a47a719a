import Foundation
import LandmarkCatalog

/// The last pull and the last push of each user seen recently (docs/serve.md §12), for the operator's page:
/// when, the device's `User-Agent`, the status and, for a push, the row's outcome.
///
/// Bounded: at most ``capacity`` users; past it the older half (by last request) is dropped. Never a token.
/// In memory only; an erasure of a user, made here or merged, drops theirs (``forget(userHashes:)``).
final class UserActivity: @unchecked Sendable {
    // Safe: `records` is touched only under `lock`.
    struct Pull {
        var at: Int64
        var agent: String?
        var status: Int
        var longPoll: Bool
    }
    struct Push {
        var at: Int64
        var agent: String?
        var status: Int
        var outcome: String?
        var edge: Bool
    }
    private struct Entry {
        var pull: Pull?
        var push: Push?
        var seen: Int64
    }
    static let capacity = 10_000
    private let lock = NSLock()
    private var records: [String: Entry] = [:]

    func pulled(_ user: String, agent: String?, status: Int, polled: Bool) {
        let now = Self.now()
        update(user, now) { $0.pull = Pull(at: now, agent: agent, status: status, longPoll: polled) }
    }

    func pushed(_ user: String, agent: String?, status: Int, outcome: String?, edge: Bool) {
        let now = Self.now()
        update(user, now) { $0.push = Push(at: now, agent: agent, status: status, outcome: outcome, edge: edge) }
    }

    /// What is known of `user`'s last requests.
    func record(_ user: String) -> (pull: Pull?, push: Push?) {
        lock.withLock { records[user].map { ($0.pull, $0.push) } ?? (nil, nil) }
    }

    /// Users with a record now.
    var count: Int { lock.withLock { records.count } }

    /// Drops the records of the erased users whose hashes are in `userHashes`.
    ///
    /// An erased user's requests are not kept, even in memory (docs/erasure.md §3); each recorded user is
    /// hashed once (``ErasureRule/userHash(_:)``).
    func forget(userHashes: Set<String>) {
        guard !userHashes.isEmpty else { return }
        lock.withLock {
            for user in Array(records.keys) where userHashes.contains(ErasureRule.userHash(user)) {
                records[user] = nil
            }
        }
    }

    private func update(_ user: String, _ now: Int64, _ change: (inout Entry) -> Void) {
        lock.withLock {
            if records[user] == nil, records.count >= Self.capacity {
                let keep = records.sorted { $0.value.seen > $1.value.seen }.prefix(Self.capacity / 2)
                records = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
            }
            var entry = records[user] ?? Entry(seen: now)
            entry.seen = now
            change(&entry)
            records[user] = entry
        }
    }

    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

/// The operator's page on `--admin-listen` (docs/serve.md §12): `GET /` and `GET /users/ID` (the page, one
/// HTML document with its script and styles inline), `GET /api/summary` and `GET /api/users/ID` (JSON).
///
/// Never on the public listener; a request whose `Host` is a name other than `localhost` is refused (a DNS
/// rebinding page in the operator's browser cannot read it).
final class AdminService: HTTPService, @unchecked Sendable {
    // Safe: `server` is set in init; the server is thread-safe.
    private unowned let server: ServeServer

    init(server: ServeServer) { self.server = server }

    func begin(_ request: HTTPRequest) -> HTTPAction {
        guard request.method == "GET" || request.method == "HEAD" else {
            return .reply(Self.json(405, #"{"error":"only GET"}"#, extra: [("Allow", "GET, HEAD")]))
        }
        guard Self.hostAllowed(request.header("Host")) else {
            return .reply(Self.json(403, #"{"error":"the Host header must be an IP address or localhost"}"#))
        }
        let path = request.path
        if path == "/" || path == "/index.html" || (path.hasPrefix("/users/") && path.count > 7) {
            return .reply(
                HTTPReply(
                    status: 200,
                    headers: Self.common + [
                        ("Content-Type", "text/html; charset=utf-8"),
                        ("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"),
                    ],
                    body: Array(adminPageHTML.utf8)))
        }
        if path == "/api/summary" { return .reply(Self.json(200, server.adminSummary())) }
        if path.hasPrefix("/api/users/") {
            let (status, body) = server.adminUser(String(path.dropFirst("/api/users/".count)))
            return .reply(Self.json(status, body))
        }
        return .reply(Self.json(404, #"{"error":"not found: the page is /, a user /users/ID, the data /api/summary and /api/users/ID"}"#))
    }

    func complete(_ request: HTTPRequest) -> HTTPAction { begin(request) }
    func finished(_ request: HTTPRequest, completedNormally: Bool) {}

    private static let common = [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY")]

    private static func json(_ status: Int, _ text: String, extra: [(String, String)] = []) -> HTTPReply {
        HTTPReply(status: status, headers: common + [("Content-Type", "application/json; charset=utf-8")] + extra, body: Array((text + "\n").utf8))
    }

    /// An IPv4 or IPv6 literal, or `localhost`, with or without a port.
    static func hostAllowed(_ host: String?) -> Bool {
        guard let host, !host.isEmpty else { return false }
        if host.hasPrefix("[") { return true }
        let name = host.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        return name == "localhost" || (!name.isEmpty && name.utf8.allSatisfy { $0 == 0x2E || (0x30...0x39).contains($0) })
    }
}

extension ServeServer {
    /// `/api/summary`: the last hour in 10-second buckets, the gauges, the hub and the sources.
    func adminSummary() -> String {
        var w = JSONWriter(reservingCapacity: 32_768)
        summaryGauges(&w)
        summaryDatabase(&w)
        w.raw(#","bucketSeconds":"#)
        w.int(Int64(RequestHistory.seconds))
        w.raw(#","history":["#)
        for (i, b) in metrics.history.buckets().enumerated() {
            if i > 0 { w.raw(",") }
            w.raw("[")
            w.int(Int64(b.start))
            w.raw(",")
            w.int(Int64(b.requests))
            w.raw(",")
            w.int(Int64(b.serverErrors))
            w.raw(",")
            w.int(Int64(b.unauthorized))
            w.raw(",")
            w.raw(HTTPText.twoDecimals(b.meanSeconds * 1000))
            w.raw(",")
            w.raw(HTTPText.twoDecimals(b.maxSeconds * 1000))
            w.raw(",")
            w.int(Int64(b.longPolls))
            w.raw("]")
        }
        w.raw(#"],"historyColumns":["start","requests","serverErrors","unauthorized","meanMs","maxMs","longPolls"]}"#)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// The summary's first keys: version, node, times, readiness, requests, users and refusals.
    private func summaryGauges(_ w: inout JSONWriter) {
        let now = Date().timeIntervalSince1970
        w.raw(#"{"version":"#)
        w.string(CatalogVersion.string)
        w.raw(#","node":"#)
        w.string(node)
        w.raw(#","now":"#)
        w.int(Int64(now))
        w.raw(#","startedAt":"#)
        w.int(Int64(metrics.startTime))
        w.raw(#","ready":"#)
        let reason = notReadyReason()
        w.bool(reason == nil)
        w.raw(#","notReady":"#)
        w.string(reason)
        w.raw(#","requestsTotal":"#)
        w.int(Int64(metrics.requestsTotal))
        w.raw(#","longPolls":"#)
        w.int(Int64(metrics.longPolls))
        w.raw(#","longPollsLimit":"#)
        w.int(Int64(options.limits.connections))
        let active = metrics.activeUsers
        w.raw(#","activeUsers":{"5m":"#)
        w.int(Int64(active.fiveMinutes))
        w.raw(#","1h":"#)
        w.int(Int64(active.hour))
        w.raw(#"},"refusals":{"#)
        for (i, r) in metrics.refusalsByCause.enumerated() {
            if i > 0 { w.raw(",") }
            w.string(r.cause.rawValue)
            w.raw(":")
            w.int(Int64(r.count))
        }
        w.raw(#"},"usersRecorded":"#)
        w.int(Int64(activity.count))
    }

    /// The summary's database keys: its files' sizes, the hub's state, the row counts and the sources (or
    /// the error that kept them from being read).
    private func summaryDatabase(_ w: inout JSONWriter) {
        if let bytes = ServeMetrics.databaseBytes(options.databasePath) {
            w.raw(#","databaseBytes":{"main":"#)
            w.int(bytes.main)
            w.raw(#","wal":"#)
            w.int(bytes.wal)
            w.raw("}")
        }
        w.raw(#","hub":"#)
        w.string(replica?.currentState)
        do {
            let m = try readers.with { try CatalogMonitor($0).metrics() }
            w.raw(#","positions":"#)
            w.int(Int64(m.positions))
            w.raw(#","landmarks":"#)
            w.int(Int64(m.landmarks))
            w.raw(#","quarantined":"#)
            w.int(Int64(m.quarantined))
            w.raw(#","sources":["#)
            Self.sourcesJSON(&w, m.sources)
            w.raw("]")
        } catch {
            w.raw(#","databaseError":"#)
            w.string("\(error)")
        }
    }

    /// The summary's `sources`' objects, comma-separated.
    private static func sourcesJSON(_ w: inout JSONWriter, _ sources: [CatalogMetrics.Source]) {
        for (i, s) in sources.enumerated() {
            if i > 0 { w.raw(",") }
            w.raw(#"{"source":"#)
            w.string(s.source)
            w.raw(#","kind":"#)
            w.string(s.kind)
            w.raw(#","remote":"#)
            w.string(s.remote)
            w.raw(#","lastSuccess":"#)
            w.string(s.lastSuccessMilliseconds.map { Timestamp.format(milliseconds: $0) })
            w.raw(#","lastAttempt":"#)
            w.string(s.lastAttemptMilliseconds.map { Timestamp.format(milliseconds: $0) })
            w.raw(#","lastStatus":"#)
            w.int(s.lastStatus.map(Int64.init))
            w.raw("}")
        }
    }

    /// `/api/users/ID`: the user's row, their last pull and push, their quarantined rows, and why the row is
    /// what it is; (status, JSON).
    func adminUser(_ raw: String) -> (Int, String) {
        guard let user = try? UserID.normalize(raw) else { return (400, #"{"error":"not a user id"}"#) }
        let report: DeviceUserReport
        do {
            report = try readers.with { try DeviceRows($0).userReport(user) }
        } catch {
            var w = JSONWriter()
            w.raw(#"{"error":"#)
            w.string("\(error)")
            w.raw("}")
            return (503, String(decoding: w.bytes, as: UTF8.self))
        }
        let (pull, push) = activity.record(user)
        let erasedAt = verifier.erased.erasedAt(userHash: ErasureRule.userHash(user))
        var why: [String] = []
        var w = JSONWriter(reservingCapacity: 2048)
        w.raw(#"{"user":"#)
        w.string(user)
        w.raw(#","erasedAt":"#)
        w.string(erasedAt.map { Timestamp.format(milliseconds: $0) })
        w.raw(#","row":"#)
        Self.userRowJSON(&w, report, user: user, erasedAt: erasedAt, why: &why)
        w.raw(#","lastPull":"#)
        Self.pullJSON(&w, pull)
        w.raw(#","lastPush":"#)
        Self.pushJSON(&w, push, why: &why)
        if report.quarantinedCount > 0 {
            why.append(
                "\(report.quarantinedCount) row(s) of \(user) are in the quarantine (stamped too far ahead), not applied: catalog quarantine list; they are released when their time comes."
            )
        }
        w.raw(#","quarantinedCount":"#)
        w.int(Int64(report.quarantinedCount))
        w.raw(#","quarantined":["#)
        Self.quarantinedJSON(&w, report.quarantined)
        w.raw(#"],"why":"#)
        w.stringArray(why)
        w.raw("}")
        return (200, String(decoding: w.bytes, as: UTF8.self))
    }

    /// The user's stored row as an object (or `null`), and why it is what it is (`erasedAt`: the time of the
    /// user's erasure this server holds, ms since the epoch).
    private static func userRowJSON(
        _ w: inout JSONWriter, _ report: DeviceUserReport, user: String, erasedAt: Int64?, why: inout [String]
    ) {
        if let erasedAt {
            why.append(
                "\(user) was erased at \(Timestamp.format(milliseconds: erasedAt)) (docs/erasure.md): every row of theirs stamped before it is gone and refused, and this page forgot their earlier requests."
            )
        }
        if let row = report.row {
            let stamp = "\(Timestamp.format(milliseconds: row.stamp.wallMilliseconds)) counter \(row.stamp.counter) node \(row.stamp.node)"
            w.raw(#"{"page":"#)
            w.int(row.page)
            w.raw(#","landmarkId":"#)
            w.int(row.landmark)
            w.raw(#","updatedAt":"#)
            w.string(Timestamp.format(milliseconds: row.stamp.wallMilliseconds))
            w.raw(#","counter":"#)
            w.int(row.stamp.counter)
            w.raw(#","node":"#)
            w.string(row.stamp.node)
            w.raw(#","deleted":"#)
            w.bool(row.deleted)
            w.raw(#","seq":"#)
            w.int(row.seq)
            w.raw("}")
            why.append(
                row.deleted
                    ? "The row is a tombstone (the position was cleared), stamped \(stamp): the newest stamp this database has for \(user)."
                    : "Page \(row.page) is the row with the newest stamp this database has received for \(user) (\(stamp)): under last-writer-wins a row replaces it only with a later stamp (wall time, then counter, then node)."
            )
        } else {
            w.raw("null")
            why.append(
                "This database holds no row for \(user): none was pushed here or brought by a sync, or it was erased, or collected by catalog gc."
            )
        }
    }

    /// The user's last pull as an object, or `null`.
    private static func pullJSON(_ w: inout JSONWriter, _ pull: UserActivity.Pull?) {
        if let pull {
            w.raw(#"{"at":"#)
            w.string(Timestamp.format(milliseconds: pull.at))
            w.raw(#","agent":"#)
            w.string(pull.agent)
            w.raw(#","status":"#)
            w.int(Int64(pull.status))
            w.raw(#","longPoll":"#)
            w.bool(pull.longPoll)
            w.raw("}")
        } else {
            w.raw("null")
        }
    }

    /// The user's last push as an object (or `null`), and what became of it.
    private static func pushJSON(_ w: inout JSONWriter, _ push: UserActivity.Push?, why: inout [String]) {
        if let push {
            let at = Timestamp.format(milliseconds: push.at)
            w.raw(#"{"at":"#)
            w.string(at)
            w.raw(#","agent":"#)
            w.string(push.agent)
            w.raw(#","status":"#)
            w.int(Int64(push.status))
            w.raw(#","outcome":"#)
            w.string(push.outcome)
            w.raw(#","edge":"#)
            w.bool(push.edge)
            w.raw("}")
            let by = push.edge ? "an edge node" : (push.agent.map { "a device (\($0))" } ?? "a device")
            switch push.outcome {
            case "applied": why.append("The last push, at \(at) by \(by), was applied: its row was newer than the one stored.")
            case "stale": why.append("The last push, at \(at) by \(by), was stale: its stamp was older than the stored row's, so it changed nothing.")
            case "tie": why.append("The last push, at \(at) by \(by), had the stored row's stamp with other content: a tie, settled by the tie rule.")
            case "quarantined":
                why.append("The last push, at \(at) by \(by), was quarantined: stamped further ahead of this server's clock than --max-drift allows.")
            case let outcome?: why.append("The last push, at \(at) by \(by): \(outcome).")
            case nil: why.append("The last push, at \(at) by \(by), was refused with HTTP \(push.status): nothing was written.")
            }
        } else {
            w.raw("null")
        }
    }

    /// The user's quarantined rows' objects, comma-separated.
    private static func quarantinedJSON(_ w: inout JSONWriter, _ rows: [QuarantinedRow]) {
        for (i, q) in rows.enumerated() {
            if i > 0 { w.raw(",") }
            w.raw(#"{"id":"#)
            w.int(q.id)
            w.raw(#","receivedAt":"#)
            w.string(q.receivedAt)
            w.raw(#","source":"#)
            w.string(q.source)
            w.raw(#","updatedAt":"#)
            w.string(Timestamp.format(milliseconds: q.stamp.wallMilliseconds))
            w.raw(#","counter":"#)
            w.int(q.stamp.counter)
            w.raw(#","node":"#)
            w.string(q.stamp.node)
            w.raw(#","reason":"#)
            w.string(q.reason)
            w.raw("}")
        }
    }
}
