import CatalogTestSupport
import Foundation
import Testing

@testable import CatalogCLI
@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

@Suite("CLI")
struct CLITests {
    @Test("a misspelt command suggests the nearest one and exits 64")
    func suggestsCommand() {
        let result = runCLI(["featrued"], db: Support.temporaryDatabase())
        #expect(result.status == 64)
        #expect(result.stdout == "")
        #expect(result.stderr.hasPrefix("catalog: error: unknown command 'featrued'. Did you mean 'featured'?\nUsage: catalog"))
    }

    @Test("a misspelt option suggests the nearest one and exits 64")
    func suggestsOption() {
        let result = runCLI(["featured", "--jsn"], db: Support.temporaryDatabase())
        #expect(result.status == 64)
        #expect(result.stderr.contains("unknown option '--jsn'. Did you mean '--json'?"))
        #expect(result.stderr.contains("See 'catalog featured --help'."))
    }

    @Test(
        "usage errors exit 64",
        arguments: [
            ["import"], ["import", "a.json", "b.json"], ["featured", "--db"], [], ["import", "--json=yes", "x"],
        ])
    func usageErrors(_ arguments: [String]) {
        #expect(runCLI(arguments).status == 64)
    }

    /// One reading of a command line: what it says of the diagnostics' format and limit.
    struct ReadingCase: Sendable, CustomStringConvertible {
        var arguments: [String]
        var parses: Bool
        var logFormat: String?
        var limit: Int
        var description: String { arguments.joined(separator: " ") }
    }

    @Test(
        "the command line is read once: --log-format and --max-diagnostics come from the parser, also after a usage error",
        arguments: [
            ReadingCase(arguments: ["featured"], parses: true, logFormat: nil, limit: 20),
            ReadingCase(
                arguments: ["featured", "--json", "--max-diagnostics", "5", "--log-format", "json"], parses: true, logFormat: "json", limit: 5),
            ReadingCase(arguments: ["help", "featrued", "--log-format", "json", "--max-diagnostics=3"], parses: false, logFormat: "json", limit: 3),
            ReadingCase(arguments: ["help", "--log-format", "json"], parses: false, logFormat: "json", limit: 20),
            ReadingCase(arguments: ["sync", "--bogus", "--max-diagnostics", "0"], parses: false, logFormat: nil, limit: 0),
            ReadingCase(arguments: ["featured", "--page", "--log-format", "json"], parses: false, logFormat: "json", limit: 20),
            ReadingCase(arguments: ["--log-format=json", "--log-format", "text", "featured"], parses: false, logFormat: "json", limit: 20),
            ReadingCase(arguments: ["import", "--", "--log-format", "json"], parses: false, logFormat: nil, limit: 20),
        ])
    func readOnce(_ c: ReadingCase) {
        let reading = Parser.read(c.arguments, root: CatalogCLI.rootCommand)
        #expect(((try? reading.outcome.get()) != nil) == c.parses)
        #expect(reading.logFormat == c.logFormat)
        #expect(reading.diagnosticLimit == c.limit)
    }

    @Test("help comes from the declarations: catalog --help, help COMMAND, COMMAND --help")
    func help() {
        let top = runCLI(["--help"])
        #expect(top.status == 0)
        #expect(top.stdout.contains("USAGE: catalog [--db PATH] <command>"))
        #expect(top.stdout.contains("SUBCOMMANDS:"))
        #expect(top.stdout.contains("  import                  Validate a landmarkData.json file"))
        #expect(top.stdout.contains("EXIT STATUS:"))
        let viaHelp = runCLI(["help", "import"])
        let viaFlag = runCLI(["import", "--help"])
        #expect(viaHelp.status == 0)
        #expect(viaHelp.stdout == viaFlag.stdout)
        #expect(viaFlag.stdout.contains("USAGE: catalog [--db PATH] import [--strict] [--prune] [--dry-run] [--json] [--quiet] <file>"))
        #expect(viaFlag.stdout.contains("  -n, --dry-run           Validate and report the counts; write nothing."))
    }

    @Test("--version prints the version and exits 0")
    func version() {
        let result = runCLI(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == "catalog \(CatalogCLI.version)\n")
    }

    @Test("the database path: --db, then CATALOG_DB, then XDG_DATA_HOME, then HOME")
    func databasePath() {
        #expect(CatalogFiles.defaultPath(environment: ["CATALOG_DB": "/a/b.sqlite", "XDG_DATA_HOME": "/x"]) == "/a/b.sqlite")
        #expect(CatalogFiles.defaultPath(environment: ["XDG_DATA_HOME": "/x", "HOME": "/h"]) == "/x/landmark-catalog/catalog.sqlite")
        #expect(
            CatalogFiles.defaultPath(environment: ["XDG_DATA_HOME": "relative", "HOME": "/h"]) == "/h/.local/share/landmark-catalog/catalog.sqlite")
        #expect(CatalogFiles.defaultPath(environment: ["HOME": "/h"]) == "/h/.local/share/landmark-catalog/catalog.sqlite")
        let dir = Support.temporaryDirectory()
        let result = runCLI(["init"], environment: ["XDG_DATA_HOME": dir.path])
        #expect(result.status == 0)
        #expect(FileManager.default.fileExists(atPath: dir.appending(path: "landmark-catalog/catalog.sqlite").path))
    }

    @Test("init --node sets a stable node id; a bad one is a usage error")
    func nodeID() throws {
        let db = Support.temporaryDatabase()
        let first = runCLI(["init"], db: db)
        #expect(first.stdout.hasPrefix(db + " node n-"))
        #expect(runCLI(["init"], db: db).stdout == first.stdout)
        #expect(runCLI(["init", "--node", "berlin-1"], db: db).stdout == "\(db) node berlin-1\n")
        #expect(runCLI(["init", "--node", "bad id"], db: db).status == 64)
        // Renaming a node that holds rows warns once, in a whole sentence (it ended ", " with no location).
        #expect(runCLI(["import", Support.fixture("valid.json")], db: db).status == 0)
        let renamed = runCLI(["init", "--node", "berlin-2"], db: db)
        #expect(
            renamed.stderr == "catalog: warning: node id changed from berlin-1 to berlin-2; rows already written keep berlin-1 in their stamps, "
                + "and a snapshot log this database published as berlin-1 is another node's now (publish to a new directory)\n", "\(renamed.stderr)")
    }

    @Test("the built binary copied alone into an empty directory creates and migrates a new database")
    func binaryAlone() throws {
        let binary = Support.catalogBinary
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build the package first: \(binary.path)")
        let dir = Support.temporaryDirectory()
        let copy = dir.appending(path: "catalog")
        try FileManager.default.copyItem(at: binary, to: copy)
        let imported = try runProcess(
            copy, ["--db", "new.sqlite", "import", Support.fixture("valid.json")], in: dir,
            environment: ["PATH": "/usr/bin:/bin"])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout == "5 records: 5 inserted, 0 updated, 0 unchanged, 0 pruned, 0 warnings\n")
        let status = try runProcess(copy, ["--db", "new.sqlite", "migrate", "--status"], in: dir)
        #expect(status.stdout.contains("create_landmarks"))
        let typo = try runProcess(copy, ["featrued"], in: dir, environment: ["HOME": dir.path])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("Did you mean 'featured'?"))
    }
}
