import Foundation
import Testing

@testable import LandmarkCatalog

/// The core library an app links (docs/architecture.md): SQLite and libcrypto, never libpq or libcurl.
@Suite("Architecture: the core library links neither libpq nor libcurl")
struct ArchitectureTests {
    static var example: URL { Support.catalogBinary.deletingLastPathComponent().appending(path: "catalog-featured-example") }

    @Test("a program on the LandmarkCatalog product alone needs neither libpq nor libcurl (ldd), and reads a catalog")
    func coreLinksNoNetworkLibraries() throws {
        let ldd = try runProcess(URL(fileURLWithPath: "/usr/bin/ldd"), [Self.example.path])
        #expect(ldd.status == 0, "\(ldd.stderr)")
        #expect(ldd.stdout.contains("libsqlite3"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libpq"), "\(ldd.stdout)")
        #expect(!ldd.stdout.contains("libcurl"), "\(ldd.stdout)")
        // The `catalog` binary, which links LandmarkCatalogSync too, has both: the check can fail.
        let full = try runProcess(URL(fileURLWithPath: "/usr/bin/ldd"), [Support.catalogBinary.path])
        #expect(full.stdout.contains("libpq") && full.stdout.contains("libcurl"), "\(full.stdout)")
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path], db: db).status == 0)
        let listed = try runProcess(Self.example, [db])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.split(separator: "\n").count == (try featuredIDs(db)).count)
        #expect(listed.stdout.hasPrefix("0\t"), "\(listed.stdout)")
    }
}
