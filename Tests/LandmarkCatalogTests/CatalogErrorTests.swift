import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// `CatalogError` as an app meets it (docs/swift-library.md, "Errors"): a `LocalizedError` whose
/// `reason` says what happened, so an app (and `CarouselModel`) switches on it instead of the message.
@Suite("CatalogError reasons")
struct CatalogErrorTests {
    /// A catalog on a fresh database with landmarks 1001, 1004 and 1007 featured (pages 0, 1, 2).
    static func catalog(featured: Set<Int64> = [1001, 1004, 1007]) async throws -> (Catalog, String) {
        let db = Support.temporaryDatabase()
        let catalog = try Catalog(path: db)
        try await catalog.importLandmarks(from: .file(try landmarkFile(featured: featured)))
        return (catalog, db)
    }

    /// The `CatalogError` `body` throws.
    static func caught(_ body: () async throws -> Void) async -> CatalogError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? CatalogError
        }
    }

    @Test("a page out of range and a landmark that is not featured: kind 64, each with its own reason")
    func positionReasons() async throws {
        let (catalog, _) = try await Self.catalog()
        let outOfRange = try #require(await Self.caught { _ = try await catalog.setPosition(user: "ann", to: .page(3)) })
        #expect(outOfRange.kind == .usage && outOfRange.reason == .pageOutOfRange)
        let negative = try #require(await Self.caught { _ = try await catalog.setPosition(user: "ann", to: .page(-1)) })
        #expect(negative.reason == .pageOutOfRange)
        let notFeatured = try #require(await Self.caught { _ = try await catalog.setPosition(user: "ann", to: .landmark(1002)) })
        #expect(notFeatured.kind == .usage && notFeatured.reason == .notFeatured)
        #expect(try await catalog.position(user: "ann") == nil)

        let (empty, _) = try await Self.catalog(featured: [])
        let noPages = try #require(await Self.caught { _ = try await empty.setPosition(user: "ann", to: .page(0)) })
        #expect(noPages.reason == .pageOutOfRange)
    }

    @Test("a bad user id is .invalidUser", arguments: ["", "   ", String(repeating: "x", count: 257), "a\u{7}b", "a\u{FFFD}"])
    func invalidUser(user: String) async throws {
        let (catalog, _) = try await Self.catalog()
        let set = try #require(await Self.caught { _ = try await catalog.setPosition(user: user, to: .page(0)) })
        #expect(set.kind == .usage && set.reason == .invalidUser)
        let read = try #require(await Self.caught { _ = try await catalog.position(user: user) })
        #expect(read.reason == .invalidUser)
    }

    @Test("a closed catalog is .closed for reads, writes and observations; a missing database is .databaseMissing")
    func closedAndMissing() async throws {
        let (catalog, db) = try await Self.catalog()
        let observation = catalog.observe { try await $0.featured() }
        catalog.close()
        #expect(await Self.caught { _ = try await catalog.featured() }?.reason == .closed)
        #expect(await Self.caught { _ = try await catalog.setPosition(user: "ann", to: .page(0)) }?.reason == .closed)
        let observed = await Self.caught {
            for try await _ in observation {}
        }
        #expect(observed?.reason == .closed)

        let missing = try #require(await Self.caught { _ = try Catalog(path: db + ".nope", access: .read) })
        #expect(missing.kind == .noInput && missing.reason == .databaseMissing)
    }

    @Test("SQLite's busy and another sync's lock are .busy and .syncInProgress (75); databaseBusy is reason == .busy")
    func busyAndLocked() throws {
        var busy = CatalogError(SQLiteError(code: .busy, message: "database is locked"), path: "/tmp/x.sqlite")
        #expect(busy.kind == .tempFail && busy.reason == .busy && busy.databaseBusy)
        busy.databaseBusy = false
        #expect(busy.reason == .temporaryFailure)
        #expect(CatalogError(SQLiteError(code: .full, message: "full"), path: "p").reason == .ioError)

        let db = Support.temporaryDatabase()
        _ = try CatalogStore.open(path: db)
        let held = try SyncLock.acquire(databasePath: db, now: 0)
        defer { withExtendedLifetime(held) {} }
        #expect(throws: CatalogError.self) { _ = try SyncLock.acquire(databasePath: db, now: 0) }
        do {
            _ = try SyncLock.acquire(databasePath: db, now: 0)
        } catch let error as CatalogError {
            #expect(error.kind == .tempFail && error.reason == .syncInProgress && !error.databaseBusy)
        }
    }

    @Test(
        "an error without a reason gets its kind's general one",
        arguments: [
            (CatalogError.Kind.usage, CatalogError.Reason.usage), (.dataInvalid, .invalidData), (.noInput, .missingInput),
            (.unavailable, .unavailable), (.software, .internalError), (.cantCreate, .cannotWrite), (.ioError, .ioError),
            (.tempFail, .temporaryFailure), (.incompatible, .incompatible), (.untrusted, .untrusted),
        ])
    func generalReasons(kind: CatalogError.Kind, reason: CatalogError.Reason) {
        #expect(CatalogError(kind, "x").reason == reason)
        #expect(CatalogError(kind, "x", reason: .offline).reason == .offline)
        #expect(CatalogError(kind, "x").exitStatus == kind.rawValue)
    }

    @Test("LocalizedError: localizedDescription is the message, recoverySuggestion the hint")
    func localized() async throws {
        let (catalog, _) = try await Self.catalog()
        let error = try #require(await Self.caught { _ = try await catalog.setPosition(user: "ann", to: .landmark(1002)) })
        let bridged: any Error = error
        #expect(bridged.localizedDescription == "landmark 1002 is not featured, so it is on no page")
        #expect((bridged as? any LocalizedError)?.recoverySuggestion == "featured: 1001, 1004, 1007")
        #expect(error.errorDescription == error.message && error.description == error.message)
        #expect(CatalogError.Reason.pageOutOfRange.rawValue == "pageOutOfRange")
        #expect(CatalogError.Reason(rawValue: "offline") == .offline)
    }

    @Test("CarouselModel: an invalid user id is published once and not retried")
    @MainActor
    func modelInvalidUser() async throws {
        let (catalog, _) = try await Self.catalog()
        let model = CarouselModel(catalog: catalog, user: "a\u{7}b")
        #expect(await CatalogLibraryTests.eventually { model.lastError != nil })
        #expect((model.lastError as? CatalogError)?.reason == .invalidUser)
        #expect(!model.isLoaded)
    }

    /// The model's write names the landmark on the page; when that landmark stopped being featured before
    /// the write went out, it stores the page instead (the fallback keyed on `.notFeatured`).
    @Test("CarouselModel: a page whose landmark stops being featured before the write is stored as the page")
    @MainActor
    func modelNotFeaturedFallback() async throws {
        let (catalog, _) = try await Self.catalog()
        let without1007 = try landmarkFile(featured: [1001, 1002, 1004])
        // A window far longer than the test: a change after the first write is held until `flush()`.
        let held = CarouselModel.Configuration(coalescingWindow: .seconds(600), maximumWriteDelay: .seconds(600))
        let model = CarouselModel(catalog: catalog, user: "ann", configuration: held)
        #expect(await CatalogLibraryTests.eventually { model.pageCount == 3 })
        model.currentPage = 1  // the first change after a quiet moment: written at once
        await model.flush()
        model.currentPage = 2  // landmark 1007; held, then written by flush() behind the import
        try await catalog.importLandmarks(from: .file(without1007))
        await model.flush()
        let stored = try #require(try await catalog.position(user: "ann"))
        #expect(stored.storedPage == 2 && stored.storedLandmarkID == 1004)
        #expect(model.lastError == nil)
    }
}
