import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

#if canImport(Glibc)
    import Glibc
#endif

/// The libpq layer without a server: COPY encoding, redaction, error excerpts and the exit-status mapping.
@Suite("PostgreSQL layer: encoding and errors")
struct PostgresEncodingTests {
    @Test("COPY text format escapes backslash, tab, newline and carriage return, and writes NULL as \\N")
    func copyText() throws {
        let row: [PGValue?] = [
            "a\tb", nil, "\\N", "x\ny\rz", "back\\", "🙂 é", "", .integer(-5), .bytea([0xDE, 0xAD]),
            .boolean(false), .real(-.infinity),
        ]
        #expect(
            try PGCopyText.encodeRow(row)
                == "a\\tb\t\\N\t\\\\N\tx\\ny\\rz\tback\\\\\t🙂 é\t\t-5\t\\\\xdead\tf\t-Infinity\n")
        #expect(try PGCopyText.encodeRow(["\\."]) == "\\\\.\n")
        #expect(throws: PGError.self) { try PGCopyText.encodeRow(["nul\u{0}byte"]) }
    }

    @Test("the passwords of a connection string are found in every spelling and masked")
    func redaction() throws {
        let info = try PGConnInfo(parsing: "postgresql://ann:p%40ss%3Aword@db.example:6432/hub?sslmode=require&password=other")
        #expect(info.value("user") == "ann")
        #expect(info.value("sslmode") == "require")
        let text = "p@ss:word p%40ss%3Aword other"
        #expect(info.redact(text) == "******** ******** ********")
        let keywords = try PGConnInfo(parsing: "host=h password='se cret' dbname=d")
        #expect(keywords.value("password") == "se cret")
        #expect(keywords.redact("x se cret y") == "x ******** y")
    }

    @Test("a connection string libpq cannot parse is refused without quoting any part of it")
    func unparsable() {
        for text in ["host=h password=ok secret-word", "postgresql://u:secret-word@h/d?nonsense", "host='secret-word"] {
            let error = #expect(throws: PGError.self) { try PGConnInfo(parsing: text) }
            #expect(error?.kind == .invalidConnectionString)  // a mistake to fix (64), not a hub to retry
            #expect(error.map { !"\($0)".contains("secret-word") } == true, "\(String(describing: error))")
        }
    }

    @Test("a verbose connection message yields its SQLSTATE and loses the LOCATION line")
    func verboseMessage() {
        let message = """
            connection to server at "127.0.0.1", port 5432 failed: FATAL:  28P01: password authentication failed for user "ann"
            LOCATION:  auth_failed, auth.c:326

            """
        let (state, text) = PGConnection.parseVerboseMessage(message)
        #expect(state == .invalidPassword)
        #expect(text == #"connection to server at "127.0.0.1", port 5432 failed: FATAL:  password authentication failed for user "ann""#)
    }

    /// Regression (a user test): "Connection refused Is the server running…" read as one sentence.
    @Test("libpq's lines are joined with '; ' where a line ends without punctuation")
    func joinedLines() {
        let message = """
            connection to server at "127.0.0.1", port 1 failed: Connection refused
            \tIs the server running on that host and accepting TCP/IP connections?

            """
        #expect(
            PGConnection.oneLine(message)
                == #"connection to server at "127.0.0.1", port 1 failed: Connection refused; Is the server running on that host and accepting TCP/IP connections?"#
        )
    }

    @Test("the statement in a message is one line of at most 160 characters; a long script shows the failing line")
    func excerpts() {
        #expect(PGError.excerpt(of: "SELECT 1\n  FROM t\n WHERE x = $1", position: nil) == "SELECT 1 FROM t WHERE x = $1")
        let long = "SELECT " + String(repeating: "a, ", count: 100) + "b"
        #expect(PGError.excerpt(of: long, position: nil)?.count == 161)
        let script = "CREATE TABLE a (x int);\n-- " + String(repeating: "padding ", count: 30) + "\nINSERT INTO missing VALUES (1);\n"
        let position = script.unicodeScalars.count - "missing VALUES (1);\n".unicodeScalars.count + 1
        #expect(PGError.excerpt(of: script, position: position) == "line 3: INSERT INTO missing VALUES (1);")
    }

    static let mappings: [(PGError.Kind, String?, Int32)] = [
        (.server, "08006", 69), (.server, "57P01", 69), (.server, "57P02", 69), (.server, "57P03", 69),
        (.server, "57014", 69), (.server, "42P01", 70), (.server, "23505", 70), (.server, nil, 70),
        (.connectFailed, "28P01", 69), (.connectFailed, "28000", 69), (.connectFailed, "3D000", 69),
        (.connectFailed, nil, 69), (.lostConnection, "57P01", 69), (.lostConnection, nil, 69),
        (.timedOut, nil, 69), (.client, nil, 70),
    ]

    @Test("every kind of PostgreSQL failure maps to one exit status", arguments: mappings)
    func exitStatus(kind: PGError.Kind, sqlState: String?, status: Int32) {
        let error = PGError(kind: kind, sqlState: sqlState.map(SQLState.init(rawValue:)), message: "m", target: "h:5432/d u")
        let mapped = CatalogError(error)
        #expect(mapped.exitStatus == status)
        #expect(mapped.message.hasSuffix(", h:5432/d u"))
        #expect((mapped.hint?.contains(".pgpass") == true) == (sqlState?.hasPrefix("28") == true))
    }
}

/// The libpq layer against a real, throwaway server (`PostgresServer`).
@Suite("PostgreSQL layer", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries (scripts/setup installs them)"))
struct PostgresLayerTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.running() }

    @Test("connects by URI and by keyword string, naming itself catalog; the target names no password")
    func connect() throws {
        let name = try server.createDatabaseName()
        for conninfo in [server.uri(database: name), server.keywords(database: name)] {
            let connection = try PGConnection(conninfo: conninfo, commandTimeout: .seconds(20))
            #expect(try connection.execute(sql: "SELECT current_database()").text(0, 0) == name)
            #expect(try connection.execute(sql: "SHOW application_name").text(0, 0) == "catalog")
            #expect(try connection.execute(sql: "SHOW statement_timeout").text(0, 0) == "20s")
            #expect(try connection.execute(sql: "SHOW client_encoding").text(0, 0) == "UTF8")
            #expect(connection.target == "127.0.0.1:\(server.port)/\(name) postgres")
            #expect(connection.serverVersion >= 100_000)
        }
        let named = try PGConnection(conninfo: server.keywords(database: name) + " application_name=other")
        #expect(try named.execute(sql: "SHOW application_name").text(0, 0) == "other")
    }

    @Test("parameters carry NULLs, unicode, empty strings and typed values; results read back exactly")
    func parameters() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        let unicode = "héllo wörld 🌍 日本語 e\u{301} \u{7F}"
        let params: [PGValue?] = [
            .text(unicode), nil, .integer(.min), .real(0.1), true, .bytea([0, 1, 255]), "",
            "tab\tnew\nline\\back'quote\"", .real(.infinity),
        ]
        let result = try connection.execute(
            sql: "SELECT $1::text AS u, $2::text AS n, $3 AS i, $4 AS r, $5 AS b, $6 AS y, $7::text AS e, $8::text AS s, $9 AS inf",
            params)
        #expect(result.rowCount == 1)
        #expect(result.columnNames == ["u", "n", "i", "r", "b", "y", "e", "s", "inf"])
        #expect(result.columnIndex("inf") == 8)
        #expect(result.text(0, 0) == unicode)
        #expect(result.bytes(0, 0).map(Array.init) == Array(unicode.utf8))
        #expect(result.isNull(0, 1) && result.text(0, 1) == nil && result.bytes(0, 1) == nil)
        #expect(try result.int64(0, 2) == .min)
        #expect(result.text(0, 3) == "0.1")
        #expect(try result.bool(0, 4) == true)
        #expect(result.text(0, 5) == "\\x0001ff")
        #expect(!result.isNull(0, 6) && result.text(0, 6) == "")
        #expect(result.text(0, 7) == "tab\tnew\nline\\back'quote\"")
        #expect(result.text(0, 8) == "Infinity")
        #expect(throws: PGError.self) { try result.int64(0, 0) }

        let nul = #expect(throws: PGError.self) { try connection.execute(sql: "SELECT $1::text", ["a\u{0}b"]) }
        #expect(nul?.kind == .client)
        #expect(try connection.execute(sql: "SELECT 1").text(0, 0) == "1")
        let insert = try connection.execute(sql: "CREATE TABLE t AS SELECT generate_series(1, $1) AS v", [.integer(3)])
        #expect(insert.affectedRows == 3)
    }

    @Test("a server error carries SQLSTATE 42P01 and the statement, never the parameter values; it maps to 70")
    func serverError() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        let secret = "param-value-never-printed"
        let sql = "SELECT *\n  FROM no_such_table WHERE name = $1"
        let error = try #require(throws: PGError.self) { try connection.execute(sql: sql, [.text(secret)]) }
        #expect(error.kind == .server)
        #expect(error.sqlState == .undefinedTable)
        #expect(error.statement == sql)
        #expect(error.position != nil)
        #expect("\(error)".hasPrefix(#"PostgreSQL error 42P01: relation "no_such_table" does not exist"#))
        #expect("\(error)".contains("while executing `SELECT * FROM no_such_table WHERE name = $1`"))
        #expect(!"\(error)".contains(secret))
        #expect(CatalogError(error).exitStatus == 70)
        #expect(try connection.execute(sql: "SELECT 2").text(0, 0) == "2")
    }

    @Test("a script runs statement after statement in one implicit transaction; an error names its line")
    func script() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        try connection.executeScript(sql: "CREATE TABLE a (x int); INSERT INTO a VALUES (1), (2); -- done\n")
        #expect(try connection.execute(sql: "SELECT count(*) FROM a").int64(0, 0) == 2)
        try connection.executeScript(sql: "-- nothing but a comment\n")
        let script = "CREATE TABLE b (x int);\n-- " + String(repeating: "padding ", count: 30) + "\nINSERT INTO missing VALUES (1);\n"
        let error = try #require(throws: PGError.self) { try connection.executeScript(sql: script) }
        #expect(error.sqlState == .undefinedTable)
        #expect("\(error)".contains("`line 3: INSERT INTO missing VALUES (1);`"), "\(error)")
        #expect(try connection.execute(sql: "SELECT to_regclass('b') IS NULL").bool(0, 0) == true)
    }

    @Test("a wrong password fails with 28P01, maps to 69 with a .pgpass hint, and no message holds the password")
    func wrongPassword() throws {
        let wrong = "Wrong-Guess-41d8"
        let uri = server.uri(database: "postgres", user: PostgresServer.passwordRole, password: wrong)
        let error = try #require(throws: PGError.self) { try PGConnection(conninfo: uri) }
        #expect(error.kind == .connectFailed)
        #expect(error.sqlState == .invalidPassword)
        let mapped = CatalogError(error)
        #expect(mapped.exitStatus == 69)
        #expect(mapped.hint?.contains(".pgpass") == true)
        for text in ["\(error)", mapped.message, mapped.hint ?? "", error.target ?? ""] {
            #expect(!text.contains(wrong) && !text.contains(PostgresServer.password), "\(text)")
        }
        #expect(error.target == "127.0.0.1:\(server.port)/postgres \(PostgresServer.passwordRole)")

        let right = try PGConnection(
            conninfo: server.uri(
                database: "postgres", user: PostgresServer.passwordRole,
                password: PostgresServer.password))
        #expect(try right.execute(sql: "SELECT current_user").text(0, 0) == PostgresServer.passwordRole)
        #expect(!right.target.contains(PostgresServer.password))
        let failed = try #require(throws: PGError.self) { try right.execute(sql: "SELECT * FROM nowhere") }
        #expect(!"\(failed)".contains(PostgresServer.password) && !CatalogError(failed).message.contains(PostgresServer.password))
    }

    @Test("a password from a password file (passfile=, what PGPASSFILE sets) logs in; none is ever shown")
    func passwordFile() throws {
        let directory = Support.temporaryDirectory()
        let good = directory.appending(path: "pgpass").path
        let bad = directory.appending(path: "pgpass-bad").path
        let empty = directory.appending(path: "pgpass-empty").path
        try "127.0.0.1:\(server.port):*:\(PostgresServer.passwordRole):\(PostgresServer.password)\n"
            .write(toFile: good, atomically: true, encoding: .utf8)
        try "127.0.0.1:\(server.port):*:\(PostgresServer.passwordRole):Stale-Pass-99\n".write(toFile: bad, atomically: true, encoding: .utf8)
        try "".write(toFile: empty, atomically: true, encoding: .utf8)
        for file in [good, bad, empty] { chmod(file, 0o600) }
        let base = server.keywords(database: "postgres", user: PostgresServer.passwordRole)

        let connection = try PGConnection(conninfo: base + " passfile=\(good)")
        #expect(try connection.execute(sql: "SELECT current_user").text(0, 0) == PostgresServer.passwordRole)
        let failed = try #require(throws: PGError.self) { try connection.execute(sql: "SELECT * FROM nowhere") }
        #expect(!"\(failed)".contains(PostgresServer.password))

        let stale = try #require(throws: PGError.self) { try PGConnection(conninfo: base + " passfile=\(bad)") }
        #expect(stale.sqlState == .invalidPassword)
        #expect(!"\(stale)".contains("Stale-Pass-99") && !"\(stale)".contains(PostgresServer.password))
        #expect(CatalogError(stale).exitStatus == 69)

        let missing = try #require(throws: PGError.self) { try PGConnection(conninfo: base + " passfile=\(empty)") }
        #expect(missing.passwordMissing)
        #expect(CatalogError(missing).exitStatus == 69)
        #expect(CatalogError(missing).hint?.contains(".pgpass") == true)
    }

    @Test("a hub that accepts TCP and never answers fails at the connect deadline, mapped to 69")
    func hungHub() throws {
        let listener = try TCPListener()
        let started = ContinuousClock.now
        let error = try #require(throws: PGError.self) {
            try PGConnection(conninfo: "postgresql://catalog@127.0.0.1:\(listener.port)/hub", connectTimeoutSeconds: 2)
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(1900) && elapsed < .seconds(5), "\(elapsed)")
        #expect(error.kind == .timedOut)
        #expect(CatalogError(error).exitStatus == 69)
        #expect("\(error)".contains("while connecting"))
    }

    @Test("a port nobody listens on fails at once, mapped to 69")
    func refused() throws {
        let port = try PostgresServer.freePort()
        let started = ContinuousClock.now
        let error = try #require(throws: PGError.self) {
            try PGConnection(conninfo: "host=127.0.0.1 port=\(port) user=x dbname=y password=Never-Shown-12")
        }
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(error.kind == .connectFailed)
        #expect(!"\(error)".contains("Never-Shown-12"))
        #expect(CatalogError(error).exitStatus == 69)
    }

    @Test("a statement past its deadline is cancelled in bounded time and the connection stays usable")
    func queryDeadline() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        let started = ContinuousClock.now
        let error = try #require(throws: PGError.self) {
            try connection.execute(sql: "SELECT pg_sleep(30)", timeout: .seconds(1))
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(error.kind == .timedOut)
        #expect(error.statement == "SELECT pg_sleep(30)")
        #expect(CatalogError(error).exitStatus == 69)
        #expect(connection.isOpen)
        #expect(try connection.execute(sql: "SELECT 3").text(0, 0) == "3")
    }

    @Test("the server's statement_timeout bounds a statement too (57014, mapped to 69)")
    func statementTimeout() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        try connection.setStatementTimeout(milliseconds: 300)
        let error = try #require(throws: PGError.self) { try connection.execute(sql: "SELECT pg_sleep(5)") }
        #expect(error.kind == .server)
        #expect(error.sqlState == .queryCanceled)
        #expect(CatalogError(error).exitStatus == 69)
        try connection.setStatementTimeout(milliseconds: 0)
        #expect(try connection.execute(sql: "SELECT 4").text(0, 0) == "4")
    }

    @Test("a stopped server backend (SIGSTOP) fails the statement in bounded time and the connection is closed")
    func stoppedBackend() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        let pid = connection.backendPID
        try #require(pid > 0 && kill(pid, SIGSTOP) == 0)
        defer { kill(pid, SIGCONT) }
        let started = ContinuousClock.now
        let error = try #require(throws: PGError.self) { try connection.execute(sql: "SELECT 5", timeout: .seconds(1)) }
        #expect(ContinuousClock.now - started < .seconds(6))
        #expect(error.kind == .timedOut)
        #expect(!connection.isOpen)
        let after = try #require(throws: PGError.self) { try connection.execute(sql: "SELECT 6") }
        #expect(after.kind == .lostConnection)
        #expect(CatalogError(after).exitStatus == 69)
    }

    @Test("a backend the server terminates reports 57P01 and the connection loss, mapped to 69")
    func terminated() throws {
        let uri = try server.createDatabase()
        let connection = try PGConnection(conninfo: uri)
        let admin = try PGConnection(conninfo: uri)
        #expect(try admin.execute(sql: "SELECT pg_terminate_backend($1)", [.integer(Int64(connection.backendPID))]).bool(0, 0) == true)
        usleep(200_000)
        let error = try #require(throws: PGError.self) { try connection.execute(sql: "SELECT 7") }
        #expect(error.kind == .lostConnection, "\(error)")
        #expect(CatalogError(error).exitStatus == 69)
        #expect(!connection.isOpen)
    }

    static let nasty = [
        "tab\there", "new\nline", "cr\rlf\r\n", "back\\slash", "\\N", "\\.", "emoji 👩‍👩‍👧‍👦 🇫🇷",
        "", " ", "quote ' \" ", "NULL", "trailing\\", "\u{7F}\u{1}\u{8}\u{B}\u{C}", "日本語", "e\u{301}", "\\t\\n",
    ]

    @Test("COPY loads 100,000 rows of nasty strings that read back byte for byte")
    func copyRoundTrip() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        try connection.executeScript(sql: "CREATE TABLE t (id int8 PRIMARY KEY, s text NOT NULL, n text)")
        let nasty = Self.nasty
        func expected(_ i: Int) -> (String, String?) {
            (nasty[i % nasty.count] + String(i), i % 7 == 0 ? nil : nasty[(i / 3) % nasty.count])
        }
        let rows = (0..<100_000).lazy.map { i -> [PGValue?] in
            let (s, n) = expected(i)
            return [.integer(Int64(i)), .text(s), n.map(PGValue.text)]
        }
        #expect(try connection.copyIn(sql: "COPY t (id, s, n) FROM STDIN", rows: rows) == 100_000)
        var seen = 0
        var mismatches: [Int] = []
        try connection.forEachRow(sql: "SELECT id, s, n FROM t ORDER BY id", batch: 5000) { row in
            let id = try #require(try row.int64(0))
            let (s, n) = expected(Int(id))
            if id != Int64(seen) || row.text(1) != s || row.text(2) != n || row.isNull(2) != (n == nil) {
                if mismatches.count < 5 { mismatches.append(Int(id)) }
            }
            seen += 1
        }
        #expect(seen == 100_000)
        #expect(mismatches.isEmpty, "rows \(mismatches)")
        #expect(
            try connection.execute(sql: "SELECT count(*) FROM t WHERE n IS NULL").int64(0, 0) == Int64((0..<100_000).filter { $0 % 7 == 0 }.count))
    }

    @Test("a COPY refused by the server or by the encoder loads nothing and leaves the connection usable")
    func copyFailures() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        try connection.executeScript(sql: "CREATE TABLE t (id int8 PRIMARY KEY, s text)")
        let bad = try #require(throws: PGError.self) {
            try connection.copyIn(sql: "COPY t (id, s) FROM STDIN", rows: [[1, "a"], ["not a number", "b"]])
        }
        #expect(bad.sqlState == SQLState("22P02"))
        let nul = try #require(throws: PGError.self) {
            try connection.copyIn(sql: "COPY t (id, s) FROM STDIN", rows: [[1, "a"], [2, "nul\u{0}"]])
        }
        #expect(nul.kind == .client)
        let missing = try #require(throws: PGError.self) {
            try connection.copyIn(sql: "COPY nowhere (id) FROM STDIN", rows: [[1]])
        }
        #expect(missing.sqlState == .undefinedTable)
        let notCopy = try #require(throws: PGError.self) { try connection.execute(sql: "COPY t (id, s) FROM STDIN") }
        #expect(notCopy.kind == .client)
        #expect(try connection.execute(sql: "SELECT count(*) FROM t").int64(0, 0) == 0)
    }

    @Test("streaming 200,000 rows holds one batch at a time: memory stays flat")
    func streaming() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        let before = residentBytes()
        var peak = before
        var total = 0
        var largest = 0
        var previousFreed = true
        var sum: Int64 = 0
        weak var previous: PGResult?
        // 200,000 rows of 2 KB: 400 MB if they were all held.
        try connection.forEachBatch(
            sql: "SELECT i, repeat('x', 2000) FROM generate_series(1, $1) AS i",
            [.integer(200_000)], batch: 1000
        ) { result in
            if previous != nil { previousFreed = false }
            previous = result
            largest = max(largest, result.rowCount)
            total += result.rowCount
            for row in 0..<result.rowCount { sum += (try result.int64(row, 0)) ?? 0 }
            peak = max(peak, residentBytes())
        }
        #expect(total == 200_000)
        #expect(sum == 200_000 * 200_001 / 2)
        #expect(largest <= 1000)
        #expect(previousFreed)
        #expect(peak - before < 150 << 20, "resident memory grew by \((peak - before) >> 20) MB")
        #expect(!connection.isInTransaction)

        // Inside a caller's transaction the cursor uses it, and stopping early closes the cursor.
        struct Stop: Error {}
        try connection.transaction { () throws -> Void in
            var rows = 0
            #expect(throws: Stop.self) {
                try connection.forEachRow(sql: "SELECT generate_series(1, 10000)", batch: 100) { _ in
                    rows += 1
                    if rows == 150 { throw Stop() }
                }
            }
            #expect(rows == 150)
            #expect(connection.isInTransaction)
            let open = try connection.execute(sql: "SELECT string_agg(name || ': ' || statement, ', ') FROM pg_cursors WHERE name <> ''").text(0, 0)
            #expect(open == nil)
        }
    }

    @Test("a transaction commits, rolls back when its body throws and rethrows the first error")
    func transactions() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        try connection.executeScript(sql: "CREATE TABLE t (v int)")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try connection.transaction {
                try connection.execute(sql: "INSERT INTO t VALUES ($1)", [1])
                throw Boom()
            }
        }
        #expect(!connection.isInTransaction)
        #expect(try connection.execute(sql: "SELECT count(*) FROM t").int64(0, 0) == 0)

        let first = try #require(throws: PGError.self) {
            try connection.transaction { try connection.execute(sql: "INSERT INTO nowhere VALUES (1)") }
        }
        #expect(first.sqlState == .undefinedTable)

        let swallowed = try #require(throws: PGError.self) {
            try connection.transaction {
                try connection.execute(sql: "INSERT INTO t VALUES ($1)", [2])
                _ = try? connection.execute(sql: "SELECT * FROM nowhere")
            }
        }
        #expect(swallowed.kind == .client && swallowed.message.contains("rolled the transaction back"))

        let value = try connection.transaction {
            try connection.execute(sql: "INSERT INTO t VALUES ($1)", [3])
            return 42
        }
        #expect(value == 42)
        #expect(try connection.execute(sql: "SELECT array_agg(v)::text FROM t").text(0, 0) == "{3}")
    }

    @Test("a transaction's advisory lock keeps a second connection out until commit; its wait is bounded")
    func advisoryLock() throws {
        let uri = try server.createDatabase()
        let holder = try PGConnection(conninfo: uri)
        let other = try PGConnection(conninfo: uri)
        let key: Int64 = 0x5EED
        try holder.transaction {
            try holder.advisoryTransactionLock(key)
            #expect(try other.transaction { try other.tryAdvisoryTransactionLock(key) } == false)
            let started = ContinuousClock.now
            let waited = try #require(throws: PGError.self) {
                try other.transaction { try other.advisoryTransactionLock(key, timeout: .seconds(1)) }
            }
            #expect(waited.kind == .timedOut)
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(other.isOpen && !other.isInTransaction)
        }
        #expect(try other.transaction { try other.tryAdvisoryTransactionLock(key) } == true)
    }
}
