import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// The snapshot log served by real nginx with the configuration in `contrib/nginx/catalog-log.conf`
/// (skipped, saying so, when nginx is not installed: `apt-get install nginx-light`; `.ci/run` installs it).
@Suite("Interop: snapshot log over real nginx", .serialized, .enabled(if: NginxServer.available, "nginx is not installed"))
struct NginxInteropTests {
    @Test("200 then 304 on the manifest, gzip on, only the new delta fetched (counted in nginx's access log)")
    func servedLog() throws {
        let nginx = try NginxServer()
        let dir = Support.temporaryDirectory()
        let a = try LogFixtures.store(dir, "a")
        let b = try LogFixtures.store(dir, "b")
        _ = try Importer(a).importLandmarks(from: .file(Support.fixture("valid.json")))
        let first = try LogPublisher(a).publishLog(to: nginx.logDirectory.path).manifest
        let manifestURL = nginx.url("manifest.json")
        let r1 = try SyncRunner(store: b).sync(sources: [manifestURL])
        #expect(r1.exitStatus == 0, "\(r1.sources.compactMap(\.error))")
        #expect(r1.counts.landmarksApplied == 5)
        var log = try nginx.requests(atLeast: 2)
        try #require(log.count >= 2, "nginx logged \(log.count) requests")
        #expect(log.map(\.uri) == ["/catalog/manifest.json", "/catalog/\(first.base.name)"])
        #expect(log.allSatisfy { $0.status == 200 })
        // The base is JSON over 256 bytes: sent gzipped, and smaller on the wire than on disk.
        #expect(log[1].encoding == "gzip")
        #expect(log[1].bytes < Int(first.base.bytes))

        // Nothing new: a conditional GET of the manifest answered 304, nothing else fetched.
        sleep(1)  // a Last-Modified within a second of Date is weak; the ETag is used either way
        let r2 = try SyncRunner(store: b).sync(sources: [manifestURL])
        #expect(r2.sources[0].outcome == .notModified)
        log = try nginx.requests(atLeast: 3)
        #expect(log.count == 3)
        #expect(log[2].uri == "/catalog/manifest.json" && log[2].status == 304 && log[2].bytes == 0)

        // One change: the manifest (200) and exactly that delta.
        try Positions(a).setPosition(user: "ann", to: .page(1))
        let second = try LogPublisher(a).publishLog(to: nginx.logDirectory.path).manifest
        let r3 = try SyncRunner(store: b).sync(sources: [manifestURL])
        #expect(r3.counts.positionsApplied == 1 && r3.counts.seen == 1)
        log = try nginx.requests(atLeast: 5)
        #expect(log.dropFirst(3).map(\.uri) == ["/catalog/manifest.json", "/catalog/\(second.deltas.last!.name)"])
        #expect(log.dropFirst(3).map(\.status) == [200, 200])
        let fetched = log.dropFirst(3).reduce(0) { $0 + $1.bytes }
        #expect(fetched < 16_384, "one change cost \(fetched) bytes on the wire")
        #expect(try StateDigest(of: a) == StateDigest(of: b))
        // The lock file is not served.
        #expect(runCLI(["sync", nginx.url(".catalog-publish.lock")], db: b.path).status == 69)
    }
}
