import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// `catalog+https://HOST/v1` (and `catalog+http://`): a `catalog serve` as a sync source (docs/protocol.md
/// §9), for a server node holding an edge token (`--scope edge`: every row) or a user token (that user's row).
struct ServeSourceKind: SourceKind {
    var name: String { "serve" }
    var schemes: [String] { ["catalog+https", "catalog+http"] }
    /// `catalog+http://` is for this machine only, and the hint and the remote help say so.
    var forms: [String] { ["catalog+https://", "catalog+http:// (loopback only)"] }
    var help: String {
        "a catalog serve (catalog+https://HOST/v1 with --token-file: positions pushed, then pulled; catalog+http:// only for 127.0.0.1, localhost or ::1, since it sends the token in clear text)"
    }
    /// Its token and rows to push are read before the fetch (``ServeSource/prepareDetached(since:context:)``);
    /// it pushes on each sync, long-polls for a follower, and is reached with a bearer token.
    var capabilities: SourceCapabilities { [.fetchesDetached, .pushes, .notifies, .bearerToken] }

    /// A serve's URL: it reads the `https://HOST/v1` it stands for, stored as `catalog+` and that.
    ///
    /// `catalog+https://HOST/v1` without query, fragment or user (the token comes from `--token-file`), no
    /// trailing slash kept; `catalog+http://` only to this machine, since a bearer token goes with every
    /// request.
    func locate(_ text: String) throws -> ClaimedSource {
        var base = String(text.dropFirst("catalog+".count))
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base), let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil
        else {
            throw CatalogError(
                .usage, "not a valid catalog serve URL: \(SourceLocator.redacted(text))",
                hint: "write catalog+https://HOST/v1 (no query, fragment or user; the token comes from --token-file)")
        }
        if SourceLocator.scheme(of: text) == "catalog+http", !["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased()) {
            throw CatalogError(
                .usage, "catalog+http:// sends the bearer token in clear text; it is only for this machine, not \(host)",
                hint: "use catalog+https://\(host)/… (TLS, as nginx in front of serve gives)")
        }
        return claim(base, key: "catalog+" + base)
    }

    /// The locator of the serve at `base` (`https://HOST/v1`).
    static func locator(_ base: String) -> SourceLocator { .claimed(ServeSourceKind().claim(base, key: "catalog+" + base)) }

    func makeSource(_ claim: ClaimedSource) -> any SyncSource { ServeSource(base: claim.text) }

    func makeListener(_ claim: ClaimedSource, options: SyncOptions) throws -> (any ChangeListener)? {
        try ServeListener(locator: .claimed(claim), base: claim.text, options: options)
    }

    /// A serve answers a repair (`POST /v1/repair`) to an edge token only: nil for a user token, or one
    /// whose payload cannot be read.
    func repairPeer(_ claim: ClaimedSource, context: SyncContext) throws -> (any RepairPeer)? {
        let locator = SourceLocator.claimed(claim)
        let token = try ServeSource.token(for: locator, context: context)
        guard TokenPeek.peek(token)?.isEdge == true else { return nil }
        return ServeRepairPeer(
            client: ServeHTTP(token: token, name: locator.description, options: context.options), base: claim.text,
            dryRun: context.options.dryRun)
    }
}

/// One sync with a serve: `fetch` PUSHES this database's position rows and erasure records changed since
/// the last push (POST `/v1/positions`, at most ``pushBatch`` rows and records a request, each request one
/// transaction there; a user token only its user's row and erasure), then GETs
/// the landmarks and positions after the stored cursors, page by page, into spool files; the feed merges
/// them in the engine's one SQLite transaction and moves the cursors.
///
/// The cursor: `landmarks` and `positions` (the server's opaque cursors, docs/protocol.md §3) and
/// `pushThrough` (this database's change sequence number pushed through). As for a hub, when nothing
/// changed here between the push and the merge, `pushThrough` moves past the rows the merge wrote, so they
/// are not pushed back (echo suppression).
final class ServeSource: SyncSource {
    let locator: SourceLocator
    let base: String
    var nextCursor: SourceCursor?
    var bytesFetched: Int64 = 0
    private var pushCounts: PushCounts?
    var pushed: PushCounts? { pushCounts.flatMap { $0.sent > 0 ? $0 : nil } }

    /// Rows per POST: serve's default `--max-rows`.
    static let pushBatch = 1000

    init(base: String) {
        self.base = base
        locator = ServeSourceKind.locator(base)
    }

    /// What ``prepareDetached(since:context:)`` read for a fetch on another thread: the token, every page
    /// of rows to push, and (a user token) how many other users' rows it leaves.
    private var prepared: (token: String, pages: [(page: DeviceRowsPage, highWater: Int64)], others: Int)?

    /// Pages of rows to push read ahead for a follower's worker thread at most; the rest are pushed by
    /// the syncs that follow at once (``wantsAgain``).
    static let preparedPages = 5

    /// More to do at once: rows left to push beyond the pages read ahead, or the server's database changed.
    private(set) var wantsAgain = false

    /// Under `sync --repair`: the server forgot this node, and the pull was left to the repair that follows.
    private(set) var forgotUs = false

    func prepareDetached(since stored: SourceCursor?, context: SyncContext) throws -> Bool {
        let token = try Self.token(for: locator, context: context)
        let cursor = Self.cursor(stored, for: token)
        let user = Self.pushUser(token)
        let since = cursor?["pushThrough"].flatMap { Int64($0) } ?? 0
        var after = since
        var pages: [(page: DeviceRowsPage, highWater: Int64)] = []
        while true {
            let next = try DeviceRows(context.store).devicePositions(user: user, after: after, limit: Self.pushBatch, ownErasure: true)
            pages.append(next)
            if !next.page.more {
                let others =
                    try user.map { try DeviceRows(context.store).positionsChanged(after: since, through: next.highWater, otherThan: $0) } ?? 0
                prepared = (token, pages, others)
                return true
            }
            // More than is read ahead (a node's first sync): these pages now, the rest by the next syncs
            // (the whole sync once ran on the follower's thread, a hung serve holding every
            // other source for --timeout).
            if pages.count == Self.preparedPages {
                prepared = (token, pages, 0)
                return true
            }
            after = next.page.through
        }
    }

    /// Whose rows `token` may push: a user token's `sub`; nil (every row) for an edge token or one whose
    /// payload cannot be read (the server then decides).
    ///
    /// - Parameter token: the bearer token.
    /// - Returns: the user, or nil.
    static func pushUser(_ token: String) -> String? {
        let claims = TokenPeek.peek(token)
        return claims?.isEdge == false ? claims?.user : nil
    }

    /// Who reads with `token`, as the cursor records it: `edge`, `user:HASH` (the user's key as an erasure
    /// record keys it, so the cursor keeps no id: docs/erasure.md §3), or `?` (a payload that cannot be read).
    static func reader(_ token: String) -> String {
        guard let claims = TokenPeek.peek(token) else { return "?" }
        return claims.isEdge ? "edge" : "user:" + ErasureRule.userHash(claims.user)
    }

    /// Whether the cursor's recorded reader is `token`'s: also a cursor kept as `user:SUB`, with the id in
    /// clear, as it was before readers were hashed (the next sync stores the hash).
    static func sameReader(_ held: String, _ token: String) -> Bool {
        if held == reader(token) { return true }
        guard let claims = TokenPeek.peek(token), !claims.isEdge else { return false }
        return held == "user:" + claims.user
    }

    /// The stored cursor as `token` may go on from it.
    ///
    /// One kept for another reader (a user token, then an
    /// edge one, or another user) starts the positions and the push again, since that reader saw and sent
    /// other rows (an edge token once kept a user token's cursor and never read the other
    /// users' rows). A cursor from before readers were recorded goes on as it is.
    static func cursor(_ stored: SourceCursor?, for token: String) -> SourceCursor? {
        guard var cursor = stored, let held = cursor["reader"], !sameReader(held, token) else { return stored }
        cursor["positions"] = nil
        cursor["pushThrough"] = nil
        return cursor
    }

    func fetch(since stored: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]? {
        let name = locator.description
        try context.requireUnsigned("a catalog serve's rows", source: name)
        let token = try prepared?.token ?? Self.token(for: locator, context: context)
        let cursor = Self.cursor(stored, for: token)
        let client = ServeHTTP(token: token, name: name, options: context.options)
        var pushThrough = cursor?["pushThrough"].flatMap { Int64($0) } ?? 0
        if !context.options.dryRun {
            // A user token writes only its user's row (the server answers 403 to a request holding another's):
            // push that row alone; an edge token, or one whose payload cannot be read, pushes every row.
            pushThrough = try push(client, since: pushThrough, user: Self.pushUser(token), context: context)
        }
        var next = SourceCursor()
        next["pushThrough"] = String(pushThrough)
        next["reader"] = Self.reader(token)
        var pages: [SnapshotFeed] = []
        let started = ContinuousClock.now
        var probed: (page: SnapshotFeed, answered: AnswerPage)?
        if context.options.repair, TokenPeek.peek(token)?.isEdge == true, let held = cursor?["positions"] {
            probed = try probe(client, after: held)
            if probed == nil { return forgotten(next, held: cursor, context: context) }
        }
        for route in ["landmarks", "positions"] {
            var after = cursor?[route]
            if route == "positions", let probed {
                pages.append(probed.page)
                after = probed.answered.cursor
                if !probed.answered.more {
                    next[route] = after
                    continue
                }
            }
            while true {
                // `--deadline` bounds the whole pull, however many pages the server says follow.
                guard ContinuousClock.now - started < .milliseconds(Int64(context.options.deadlineSeconds * 1000)) else {
                    throw CatalogError(
                        .unavailable, "source unavailable: the pull did not finish within --deadline, \(name)", hint: "the next run goes on from here"
                    )
                }
                let query = after.map { "?after=" + Self.percentEncoded($0) } ?? ""
                // /v1/landmarks's ETag is the cursor it answers through, quoted (docs/protocol.md §4): asked
                // with the cursor held, a server with nothing after it answers 304 and no body.
                let conditional = route == "landmarks" ? after.flatMap(Self.entityTag) : nil
                guard let page = try client.request("GET", "\(base)/\(route)\(query)", ifNoneMatch: conditional) else { break }
                bytesFetched += page.bytes
                let answered = try Self.page(page, name: "\(name)/\(route)")
                pages.append(SnapshotFeed(fd: page.fd, name: "\(name)/\(route)", owned: false, keeping: page))
                // A page that says more follow without moving the cursor would be asked for again forever.
                try answered.check(after: after, server: "\(name)/\(route)")
                after = answered.cursor
                if !answered.more { break }
            }
            next[route] = after
        }
        // Another database behind the URL (a serve restored, replaced, or another server behind a load
        // balancer): it may lack this node's rows, so every row is pushed again by the next sync (the
        // merge keeps the newer of each; docs/protocol.md §3).
        if let new = next["positions"], ServerCursor.serverForgot(held: cursor?["positions"], answered: new) {
            pushThrough = 0
            next["pushThrough"] = "0"
            wantsAgain = true
        }
        nextCursor = next
        // Nothing pushed and both cursors where they were: not modified (the pages held no rows).
        if pushCounts?.sent ?? 0 == 0, let stored, stored["reader"] == next["reader"], next["landmarks"] == stored["landmarks"],
            next["positions"] == stored["positions"]
        {
            return nil
        }
        return [ServePullFeed(source: self, pages: pages, pushThrough: pushThrough)]
    }

    /// Under `--repair` with an edge token (the one a serve answers a repair to): one row of positions
    /// after the cursor held, before anything else is read (docs/repair.md §7).
    /// - Returns: the page, the first of the pull; nil when the answer shows the server forgot this node
    ///   (then a repair takes the place of the re-read).
    /// - Throws: `CatalogError` from the request, 65 for an answer without a cursor.
    private func probe(_ client: ServeHTTP, after held: String) throws -> (page: SnapshotFeed, answered: AnswerPage)? {
        let name = locator.description
        guard let probe = try client.request("GET", "\(base)/positions?after=\(Self.percentEncoded(held))&limit=1") else {
            preconditionFailure("a GET without If-None-Match answered as not modified")
        }
        bytesFetched += probe.bytes
        let answered = try Self.page(probe, name: "\(name)/positions")
        if ServerCursor.serverForgot(held: held, answered: answered.cursor) { return nil }
        return (SnapshotFeed(fd: probe.fd, name: "\(name)/positions", owned: false, keeping: probe), answered)
    }

    /// The server forgot this node and the run repairs: nothing is pulled; the cursor keeps the server's
    /// old cursors (so a repair that fails finds the same again next time) and what was pushed.
    /// - Returns: no feeds when nothing was pushed (not modified), else none to merge.
    private func forgotten(_ next: SourceCursor, held: SourceCursor?, context: SyncContext) -> [any ChangeFeed]? {
        forgotUs = true
        context.diagnostics(
            Diagnostic(
                severity: .warning,
                message:
                    "the server no longer holds what this database last saw (restored from a backup, or replaced): repairing instead of pushing and pulling everything (docs/repair.md §7)",
                file: locator.description, kind: "forgot"))
        var kept = next
        kept["landmarks"] = held?["landmarks"]
        kept["positions"] = held?["positions"]
        nextCursor = kept
        return pushCounts?.sent ?? 0 > 0 ? [] : nil
    }

    /// POSTs every position row and erasure record changed here after `since` (only `user`'s when given),
    /// in pages.
    ///
    /// With `user`, the other users' rows changed since the last push are left out and counted in one
    /// warning (kind `not-pushed`); the cursor moves past them all the same, since this token can never
    /// write them.
    /// - Parameters:
    ///   - client: the requests, with the token.
    ///   - since: the change sequence number pushed through before.
    ///   - user: a user token's `sub`, or nil for an edge token (every row).
    ///   - context: the run's store, options and diagnostics.
    /// - Returns: the change sequence number pushed through.
    /// - Throws: `CatalogError` from a request or the store.
    private func push(_ client: ServeHTTP, since: Int64, user: String?, context: SyncContext) throws -> Int64 {
        var after = since
        var counts = PushCounts(sent: 0, written: 0, quarantined: 0)
        defer { pushCounts = counts }
        var ahead = prepared?.pages[...]
        while true {
            // Read ahead on the store's thread (a follower's worker), else read here.
            let (page, highWater) =
                try ahead?.popFirst() ?? DeviceRows(context.store).devicePositions(user: user, after: after, limit: Self.pushBatch, ownErasure: true)
            if page.count > 0 {
                try post(page, client, counts: &counts, context: context)
                after = page.through
            }
            // The pages read ahead are pushed; the rest wait for the next sync, at once.
            if page.more, let ahead, ahead.isEmpty {
                wantsAgain = true
                return after
            }
            guard page.more else {
                if counts.quarantined > 0 {
                    context.diagnostics(
                        Diagnostic(
                            severity: .warning,
                            message:
                                "the server quarantined \(counts.quarantined) of \(counts.sent) rows pushed: stamped more than its drift allowance ahead of its clock; they apply once it catches up",
                            file: locator.description, kind: "quarantined"))
                }
                if let user,
                    case let others = try prepared?.others
                        ?? DeviceRows(context.store).positionsChanged(after: since, through: highWater, otherThan: user),
                    others > 0
                {
                    context.diagnostics(
                        Diagnostic(
                            severity: .warning,
                            message:
                                "\(others) position \(others == 1 ? "row" : "rows") of other users not pushed: the token is user \(user)'s, which writes only that user's row; a server node needs an edge token (catalog token issue --scope edge)",
                            file: locator.description, kind: "not-pushed"))
                }
                return max(after, highWater)
            }
        }
    }

    /// POSTs one page: its position rows and its erasure records (docs/protocol.md §6), at most
    /// ``pushBatch`` rows and records together a request — the rows with the first records, then the rest
    /// of the records — and adds what the server answered to `counts` (an erasure counts as a row does).
    ///
    /// A server that answers without `erasureResults` does not take erasures: one warning (kind
    /// `erasures-not-taken`), and the records are not pushed to it again.
    /// - Throws: `CatalogError` from a request, or 65 for an answer without one result per row or record.
    private func post(_ page: DeviceRowsPage, _ client: ServeHTTP, counts: inout PushCounts, context: SyncContext) throws {
        var records = page.erasureObjects[...]
        var rows = page.rowCount
        var ignored = 0
        repeat {
            let chunk = records.prefix(Self.pushBatch - rows)
            records = records.dropFirst(chunk.count)
            var body = Array(#"{"positions":["#.utf8)
            if rows > 0 { body += page.rowsJSON }
            if !chunk.isEmpty {
                body += Array(#"],"erasures":["#.utf8)
                body += Array(chunk.joined(separator: Array(",\n".utf8)))
            }
            body += Array("]}".utf8)
            let answer = try client.request("POST", "\(base)/positions", body: body)
            guard let answer else { preconditionFailure("a POST without If-None-Match answered as not modified") }
            let read = try PushAnswer.read(try answer.data(), rows: rows, erasures: chunk.count, server: locator.description)
            let outcomes = read.outcomes + (read.erasureOutcomes ?? [])
            if read.erasureOutcomes == nil { ignored += chunk.count }
            counts.sent += rows + chunk.count
            counts.erasures += chunk.count
            counts.written += outcomes.filter { $0 == .applied }.count
            counts.quarantined += outcomes.filter { $0 == .quarantined }.count
            counts.expired += outcomes.filter { $0 == .expired }.count
            rows = 0
        } while !records.isEmpty
        if ignored > 0 {
            context.diagnostics(
                Diagnostic(
                    severity: .warning,
                    message:
                        "the server ignored \(ignored) erasure \(ignored == 1 ? "record" : "records") pushed (it answers no erasureResults: a catalog serve before erasures were taken); erase the users there too (DELETE /v1/users/ID with an edge token)",
                    file: locator.description, kind: "erasures-not-taken"))
        }
    }

    /// The bearer token: `--token-file`, else the saved remote's token file (docs/protocol.md §9).
    /// - Throws: 64 when there is none, 66 when the file cannot be read or is empty.
    static func token(for locator: SourceLocator, context: SyncContext) throws -> String {
        // A sync names remotes by URL: the remotes saved with this URL must agree on their token file, or
        // one remote could run with another's token (docs/protocol.md §9).
        let saved = try RemoteBook(context.store).remotes().filter { (try? SourceLocator.parse($0.url)) == locator }
        let files = Set(saved.map { $0.tokenFile ?? "" })
        if context.options.tokenFile == nil, files.count > 1 {
            throw CatalogError(
                .usage, "the remotes \(saved.map(\.name).sorted().joined(separator: ", ")) name \(locator.description) with different token files",
                hint: "give --token-file, or keep one remote for this URL (catalog remote edit NAME --token-file FILE)")
        }
        guard let path = context.options.tokenFile ?? saved.first?.tokenFile else {
            throw CatalogError(
                .usage, "\(locator.description) needs a bearer token",
                hint: "catalog sync \(locator.description) --token-file FILE, or catalog remote add NAME \(locator.description) --token-file FILE")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CatalogError(
                .noInput, "cannot read the token file \(path)", hint: "a file holding one JWT (catalog token issue, or the app's login service)")
        }
        // As ssh does for a private key, but used all the same: anyone who can read the file can use the token.
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & 0o077 != 0, OpenTokenFiles.first(path) {
            context.diagnostics(
                Diagnostic(
                    severity: .warning,
                    message:
                        "the token file \(path) is open to group or others (mode 0\(String(info.st_mode & 0o777, radix: 8))): whoever can read it can use the token; chmod 600 \(path)",
                    file: locator.description, kind: "token-file-mode"))
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw CatalogError(.noInput, "the token file \(path) is empty (it holds one JWT, on one line)") }
        guard token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw CatalogError(
                .noInput, "the token file \(path) holds more than one token, or characters no JWT has (it holds one JWT, on one line)")
        }
        return token
    }

    /// The entity tag the server sends for an answer through `cursor` (docs/protocol.md §4), or nil for a
    /// cursor that cannot go in a header.
    ///
    /// - Parameter cursor: a cursor the server handed out.
    /// - Returns: the cursor in double quotes.
    static func entityTag(_ cursor: String) -> String? {
        guard !cursor.isEmpty, cursor.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x22 }) else { return nil }
        return "\"\(cursor)\""
    }

    /// The answer's page: its `cursor` and `more` (docs/protocol.md §4), read without decoding its rows.
    /// - Throws: 65 when the answer has no cursor.
    static func page(_ body: ServeBody, name: String) throws -> AnswerPage {
        try AnswerPage.read([UInt8](try body.data()), server: name)
    }

    static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~:"))) ?? text
    }
}

/// The token files this process has warned about being open to group or others: once per run (a
/// `sync --follow` reads the file at every poll).
enum OpenTokenFiles {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var warned: Set<String> = []

    /// Whether `path` is named for the first time (and remembers it).
    ///
    /// - Parameter path: the token file's path.
    /// - Returns: true the first time only.
    static func first(_ path: String) -> Bool {
        lock.withLock { warned.insert(path).inserted }
    }
}

/// The pages a ``ServeSource`` fetched, merged in order in the engine's transaction; then the cursor's
/// `pushThrough` moves past what the merge wrote when nothing else changed here since the push.
final class ServePullFeed: ChangeFeed {
    let source: ServeSource
    let pages: [SnapshotFeed]
    let pushThrough: Int64

    init(source: ServeSource, pages: [SnapshotFeed], pushThrough: Int64) {
        self.source = source
        self.pages = pages
        self.pushThrough = pushThrough
    }

    func merge(into merger: inout RowMerger) throws {
        let localBefore = merger.firstSeq - 1
        for page in pages { try page.merge(into: &merger) }
        var next = source.nextCursor ?? SourceCursor()
        next["pushThrough"] = String(pushThrough == localBefore ? merger.nextSeq - 1 : pushThrough)
        source.nextCursor = next
    }
}
