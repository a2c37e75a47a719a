import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

@Suite("Migrations")
struct MigrationTests {
    @Test("the embedded migrations are exactly the files in Migrations/")
    func embeddedMatchFiles() throws {
        let dir = Support.root.appending(path: "Migrations")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".sql") }.sorted()
        let embedded = try Migration.embedded()
        #expect(embedded.map(\.fileName) == names)
        for m in embedded {
            #expect(m.sql == (try String(contentsOf: dir.appending(path: m.fileName), encoding: .utf8)))
        }
        #expect(embedded.map(\.version) == Array(1...embedded.count))
    }

    @Test("opening applies every migration once, with a ledger row each")
    func ledger() throws {
        let db = Support.temporaryDatabase()
        _ = try CatalogStore.open(path: db)
        let store = try CatalogStore.open(path: db)  // idempotent
        let status = try store.migrationStatus()
        #expect(status.count == (try Migration.embedded()).count)
        #expect(status.allSatisfy { $0.appliedAt != nil })
        #expect(try store.connection.scalarInt(sql: "SELECT count(*) FROM schema_migrations") == Int64(status.count))
        #expect(try store.connection.scalarText(sql: "PRAGMA journal_mode") == "wal")
        #expect(try store.connection.scalarInt(sql: "PRAGMA foreign_keys") == 1)
    }

    @Test("migration 9 gives runs recorded before it their sources' bytes (the run ledger's bytes column)")
    func runBytesBackfill() throws {
        let db = Support.temporaryDatabase()
        let all = try Migration.embedded()
        let c = try Connection(path: db)
        try Migrator(migrations: all.filter { $0.version < 9 }).migrate(c)
        try c.executeScript(
            sql: """
                INSERT INTO sync_runs (id, started_at, finished_at, sources, outcome, exit_status) VALUES (1, 't', 't', '[]', 'ok', 0), (2, 't', 't', '[]', 'busy', 75);
                INSERT INTO sync_run_sources (run_id, position, source, outcome, exit_status, bytes) VALUES (1, 0, '/a', 'merged', 0, 1200), (1, 1, '/b', 'not-modified', 0, 34);
                """)
        try Migrator(migrations: all).migrate(c)
        #expect(try c.scalarInt(sql: "SELECT bytes FROM sync_runs WHERE id = 1") == 1234)
        #expect(try c.scalarInt(sql: "SELECT bytes FROM sync_runs WHERE id = 2") == 0)
        #expect(try CatalogMonitor(CatalogStore.open(path: db)).syncRuns(limit: 2).map { $0.details.map(\.value) } == [[0], [1234]])
    }

    @Test("a changed applied migration is refused (73)")
    func changedChecksum() throws {
        let db = Support.temporaryDatabase()
        _ = try CatalogStore.open(path: db)
        var edited = try Migration.embedded()
        edited[0].sql += "\n-- edited\n"
        #expect {
            _ = try CatalogStore.open(path: db, migrations: edited)
        } throws: { error in
            guard let e = error as? CatalogError else { return false }
            return e.exitStatus == 73 && e.message.contains("0001_create_landmarks.sql was changed after it was applied")
        }
    }

    @Test("a database newer than the binary is refused (73)")
    func newerDatabase() throws {
        let db = Support.temporaryDatabase()
        _ = try CatalogStore.open(path: db)
        let c = try Connection(path: db)
        try c.execute(sql: "INSERT INTO schema_migrations VALUES (9999, 'future', '00', '2030-01-01T00:00:00.000Z')")
        #expect {
            _ = try CatalogStore.open(path: db)
        } throws: { error in
            (error as? CatalogError)?.message.contains("migration 9999 applied, which this catalog binary does not know") == true
        }
    }

    @Test(
        "badly named migration files are errors, never skipped",
        arguments: [
            "1_create.sql", "0001-create.sql", "0001_Create.sql", "0001_.sql", "0001_create.txt", "abcd_create.sql",
        ])
    func badNames(_ name: String) {
        #expect {
            try Migration(fileName: name, sql: "SELECT 1;")
        } throws: { error in
            guard case .badFileName(let bad, _)? = error as? MigrationError else { return false }
            return bad == name && CatalogError(error as! MigrationError, path: "x").exitStatus == 70
        }
    }

    @Test("two migrations with one version are refused")
    func duplicateVersions() throws {
        let a = try Migration(fileName: "0001_a.sql", sql: "SELECT 1;")
        let b = try Migration(fileName: "0001_b.sql", sql: "SELECT 2;")
        #expect(throws: MigrationError.duplicateVersion(1, "0001_a.sql", "0001_b.sql")) { try Migrator(migrations: [a, b]) }
    }

    @Test("a failing migration names its file and rolls back with its ledger row")
    func failingMigration() throws {
        let db = Support.temporaryDatabase()
        let good = try Migration(fileName: "0001_good.sql", sql: "CREATE TABLE t (x INTEGER);")
        let bad = try Migration(fileName: "0002_bad.sql", sql: "CREATE TABLE u (y INTEGER);\nINSERT INTO nowhere VALUES (1);")
        let c = try Connection(path: db)
        #expect {
            try Migrator(migrations: [good, bad]).migrate(c)
        } throws: { error in
            let text = "\(error)"
            return text.contains("0002_bad.sql") && text.contains("no such table: nowhere") && text.contains("INSERT INTO nowhere")
        }
        #expect(try c.scalarInt(sql: "SELECT count(*) FROM schema_migrations") == 1)
        #expect(try c.scalarInt(sql: "SELECT count(*) FROM sqlite_master WHERE name = 'u'") == 0)
    }

    @Test("a file that is not a database is refused at open (73)")
    func notADatabase() throws {
        let dir = Support.temporaryDirectory()
        let path = dir.appending(path: "junk.sqlite").path
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        let result = runCLI(["featured"], db: path)
        #expect(result.status == 73)
        #expect(result.stderr.contains("junk.sqlite"))
    }

    @Test("migrate --status lists versions, checksums, applied times and states")
    func statusCommand() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["migrate"], db: db).status == 0)
        let result = runCLI(["migrate", "--status"], db: db)
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("VERSION  DESCRIPTION") == true)
        #expect(lines.dropFirst().first?.hasPrefix("0001     create_landmarks") == true)
        #expect(lines.dropFirst().allSatisfy { $0.hasSuffix("applied") })
        #expect(runCLI(["migrate", "--json"], db: db).status == 64)
    }

    @Test("migrate --status still lists a database it refuses to open, then exits 73")
    func statusOfRefusedDatabase() throws {
        let db = Support.temporaryDatabase()
        _ = try CatalogStore.open(path: db)
        let c = try Connection(path: db)
        try c.execute(sql: "UPDATE schema_migrations SET checksum = '0000000000000000' WHERE version = 1")
        try c.execute(sql: "INSERT INTO schema_migrations VALUES (9999, 'future', 'ff', '2030-01-01T00:00:00.000Z')")
        let result = runCLI(["migrate", "--status", "--json"], db: db)
        #expect(result.status == 73)
        #expect(
            result.stdout.contains(#""checksum":"0000000000000000","description":"create_landmarks","state":"changed","version":1"#),
            "\(result.stdout)")
        #expect(result.stdout.contains(#""description":"future","state":"unknown","version":9999"#))
        #expect(result.stderr.contains("migration 0001 was changed after it was applied"))
        #expect(runCLI(["featured"], db: db).status == 73)
    }
}

@Suite("Column maps agree with the schema")
struct ColumnMapTests {
    /// The columns of `C`'s table in a database migrated to the latest version, in table order.
    static func schemaColumns<C: TableColumn>(_: C.Type, in db: Connection) throws -> [String] {
        var names: [String] = []
        try db.forEachRow(sql: "SELECT name FROM pragma_table_info(?)", [.text(C.tableName)]) { names.append($0.text(0) ?? "") }
        return names
    }

    @Test("every column map names only columns its table has (the names derived from the cases in snake case)")
    func namesExist() throws {
        #expect(RunSourceColumn.runID.sqlName == "run_id" && QuarantineColumn.rowJSON.sqlName == "row_json")
        #expect(RunColumn.durationMs.sqlName == "duration_ms" && SourceColumn.lastSuccessAt.sqlName == "last_success_at")
        #expect(RunColumn.snakeCased("JSONValue") == "json_value" && RunColumn.snakeCased("seq") == "seq")
        let db = Support.temporaryDatabase()
        let store = try CatalogStore.open(path: db)
        func check<C: TableColumn>(_ type: C.Type, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let columns = try store.read { try Self.schemaColumns(type, in: store.connection) }
            #expect(!columns.isEmpty, "no table \(C.tableName)", sourceLocation: sourceLocation)
            for c in C.allCases { #expect(columns.contains(c.sqlName), "\(C.tableName) has no column \(c.sqlName)", sourceLocation: sourceLocation) }
        }
        try check(LandmarkColumn.self)
        try check(PositionColumn.self)
        try check(RunColumn.self)
        try check(RunSourceColumn.self)
        try check(SourceColumn.self)
        try check(RemoteColumn.self)
        try check(QuarantineColumn.self)
        try check(ConflictColumn.self)
        try check(PublicationColumn.self)
        try check(MigrationColumn.self)
        // The landmarks and positions maps name every column of their tables, in order, but the row hash
        // (h0…h3, docs/repair.md §1), which the table modules write and read by name.
        let hash = ["h0", "h1", "h2", "h3"]
        #expect(
            try store.read { try Self.schemaColumns(LandmarkColumn.self, in: store.connection) } == LandmarkColumn.allCases.map(\.sqlName) + hash)
        #expect(
            try store.read { try Self.schemaColumns(PositionColumn.self, in: store.connection) } == PositionColumn.allCases.map(\.sqlName) + hash)
    }
}
