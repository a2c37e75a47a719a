internal import CLibPQ
import Foundation
import LandmarkCatalog

/// One connection to a PostgreSQL server through libpq, every wait bounded by a client-side deadline.
///
/// The one owner of its `PGconn`: closed (`PQfinish`) in `deinit`, when opening fails, and when the
/// connection breaks or a deadline leaves it in an unknown state (later calls then throw). Not
/// thread-safe and deliberately not `Sendable`, like `Connection`: one connection belongs to one task.
///
/// Everything runs through libpq's asynchronous API ("Asynchronous Command Processing",
/// https://www.postgresql.org/docs/15/libpq-async.html, and the non-blocking `PQconnectStartParams` / `PQconnectPoll` of
/// "Database Connection Control Functions", https://www.postgresql.org/docs/15/libpq-connect.html): the socket is in
/// non-blocking mode and the connection waits with `poll(2)` against a deadline, so a hub that accepts TCP
/// and never answers, or a stopped server, fails in bounded time instead of hanging a cron job. On a
/// statement's deadline the connection asks the server to cancel (`PQcancel`, best effort) and throws;
/// the server bounds itself too, through `statement_timeout`. Statements are parameterised
/// (`PQsendQueryParams`, text format); only `executeScript` sends plain SQL.
///
/// Not bounded: resolving a host name (`getaddrinfo`, which libpq calls synchronously while starting or
/// moving to the next host). Every wait on the network — TCP, TLS, authentication — is under the deadline.
final class PGConnection {
    /// The `PGconn`, nil once closed.
    private(set) var handle: OpaquePointer?
    /// Ends every wait on the network within 100 ms of its cancel (a follower's SIGTERM), or nil.
    var cancellation: TransferCancellation?
    /// The server as `host:port/dbname user` (no password): for messages, `status` and logs.
    let target: String
    /// The parsed connection string, kept to redact messages.
    let connInfo: PGConnInfo
    /// How long a statement may take when a call gives no `timeout`.
    ///
    /// Also sent as `statement_timeout` at open. Changing it later changes only the client-side
    /// deadline (see `setStatementTimeout`).
    var commandTimeout: Duration
    /// Numbers the cursors of `forEachBatch`.
    var cursorSerial = 0

    /// Opens a connection from a libpq URI (`postgres://`, `postgresql://`) or a keyword/value string.
    ///
    /// Everything libpq honours is honoured: `PG*` environment variables, `service=` and the service file,
    /// the password file (`~/.pgpass`, `PGPASSFILE`, `passfile=`), `sslmode` and the other TLS options,
    /// several hosts. Added when the string does not set them: `connect_timeout` (from
    /// `connectTimeoutSeconds`) and `fallback_application_name=catalog` (so `application_name` reads
    /// `catalog` unless the string or `PGAPPNAME` names another). `client_encoding` is always `UTF8`:
    /// results are decoded as UTF-8. After the handshake, `statement_timeout` is set to `commandTimeout`.
    /// libpq "Connection Strings", "Parameter Key Words": https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING.
    ///
    /// - Parameters:
    ///   - conninfo: the connection string; it may hold a password, which no message ever shows.
    ///   - connectTimeoutSeconds: the deadline for the whole open (every host, TLS, authentication, setup),
    ///     in seconds, unless the string sets a positive `connect_timeout`, which then wins.
    ///   - commandTimeout: the default deadline of each statement (and `statement_timeout`).
    ///   - cancellation: ends every wait on the network within 100 ms of its cancel (a follower's SIGTERM),
    ///     the connection then closed; nil for none.
    /// - Throws: `PGError` — `.connectFailed` (with the server's SQLSTATE when it sent one: 28P01 for a
    ///   wrong password, 3D000 for a missing database; also a connect ended by `cancellation`), `.timedOut`
    ///   when the deadline passes.
    init(
        conninfo: String, connectTimeoutSeconds: Int = 10, commandTimeout: Duration = .seconds(30),
        cancellation: TransferCancellation? = nil
    ) throws {
        precondition(connectTimeoutSeconds > 0, "connectTimeoutSeconds must be positive")
        precondition(commandTimeout > .zero, "commandTimeout must be positive")
        let info = try PGConnInfo(parsing: conninfo)
        var keywords = info.options.filter { $0.keyword != "client_encoding" }
        let given = info.value("connect_timeout").flatMap { Int($0.trimmingWhitespace()) }.flatMap { $0 > 0 ? $0 : nil }
        if given == nil {
            keywords.removeAll { $0.keyword == "connect_timeout" }
            keywords.append(("connect_timeout", String(connectTimeoutSeconds)))
        }
        keywords.append(("fallback_application_name", "catalog"))
        keywords.append(("client_encoding", "UTF8"))
        let seconds = given ?? connectTimeoutSeconds
        let deadline = ContinuousClock.now + .seconds(seconds)
        let conn = try Self.open(keywords: keywords, info: info, deadline: deadline, seconds: seconds, cancellation: cancellation)
        self.cancellation = cancellation
        self.handle = conn
        self.connInfo = info
        self.target = Self.describeTarget(conn, info: info)
        self.commandTimeout = commandTimeout
        // From here on, a throw runs deinit, which closes the connection.
        PQsetErrorVerbosity(conn, PQERRORS_DEFAULT)
        guard PQsetnonblocking(conn, 1) == 0 else {
            throw PGError(kind: .connectFailed, message: "cannot make the connection non-blocking", target: target)
        }
        try setStatementTimeout(
            milliseconds: Self.milliseconds(commandTimeout),
            timeout: max(ContinuousClock.now.duration(to: deadline), .seconds(1)))
    }

    deinit { close() }

    /// Closes the connection (`PQfinish`, which sends the server a Terminate without waiting).
    ///
    /// Idempotent.
    func close() {
        if let handle {
            PQfinish(handle)
            self.handle = nil
        }
    }

    /// Whether the connection is open (not closed by `close`, a break or an expired deadline).
    var isOpen: Bool { handle != nil }

    /// Whether a transaction is open (`PQtransactionStatus` is in-transaction or failed-transaction).
    var isInTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// The server's version as an integer (`PQserverVersion`: 150018 for 15.18); 0 when closed.
    var serverVersion: Int { handle.map { Int(PQserverVersion($0)) } ?? 0 }

    /// The process id of the server backend serving this connection (`PQbackendPID`); 0 when closed.
    var backendPID: Int32 { handle.map { PQbackendPID($0) } ?? 0 }

    // MARK: Statements

    /// Runs one statement with `$1…$n` parameters (text format; `nil` is NULL) and returns its result.
    ///
    /// One statement only: the extended protocol refuses several (use `executeScript` for scripts).
    /// - Parameters:
    ///   - sql: the statement; values go in `params`, never into the text.
    ///   - params: one value per `$n`.
    ///   - timeout: the client-side deadline for the whole call (default `commandTimeout`).
    /// - Returns: the result: rows for a query, the command tag and affected rows for others.
    /// - Throws: `PGError` — `.server` with the SQLSTATE and this SQL; `.timedOut` when the deadline passes
    ///   (the statement is cancelled; the connection stays usable when the server acknowledges in time,
    ///   else it is closed); `.lostConnection`; `.client` for a NUL byte in text, an empty statement or a
    ///   `COPY … FROM STDIN` (use `copyIn`).
    @discardableResult
    func execute(sql: String, _ params: [PGValue?] = [], timeout: Duration? = nil) throws -> PGResult {
        let limit = timeout ?? commandTimeout
        let deadline = ContinuousClock.now + limit
        let conn = try liveHandle(statement: sql)
        try sendParameterised(conn, sql: sql, params: params)
        return try finish(conn, statement: sql, deadline: deadline, timeout: limit)
    }

    /// Runs a script of several statements separated by `;` without parameters (`PQsendQuery`, the simple
    /// query protocol): for migrations and fixed setup SQL only, never for text holding values.
    ///
    /// The statements run in one implicit transaction unless the script has its own `BEGIN` / `COMMIT`,
    /// and stop at the first error ("Multiple Statements in a Simple Query",
    /// https://www.postgresql.org/docs/15/protocol-flow.html#PROTOCOL-FLOW-MULTI-STATEMENT). A script of only
    /// whitespace and comments does nothing.
    /// - Throws: `PGError` as `execute` does; for a long script the error's excerpt is the failing line.
    func executeScript(sql script: String, timeout: Duration? = nil) throws {
        let limit = timeout ?? commandTimeout
        let deadline = ContinuousClock.now + limit
        let conn = try liveHandle(statement: script)
        try checkNoNUL(script, statement: script)
        guard PQsendQuery(conn, script) == 1 else { throw sendFailure(conn, statement: script) }
        _ = try finish(conn, statement: script, deadline: deadline, timeout: limit, allowEmpty: true)
    }

    /// Sets the server-side bound on every statement of this session (`statement_timeout`, in ms; 0 turns
    /// it off), through `set_config`, so it survives until the session ends (or the enclosing
    /// transaction rolls back).
    ///
    /// The server then cancels a statement running longer with SQLSTATE 57014. "Client Connection Defaults":
    /// https://www.postgresql.org/docs/15/runtime-config-client.html#GUC-STATEMENT-TIMEOUT.
    /// - Throws: `PGError` as `execute` does.
    func setStatementTimeout(milliseconds: Int, timeout: Duration? = nil) throws {
        precondition(milliseconds >= 0, "statement_timeout cannot be negative")
        try execute(
            sql: "SELECT set_config('statement_timeout', $1, false)", [.text(String(milliseconds))],
            timeout: timeout)
    }

    // MARK: Transactions and locks

    /// Runs `body` in a transaction: `BEGIN`, then `COMMIT` when `body` returns, `ROLLBACK` when it throws.
    ///
    /// A `COMMIT` the server answers with `ROLLBACK` (a statement in the transaction failed and `body`
    /// swallowed the error) throws. A `COMMIT` that times out may or may not have committed. Transactions do
    /// not nest: calling this inside one is a bug and traps. Isolation is the session's default (READ
    /// COMMITTED); run `SET TRANSACTION ISOLATION LEVEL …` first thing in `body` for another.
    /// - Throws: the first error, from `body` or from `BEGIN` / `COMMIT` (a failing `ROLLBACK` is ignored).
    func transaction<T>(_ body: () throws -> T) throws -> T {
        precondition(!isInTransaction, "PGConnection.transaction: a transaction is already open")
        try execute(sql: "BEGIN")
        do {
            let value = try body()
            let commit = try execute(sql: "COMMIT")
            guard commit.commandStatus == "COMMIT" else {
                throw PGError(
                    kind: .client, message: "COMMIT rolled the transaction back: a statement in it had failed",
                    statement: "COMMIT", target: target)
            }
            return value
        } catch {
            if isInTransaction { _ = try? execute(sql: "ROLLBACK") }  // the first error is the one to report
            throw error
        }
    }

    /// Takes the transaction-scoped advisory lock `key`, waiting while another session holds it
    /// (`pg_advisory_xact_lock`); released at the transaction's end, never explicitly.
    ///
    /// For one-writer sections across many edges. "Explicit Locking", Advisory Locks
    /// (https://www.postgresql.org/docs/15/explicit-locking.html#ADVISORY-LOCKS), and "Advisory Lock Functions"
    /// (https://www.postgresql.org/docs/15/functions-admin.html#FUNCTIONS-ADVISORY-LOCKS). Outside a transaction it would be
    /// released at once: a bug, which traps.
    /// - Parameters:
    ///   - key: the lock's key.
    ///   - timeout: how long to wait for the lock (default `commandTimeout`; `statement_timeout` also
    ///     bounds the wait).
    /// - Throws: `PGError` (`.timedOut` when the lock is not granted in time; the transaction is then
    ///   aborted, so roll it back).
    func advisoryTransactionLock(_ key: Int64, timeout: Duration? = nil) throws {
        precondition(handle == nil || isInTransaction, "an advisory transaction lock needs an open transaction")
        try execute(sql: "SELECT pg_advisory_xact_lock($1)", [.integer(key)], timeout: timeout)
    }

    /// Takes the transaction-scoped advisory lock `key` if it is free (`pg_try_advisory_xact_lock`).
    /// - Returns: true when taken (held until the transaction ends), false when another session holds it.
    /// - Throws: `PGError` as `execute` does.
    func tryAdvisoryTransactionLock(_ key: Int64) throws -> Bool {
        precondition(handle == nil || isInTransaction, "an advisory transaction lock needs an open transaction")
        return try execute(sql: "SELECT pg_try_advisory_xact_lock($1)", [.integer(key)]).bool(0, 0) == true
    }

    // MARK: Opening

    /// Starts the connection and drives `PQconnectPoll` until it is established, waiting on the socket
    /// with `poll(2)` until `deadline`.
    ///
    /// libpq's own `connect_timeout` is not enforced by this API (only by the blocking `PQconnectdb`), so
    /// the deadline is. The `PGconn` is finished on every failure. Error messages are read in verbose form
    /// so the server's SQLSTATE can be picked out of them.
    private static func open(
        keywords: [(keyword: String, value: String)], info: PGConnInfo,
        deadline: ContinuousClock.Instant, seconds: Int, cancellation: TransferCancellation?
    ) throws -> OpaquePointer {
        let started = withCStringArrays(keywords.map(\.keyword), keywords.map(\.value)) { names, values in
            PQconnectStartParams(names, values, 0)
        }
        guard let conn = started else { throw PGError(kind: .connectFailed, message: "out of memory") }
        // libpq prints NOTICEs on stderr by default; this tool keeps stderr for its own diagnostics.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
        PQsetErrorVerbosity(conn, PQERRORS_VERBOSE)
        do {
            guard PQstatus(conn) != CONNECTION_BAD else { throw connectionFailure(conn, info: info) }
            var state = PGRES_POLLING_WRITING
            while state != PGRES_POLLING_OK {
                switch state {
                case PGRES_POLLING_READING, PGRES_POLLING_WRITING:
                    let events = Int16(state == PGRES_POLLING_READING ? POLLIN : POLLOUT)
                    switch waitSocket(PQsocket(conn), events: events, until: deadline, cancellation: cancellation) {
                    case .ready: break
                    case .expired:
                        throw PGError(
                            kind: .timedOut, message: "no answer within \(seconds) s while connecting",
                            target: describeTarget(conn, info: info))
                    case .failed(let reason):
                        throw PGError(kind: .connectFailed, message: reason, target: describeTarget(conn, info: info))
                    case .cancelled:
                        throw PGError(
                            kind: .connectFailed, message: "stopped while connecting (SIGTERM)", target: describeTarget(conn, info: info))
                    }
                case PGRES_POLLING_ACTIVE: break  // unused by libpq; just poll again
                default: throw connectionFailure(conn, info: info)
                }
                state = PQconnectPoll(conn)
            }
        } catch {
            PQfinish(conn)
            throw error
        }
        return conn
    }

    /// The error for a failed connection: libpq's message, redacted, with the SQLSTATE the server sent
    /// (verbose messages read `FATAL:  28P01: password authentication failed …`) moved into `sqlState`
    /// and the `LOCATION:` lines dropped.
    static func connectionFailure(_ conn: OpaquePointer, info: PGConnInfo) -> PGError {
        let (sqlState, text) = parseVerboseMessage(String(cString: PQerrorMessage(conn)))
        var error = PGError(
            kind: .connectFailed, sqlState: sqlState,
            message: info.redact(text.isEmpty ? "connection failed" : text),
            target: describeTarget(conn, info: info))
        error.passwordMissing = PQconnectionNeedsPassword(conn) != 0
        return error
    }

    /// Splits a verbose libpq message into the first SQLSTATE it names and the message on one line,
    /// without the SQLSTATE and `LOCATION:` lines (libpq "Error Reporting Verbosity", `PQERRORS_VERBOSE`).
    static func parseVerboseMessage(_ message: String) -> (SQLState?, String) {
        var sqlState: SQLState?
        var lines: [String] = []
        for line in message.split(whereSeparator: \.isNewline) {
            var text = String(line).trimmingWhitespace()
            if text.isEmpty || text.hasPrefix("LOCATION:") { continue }
            if let match = text.firstMatch(of: #/:  (?<code>[0-9A-Z]{5}): /#) {
                if sqlState == nil { sqlState = SQLState(String(match.output.code)) }
                text.replaceSubrange(match.range, with: ":  ")
            }
            lines.append(text)
        }
        return (sqlState, joinedLines(lines))
    }

    /// `host:port/dbname user` from what libpq resolved (defaults and environment applied), redacted.
    static func describeTarget(_ conn: OpaquePointer, info: PGConnInfo) -> String {
        func text(_ value: UnsafeMutablePointer<CChar>?) -> String? {
            guard let value else { return nil }
            let s = String(cString: value)
            return s.isEmpty ? nil : s
        }
        let host = text(PQhost(conn)) ?? "localhost"
        let port = text(PQport(conn)) ?? "5432"
        return info.redact("\(host):\(port)/\(text(PQdb(conn)) ?? "?") \(text(PQuser(conn)) ?? "?")")
    }

    /// Calls `body` with two NULL-terminated C string arrays built from `names` and `values`.
    private static func withCStringArrays<R>(
        _ names: [String], _ values: [String],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>, UnsafePointer<UnsafePointer<CChar>?>) -> R
    ) -> R {
        let copies = (names + values).map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let pointers = copies.map { $0.map { UnsafePointer($0) } }
        let keys = Array(pointers[..<names.count]) + [nil]
        let vals = Array(pointers[names.count...]) + [nil]
        return keys.withUnsafeBufferPointer { k in
            vals.withUnsafeBufferPointer { v in
                // Both buffers hold at least the terminating nil, so their base addresses exist.
                body(k.baseAddress.unsafelyUnwrapped, v.baseAddress.unsafelyUnwrapped)
            }
        }
    }
}

@available(*, unavailable)
extension PGConnection: Sendable {}
