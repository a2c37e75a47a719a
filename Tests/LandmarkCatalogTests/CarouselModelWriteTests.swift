import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// When `CarouselModel` writes `currentPage` (docs/swift-library.md §CarouselModel): the first change after a
/// quiet moment at once, later ones coalesced to the last.
@Suite("CarouselModel writes")
@MainActor
struct CarouselModelWriteTests {
    /// `user`'s stored page, read until it is `page` or `seconds` of wall time have passed.
    static func storedPage(_ catalog: Catalog, user: String, becomes page: Int, within seconds: Int) async throws -> Int? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            let stored = try await catalog.position(user: user)?.currentPage
            if stored == page || ContinuousClock.now > deadline { return stored }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    @Test("the first change is stored at once; changes within the window are held until flush(), the last one stored")
    func leadingEdge() async throws {
        let (catalog, _) = try await CatalogLibraryTests.seededCatalog()
        // A 600 s window: a change that waited for it would not be stored within this test's bounds.
        let configuration = CarouselModel.Configuration(coalescingWindow: .seconds(600), maximumWriteDelay: .seconds(1200))
        let model = CarouselModel(catalog: catalog, user: "u-1", configuration: configuration)
        #expect(await CatalogLibraryTests.eventually { model.isLoaded })
        let sequence = try await catalog.status().changeSequence

        model.currentPage = 2
        #expect(try await Self.storedPage(catalog, user: "u-1", becomes: 2, within: 60) == 2)

        // Within the window after that write: held, the last one kept.
        model.currentPage = 3
        model.currentPage = 1
        #expect(model.currentPage == 1)
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await catalog.position(user: "u-1")?.currentPage == 2)
        await model.flush()
        #expect(try await catalog.position(user: "u-1")?.currentPage == 1)
        #expect(try await catalog.status().changeSequence - sequence == 2)
        #expect(model.lastError == nil)
        model.stop()
    }

    @Test("a burst with the default window is two writes, the first page at once and the last after the window")
    func burst() async throws {
        let (catalog, _) = try await CatalogLibraryTests.seededCatalog()
        let model = CarouselModel(catalog: catalog, user: "u-1")
        #expect(await CatalogLibraryTests.eventually { model.isLoaded })
        let sequence = try await catalog.status().changeSequence
        // 30 swipes with no suspension between them: all within 250 ms of the first write.
        for i in 1...30 { model.currentPage = i % 4 }
        let last = 30 % 4
        // Stored without a flush(): the trailing write when the window after the last change ends.
        #expect(try await Self.storedPage(catalog, user: "u-1", becomes: last, within: 60) == last)
        #expect(try await catalog.status().changeSequence - sequence == 2)
        let stored = try #require(try await catalog.position(user: "u-1"))
        #expect(stored.landmarkID == model.pages[last].id)
        model.stop()
    }
}
