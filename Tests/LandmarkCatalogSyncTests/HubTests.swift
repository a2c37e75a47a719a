import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

#if canImport(Glibc)
    import Glibc
#endif

/// The hub's pieces that need no server: its migration files and connection strings.
@Suite("PostgreSQL hub: files and connection strings")
struct HubFileTests {
    @Test("the embedded hub migrations are exactly the files in Migrations/hub/, numbered from 1")
    func embeddedMatchFiles() throws {
        let dir = Support.root.appending(path: "Migrations/hub")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".sql") }.sorted()
        let embedded = try HubMigrator.embedded()
        #expect(!embedded.isEmpty)
        #expect(embedded.map(\.fileName) == names)
        for m in embedded {
            #expect(m.sql == (try String(contentsOf: dir.appending(path: m.fileName), encoding: .utf8)))
        }
        #expect(embedded.map(\.version) == Array(1...embedded.count))
    }

    @Test(
        "libpq URIs and keyword strings are hub sources; an existing file of that name stays a file",
        arguments: [
            ("postgres://h/db", true), ("postgresql://u@h:5433/db?sslmode=require", true), ("host=h dbname=d", true),
            ("  dbname = d user=u", true), ("service=hub", true), ("hostname=x", false), ("notes.json", false), ("a=b", false),
        ])
    func locators(text: String, isHub: Bool) throws {
        let locator = try SourceLocator.parse(text, workingDirectory: "/tmp")
        if let conninfo = HubSourceKind.conninfo(of: locator) { #expect(isHub && conninfo == text) } else { #expect(!isHub, "\(locator)") }
    }

    @Test("COPY text written straight from bytes: integers without a String, text escaped, NUL refused")
    func copyBytes() throws {
        var buffer: [UInt8] = []
        for value: Int64? in [0, -1, 42, .max, .min, nil] {
            PGCopyText.appendInteger(value, to: &buffer)
            buffer.append(UInt8(ascii: "|"))
        }
        #expect(String(decoding: buffer, as: UTF8.self) == "0|-1|42|9223372036854775807|-9223372036854775808|\\N|")
        buffer = []
        try Array("a\tb\\c\nd\re 🙂".utf8).withUnsafeBufferPointer { try PGCopyText.appendText($0, to: &buffer) }
        #expect(String(decoding: buffer, as: UTF8.self) == "a\\tb\\\\c\\nd\\re 🙂")
        #expect(throws: PGError.self) { try [UInt8(0)].withUnsafeBufferPointer { try PGCopyText.appendText($0, to: &buffer) } }
    }

    @Test("a keyword string naming an existing file is that file; remote add accepts keyword strings and shows no password")
    func keywordRemote() throws {
        let dir = Support.temporaryDirectory()
        let odd = dir.appending(path: "host=h").path
        try "[]".write(toFile: odd, atomically: true, encoding: .utf8)
        #expect(try SourceLocator.parse(odd) == .file(path: odd))
        let db = Support.temporaryDatabase()
        #expect(runCLI(["remote", "add", "hub", "host=db.example dbname=hub user=edge password=Kw-Secret-1"], db: db).status == 0)
        let list = runCLI(["remote", "list", "--json"], db: db)
        #expect(list.status == 0 && list.stdout.contains("host=db.example dbname=hub user=edge password=***"), "\(list.stdout)")
        #expect(!list.stdout.contains("Kw-Secret-1"))
    }

    /// Regression (a user test): a connection string with a typo was 69 "the hub is unreachable … the
    /// next run retries" — cron retried a config mistake forever — and `remote add` took it.
    @Test(
        "a connection string libpq refuses, or an unknown sslmode, is 64 naming what is wrong (no password), at sync and at remote add",
        arguments: [
            ("postgresql://u:Pw-Typo-9@127.0.0.1:1/db?badparam=1", #"invalid URI query parameter: "badparam""#),
            ("postgresql://u:Pw-Typo-9@127.0.0.1:1/db?sslmode=bogus", #"sslmode "bogus" is not one of disable, allow"#),
            ("host=127.0.0.1 port=1 dbname=db password=Pw-Typo-9 colour=blue", #"invalid connection option "colour""#),
        ])
    func badConnectionString(conninfo: String, message: String) throws {
        let db = Support.temporaryDatabase()
        let result = runCLI(["sync", conninfo], db: db)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(message) && result.stderr.contains("fix the connection string"), "\(result.stderr)")
        let added = runCLI(["remote", "add", "h", conninfo], db: db)
        #expect(added.status == 64 && added.stderr.contains(message), "\(added.stderr)")
        #expect(!(result.stderr + result.stdout + added.stderr).contains("Pw-Typo-9"))
        // Nothing saved, and no database made by the failed commands.
        #expect(!FileManager.default.fileExists(atPath: db))
    }

    @Test("remote add makes a relative path absolute (a remote is used from anywhere, cron included)")
    func relativeRemote() throws {
        let dir = Support.temporaryDirectory()
        let db = Support.temporaryDatabase()
        let store = try CatalogStore.open(path: db)
        try RemoteBook(store).addRemote(name: "peer", url: "logs/../logC", workingDirectory: dir.path)
        #expect(try RemoteBook(store).remotes().map(\.url) == [dir.appending(path: "logC").standardizedFileURL.path])
    }
}

/// The hub against a real, throwaway server (`PostgresServer`): schema, digest, push and pull, LWW on
/// both sides, quarantine on both sides, identity, failures and passwords.
@Suite("PostgreSQL hub", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries (scripts/setup installs them)"))
struct HubTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.running() }

    /// A new edge database with the seed catalog imported.
    func seededEdge() throws -> String {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path], db: db).status == 0)
        return db
    }

    func sync(_ db: String, _ hub: String, _ extra: [String] = [], clock: any WallClock = SystemClock()) -> CLIResult {
        runCLI(["sync", "--json"] + extra + [hub], db: db, clock: clock)
    }

    // MARK: Schema

    /// Regression: a migrator that read "no ledger" before another committed migration 1 then found
    /// the hub's tables and refused the hub as foreign (1 suite run in ~7).
    ///
    /// Twelve rounds of eight threads on fresh hubs failed 2 runs in 4 before the fix (a race: it
    /// cannot fail every time).
    @Test("the schema is applied once with its ledger; concurrent migrators wait on the advisory lock and apply it once")
    func migrations() throws {
        for _ in 0..<12 {
            let (_, name) = try HubSupport.makeHub(server)
            let applied = Locked<[[Int]]>([])
            let failures = Locked<[String]>([])
            let threads = 8
            let done = DispatchSemaphore(value: 0)
            let socket = server.socketDirectory
            let port = server.port
            for _ in 0..<threads {
                Thread.detachNewThread {
                    do {
                        let connection = try PGConnection(conninfo: "host=\(socket) port=\(port) user=postgres dbname=\(name)")
                        let versions = try HubMigrator().migrate(connection)
                        applied.update { $0.append(versions) }
                    } catch {
                        failures.update { $0.append("\(error)") }
                    }
                    done.signal()
                }
            }
            for _ in 0..<threads { #expect(done.wait(timeout: .now() + 30) == .success) }
            #expect(failures.current.isEmpty, "\(failures.current)")
            let latest = try HubMigrator().latestVersion
            // Each migration is applied once, by whichever migrator took the lock first for it.
            #expect(applied.current.flatMap { $0 }.sorted() == Array(1...latest))
            let connection = try HubSupport.connect(server, name)
            let status = try HubMigrator().status(connection)
            #expect(status.allSatisfy { $0.state == .applied } && status.count == latest)
            #expect(status.map(\.checksum) == (try HubMigrator.embedded()).map(\.checksum))
            #expect(try HubMigrator().migrate(connection) == [])
            #expect(try connection.execute(sql: "SELECT count(*) FROM hub_identity").int64(0, 0) == 1)
        }
    }

    static let refusals: [(String, String, String)] = [
        (
            "INSERT INTO hub_schema_migrations (version, description, checksum) VALUES (9999, 'from_the_future', '0')", "upgrade catalog",
            "migration 9999"
        ),
        ("UPDATE hub_schema_migrations SET checksum = '0123456789abcdef' WHERE version = 1", "the same release", "was changed"),
    ]

    @Test("a hub newer than this binary, or with a changed migration, is refused (76) and the edge is unchanged", arguments: refusals)
    func refusedSchema(sql: String, hint: String, message: String) throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let db = try seededEdge()
        #expect(sync(db, uri).status == 0)
        try HubSupport.connect(server, name).execute(sql: sql)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "1"], db: db).status == 0)
        let before = try dumpPositions(db)
        let hubBefore = try HubSupport.hubPositions(server, name)
        let result = sync(db, uri)
        #expect(result.status == 76, "\(result.stderr)")
        #expect(result.stderr.contains(message) && result.stderr.contains(hint), "\(result.stderr)")
        #expect(try dumpPositions(db) == before)
        #expect(try HubSupport.hubPositions(server, name) == hubBefore)
    }

    @Test("a database with a table named like the hub's and no hub ledger is not migrated (76)")
    func foreignDatabase() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        try HubSupport.connect(server, name).executeScript(sql: "CREATE TABLE positions (who text)")
        let result = sync(try seededEdge(), uri)
        #expect(result.status == 76 && result.stderr.contains("not a catalog hub"), "\(result.stderr)")
        #expect(try HubSupport.scalar(server, name, "SELECT to_regclass('hub_schema_migrations') IS NULL") == "t")
    }

    @Test("a COPY whose producer throws loads nothing and rethrows its error")
    func copyProducerThrows() throws {
        let connection = try PGConnection(conninfo: server.createDatabase())
        try connection.executeScript(sql: "CREATE TABLE t (v bigint)")
        struct Stop: Error {}
        var produced = 0
        #expect(throws: Stop.self) {
            try connection.copyIn(sql: "COPY t (v) FROM STDIN") { buffer in
                produced += 1
                if produced > 100_000 { throw Stop() }
                PGCopyText.appendInteger(Int64(produced), to: &buffer)
                buffer.append(UInt8(ascii: "\n"))
                return true
            }
        }
        #expect(try connection.execute(sql: "SELECT count(*) FROM t").int64(0, 0) == 0)
        let loaded = try connection.copyIn(sql: "COPY t (v) FROM STDIN") { buffer in
            produced -= 1
            guard produced >= 0 else { return false }
            PGCopyText.appendInteger(Int64(produced), to: &buffer)
            buffer.append(UInt8(ascii: "\n"))
            return true
        }
        #expect(loaded == 100_001)
        #expect(try connection.execute(sql: "SELECT count(*) FROM t").int64(0, 0) == 100_001)
    }

    // MARK: Digest

    @Test("the digest computed in SQL equals StateDigest in Swift: unicode, tombstones, null landmark ids")
    func digestMatches() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let db = Support.temporaryDatabase()
        let file = try HubSupport.landmarkFile([
            (1, "Zoë's “Lake” 🌋", true, "Line one\nline two \\ \"quoted\" 日本語 e\u{301}"), (2, "Ørsted", true, nil), (3, "Gone", false, "x"),
        ])
        #expect(runCLI(["import", file], db: db).status == 0)
        #expect(
            runCLI(
                ["import", "--prune", try HubSupport.landmarkFile([(1, "Zoë's “Lake” 🌋", true, "Line one"), (2, "Ørsted", true, nil)])],
                db: db
            ).status == 0)  // 3 becomes a tombstone
        for (user, page) in [("zoë", 0), ("用户", 1), ("🙂 emoji", 1), ("plain", 0)] {
            #expect(runCLI(["position", "set", "--user", user, "--page", String(page)], db: db).status == 0)
        }
        #expect(runCLI(["position", "clear", "--user", "plain"], db: db).status == 0)
        let nullLandmark = try writeTemporary(snapshot(positions: [positionRow("nobody", page: 4, at: "2026-11-30T00:00:00Z")]))
        #expect(runCLI(["sync", nullLandmark], db: db).status == 0)
        #expect(sync(db, uri).status == 0)
        let store = try CatalogStore.open(path: db)
        let hub = try HubConnection(conninfo: uri, name: name, limits: HubLimits(options: SyncOptions()))
        #expect(try hub.digest() == StateDigest(of: store))
        #expect(try hub.digest().rows == 3 + 5)
        #expect(try HubSupport.hubStatus(db)["inAgreement"] as? Bool == true)

        // Rows written straight into the hub, digested in Swift from the same values.
        let (_, other) = try HubSupport.makeHub(server)
        let direct = try HubConnection(conninfo: server.uri(database: other), name: other, limits: HubLimits(options: SyncOptions()))
        let rows = [
            PositionRecord(user: "é\u{301}x", page: 2, landmark: nil, stamp: HLCStamp(wallMilliseconds: 1, counter: 0, node: "n-a"), deleted: false),
            PositionRecord(
                user: "日本", page: 0, landmark: -7, stamp: HLCStamp(wallMilliseconds: testNow, counter: 4_294_967_295, node: "n.b_c-d"), deleted: true),
            PositionRecord(
                user: "tab\tand|bar", page: 9, landmark: 1001, stamp: HLCStamp(wallMilliseconds: 0, counter: 3, node: "Z"), deleted: false),
        ]
        var expected = StateDigest()
        for row in rows {
            try direct.pg.execute(
                sql: "INSERT INTO positions VALUES ($1, $2, $3, $4, $5, $6, $7, nextval('hub_change_seq'))",
                [
                    .text(row.user), .integer(row.page), row.landmark.map(PGValue.integer), .integer(row.stamp.wallMilliseconds),
                    .integer(row.stamp.counter), .text(row.stamp.node), .boolean(row.deleted),
                ])
            expected.add(StateDigest.positionText(row))
        }
        #expect(try direct.digest() == expected)
        #expect(try direct.digest().hex != StateDigest().hex)
    }

    // MARK: Push and pull

    /// A user test: setting a hub up as its owner needed a throwaway catalog database and left it in
    /// `hub_edges`; `migrate --hub` creates the schema and nothing else.
    @Test("migrate --hub creates the hub's schema and nothing else: no local database, no edge recorded; run again it changes nothing")
    func migrateHub() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let db = Support.temporaryDatabase()
        let first = runCLI(["migrate", "--hub", uri], db: db)
        let hubID = try HubSupport.scalar(server, name, "SELECT hub_id FROM hub_identity") ?? ""
        let latest = try HubMigrator().latestVersion
        #expect(first.status == 0 && first.stdout.hasSuffix(": hub schema at version \(latest) (hub \(hubID))\n"), "\(first.stdout) \(first.stderr)")
        #expect(!FileManager.default.fileExists(atPath: db))
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_edges") == "0")
        #expect(runCLI(["migrate", "--hub", uri], db: db).stdout == first.stdout)
        #expect(runCLI(["migrate", "--hub", "/tmp/a.json"], db: db).status == 64)
        let noRemote = runCLI(["migrate", "--hub", "myhub"], db: db)
        #expect(
            noRemote.status == 64 && noRemote.stderr.contains("no remote is named 'myhub' (there is no database at \(db) to hold remotes)"),
            "\(noRemote.stderr)")
        #expect(runCLI(["migrate", "--hub", uri, "--status"], db: db).status == 64)
        // An edge then syncs against the schema made for it.
        let edge = try seededEdge()
        #expect(sync(edge, uri).status == 0)
    }

    @Test("two edges converge through the hub; a later write wins on both sides; an older one never replaces it")
    func convergence() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let a = try seededEdge()
        let b = Support.temporaryDatabase()
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "1"], db: a).status == 0)
        let first = sync(a, uri)
        #expect(first.status == 0 && first.stdout.contains(#""positionsSeen":0"#), "\(first.stdout)")  // its own rows are not read back
        // What was pushed is reported (a user test found pushes visible only in `status`).
        #expect(first.stdout.contains(#""pushed":{"erasures":0,"expired":0,"quarantined":0,"sent":17,"written":17}"#), "\(first.stdout)")
        let pulled = sync(b, uri)
        #expect(pulled.stdout.contains(#""landmarksApplied":16"#) && pulled.stdout.contains(#""positionsApplied":1"#), "\(pulled.stdout)")
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "3"], db: b).status == 0)
        let text = runCLI(["sync", uri], db: b)
        #expect(text.status == 0 && text.stdout.hasSuffix("; pushed 1 row to the hub (1 written)\n"), "\(text.stdout)")
        let again = sync(b, uri)
        #expect(again.stdout.contains(#""pushed":null"#), "\(again.stdout)")  // nothing new to push
        #expect(sync(a, uri).status == 0)
        #expect(runCLI(["position", "get", "--user", "ann"], db: a).stdout.contains("page 3"))
        // An old delivery (a snapshot stamped in 2020) does not replace the hub's newer row.
        let c = Support.temporaryDatabase()
        #expect(
            runCLI(["sync", try writeTemporary(snapshot(positions: [positionRow("ann", page: 0, at: "2020-01-01T00:00:00Z")]))], db: c).status == 0)
        #expect(sync(c, uri).status == 0)
        #expect(try HubSupport.hubPositions(server, name).first?.hasPrefix("ann|3|") == true)
        for edge in [a, b, c] {
            #expect(sync(edge, uri).status == 0)
            #expect(try HubSupport.edgePositions(edge) == HubSupport.hubPositions(server, name))
            #expect(try HubSupport.hubStatus(edge)["inAgreement"] as? Bool == true)
        }
    }

    /// A pull of three `FETCH` batches (60,001 positions; 25,000 per batch) read on the reading thread
    /// while the merger writes: every row arrives once, in any change order on the hub (numbered here in
    /// a shuffled order, as a hub written by many edges is); a bad row in the last batch fails the whole
    /// pull after two batches were merged, and the edge keeps none of them.
    @Test("a pull of several batches, read while it merges, delivers every row; a bad row in its last batch leaves the edge empty")
    func multiBatchPull() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        #expect(sync(try seededEdge(), uri).status == 0)
        let hub = try HubSupport.connect(server, name)
        try hub.execute(
            sql: """
                INSERT INTO positions (user_id, page, landmark_id, updated_ms, counter, node, deleted, seq)
                SELECT 'u-' || lpad(n::text, 6, '0'), n % 7, NULL, (extract(epoch FROM now()) * 1000)::bigint - 60000, n % 3, 'n-bulk',
                       n % 11 = 0, nextval('hub_change_seq')
                FROM (SELECT n FROM generate_series(1, 60001) AS n ORDER BY md5(n::text)) AS shuffled
                """)
        let b = Support.temporaryDatabase()
        let pulled = sync(b, uri)
        #expect(pulled.status == 0 && pulled.stdout.contains(#""positionsApplied":60001"#), "\(pulled.stdout)")
        #expect(try HubSupport.edgePositions(b) == HubSupport.hubPositions(server, name))
        #expect(try HubSupport.hubStatus(b)["inAgreement"] as? Bool == true)

        // 'zz' sorts after every 'u-…': the pull reads in user order, so it is in the third batch.
        try hub.execute(sql: "INSERT INTO positions VALUES ('zz', 1, NULL, 1, 0, 'bad node!', false, nextval('hub_change_seq'))")
        let c = Support.temporaryDatabase()
        let failed = sync(c, uri)
        #expect(failed.status == 65 && failed.stderr.contains("is not valid"), "\(failed.stderr)")
        // Not "a snapshot": the hub's rows are named as such.
        #expect(failed.stderr.contains("holds rows that are not valid (1 error); nothing was merged from it"), "\(failed.stderr)")
        #expect(try dumpLandmarks(c).isEmpty && dumpPositions(c).isEmpty)
    }

    @Test("on a terminal a sync draws 'pushing to HUB' with rows sent, then 'merging HUB' while it pulls; the line is cleared")
    func progressOnTerminal() throws {
        let (uri, _) = try HubSupport.makeHub(server)
        let at = Timestamp.format(milliseconds: SystemClock().nowMilliseconds() - 60_000)
        let rows = (0..<10_000).map { positionRow("p\($0)", page: $0 % 5, at: at, node: "n-feed") }
        let a = Support.temporaryDatabase()
        #expect(runCLI(["sync", try writeTemporary(snapshot(node: "n-feed", positions: rows))], db: a).status == 0)
        let pushed = Waits.run(["sync", uri], db: a, terminal: true)
        #expect(pushed.status == 0, "\(pushed.stderr)")
        let draws = pushed.stderr.components(separatedBy: "\r\u{1B}[K").filter { !$0.isEmpty }
        let push = try #require(draws.first { $0.hasPrefix("pushing to ") }, "\(draws)")
        #expect(push.contains("127.0.0.1") && push.contains(" records, ") && push.contains(" MB"), "\(push)")
        #expect(pushed.stderr.hasSuffix("\r\u{1B}[K"))
        let pulled = Waits.run(["sync", uri], db: Support.temporaryDatabase(), terminal: true)
        #expect(pulled.status == 0)
        #expect(
            pulled.stderr.components(separatedBy: "\r\u{1B}[K").contains { $0.hasPrefix("merging ") && $0.contains("10,000 records") },
            "\(pulled.stderr)")
    }

    /// Regression: landmarks were fetched 2,000 at a time whatever their size; 5,000 bodies of 60 KB
    /// took a pull to 598 MB.
    ///
    /// Batches now follow the bytes of the rows before them.
    @Test("landmark FETCHes hold about 4 MiB: fewer rows when bodies are large, at most 2,000")
    func landmarkBatchBytes() throws {
        let (_, name) = try HubSupport.makeHub(server)
        let pg = try HubSupport.connect(server, name)
        let large = try pg.execute(sql: "SELECT 1, repeat('x', 60000) FROM generate_series(1, 10)")
        #expect(HubPullFeed.nextLandmarkBatch(large) == (4 << 20) / 60_001)
        let small = try pg.execute(sql: "SELECT 1, 'x' FROM generate_series(1, 10)")
        #expect(HubPullFeed.nextLandmarkBatch(small) == 2_000)
        let huge = try pg.execute(sql: "SELECT 1, repeat('x', 8 << 20)")
        #expect(HubPullFeed.nextLandmarkBatch(huge) == 1)
        // The stream asks for those sizes: after the first 2, rows of 1 MiB and a digit come 3 a batch.
        var sizes: [Int] = []
        try pg.forEachBatch(
            sql: "SELECT n, repeat('x', 1 << 20) FROM generate_series(1, 10) AS n", batch: 2,
            nextBatch: HubPullFeed.nextLandmarkBatch
        ) { sizes.append($0.rowCount) }
        #expect(sizes == [2, 3, 3, 2])
    }

    @Test("ties (equal stamps, different content) settle the same on the hub as in Swift: the tombstone, else the greater content")
    func ties() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let at = "2026-11-30T00:00:00Z"
        let one = try writeTemporary(
            snapshot(
                landmarks: [landmarkRow(7, name: "Alpha", at: at), landmarkRow(8, name: "Zed", at: at)],
                positions: [
                    positionRow("t1", page: 1, landmark: 7, at: at), positionRow("t2", page: 2, at: at),
                    positionRow("t3", page: 5, at: at),
                ]))
        let two = try writeTemporary(
            snapshot(
                landmarks: [landmarkRow(7, name: "Beta", at: at), landmarkRow(8, name: "Zed", at: at, deleted: true)],
                positions: [
                    positionRow("t1", page: 1, landmark: 9, at: at), positionRow("t2", page: 2, landmark: 1, at: at),
                    positionRow("t3", page: 0, at: at, deleted: true),
                ]))
        let x = Support.temporaryDatabase()
        let y = Support.temporaryDatabase()
        let reference = Support.temporaryDatabase()
        #expect(runCLI(["sync", one], db: x).status == 0)
        #expect(runCLI(["sync", two], db: y).status == 0)
        #expect(runCLI(["sync", two, one], db: reference).status == 0)
        // y pushes first, then x: the hub must settle each tie by the rule, not by arrival.
        #expect(sync(y, uri).status == 0)
        #expect(sync(x, uri).status == 0)
        #expect(sync(y, uri).status == 0)
        let expected = try HubSupport.edgePositions(reference)
        #expect(try HubSupport.hubPositions(server, name) == expected)
        #expect(expected.contains { $0.hasPrefix("t1|1|9|") } && expected.contains { $0.hasPrefix("t3|0||") && $0.hasSuffix("|t") })
        for edge in [x, y] {
            #expect(try replicatedLandmarks(edge) == replicatedLandmarks(reference))
            #expect(try HubSupport.edgePositions(edge) == expected)
        }
        let referenceDigest = try StateDigest(of: CatalogStore.open(path: reference))
        let hub = try HubConnection(conninfo: uri, name: name, limits: HubLimits(options: SyncOptions()))
        #expect(try hub.digest() == referenceDigest)
        #expect(try HubSupport.scalar(server, name, "SELECT body FROM landmarks WHERE id = 7")?.contains("\"Beta\"") == true)
    }

    @Test("echo suppression: rows just pulled are not pushed back, and a sync with nothing new writes nothing on the hub")
    func echoSuppression() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let a = try seededEdge()
        let b = Support.temporaryDatabase()
        #expect(sync(a, uri).status == 0)
        let sequence = try HubSupport.scalar(server, name, "SELECT last_value FROM hub_change_seq")
        #expect(sync(b, uri).status == 0)
        #expect(sync(b, uri).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT last_value FROM hub_change_seq") == sequence)
        let node = try CatalogStore.open(path: b).nodeID()
        #expect(try HubSupport.scalar(server, name, "SELECT last_push_at IS NULL FROM hub_edges WHERE node = $1", [.text(node)]) == "t")
        let status = try HubSupport.hubStatus(b)
        #expect(status["pushThrough"] as? Int == Int(try CatalogStore.open(path: b).changeSequence()))
        // A dry run pulls and reports, writes nothing here and pushes nothing there.
        #expect(runCLI(["position", "set", "--user", "dry", "--page", "0"], db: b).status == 0)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "2"], db: a).status == 0)
        #expect(sync(a, uri).status == 0)
        let before = try dumpPositions(b)
        let dry = sync(b, uri, ["--dry-run"])
        #expect(dry.status == 0 && dry.stdout.contains(#""positionsApplied":1"#), "\(dry.stdout)")
        #expect(try dumpPositions(b) == before)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = 'dry'") == "0")
    }

    @Test("a hub created again (a new identity) makes an edge start over: it pushes everything again")
    func hubRecreated() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let a = try seededEdge()
        #expect(sync(a, uri).status == 0)
        try HubSupport.connect(server, name).executeScript(sql: "DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        let again = sync(a, uri)
        #expect(again.status == 0)
        #expect(again.stderr.contains("created again"), "\(again.stderr)")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM landmarks") == "16")
        #expect(try HubSupport.hubStatus(a)["inAgreement"] as? Bool == true)
    }

    /// Takes a backup of hub `name` (a copy made by `CREATE DATABASE … TEMPLATE`, which copies the
    /// sequence too, as `pg_dump` does) and returns a function that restores it over the hub.
    func backup(_ name: String) throws -> () throws -> Void {
        let copy = "b_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20).lowercased()
        try HubSupport.admin(server).executeScript(sql: "CREATE DATABASE \(copy) TEMPLATE \(name)")
        return {
            try HubSupport.admin(self.server).executeScript(sql: "DROP DATABASE \(name) WITH (FORCE)")
            try HubSupport.admin(self.server).executeScript(sql: "CREATE DATABASE \(name) TEMPLATE \(copy)")
        }
    }

    /// Every edge and the hub hold the same rows: equal positions, and `status` finds each edge in
    /// agreement with the hub's digest.
    func converged(_ edges: [String], _ name: String) throws {
        let hub = try HubSupport.hubPositions(server, name)
        for edge in edges {
            #expect(try HubSupport.edgePositions(edge) == hub)
            #expect(try HubSupport.hubStatus(edge)["inAgreement"] as? Bool == true)
        }
    }

    /// Regression (issue 17): A pushed after the backup; the hub was restored; B pushed (the hub's
    /// sequence passed A's pull cursor again, with other rows).
    ///
    /// A synced with exit 0 and no warning, and A's row never reached the hub again: the digests
    /// stayed apart for good.
    @Test("a hub restored from a backup, then pushed to by another edge, is found at the next sync: one warning, nothing lost, all converge")
    func restoredThenPushed() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let a = try seededEdge()
        let b = Support.temporaryDatabase()
        #expect(sync(a, uri).status == 0)
        #expect(sync(b, uri).status == 0)
        let restore = try backup(name)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "1"], db: a).status == 0)
        #expect(sync(a, uri).status == 0)
        try restore()
        for user in ["bob", "cy", "dee"] {
            #expect(runCLI(["position", "set", "--user", user, "--page", "2"], db: b).status == 0)
        }
        let pushed = sync(b, uri)
        #expect(pushed.status == 0 && !pushed.stderr.contains("history"), "\(pushed.stderr)")
        let found = sync(a, uri)
        #expect(found.status == 0)
        #expect(found.stderr.components(separatedBy: "no longer holds the history").count == 2, "\(found.stderr)")
        #expect(found.stderr.contains(name), "the warning names the hub: \(found.stderr)")
        #expect(sync(b, uri).status == 0)
        #expect(
            try HubSupport.hubPositions(server, name).map { $0.split(separator: "|").prefix(2).joined(separator: "|") }
                == ["ann|1", "bob|2", "cy|2", "dee|2"])
        try converged([a, b], name)
        // Once converged, nothing warns again.
        let quiet = sync(a, uri)
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    @Test("a hub restored from a backup with no push since: the edge that lost its rows pushes them again")
    func restoredAlone() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let a = try seededEdge()
        #expect(sync(a, uri).status == 0)
        let restore = try backup(name)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "3"], db: a).status == 0)
        #expect(sync(a, uri).status == 0)
        try restore()
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions") == "0")
        let found = sync(a, uri)
        #expect(found.status == 0 && found.stderr.contains("hub-reset") || found.stderr.contains("restored from a backup"), "\(found.stderr)")
        #expect(try HubSupport.hubPositions(server, name).first?.hasPrefix("ann|3|") == true)
        try converged([a], name)
    }

    /// Regression (issue 25): with `hub_history` emptied by hand, A's next pull kept no mark; the hub was
    /// then restored from a backup older than A's row, B pushed past A's cursor, and A's sync noticed
    /// nothing: A's row stayed lost on the hub.
    @Test("an emptied hub_history starts again at the next pull, so a later restore is still found")
    func emptiedHistory() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let a = try seededEdge()
        let b = Support.temporaryDatabase()
        #expect(sync(a, uri).status == 0)
        #expect(sync(b, uri).status == 0)
        let restore = try backup(name)
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "3"], db: a).status == 0)
        #expect(sync(a, uri).status == 0)
        try HubSupport.connect(server, name).executeScript(sql: "DELETE FROM hub_history")
        // The history A's mark names is gone: A starts over once (a warning), and its pull marks the hub again.
        let reset = sync(a, uri)
        #expect(reset.status == 0 && reset.stderr.contains("no longer holds the history"), "\(reset.stderr)")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_history WHERE node = ''") == "1")
        try restore()
        for user in ["bob", "cy", "dee", "eve", "fay", "gus"] {
            #expect(runCLI(["position", "set", "--user", user, "--page", "2"], db: b).status == 0)
        }
        #expect(sync(b, uri).status == 0)
        let found = sync(a, uri)
        #expect(found.status == 0 && found.stderr.contains("no longer holds the history"), "\(found.stderr)")
        #expect(sync(b, uri).status == 0)
        #expect(try HubSupport.hubPositions(server, name).first?.hasPrefix("ann|3|") == true)
        try converged([a, b], name)
    }

    @Test("the hub quarantines rows stamped beyond the drift allowance of its clock, and applies them once they are due")
    func hubQuarantine() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let ahead = ManualClock(SystemClock().nowMilliseconds() + 3_600_000)  // this edge's clock is an hour fast
        let db = try seededEdge()
        #expect(runCLI(["position", "set", "--user", "early", "--page", "1"], db: db, clock: ahead).status == 0)
        let pushed = sync(db, uri, clock: ahead)
        #expect(pushed.status == 0)
        #expect(pushed.stderr.contains("the hub quarantined 1 of"), "\(pushed.stderr)")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id = 'early'") == "0")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_quarantine") == "1")
        // Due once the allowance covers it (as when the hub's clock catches up): the next push applies it.
        #expect(sync(db, uri, ["--max-drift", "7200"], clock: ahead).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_quarantine") == "0")
        #expect(try HubSupport.scalar(server, name, "SELECT page FROM positions WHERE user_id = 'early'") == "1")
    }

    @Test("an edge quarantines hub rows stamped beyond its allowance, and gets them again once its clock catches up")
    func edgeQuarantine() throws {
        let (uri, _) = try HubSupport.makeHub(server)
        let a = try seededEdge()
        #expect(runCLI(["position", "set", "--user", "later", "--page", "2"], db: a).status == 0)
        #expect(sync(a, uri).status == 0)
        let behind = ManualClock(SystemClock().nowMilliseconds() - 3_600_000)
        let b = Support.temporaryDatabase()
        let first = sync(b, uri, clock: behind)
        #expect(first.status == 0 && first.stdout.contains(#""quarantined":17"#), "\(first.stdout)")
        #expect(try dumpPositions(b).isEmpty)
        behind.set(SystemClock().nowMilliseconds() + 1000)
        let second = sync(b, uri, clock: behind)
        #expect(second.status == 0 && second.stdout.contains(#""positionsApplied":1"#), "\(second.stdout)")
        #expect(runCLI(["position", "get", "--user", "later"], db: b).stdout.contains("page 2"))
        #expect(try HubSupport.hubStatus(b)["inAgreement"] as? Bool == true)
    }

    static let badRows: [(String, String)] = [
        ("INSERT INTO positions VALUES ('u', 1, NULL, 1, 0, 'bad node!', false, nextval('hub_change_seq'))", "is not valid"),
        (
            "INSERT INTO positions VALUES (E'e\\u0301', 1, NULL, 1, 0, 'n-x', false, nextval('hub_change_seq'))",
            #"user "e\u{301}" is not valid: its user id is not in NFC"#
        ),
        // Regression: a stamp no RFC 3339 timestamp names was merged, then trapped export (Int64 overflow).
        (
            "INSERT INTO positions VALUES ('u', 1, NULL, -9223372036854775808, 0, 'n-x', false, nextval('hub_change_seq'))",
            "user \"u\" is not valid: its stamp is not valid"
        ),
        (
            "INSERT INTO landmarks VALUES (9, '{\"id\": 9, \"name\": \"x\", \"coordinates\": {\"latitude\": 1, \"longitude\": 2}}', 253402300800000, 0, 'n-x', false, nextval('hub_change_seq'))",
            "invalid stamp"
        ),
        ("INSERT INTO landmarks VALUES (5, '{\"id\": 5, \"name\": ', 1, 0, 'n-x', false, nextval('hub_change_seq'))", "not valid JSON"),
        // Regressions: bodies were read joined into one array, so a body of two objects trapped (132) and
        // two broken bodies that join into valid JSON were merged as one landmark, losing the other (0).
        (
            "UPDATE landmarks SET body = body || ',' || body, seq = nextval('hub_change_seq') WHERE id = 1001",
            "the hub's landmark 1001 has a body that is not valid JSON"
        ),
        (
            """
            UPDATE landmarks SET body = CASE id WHEN 1015 THEN left(body, length(body) - 1) || ',"x":"' ELSE '"}' END,
                seq = nextval('hub_change_seq') WHERE id IN (1015, 1016)
            """, "the hub's landmark 1015 has a body that is not valid JSON"
        ),
        (
            "INSERT INTO landmarks VALUES (6, '{\"id\": 7, \"name\": \"x\", \"coordinates\": {\"latitude\": 1, \"longitude\": 2}}', 1, 0, 'n-x', false, nextval('hub_change_seq'))",
            "another id"
        ),
        (
            "INSERT INTO landmarks VALUES (8, '{\"id\": 8, \"name\": \"\", \"coordinates\": {\"latitude\": 91, \"longitude\": 2}}', 1, 0, 'n-x', false, nextval('hub_change_seq'))",
            "a landmark body on the hub"
        ),
    ]

    @Test("a row on the hub that is not valid fails the pull (65) and nothing from the hub is merged", arguments: badRows)
    func invalidHubRows(sql: String, message: String) throws {
        let (uri, name) = try HubSupport.makeHub(server)
        #expect(sync(try seededEdge(), uri).status == 0)
        try HubSupport.connect(server, name).execute(sql: sql)
        let b = Support.temporaryDatabase()
        let result = sync(b, uri)
        #expect(result.status == 65 && result.stderr.contains(message), "\(result.stderr)")
        #expect(try dumpLandmarks(b).isEmpty && dumpPositions(b).isEmpty)
    }

    // MARK: Failures

    @Test("a hub that never answers, or a closed port, is 69 within the timeout and the edge is unchanged")
    func unreachable() throws {
        let db = try seededEdge()
        #expect(runCLI(["position", "set", "--user", "ann", "--page", "1"], db: db).status == 0)
        let before = (try dumpLandmarks(db), try dumpPositions(db))
        let listener = try TCPListener()
        let closed = try PostgresServer.freePort()
        for (uri, bound) in [("postgresql://catalog@127.0.0.1:\(listener.port)/hub", 4.0), ("postgresql://catalog@127.0.0.1:\(closed)/hub", 2.0)] {
            let started = Date()
            let result = sync(db, uri, ["--timeout", "1"])
            let elapsed = Date().timeIntervalSince(started)
            #expect(result.status == 69, "\(result.stderr)")
            #expect(elapsed < bound, "\(elapsed) s")
            #expect(result.stderr.contains("unreachable") || result.stderr.contains("retries"), "\(result.stderr)")
        }
        #expect(try dumpLandmarks(db) == before.0 && dumpPositions(db) == before.1)
        #expect(runCLI(["status"], db: db).stdout.contains("last error"))
    }

    @Test("a hub that stops answering mid-sync (a statement that never returns) is 69 within --timeout; the edge is unchanged")
    func hungStatement() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let a = try seededEdge()
        let b = Support.temporaryDatabase()
        #expect(sync(a, uri).status == 0)
        let holder = try HubSupport.connect(server, name)
        try holder.execute(sql: "BEGIN")
        try holder.execute(sql: "LOCK TABLE landmarks IN ACCESS EXCLUSIVE MODE")  // the pull's first read waits behind it
        let started = Date()
        let result = sync(b, uri, ["--timeout", "1"])
        #expect(result.status == 69, "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 6)
        #expect(try dumpLandmarks(b).isEmpty)
        try holder.execute(sql: "ROLLBACK")
        #expect(sync(b, uri).status == 0)
        #expect(try dumpLandmarks(b).count == 16)
    }

    @Test("a push that waits longer than --timeout for another edge's push lock is 69, and nothing of it lands")
    func pushLockBusy() throws {
        let (uri, name) = try HubSupport.makeHub(server)
        let db = try seededEdge()
        #expect(sync(db, uri).status == 0)
        #expect(runCLI(["position", "set", "--user", "waits", "--page", "1"], db: db).status == 0)
        let holder = try HubSupport.connect(server, name)
        try holder.execute(sql: "SELECT pg_advisory_lock($1)", [.integer(HubSQL.pushLockKey)])
        let started = Date()
        let result = sync(db, uri, ["--timeout", "1"])
        #expect(result.status == 69 && result.stderr.contains("push lock"), "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions") == "0")
        try holder.execute(sql: "SELECT pg_advisory_unlock($1)", [.integer(HubSQL.pushLockKey)])
        #expect(sync(db, uri).status == 0)
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions") == "1")
    }

    @Test("sslmode is libpq's: require against a server without TLS is 69; disable connects")
    func sslMode() throws {
        let (uri, _) = try HubSupport.makeHub(server)
        let db = try seededEdge()
        let required = sync(db, uri + "?sslmode=require", ["--timeout", "5"])
        #expect(required.status == 69 && required.stderr.contains("SSL"), "\(required.stderr)")
        #expect(sync(db, uri + "?sslmode=disable").status == 0)
    }

    @Test("a password in the URI is never printed: sync, sync --json, a failed login, status, remote add and remote list")
    func passwordNeverShown() throws {
        let hub = try HubSupport.makePasswordHub(server)
        let secret = PostgresServer.password
        let uri = server.uri(database: hub, user: PostgresServer.passwordRole, password: secret)
        let db = try seededEdge()
        var outputs: [CLIResult] = []
        outputs.append(runCLI(["remote", "add", "hub", uri], db: db))
        outputs.append(runCLI(["sync"], db: db))
        outputs.append(runCLI(["sync", "--json"], db: db))
        outputs.append(runCLI(["status"], db: db))
        outputs.append(runCLI(["status", "--json"], db: db))
        outputs.append(runCLI(["remote", "list"], db: db))
        outputs.append(runCLI(["remote", "list", "--json"], db: db))
        #expect(outputs.allSatisfy { $0.status == 0 }, "\(outputs.map(\.stderr))")
        #expect(outputs[3].stdout.contains("the same as here"), "\(outputs[3].stdout)")
        // The remote's name beside the URL: in the source and hub lines, and as "remote" in JSON (issue 17).
        #expect(
            outputs[3].stdout.contains("source:      hub (postgres") && outputs[3].stdout.contains("hub:         hub (postgres"),
            "\(outputs[3].stdout)")
        #expect(
            outputs[2].stdout.contains(#""remote":"hub","source":"postgres"#) && outputs[4].stdout.contains(#""remote":"hub","source":"postgres"#))
        let wrong = runCLI(["sync", server.uri(database: hub, user: PostgresServer.passwordRole, password: secret + "x")], db: db)
        #expect(wrong.status == 69 && wrong.stderr.contains(".pgpass"), "\(wrong.stderr)")
        outputs.append(wrong)
        for output in outputs {
            #expect(!output.stdout.contains(secret) && !output.stderr.contains(secret), "\(output.stdout) \(output.stderr)")
        }
        #expect(outputs[5].stdout.contains("\(PostgresServer.passwordRole):***@"))
        let stored = try dumpRows(db, sql: "SELECT source, coalesce(cursor, ''), coalesce(last_error, '') FROM sync_sources")
        #expect(!"\(stored)".contains(secret))
    }
}
