// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import Testing

    @testable import LandmarkCatalog
    @testable import LandmarkCatalogSync

    /// Stores and files of the snapshot-log tests: a store per node, a log's manifest, a file's hash and time.
    package enum LogFixtures {
        package static func store(_ dir: URL, _ name: String, clock: ManualClock = ManualClock(testNow)) throws -> CatalogStore {
            let store = try CatalogStore.open(path: dir.appending(path: "\(name).sqlite").path, wallClock: clock)
            try store.setNodeID("node-\(name)")
            return store
        }

        package static func manifest(_ log: URL) throws -> LogManifest {
            let path = log.appending(path: "manifest.json").path
            return try LogManifest.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path))), source: path)
        }

        package static func mtime(_ url: URL) throws -> timespec {
            var info = stat()
            #expect(stat(url.path, &info) == 0)
            return info.st_mtim
        }

        package static func sha256(_ url: URL) throws -> String { SHA256.hex(SHA256.hash(Array(try Data(contentsOf: url)))) }
    }
#endif
