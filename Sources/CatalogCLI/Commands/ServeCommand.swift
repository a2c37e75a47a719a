import Dispatch
import Foundation
import LandmarkCatalog
import LandmarkCatalogServer

#if canImport(Glibc)
    import Glibc
#endif

extension CatalogCLI {
    enum ServeOptionsTable {
        static let listen = Option<String>(
            "--listen", "ADDR:PORT", "Listen on this IPv4 address and port (127.0.0.1:8080; behind nginx for TLS, docs/serve.md).",
            parse: Values.nonEmpty
        ).mandatory
        static let authKey = Option<String>(
            "--auth-key", "FILE",
            "Verify bearer tokens with this PEM public key (Ed25519, P-256 or RSA; its type fixes the algorithm); repeatable (key rotation).",
            repeatable: true, completion: .file, parse: Values.nonEmpty
        ).mandatory
        static let publicLandmarks = Flag("--public-landmarks", "Answer GET /v1/landmarks without a token.")
        static let maxDrift = Option<Double>(
            "--max-drift", "DURATION", "Quarantine rows stamped further ahead than this (default 5m, at most 365d).",
            parse: Values.duration(zeroAllowed: true, atMost: 31_536_000))
        static let metricsListen = Option<String>(
            "--metrics-listen", "ADDR:PORT", "Serve Prometheus metrics at GET /metrics on this address (keep it private).",
            parse: Values.nonEmpty)
        static let adminListen = Option<String>(
            "--admin-listen", "ADDR:PORT",
            "Serve the operator's page (charts, one user's row) on this address: loopback only, reach it through an SSH tunnel (docs/serve.md).",
            parse: Values.nonEmpty)
        static let adminAnyAddress = Flag(
            "--admin-any-address", "Let --admin-listen take an address other than loopback (the page has no login: keep it private).")
        static let maxConnections = Option<Int>(
            "--max-connections", "N", "Accept no connection beyond N open ones: more wait unanswered until one closes (default 12000).",
            parse: Values.integer(1...1_000_000))
        static let headerTimeout = Option<Double>(
            "--header-timeout", "DURATION", "Close a connection whose request headers are not complete within this (default 10s).",
            parse: Values.duration(atMost: 3600))
        static let bodyTimeout = Option<Double>(
            "--body-timeout", "DURATION", "Close a connection whose request body is not complete within this (default 30s).",
            parse: Values.duration(atMost: 3600))
        static let maxBody = Option<Int>(
            "--max-body", "BYTES", "Refuse a request body over BYTES with 413 (default 1048576).", parse: Values.integer(1024...(64 << 20)))
        static let maxRows = Option<Int>(
            "--max-rows", "N", "Refuse a POST of more than N rows with 413 (default 1000).", parse: Values.integer(1...100_000))
        static let hub = Option<String>(
            "--hub", "URL",
            "Keep this database in step with a PostgreSQL hub (a postgresql:// URL or a saved remote), so several serve processes serve one fleet (docs/serve.md §8).",
            parse: Values.nonEmpty)
        static let maxConnectionsPerUser = Option<Int>(
            "--max-connections-per-user", "N",
            "Answer 429 to a user's request beyond N open ones, long-polls included (default 64; edge tokens are not counted).",
            parse: Values.integer(1...1_000_000))
        static let postRate = Option<Int>(
            "--post-rate", "N", "Refill each user's POST allowance at N a second; an empty one is 429 (default 5).",
            parse: Values.integer(1...1_000_000))
        static let postBurst = Option<Int>(
            "--post-burst", "N", "Let each user make N POSTs at once before --post-rate applies (default 20).",
            parse: Values.integer(1...1_000_000))
        static let threads = Option<Int>("--threads", "N", "HTTP worker threads (default 2).", parse: Values.integer(1...64))
    }

    enum TokenOptionsTable {
        static let key = Option<String>(
            "--key", "PEM", "Sign with this PEM private key (Ed25519, P-256 or RSA: EdDSA, ES256 or RS256).", completion: .file,
            parse: Values.nonEmpty
        ).mandatory
        static let user = Options.user.with(help: "The token's user (sub).").mandatory
        static let ttl = Option<Double>(
            "--ttl", "DURATION", "Valid for this long (default 1h; 90s, 10m, 1h, 30d).", parse: Values.duration(atMost: 31_536_000))
        static let scope = Option<String>(
            "--scope", "WORDS", "The scope claim: 'edge' lets the token read and write every row (a server node).",
            parse: Values.nonEmpty)
        static let id = Option<String>(
            "--id", "JTI", "The jti claim: a token id 'token revoke --id JTI' can revoke alone.", parse: Values.nonEmpty)
    }

    static var serveCommand: CommandSpec {
        CommandSpec(
            name: "serve",
            abstract: "Serve this database to devices over HTTP: each token reads and writes only its user's row (docs/protocol.md).",
            discussion: """
                Routes: GET /v1/landmarks, GET and POST /v1/positions (partial replication: a user token sees its own row,
                an edge token every row), &wait=SECONDS long-polls, GET /v1/healthz (alive) and /v1/readyz (ready: the
                database writable, the hub reached, not draining). Every route but those two needs Authorization: Bearer
                JWT verified with --auth-key; tokens revoked with 'catalog token revoke' are refused within 5 s. One JSON access-log line per request goes to stderr.
                SIGTERM or SIGINT drains (long-polls answered, writes finished, and with --hub pushed) and exits 0. TLS
                comes from nginx in front: contrib/nginx/serve.conf. With --hub, each serve keeps its own database, follows
                the hub as sync --follow does (pushing each POST at once, pulling on the hub's NOTIFY), and holds this
                database's sync lock while it runs.
                """,
            options: [
                ServeOptionsTable.listen.spec, ServeOptionsTable.authKey.spec, ServeOptionsTable.publicLandmarks.spec,
                ServeOptionsTable.maxDrift.spec, ServeOptionsTable.metricsListen.spec, ServeOptionsTable.adminListen.spec,
                ServeOptionsTable.adminAnyAddress.spec, ServeOptionsTable.maxConnections.spec,
                ServeOptionsTable.headerTimeout.spec, ServeOptionsTable.bodyTimeout.spec, ServeOptionsTable.maxBody.spec,
                ServeOptionsTable.maxRows.spec, ServeOptionsTable.maxConnectionsPerUser.spec, ServeOptionsTable.postRate.spec,
                ServeOptionsTable.postBurst.spec, ServeOptionsTable.threads.spec, ServeOptionsTable.hub.spec,
            ],
            run: runServe)
    }

    static var tokenCommand: CommandSpec {
        CommandSpec(
            name: "token",
            abstract: "Issue bearer tokens for catalog serve (for tests and small deployments) and revoke them.",
            subcommands: [
                CommandSpec(
                    name: "issue",
                    abstract: "Print a JWT for --user signed with --key (its algorithm is the key's).",
                    discussion: """
                        The claims are sub, iat, nbf, exp (now plus --ttl) and, with --scope and --id, scope and jti. An app's own login
                        service normally issues tokens with its JWT library; docs/serve.md shows how.
                        """,
                    options: [
                        TokenOptionsTable.key.spec, TokenOptionsTable.user.spec, TokenOptionsTable.ttl.spec, TokenOptionsTable.scope.spec,
                        TokenOptionsTable.id.spec,
                    ],
                    run: runTokenIssue)
            ] + tokenRevocationCommands)
    }

    static func runTokenIssue(_ i: Invocation) throws -> Int32 {
        let key = try TokenKey.loadPrivate(path: i[TokenOptionsTable.key])
        let user = try UserID.normalize(i[TokenOptionsTable.user])
        let ttl = Int64((i[TokenOptionsTable.ttl] ?? 3600).rounded(.up))
        let now = i.context.wallClock.nowMilliseconds() / 1000
        i.stdout.line(
            try TokenIssuer.issue(key: key, user: user, ttl: ttl, scope: i[TokenOptionsTable.scope], now: now, id: i[TokenOptionsTable.id]))
        return 0
    }

    /// `HOST:PORT` split, or a usage error naming `option`.
    static func hostPort(_ text: String, option: String, path: [String]) throws -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw UsageError(message: "\(option) needs ADDR:PORT (127.0.0.1:8080), got '\(text)'", path: path)
        }
        return (String(text[..<colon]), port)
    }

    static func runServe(_ i: Invocation) throws -> Int32 {
        var options = try serveOptions(i)
        let marker = ServeMarker(databasePath: i.databasePath)
        let clock = i.context.wallClock
        options.heartbeat = { notReady in marker.beat(now: clock.nowMilliseconds(), notReady: notReady) }
        if let ms = i.context.testHooks.serveProbeMilliseconds { options.probeMilliseconds = ms }
        if let ms = i.context.testHooks.serveCollectionMilliseconds { options.collectionMilliseconds = ms }
        // Every connection is a descriptor, and so is each reader's database: below the cap, say so once.
        let wanted = options.limits.connections + 128
        let files = raiseOpenFileLimit(wanted: wanted)
        if files < wanted {
            options.log(
                #"{"event":"warning","message":"open files are limited to \#(files) (ulimit -n): fewer than --max-connections \#(options.limits.connections) connections can be open; raise the hard limit (LimitNOFILE=) or lower --max-connections"}"#
            )
        }
        let server = try ServeServer(options: options)
        // A real handler, not a Dispatch signal source: libdispatch's signalfd sees a signal only while every
        // thread blocks it, and with SIG_IGN set a thread that does not (libmicrohttpd's, the runtime's)
        // drops it; a SIGTERM under load was lost that way and serve was SIGKILLed. sem_post is
        // async-signal-safe (POSIX signal-safety(7)).
        sem_init(serveStopSemaphore, 0, 0)
        for number in [SIGTERM, SIGINT] { signal(number) { _ in sem_post(serveStopSemaphore) } }
        // A process started by one that blocks them (a Dispatch signal source does) inherits the mask: unblock
        // them here, before the server's threads start and inherit it.
        var signals = sigset_t()
        sigemptyset(&signals)
        for number in [SIGTERM, SIGINT] { sigaddset(&signals, number) }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        defer { for number in [SIGTERM, SIGINT] { signal(number, SIG_DFL) } }
        try server.start()
        if let other = marker.write(listen: "\(options.host):\(server.port)", now: i.context.wallClock.nowMilliseconds()) {
            options.log(#"{"event":"warning","message":"another serve (pid \#(other)) serves this database; status shows that one"}"#)
        }
        defer { marker.remove() }
        options.log(
            #"{"event":"listening","listen":"\#(options.host):\#(server.port)"\#(options.metricsHost.map { #","metrics":"\#($0):\#(server.metricsPort)""# } ?? "")\#(options.adminHost.map { #","admin":"\#($0):\#(server.adminPort)""# } ?? "")}"#
        )
        while sem_wait(serveStopSemaphore) != 0 && errno == EINTR {}
        options.log(#"{"event":"draining"}"#)
        server.drain()
        options.log(#"{"event":"stopped"}"#)
        return 0
    }

    /// serve's options from the command line (and the test hooks); refuses a database that is not there
    /// (unless `--hub` fills it) and addresses that are not `HOST:PORT`.
    static func serveOptions(_ i: Invocation) throws -> ServeOptions {
        let keys = try i.parsed.all(ServeOptionsTable.authKey).map { try TokenKey.loadPublic(path: $0) }
        // A mistyped --db would otherwise be created and served empty: every device would see no landmarks.
        // With --hub the hub fills a new database before the port is bound (docs/serve.md §8).
        guard i.databaseExists || i[ServeOptionsTable.hub] != nil else {
            throw CatalogError(
                .noInput, "no catalog database, \(i.databasePath)",
                hint: "check --db / CATALOG_DB; to serve a new catalog, fill it first: catalog --db \(i.databasePath) import landmarkData.json")
        }
        var options = ServeOptions(databasePath: i.databasePath, keys: keys)
        (options.host, options.port) = try hostPort(i[ServeOptionsTable.listen], option: "--listen", path: i.parsed.path)
        if let m = i[ServeOptionsTable.metricsListen] {
            let (host, port) = try hostPort(m, option: "--metrics-listen", path: i.parsed.path)
            options.metricsHost = host
            options.metricsPort = port
        }
        if let (host, port) = try adminAddress(i) {
            options.adminHost = host
            options.adminPort = port
        }
        options.publicLandmarks = i[ServeOptionsTable.publicLandmarks]
        if let d = i[ServeOptionsTable.maxDrift] { options.maxDriftMilliseconds = Int64(d * 1000) }
        if let n = i[ServeOptionsTable.maxConnections] { options.limits.connections = n }
        if let n = i[ServeOptionsTable.threads] { options.limits.threads = n }
        if let d = i[ServeOptionsTable.headerTimeout] { options.limits.headerSeconds = d }
        if let d = i[ServeOptionsTable.bodyTimeout] { options.limits.bodySeconds = d }
        if let n = i[ServeOptionsTable.maxBody] { options.limits.bodyBytes = n }
        if let n = i[ServeOptionsTable.maxRows] { options.maxRows = n }
        if let n = i[ServeOptionsTable.maxConnectionsPerUser] { options.maxRequestsPerUser = n }
        if let n = i[ServeOptionsTable.postRate] { options.postRate = Double(n) }
        if let n = i[ServeOptionsTable.postBurst] { options.postBurst = n }
        options.hub = i[ServeOptionsTable.hub]
        options.afterPostCommit = i.context.testHooks.serveAfterPostCommit
        options.hubPushStart = i.context.testHooks.serveHubPushStart
        return options
    }

    /// `--admin-listen`'s address, or nil; a usage error for an address other than loopback without
    /// `--admin-any-address`, or for `--admin-any-address` alone.
    static func adminAddress(_ i: Invocation) throws -> (String, Int)? {
        if let a = i[ServeOptionsTable.adminListen] {
            let (host, port) = try hostPort(a, option: "--admin-listen", path: i.parsed.path)
            // The page shows users' rows and devices and has no login: loopback unless asked otherwise.
            guard host.hasPrefix("127.") || i[ServeOptionsTable.adminAnyAddress] else {
                throw UsageError(
                    message: "--admin-listen takes a loopback address (127.0.0.1:PORT), got '\(a)': the page has no login; "
                        + "reach it through an SSH tunnel, or add --admin-any-address",
                    path: i.parsed.path)
            }
            return (host, port)
        }
        if i[ServeOptionsTable.adminAnyAddress] {
            throw UsageError(message: "--admin-any-address needs --admin-listen", path: i.parsed.path)
        }
        return nil
    }
}

/// Posted by serve's SIGTERM and SIGINT handler; waited on by `ServeCommand.run`.
nonisolated(unsafe) private let serveStopSemaphore: UnsafeMutablePointer<sem_t> = .allocate(capacity: 1)

/// `<real path of the database>.serve`: who serves this database (pid, host, since, address), for `status`,
/// and serve's heartbeat (when it last checked itself, and whether it was ready), for `status --check`
/// (docs/operations.md §3); removed when serve exits (a killed serve leaves it, and `status` says its pid
/// is gone).
final class ServeMarker: @unchecked Sendable {
    // Safe: `mine` is touched under `lock`.
    let path: String
    private let lock = NSLock()
    /// This serve's address and start, once it listens: the heartbeat writes the marker with them when no
    /// other live serve holds it (the first of two stopped; a killed one's pid gone).
    private var mine: (listen: String, since: String)?

    init(databasePath: String) {
        path = CatalogFiles.besideDatabase(databasePath, suffix: ".serve")
    }

    /// Writes the marker, unless another live serve's is there (two serves on one database: `status`
    /// keeps showing the first).
    ///
    /// - Returns: the pid of that other serve, or nil when written.
    @discardableResult
    func write(listen: String, now: Int64) -> Int32? {
        let since = Timestamp.format(milliseconds: now)
        lock.withLock { mine = (listen, since) }
        if let other = read(), other.alive, other.pid != getpid() { return other.pid }
        let text = "\(getpid())\n\(ProcessInfo.processInfo.hostName)\n\(since)\n\(listen)\n\(since)\nready\n"
        try? text.write(toFile: path, atomically: true, encoding: .utf8)
        return nil
    }

    /// The heartbeat: records that this serve checked itself at `now` and why it is not ready (nil: it is),
    /// when the marker is this process's.
    func beat(now: Int64, notReady: String?) {
        guard let mine = lock.withLock({ mine }) else { return }
        // Another live serve's marker stays; one of no live serve (the first of two stopped, or was killed
        // and its pid is gone) is taken over, so `status --check` sees this one.
        if let marker = read(), marker.pid != getpid(), marker.alive { return }
        let state = notReady.map { "not ready: " + $0.replacingOccurrences(of: "\n", with: " ") } ?? "ready"
        let text =
            "\(getpid())\n\(ProcessInfo.processInfo.hostName)\n\(mine.since)\n\(mine.listen)\n\(Timestamp.format(milliseconds: now))\n\(state)\n"
        try? text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Removes the marker if it is still this process's: a second serve on the same database (which
    /// overwrote it) must not take away the first one's line in `status` when it exits.
    func remove() {
        guard let marker = read(), marker.pid == getpid() || !marker.alive else { return }
        unlink(path)
    }

    /// (pid, host, since, listen, alive, the last heartbeat, and its state: `ready` or `not ready: …`) when a
    /// marker is there (an older serve's has no heartbeat).
    func read() -> (pid: Int32, host: String, since: String, listen: String, alive: Bool, checked: String?, state: String?)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n").map(String.init)
        guard lines.count >= 4, let pid = Int32(lines[0]) else { return nil }
        let alive = lines[1] != ProcessInfo.processInfo.hostName || kill(pid, 0) == 0 || errno == EPERM
        return (pid, lines[1], lines[2], lines[3], alive, lines.count >= 6 ? lines[4] : nil, lines.count >= 6 ? lines[5] : nil)
    }
}
