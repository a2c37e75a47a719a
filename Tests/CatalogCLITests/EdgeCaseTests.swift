import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// Each test here is a bug found by trying the tool as a user would, with the input that broke it.
@Suite("Edge cases: devices, links, paths, ids and options a user trips over")
struct EdgeCaseTests {
    static func seeded() throws -> String {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        return db
    }

    @Test("export refuses to replace a device such as /dev/null (it replaced it with a file)")
    func exportToDevice() throws {
        let result = runCLI(["export", "--output", "/dev/null"], db: try Self.seeded())
        #expect(result.status == 73)
        #expect(result.stderr.contains("not a regular file, refusing to replace it, /dev/null"))
        var info = stat()
        #expect(stat("/dev/null", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR)
    }

    @Test("export writes through a symbolic link and keeps the file's mode")
    func exportThroughSymlink() throws {
        let dir = Support.temporaryDirectory()
        let real = dir.appending(path: "real.json").path
        let link = dir.appending(path: "link.json").path
        try "old".write(toFile: real, atomically: false, encoding: .utf8)
        chmod(real, 0o640)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "real.json")
        #expect(runCLI(["export", "--output", link], db: try Self.seeded()).status == 0)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "real.json")
        #expect(try String(contentsOfFile: real, encoding: .utf8).hasPrefix(#"{"format":"landmark-catalog-snapshot""#))
        var info = stat()
        stat(real, &info)
        #expect(info.st_mode & 0o777 == 0o640)
    }

    @Test("a one-character database path works (it crashed)")
    func shortPath() throws {
        let dir = Support.temporaryDirectory()
        let result = try runProcess(Support.catalogBinary, ["--db", "b", "init"], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.appending(path: "b").path))
        // A first import builds the database beside its path and syncs the directory: it trapped there too.
        let imported = try runProcess(Support.catalogBinary, ["--db", "c", "import", Support.fixture("valid.json")], in: dir)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try dumpRows(dir.appending(path: "c").path, sql: "SELECT count(*) FROM landmarks") == [[.integer(5)]])
        #expect(CatalogFiles.directory(of: "b") == "")
        #expect(CatalogFiles.directory(of: "/b") == "/")
        #expect(CatalogFiles.directory(of: "x/y/b") == "x/y")
    }

    @Test("a failed write to standard output (a full disk) is exit 74 (it was 0)")
    func fullDisk() throws {
        let db = try Self.seeded()
        let process = Process()
        process.executableURL = Support.catalogBinary
        process.arguments = ["--db", db, "export"]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/full")
        let err = Pipe()
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 74)
        #expect(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("cannot write standard output"))
    }

    @Test("another application's SQLite file is refused, not migrated (73)")
    func foreignDatabase() throws {
        let path = Support.temporaryDatabase()
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        sqlite.arguments = [path, "CREATE TABLE t (x)"]
        try sqlite.run()
        sqlite.waitUntilExit()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        for arguments in [["status"], ["featured"], ["migrate", "--status"], ["import", Support.fixture("valid.json")]] {
            let result = runCLI(arguments, db: path)
            #expect(result.status == 73, "\(arguments)")
            #expect(result.stderr.contains("not a catalog database"))
        }
        // Left byte-for-byte as it was (it was switched to WAL before).
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("a refused open closes its handle exactly once: no descriptor leaks (a throwing init used to close twice)")
    func refusedOpenClosesOnce() throws {
        let path = Support.temporaryDirectory().appending(path: "junk.sqlite").path
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        func openDescriptors() throws -> Int { try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count }
        _ = try? Connection(path: path)
        let before = try openDescriptors()
        for _ in 0..<50 { #expect(throws: SQLiteError.self) { _ = try Connection(path: path) } }
        #expect(try openDescriptors() <= before + 5)  // other tests run in parallel; 50 leaks would show
    }

    @Test("an empty --db is a usage error (it was an internal error)")
    func emptyPath() {
        let result = runCLI(["init"], db: "")
        #expect(result.status == 64)
        #expect(result.stderr.contains("the database path is empty"))
    }

    @Test("a quarantined row delivered again is kept and reported once")
    func quarantineOnce() throws {
        let db = Support.temporaryDatabase()
        let future = try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: "2099-01-01T00:00:00Z")]))
        let first = runCLI(["sync", future], db: db)
        // The peer rewrites the same file (an unchanged file is not read again: its cursor is its identity and mtime).
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(5)], ofItemAtPath: future)
        let second = runCLI(["sync", future], db: db)
        #expect(first.stderr.contains("quarantined position u"))
        #expect(second.status == 0)
        #expect(!second.stderr.contains("quarantined position u"))
        #expect(second.stdout.contains("1 quarantined"))
        #expect(try CatalogMonitor(CatalogStore.open(path: db)).status().quarantined == 1)
    }

    @Test("a quarantined row is applied from the quarantine once it is within the allowance, though its source sends nothing new")
    func quarantineReleased() throws {
        let db = Support.temporaryDatabase()
        let ahead = Timestamp.format(milliseconds: SystemClock().nowMilliseconds() + 3_600_000)  // an hour ahead
        let future = try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: ahead)]))
        #expect(runCLI(["sync", future], db: db).stdout.contains("1 quarantined"))
        #expect(try CatalogMonitor(CatalogStore.open(path: db)).status().quarantined == 1)
        // The file is unchanged (not read again); the row is released from the quarantine itself.
        let later = runCLI(["sync", "--max-drift", "7200", future], db: db)
        #expect(later.stdout.contains("1 held row released from quarantine (1 applied)"), "\(later.stdout)")
        #expect(try CatalogMonitor(CatalogStore.open(path: db)).status().quarantined == 0)
        #expect(try dumpPositions(db).count == 1)
    }

    @Test("a duplicate key inside coordinates is an error (it was accepted)")
    func duplicateCoordinate() throws {
        let file = try writeTemporary(#"[{"id":7,"name":"z","coordinates":{"latitude":1,"latitude":3,"longitude":2}}]"#)
        let db = Support.temporaryDatabase()
        let result = runCLI(["import", file], db: db)
        #expect(result.status == 65)
        #expect(result.stderr.contains("duplicate key 'latitude' in coordinates"))
        // Nothing written: the database this failed import created is not left behind either.
        #expect(!FileManager.default.fileExists(atPath: db))
    }

    @Test("past the error limit the count says 'more than' (it said 22)")
    func errorCount() throws {
        let records = (0..<30).map { #"{"id": "x\#($0)", "name": "", "coordinates": {"latitude": 1, "longitude": 2}}"# }
        let file = try writeTemporary("[" + records.joined(separator: ",") + "]")
        let result = runCLI(["import", file], db: Support.temporaryDatabase())
        #expect(result.status == 65)
        #expect(result.stderr.contains("more than 20 errors (the first 20 shown); nothing was imported"), "\(result.stderr)")
        #expect(result.stderr.components(separatedBy: "catalog: error: ").count - 1 == 21)
    }

    @Test("user ids with U+FFFD (invalid UTF-8) or only whitespace are refused", arguments: ["a\u{FFFD}b", " ", "\u{3000}"])
    func badUserIDs(_ user: String) throws {
        let db = try Self.seeded()
        let result = runCLI(["position", "set", "--user", user, "--page", "0"], db: db)
        #expect(result.status == 64)
        #expect(try dumpPositions(db).isEmpty)
    }

    @Test("a file URL naming another host is refused at remote add")
    func fileURLHost() throws {
        let result = runCLI(["remote", "add", "weird", "file://host/x.json"], db: Support.temporaryDatabase())
        #expect(result.status == 64)
        #expect(result.stderr.contains("file URL names another host 'host'"))
    }

    @Test("an option followed by another option has no value; '-' twice is refused")
    func usageCascades() throws {
        let missing = runCLI(["position", "set", "--user", "--page", "0"], db: Support.temporaryDatabase())
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("option '--user' needs a value"))
        let twice = runCLI(["sync", "-", "-"], db: Support.temporaryDatabase())
        #expect(twice.status == 64)
        #expect(twice.stderr.contains("'-' (standard input) can be given only once"))
    }

    @Test("snapshot version 0 and a node id with a space are refused like local ones")
    func snapshotChecks() throws {
        let zero = runCLI(["sync", try writeTemporary(snapshot(version: 0))], db: Support.temporaryDatabase())
        #expect(zero.status == 65)
        #expect(zero.stderr.contains("version must be 1 or more, found 0"))
        #expect(!zero.stderr.contains("missing \"version\""))
        let spaced = runCLI(
            ["sync", try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: "2026-11-29T01:00:00Z", node: "has space")]))],
            db: Support.temporaryDatabase())
        #expect(spaced.status == 65)
        #expect(spaced.stderr.contains("node must be 1–64 characters"))
    }

    @Test("a syntax error in a snapshot is not followed by 'missing format' noise")
    func noCascade() throws {
        let result = runCLI(
            ["sync", try writeTemporary(#"{"format": "landmark-catalog-snapshot", "version": 1, "positions": [}"#)],
            db: Support.temporaryDatabase())
        #expect(result.status == 65)
        #expect(!result.stderr.contains("missing"))
    }

    @Test("a saved remote's name is accepted as a SOURCE")
    func remoteNameAsSource() throws {
        let db = Support.temporaryDatabase()
        let source = try writeTemporary(snapshot(positions: [positionRow("u", page: 0, at: "2026-11-29T01:00:00Z")]))
        #expect(runCLI(["remote", "add", "peer-b", source], db: db).status == 0)
        let result = runCLI(["sync", "peer-b"], db: db)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try dumpPositions(db).count == 1)
    }

    @Test("--max-drift is bounded to a year (a huge one let a year-9999 stamp move the clock)")
    func driftBound() throws {
        let result = runCLI(["sync", "--max-drift", "999999999999", try writeTemporary(snapshot())], db: Support.temporaryDatabase())
        #expect(result.status == 64)
        #expect(result.stderr.contains("--max-drift needs a duration of at most 365d, got '999999999999'"))
    }

    @Test("an import while another writer holds the database exits 75 after the busy timeout, writing nothing")
    func busyImport() throws {
        let db = try Self.seeded()
        let before = try dumpLandmarks(db)
        let holder = try Connection(path: db)
        try holder.execute(sql: "BEGIN IMMEDIATE")
        let started = Date()
        let result = runCLI(["import", Support.fixture("valid-one-change.json")], db: db)
        try holder.execute(sql: "ROLLBACK")
        #expect(result.status == 75, "\(result.stderr)")
        #expect(result.stderr.contains("database is busy"))
        #expect(Date().timeIntervalSince(started) < 15)
        #expect(try dumpLandmarks(db) == before)
    }

    @Test("featured on an empty catalog is silent on stderr")
    func quietEmpty() {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["init"], db: db).status == 0)
        let result = runCLI(["featured"], db: db)
        #expect(result.status == 0)
        #expect(result.stdout == "no featured landmarks\n")
        #expect(result.stderr == "")
    }
}
