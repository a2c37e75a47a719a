import CatalogTestSupport
import Foundation
import LandmarkCatalog
import Testing

/// README's "Use it from Swift" snippet is the body of `snippet()` below, between the markers: it compiles
/// and runs here, and `sameAsReadme()` checks that the README shows exactly those lines.
@Suite("README: Use it from Swift")
struct ReadmeSwiftSnippetTests {
    @Test("the README's Swift snippet runs")
    func snippet() async throws {
        let databasePath = Support.temporaryDatabase()
        let seedsPath = Support.root.appending(path: "Seeds/landmarkData.json").path
        // README-BEGIN
        let catalog = try Catalog(path: databasePath)
        try await catalog.importLandmarks(from: .file(seedsPath))
        let pages = try await catalog.featured()  // the carousel's pages, page 0 first
        try await catalog.setPosition(user: "ann", to: .landmark(pages[2].id))
        for try await position in catalog.observe({ try await $0.position(user: "ann") }) {
            assert(position?.currentPage == 2)  // now, then after every commit that changes it
            break
        }
        let model = await CarouselModel(catalog: catalog, user: "ann")  // PageView(currentPage: $model.currentPage)
        await model.flush()
        // README-END
        #expect(pages.count == 4)
        #expect(try await catalog.position(user: "ann")?.currentPage == 2)
    }

    @Test("README shows the snippet line for line")
    func sameAsReadme() throws {
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let body = try #require(source.components(separatedBy: "// README-BEGIN\n").last?.components(separatedBy: "        // README-END").first)
        let code = body.split(separator: "\n", omittingEmptySubsequences: false).map { $0.dropFirst(8) }.joined(separator: "\n")
        let readme = try String(contentsOf: Support.root.appending(path: "README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Use it from Swift").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```swift\n").dropFirst().first?.components(separatedBy: "```").first)
        #expect(block == code)
    }
}
