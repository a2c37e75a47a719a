import Foundation
import LandmarkCatalog

/// `catalog serve` (docs/protocol.md, docs/serve.md): the device protocol over one database, on an
/// ``HTTPDaemon``.
///
/// Reads run on a small pool of read-only connections (WAL: never blocked by a write); POSTs
/// are serialised on one writer connection, each one transaction.
package final class ServeServer: HTTPService, @unchecked Sendable {
    // Safe: the stores are used under their locks; `draining` and `active` under `stateLock`; the daemons are
    // set in `start` before any request and cleared in `drain`.
    package let options: ServeOptions
    let verifier: TokenVerifier
    package let metrics = ServeMetrics()
    let polls: LongPolls
    let userLimits: UserLimits
    let writer: CatalogStore
    let writeLock = NSLock()
    let readers: ReaderPool
    let databaseID: String
    let node: String
    let stateLock = NSLock()
    private var draining = false
    private var active = 0
    private(set) var daemon: HTTPDaemon?
    private var metricsDaemon: HTTPDaemon?
    private var metricsService: MetricsService?
    private var adminDaemon: HTTPDaemon?
    /// The last pull and push of each user recently seen, for the operator's page (docs/serve.md §12).
    let activity = UserActivity()
    /// The last POST failed to write (the database busy, full or read-only): not ready until one succeeds.
    var writeFailing = false
    private(set) var replica: HubReplica?
    private var watch: ServeWatch?
    /// The daily collection (without `--hub`: the replica's follower collects there).
    private var collection: ServeCollection?
    /// With `--hub` over a database that held nothing at start: until the hub's first pull, every route but
    /// healthz is 503 (a fresh server never answers with an empty catalog, docs/serve.md §8).
    private var awaitingHub: Bool

    /// Opens the database (creating and migrating it as `.write` does) and prepares the server.
    /// - Throws: `CatalogError` from opening the database.
    package init(options: ServeOptions) throws {
        self.options = options
        verifier = TokenVerifier(keys: options.keys, revoked: RevokedTokens())
        userLimits = UserLimits(maxInHand: options.maxRequestsPerUser, rate: options.postRate, burst: options.postBurst)
        writer = try CatalogStore.open(path: options.databasePath)
        let mark = CursorMark(databasePath: options.databasePath)
        var id = try DeviceRows(writer).serveDatabaseID()
        let sequence = try writer.changeSequence()
        if let handedOut = mark.through(id: id), sequence < handedOut {
            // Restored from a backup: cursors up to `handedOut` were given out, and new writes would reuse
            // the numbers past `sequence`. A new id makes every old cursor another database's.
            id = try DeviceRows(writer).newServeDatabaseID()
            options.log(
                #"{"event":"restored","message":"the database's change sequence (\#(sequence)) is behind the cursors handed out (\#(handedOut)): restored from a backup; it takes a new id, and devices and nodes read it again from the start"}"#
            )
        }
        mark.write(id: id, through: sequence)
        databaseID = id
        awaitingHub = options.hub != nil && sequence == 0
        node = options.node.isEmpty ? try writer.nodeID() : options.node
        readers = ReaderPool(path: options.databasePath)
        let markID = id
        polls = try LongPolls(
            path: options.databasePath, probeMilliseconds: options.probeMilliseconds, metrics: metrics,
            handedOut: { mark.write(id: markID, through: $0) })
        metrics.longPollLimit = options.limits.connections
        metrics.databasePath = options.databasePath
    }

    /// Starts listening (and the metrics listener, when asked).
    ///
    /// With `--hub`, the hub is followed first and its first pull done before the port is bound, so a
    /// fresh server never answers with an empty catalog (docs/serve.md §8).
    /// - Throws: `CatalogError` 69 when a port cannot be bound; with `--hub`, what ``HubReplica/start()``
    ///   throws (64, 73, 75, 76, 77).
    package func start() throws {
        if let hub = options.hub {
            let polls = polls
            let replica = try HubReplica(
                hub: hub, databasePath: options.databasePath, maxDriftMilliseconds: options.maxDriftMilliseconds, log: options.log,
                onApplied: { polls.poke() }, pushStart: options.hubPushStart)
            try replica.start()
            self.replica = replica
            metrics.hubState = { replica.currentState }
        }
        metrics.readiness = { [weak self] in self?.isReady ?? false }
        let heartbeat = options.heartbeat.map { beat in { @Sendable [weak self] in beat(self?.notReadyReason()) } }
        let watch = ServeWatch(
            databasePath: options.databasePath, hub: options.hub, revoked: verifier.revoked, erased: verifier.erased, log: options.log,
            heartbeat: heartbeat, onErased: { [activity] in activity.forget(userHashes: $0) })
        do {
            try watch.start()
        } catch {
            replica?.stop()
            throw error
        }
        self.watch = watch
        if options.hub == nil {
            let collection = ServeCollection(
                databasePath: options.databasePath, intervalMilliseconds: options.collectionMilliseconds, log: options.log)
            collection.start()
            self.collection = collection
        }
        let d = HTTPDaemon(service: self, limits: options.limits, log: options.log)
        try d.start(host: options.host, port: options.port)
        daemon = d
        polls.start()
        if let host = options.metricsHost {
            let service = MetricsService(metrics: metrics)
            var limits = HTTPLimits()
            limits.connections = 64
            limits.threads = 1
            let m = HTTPDaemon(service: service, limits: limits, log: options.log)
            try m.start(host: host, port: options.metricsPort)
            metricsService = service
            metricsDaemon = m
        }
        if let host = options.adminHost {
            var limits = HTTPLimits()
            limits.connections = 32
            limits.threads = 1
            let a = HTTPDaemon(service: AdminService(server: self), limits: limits, log: options.log)
            try a.start(host: host, port: options.adminPort)
            adminDaemon = a
        }
    }

    /// The port the device protocol listens on.
    package var port: Int { daemon?.port ?? 0 }
    /// The port of the metrics listener (0 without one).
    package var metricsPort: Int { metricsDaemon?.port ?? 0 }
    /// The port of the operator's page (0 without one).
    package var adminPort: Int { adminDaemon?.port ?? 0 }

    /// SIGTERM's drain (docs/serve.md §7): stop accepting, answer every long-poll, close the idle keep-alive
    /// connections and the ones whose body has not all arrived (nothing of those was written), let the
    /// requests in hand finish (writes commit or roll back whole), then stop.
    ///
    /// New requests on open connections
    /// meanwhile get 503. Without the cut, one stalled upload held the drain for its whole timeout.
    package func drain(timeoutSeconds: Double = 10) {
        stateLock.withLock { draining = true }
        daemon?.quiesce()
        polls.stop()
        daemon?.expireDeadlines()
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while stateLock.withLock({ active }) > 0, Date() < deadline { usleep(10_000) }
        daemon?.stop()
        polls.flushHandedOut()
        // After the last writes: the follower's last pass pushes them to the hub.
        replica?.stop()
        watch?.stop()
        collection?.stop()
        metricsDaemon?.stop()
        adminDaemon?.stop()
    }

    /// Whether serve takes requests now (`catalog_serve_ready`, docs/serve.md §6): ``notReadyReason()`` is nil.
    var isReady: Bool { notReadyReason() == nil }

    private var isDraining: Bool { stateLock.withLock { draining } }

    /// Why this server should not be sent traffic now (`GET /v1/readyz`, docs/serve.md §11), or nil: draining,
    /// awaiting its hub's first pull, the hub not reached (or its revocations unreadable), its last write
    /// failed (busy, full), or its database not writable (a read-only file, directory or mount).
    package func notReadyReason() -> String? {
        if isDraining { return "draining: the server is stopping" }
        if isAwaitingHub { return "starting: the catalog has not been received from the hub yet" }
        if let replica, replica.currentState != "ok" { return "the hub is not reached (\(replica.currentState))" }
        if let problem = watch?.hubProblem { return "the hub is not reached: \(problem)" }
        if stateLock.withLock({ writeFailing }) { return "the last write to the database failed" }
        return DatabaseWritability.problem(path: options.databasePath)
    }

    /// Whether a fresh `--hub` server still waits for its first pull (cleared once the hub is reached).
    private var isAwaitingHub: Bool {
        stateLock.withLock {
            if awaitingHub, replica?.currentState == "ok" { awaitingHub = false }
            return awaitingHub
        }
    }

    // MARK: HTTPService

    package func begin(_ request: HTTPRequest) -> HTTPAction {
        stateLock.withLock { active += 1 }
        let method = request.method
        // The routes, their methods and whether they need a token: docs/protocol.md, as DeviceRoute says.
        guard let route = DeviceRoute(path: request.path) else {
            return .reply(error(404, "not_found", "no such route; see docs/protocol.md"))
        }
        request.route = route.path
        // MHD took headers up to its larger memory bound; ours is smaller, and answered in the protocol's
        // shape (docs/serve.md §3).
        if request.headerBytes > options.limits.headerBytes {
            return .reply(
                error(431, "headers_too_large", "the request line and headers are over \(options.limits.headerBytes) bytes"))
        }
        // HEAD is GET without a body (RFC 9110 §9.3.2), for health checks.
        guard route.methods.contains(method) || ((route == .healthz || route == .readyz) && method == "HEAD") else {
            return .reply(methodNotAllowed(route.methods.joined(separator: ", ")))
        }
        if route == .healthz || route == .readyz { return .readBody }
        if isDraining {
            return .reply(error(503, "draining", "the server is stopping; try again", headers: ["Retry-After": "1"]))
        }
        if isAwaitingHub {
            return .reply(
                error(503, "unavailable", "the server has not received the catalog from its hub yet; try again", headers: ["Retry-After": "5"]))
        }
        if route.needsToken(publicLandmarks: options.publicLandmarks) {
            if let refusal = authenticate(request) { return .reply(refusal) }
            if route == .repair, !request.edge {
                return .reply(error(403, "insufficient_scope", "POST /v1/repair takes an edge token (catalog token issue --scope edge)"))
            }
            if let user = request.user {
                metrics.seen(user: user)
                if route == .positions { request.agent = request.header("User-Agent").map { String(decoding: $0.utf8.prefix(160), as: UTF8.self) } }
            }
            if let refusal = admit(request) { return .reply(refusal) }
        }
        if method == "POST" {
            let type = request.header("Content-Type")?.lowercased() ?? ""
            // A repair message is binary (docs/protocol.md §6b); every other body is JSON.
            let wanted = route == .repair ? RepairOverHTTP.mediaType : "application/json"
            guard type == wanted || type.hasPrefix(wanted + ";") || type.hasPrefix(wanted + " ") else {
                return .reply(error(415, "unsupported_media_type", "a POST body to \(route.path) must be \(wanted)"))
            }
            if let length = request.header("Content-Length").flatMap({ Int($0) }), length > options.limits.bodyBytes {
                return .reply(error(413, "body_too_large", "the body is over \(options.limits.bodyBytes) bytes"))
            }
        }
        // A GET is answered on MHD's next call: answered on this first one, MHD would close the connection
        // (it cannot know yet that no body follows), losing keep-alive.
        return .readBody
    }

    package func complete(_ request: HTTPRequest) -> HTTPAction {
        if request.route == DeviceRoute.healthz.path {
            let hub = replica.map { #","hub":"\#($0.currentState)""# } ?? ""
            if isDraining { return .reply(json(503, #"{"status":"draining"\#(hub)}"#, ["Retry-After": "1"])) }
            if isAwaitingHub { return .reply(json(503, #"{"status":"starting"\#(hub)}"#, ["Retry-After": "5"])) }
            return .reply(json(200, #"{"status":"ok"\#(hub)}"#))
        }
        if request.route == DeviceRoute.readyz.path {
            guard let reason = notReadyReason() else { return .reply(json(200, #"{"status":"ready"}"#)) }
            var w = JSONWriter(reservingCapacity: 128)
            w.raw(#"{"status":"not_ready","reason":"#)
            w.string(reason)
            w.raw("}")
            return .reply(json(503, String(decoding: w.bytes, as: UTF8.self), ["Retry-After": "5"]))
        }
        if request.method == "DELETE" { return erase(request) }
        if request.route == DeviceRoute.repair.path { return repair(request) }
        return request.method == "POST" ? post(request) : get(request)
    }

    package func finished(_ request: HTTPRequest, completedNormally: Bool) {
        stateLock.withLock { active -= 1 }
        if request.holdsUserSlot, let user = request.user { userLimits.leave(user) }
        metrics.request(
            route: request.route, status: request.status, seconds: request.elapsedMilliseconds / 1000, polled: request.waitUntil != nil)
        if request.route == DeviceRoute.positions.path, let user = request.user, !request.edge {
            if request.method == "GET" {
                activity.pulled(user, agent: request.agent, status: request.status, polled: request.waitUntil != nil)
            } else if request.method == "POST", request.status != 200 {
                activity.pushed(user, agent: request.agent, status: request.status, outcome: nil, edge: false)
            }
        }
        var w = JSONWriter(reservingCapacity: 192)
        w.raw("{\"time\":")
        Timestamp.write(milliseconds: Int64(Date().timeIntervalSince1970 * 1000), to: &w)
        w.raw(",\"method\":")
        w.string(request.method)
        w.raw(",\"route\":")
        w.string(request.route)
        w.raw(",\"status\":")
        w.int(Int64(request.status))
        w.raw(",\"ms\":")
        w.raw(HTTPText.twoDecimals(request.elapsedMilliseconds))
        w.raw(",\"bytes\":")
        w.int(Int64(request.bytesSent))
        w.raw(",\"user\":")
        if let user = request.user { w.string(user) } else { w.raw("null") }
        if !completedNormally { w.raw(",\"aborted\":true") }
        w.raw("}\n")
        options.logBytes(w.bytes)
    }

    // MARK: Reading (docs/protocol.md §3–§5)

    private func get(_ request: HTTPRequest) -> HTTPAction {
        let landmarks = request.route == DeviceRoute.landmarks.path
        var after: Int64 = 0
        // A cursor of another database (this one replaced, restored, moved): answered at once, rows or not,
        // so the client learns from the new cursor that the server forgot and pushes again (docs/protocol.md §3).
        var foreign = false
        if let cursor = request.query("after") {
            guard let parsed = parseCursor(cursor) else {
                return .reply(error(400, "invalid_parameter", "after is not a cursor this server hands out", field: "after"))
            }
            after = parsed.seq
            foreign = !parsed.sameDatabase
        }
        var waitSeconds = 0
        if let text = request.query("wait") {
            // Digits only; a number too large for Int is over 60 and taken as 60, like any other (§5).
            guard !text.isEmpty, text.utf8.count <= 64, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return .reply(error(400, "invalid_parameter", "wait must be a whole number of seconds, 0 to 60", field: "wait"))
            }
            waitSeconds = min(Int(text) ?? .max, options.maxWaitSeconds)
        }
        var limit = options.pageLimit
        if let text = request.query("limit") {
            guard let n = Int(text), n >= 1 else {
                return .reply(error(400, "invalid_parameter", "limit must be a whole number from 1", field: "limit"))
            }
            limit = min(n, options.pageLimit)
        }
        // A landmark page's ETag that a read found since the last landmark change was dispatched: a
        // matching If-None-Match is answered 304 with no read and nothing built (docs/serve.md §4). A page
        // with no rows, asked with a wait, waits instead (below).
        let asked = LandmarkPage(after: after, limit: limit)
        if landmarks, let tag = polls.landmarkTag(asked), waitSeconds == 0 || !tag.empty,
            request.header("If-None-Match", is: tag.etag)
        {
            return .reply(tag.notModified)
        }
        let user: String? = request.edge ? nil : request.user
        let key: WaitKey = landmarks ? .landmarks : user.map(WaitKey.user) ?? .allPositions
        for _ in 0..<8 {
            var answer: (page: DeviceRowsPage, highWater: Int64)
            var tagEpoch: UInt64?
            // "Nothing new" proven by the changes already dispatched: no read (docs/serve.md §4).
            if let high = polls.nothingNew(for: key, after: after) {
                answer = (DeviceRowsPage(), high)
            } else {
                do {
                    if landmarks { tagEpoch = polls.landmarkTagEpoch }
                    let before = after
                    answer = try read(landmarks: landmarks, user: user, after: &after, limit: limit)
                    if after != before { foreign = true }  // past this database's end: another database's cursor
                } catch {
                    return .reply(unavailable(error))
                }
                if let epoch = tagEpoch, !foreign, after == asked.after {
                    rememberTag(of: answer.page, for: asked, epoch: epoch)
                }
                if let user {
                    // The page holds the user's row exactly when it is past the cursor; else the row is at
                    // the cursor (the only other answer, `read` says).
                    polls.learnRow(of: user, at: answer.page.count > 0 ? answer.page.through : after, through: answer.highWater)
                }
                if answer.page.count > 0 { polls.noteCursor(answer.page.through) }
            }
            let now = DispatchTime.now().uptimeNanoseconds
            if answer.page.count == 0, waitSeconds > 0, !isDraining, !foreign {
                let until = request.waitUntil ?? now + UInt64(waitSeconds) * 1_000_000_000
                request.waitUntil = until
                if now < until {
                    if polls.wait(request, key: key, seen: answer.highWater, deadline: until) { return .suspended }
                    continue  // something was dispatched past our read: read again
                }
            }
            if request.waitUntil != nil, answer.page.count > 0 {
                metrics.writeToVisible(Date().timeIntervalSince1970 - Double(answer.page.newestWall) / 1000)
            }
            return .reply(page(answer.page, after: after, landmarks: landmarks, request: request))
        }
        return .reply(error(503, "unavailable", "the database is changing too fast to wait on; try again", headers: ["Retry-After": "1"]))
    }

    /// One page of rows after `after` from the database, and its high-water mark; a cursor past the
    /// database's end (restored or replaced) starts again at 0 (docs/protocol.md §3).
    ///
    /// A user token's cursor is its row's change sequence (docs/protocol.md §3), so it moves with that
    /// row alone: the row is answered when its sequence is past the cursor, nothing when it is at it, and a
    /// cursor past it (a database restored, or a cursor this server never gave the user) starts again at
    /// 0 — decided by the user's row alone, so no cursor a user sends can tell how far other users' writes
    /// have moved the database.
    private func read(landmarks: Bool, user: String?, after: inout Int64, limit: Int) throws -> (page: DeviceRowsPage, highWater: Int64) {
        var from = after
        defer { after = from }
        if landmarks {
            // The landmarks' cursor is their own newest row's: one past it starts again, never probes how
            // far other users' positions moved the database's sequence (docs/protocol.md §3).
            return try readers.with { store in
                let rows = DeviceRows(store)
                var a = try rows.deviceLandmarks(after: from, limit: limit)
                if a.page.count == 0, from > 0, try from > rows.landmarksThrough() {
                    from = 0
                    a = try rows.deviceLandmarks(after: 0, limit: limit)
                }
                return a
            }
        }
        if let user {
            return try readers.with { store in
                var a = try DeviceRows(store).devicePositions(user: user, after: 0, limit: limit)
                // The user's erasure holds the cursor where it was once the row is gone (`positionSequence`).
                let row = max(a.page.count > 0 ? a.page.through : 0, try DeviceRows(store).positionSequence(user: user))
                if row == from {
                    a.page = DeviceRowsPage()
                } else if row < from {
                    from = 0
                }
                return a
            }
        }
        // An edge token: every position, by the database's own point.
        return try readers.with { store in
            var a = try DeviceRows(store).devicePositions(user: nil, after: from, limit: limit)
            if from > a.highWater {
                from = 0
                a = try DeviceRows(store).devicePositions(user: nil, after: 0, limit: limit)
            }
            return a
        }
    }

    /// Keeps the ETag a read found for landmark page `asked`, with its 304 made once (``LongPolls/rememberLandmarkTag(_:for:epoch:)``).
    private func rememberTag(of page: DeviceRowsPage, for asked: LandmarkPage, epoch: UInt64) {
        let etag = "\"\(databaseID):\(page.count > 0 ? page.through : asked.after)\""
        guard let notModified = HTTPReply(status: 304, headers: [("ETag", etag), ("Cache-Control", "no-cache")]).prepared() else { return }
        polls.rememberLandmarkTag(LandmarkTag(etag: Array(etag.utf8), empty: page.count == 0, notModified: notModified), for: asked, epoch: epoch)
    }

    private func page(_ page: DeviceRowsPage, after: Int64, landmarks: Bool, request: HTTPRequest) -> HTTPReply {
        let cursor = "\(databaseID):\(page.count > 0 ? page.through : after)"
        var headers = [("Content-Type", "application/json; charset=utf-8")]
        if landmarks {
            let etag = "\"\(cursor)\""
            headers += [("ETag", etag), ("Cache-Control", "no-cache")]
            if let match = request.header("If-None-Match"),
                match.split(separator: ",").contains(where: { HTTPText.trimmingBlanks($0) == etag })
            {
                return HTTPReply(status: 304, headers: headers.filter { $0.0 != "Content-Type" })
            }
        }
        var w = JSONWriter(reservingCapacity: page.rowsJSON.count + 256)
        w.raw("{\"format\":")
        w.string(SnapshotFormat.name)
        w.raw(",\"version\":")
        w.int(SnapshotFormat.version)
        w.raw(",\"node\":")
        w.string(node)
        w.raw(landmarks ? ",\n\"landmarks\":[" : ",\n\"positions\":[")
        if page.count > 0 { w.raw("\n") }
        w.bytes.append(contentsOf: page.rowsJSON)
        if !page.erasuresJSON.isEmpty {
            w.raw("],\n\"erasures\":[\n")
            w.bytes.append(contentsOf: page.erasuresJSON)
        }
        w.raw("],\n\"generatedAt\":")
        if page.count > 0 && page.newestWall > 0 { w.string(Timestamp.format(milliseconds: page.newestWall)) } else { w.raw("null") }
        w.raw(",\"cursor\":")
        w.string(cursor)
        w.raw(",\"more\":")
        w.raw(page.more ? "true" : "false")
        w.raw("}\n")
        return HTTPReply(status: 200, headers: headers, body: w.bytes)
    }

    /// The sequence number in a cursor of this database (0 for another database's) and whether it is this
    /// database's; nil when it is no cursor.
    private func parseCursor(_ text: String) -> (seq: Int64, sameDatabase: Bool)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let id = text[..<colon]
        let seqText = text[text.index(after: colon)...]
        func alphanumeric(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
        guard !id.isEmpty, id.utf8.count <= 64, id.utf8.allSatisfy(alphanumeric),
            !seqText.isEmpty, seqText.utf8.count <= 18, seqText.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let seq = Int64(seqText)
        else { return nil }
        return id == databaseID ? (seq, true) : (0, false)
    }

    // MARK: Writing (docs/protocol.md §6)

    private func post(_ request: HTTPRequest) -> HTTPAction {
        if request.bodyTooLarge {
            return .reply(error(413, "body_too_large", "the body is over \(options.limits.bodyBytes) bytes"))
        }
        let body: DevicePositionsBody
        do {
            body = try DevicePositionsBody.decode(request.body, maxRows: options.maxRows)
        } catch let e {
            return .reply(error(e.code == "too_many_rows" ? 413 : 400, e.code, e.message, field: e.field))
        }
        if body.hasLandmarks {
            return .reply(
                request.edge
                    ? error(400, "invalid_field", "landmark rows are not taken by POST /v1/positions", field: "landmarks")
                    : error(403, "insufficient_scope", "a user token may not write landmarks", field: "landmarks"))
        }
        let users = body.users
        if !request.edge, let i = users.firstIndex(where: { $0 != request.user }) {
            return .reply(error(403, "insufficient_scope", "row \(i) is another user's; nothing was written", field: "positions[\(i)].user"))
        }
        if let refusal = refuseErasures(body.erasures, request) { return .reply(refusal) }
        let result: (outcomes: [DeviceRowOutcome], erasureOutcomes: [DeviceRowOutcome], highWater: Int64)
        do {
            let source = request.edge ? "serve (edge \(request.user ?? ""))" : "serve (user \(request.user ?? ""))"
            result = try writeLock.withLock {
                try DeviceRows(writer).mergeDevicePositions(
                    body.positions, erasures: body.erasures, source: source, maxDriftMilliseconds: options.maxDriftMilliseconds)
            }
        } catch {
            stateLock.withLock { writeFailing = true }
            return .reply(unavailable(error))
        }
        stateLock.withLock { writeFailing = false }
        for (i, outcome) in result.outcomes.enumerated().prefix(100) {
            activity.pushed(users[i], agent: request.agent, status: 200, outcome: outcome.rawValue, edge: request.edge)
        }
        // A user's cursor is its row's sequence (docs/protocol.md §3): what others wrote does not move it.
        var cursor = result.highWater
        if !request.edge, let user = request.user {
            cursor = (try? writeLock.withLock { try DeviceRows(writer).positionSequence(user: user) }) ?? 0
        }
        polls.noteCursor(result.highWater)
        options.afterPostCommit?()
        polls.poke()
        metrics.applied(result.outcomes.filter { $0 == .applied }.count)
        var w = JSONWriter(reservingCapacity: 64 + users.count * 48)
        w.raw("{\"results\":[")
        for (i, outcome) in result.outcomes.enumerated() {
            if i > 0 { w.raw(",") }
            w.raw("{\"user\":")
            w.string(users[i])
            w.raw(",\"outcome\":")
            w.string(outcome.rawValue)
            w.raw("}")
        }
        w.raw("]")
        if !body.erasures.isEmpty { writeErasureResults(body.erasures, result.erasureOutcomes, to: &w) }
        w.raw(",\"cursor\":")
        w.string("\(databaseID):\(cursor)")
        w.raw("}\n")
        return .reply(HTTPReply(status: 200, headers: [("Content-Type", "application/json; charset=utf-8")], body: w.bytes))
    }

    // MARK: Answers (docs/protocol.md §1)

    private func json(_ status: Int, _ text: String, _ headers: [String: String] = [:]) -> HTTPReply {
        HTTPReply(
            status: status, headers: [("Content-Type", "application/json; charset=utf-8")] + headers.map { ($0.key, $0.value) },
            body: Array((text + "\n").utf8))
    }

    func error(_ status: Int, _ code: String, _ message: String, field: String? = nil, headers: [String: String] = [:]) -> HTTPReply {
        var w = JSONWriter(reservingCapacity: 160)
        w.raw("{\"error\":{\"status\":")
        w.int(Int64(status))
        w.raw(",\"code\":")
        w.string(code)
        w.raw(",\"message\":")
        w.string(message)
        if let field {
            w.raw(",\"field\":")
            w.string(field)
        }
        w.raw("}}\n")
        return HTTPReply(
            status: status, headers: [("Content-Type", "application/json; charset=utf-8")] + headers.map { ($0.key, $0.value) }, body: w.bytes)
    }

    private func methodNotAllowed(_ allow: String) -> HTTPReply {
        error(405, "method_not_allowed", "this route takes \(allow)", headers: ["Allow": allow])
    }

    func unavailable(_ e: any Error) -> HTTPReply {
        let message = (e as? CatalogError).map { $0.kind == .tempFail ? "the database is busy" : "the database failed: \($0.message)" } ?? "\(e)"
        options.log(#"{"event":"error","message":\#(String(reflecting: message))}"#)
        return error(503, "unavailable", message, headers: ["Retry-After": "1"])
    }
}
