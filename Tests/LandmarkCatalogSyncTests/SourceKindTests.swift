import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// A source kind declares itself (docs/architecture.md §4, §5.1): a kind the core has never heard of,
/// registered from here, is parsed, synced, stored, saved as a remote and listed in the hint with no edit
/// in the core; and the kinds that ship keep the keys and kind names their stored rows carry.
@Suite("Source kinds declare themselves")
struct SourceKindTests {
    /// `toy:///PATH`: the snapshot file at PATH, its size and modification time as its cursor.
    ///
    /// It pushes nothing and is fetched on the store's thread; only what the protocol asks is written here.
    struct ToySourceKind: SourceKind {
        var name: String { "toy" }
        var schemes: [String] { ["toy"] }

        func locate(_ text: String) throws -> ClaimedSource {
            let path = String(text.dropFirst("toy://".count))
            guard path.hasPrefix("/") else { throw CatalogError(.usage, "a toy SOURCE is toy:///PATH, not \(text)") }
            return claim(path, key: "toy://" + path)
        }

        func makeSource(_ claim: ClaimedSource) -> any SyncSource { ToySource(claim) }
    }

    final class ToySource: SyncSource {
        let locator: SourceLocator
        let path: String
        private(set) var nextCursor: SourceCursor?
        private var feed: SnapshotFeed?
        var bytesFetched: Int64 { feed?.bytesRead ?? 0 }

        init(_ claim: ClaimedSource) {
            (locator, path) = (.claimed(claim), claim.text)
        }

        func fetch(since cursor: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]? {
            try context.requireUnsigned("a toy snapshot", source: locator.description)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let size = (attributes[.size] as? NSNumber)?.int64Value ?? -1
            let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            nextCursor = SourceCursor(["seen": "\(size)@\(modified)"])
            if cursor == nextCursor { return nil }
            let feed = SnapshotFeed(fd: try CatalogFiles.openForReading(path), name: locator.description, owned: true)
            self.feed = feed
            return [feed]
        }
    }

    /// A kind with the capabilities it is given, never registered: its claims are made by hand.
    struct CapableKind: SourceKind {
        var capabilities: SourceCapabilities
        var name: String { "capable" }
        var schemes: [String] { ["capable"] }
        func locate(_ text: String) throws -> ClaimedSource { claim(text, key: text) }
        func makeSource(_ claim: ClaimedSource) -> any SyncSource { ToySource(claim) }
    }

    /// A peer's database (the seeds, and `bo` on page 2) and its snapshot in a file of its own.
    static func peerSnapshot() throws -> (peer: String, file: String) {
        let peer = Support.temporaryDatabase()
        #expect(runCLI(["import", Support.root.appending(path: "Seeds/landmarkData.json").path], db: peer).status == 0)
        #expect(runCLI(["position", "set", "--user", "bo", "--page", "2"], db: peer).status == 0)
        let file = Support.temporaryDirectory().appending(path: "peer.json").path
        #expect(runCLI(["export", "--output", file], db: peer).status == 0)
        return (peer, file)
    }

    @Test("a toy:// kind registered by a program syncs end to end: parsed, merged, stored under its key, saved as a remote")
    func toyKindEndToEnd() throws {
        _ = Support.networkSources
        let (peer, file) = try Self.peerSnapshot()
        let source = "toy://" + file
        let db = Support.temporaryDatabase()
        #expect(runCLI(["init"], db: db).status == 0)

        // Not registered yet: an unsupported scheme, as any other.
        if SourceKinds.kind(claiming: "toy") == nil {
            let before = runCLI(["sync", source], db: db)
            #expect(before.status == 64 && before.stderr.contains("unsupported scheme 'toy://'"), "\(before)")
            #expect(!before.stderr.contains("toy://, "), "\(before.stderr)")
        }
        SourceKinds.register(ToySourceKind())

        let first = runCLI(["sync", source], db: db)
        #expect(first.status == 0, "\(first)")
        #expect(try replicatedLandmarks(db) == replicatedLandmarks(peer) && replicatedLandmarks(db).count == 16)
        #expect(try dumpRows(db, sql: "SELECT user_id, page FROM positions") == [[.text("bo"), .integer(2)]])
        // Its cursor and ledger rows under the key and noun it declared.
        #expect(
            try dumpRows(db, sql: "SELECT source, kind, last_status FROM sync_sources")
                == [[.text("toy://" + file), .text("toy"), .integer(0)]])
        #expect(try dumpRows(db, sql: "SELECT source, outcome FROM sync_run_sources") == [[.text("toy://" + file), .text("merged")]])

        // The stored cursor is handed back: nothing changed, nothing read.
        let again = runCLI(["sync", "--json", source], db: db)
        #expect(again.status == 0 && again.stdout.contains(#""outcome":"not-modified""#), "\(again)")

        // A remote of it: saved, synced with no SOURCE, listed in the hint; a token file refused, as the
        // kind takes no bearer token.
        #expect(runCLI(["remote", "add", "toy", source], db: db).status == 0)
        #expect(runCLI(["sync", "--quiet"], db: db).status == 0)
        let token = Support.temporaryDirectory().appending(path: "token").path
        try "x.y.z\n".write(toFile: token, atomically: true, encoding: .utf8)
        let withToken = runCLI(["remote", "add", "toy2", source, "--token-file", token], db: db)
        #expect(withToken.status == 64 && withToken.stderr.contains("--token-file goes with"), "\(withToken)")
        let ftp = runCLI(["sync", "ftp://x/y"], db: db)
        #expect(ftp.status == 64 && ftp.stderr.contains("toy://, - or a saved remote's name"), "\(ftp.stderr)")
        // The kind's own parse: a malformed SOURCE of it is 64 with its message.
        let relative = runCLI(["sync", "toy://peer.json"], db: db)
        #expect(relative.status == 64 && relative.stderr.contains("a toy SOURCE is toy:///PATH"), "\(relative)")
    }

    @Test(
        "the kinds that ship keep the keys and kind names their stored cursors and ledger rows carry",
        arguments: [
            ("http://u:pw@h.example/log/", "http://u:***@h.example/log/manifest.json", "http"),
            ("https://h.example/a.json?password=pw", "https://h.example/a.json?password=***", "http"),
            ("postgresql://u:pw@h:5433/db?sslmode=require", "postgresql://u:***@h:5433/db?sslmode=require", "hub"),
            ("host=h dbname=d password=pw", "host=h dbname=d password=***", "hub"),
            ("catalog+https://h.example/v1/", "catalog+https://h.example/v1", "serve"),
            ("-", "<stdin>", "stdin"),
            ("/var/empty/not-there.json", "/var/empty/not-there.json", "file"),
        ])
    func storedKeys(text: String, key: String, kind: String) throws {
        _ = Support.networkSources
        let locator = try SourceLocator.parse(text)
        #expect(locator.description == key)
        #expect(locator.kindName == kind)
    }

    @Test(
        "the follower fetches detached, pushes to and listens to a source as its kind's capabilities say, each alone",
        arguments: [SourceCapabilities.fetchesDetached, .pushes, .notifies, []])
    func followerAsksTheKind(capabilities: SourceCapabilities) throws {
        let followed = Followed(.claimed(CapableKind(capabilities: capabilities).claim("capable://x", key: "capable://x")))
        #expect(followed.detached == capabilities.contains(.fetchesDetached))
        #expect(followed.pushes == capabilities.contains(.pushes))
        #expect(followed.listens == capabilities.contains(.notifies))
    }

    @Test("the follower, remote and the merger read a kind's declarations: capabilities, trust and words")
    func declarations() throws {
        _ = Support.networkSources
        let hub = try SourceLocator.parse("postgres://h/db")
        let serve = try SourceLocator.parse("catalog+https://h.example/v1")
        let http = try SourceLocator.parse("https://h.example/a.json")
        #expect(hub.capabilities == [.pushes, .notifies])
        #expect(serve.capabilities == [.fetchesDetached, .pushes, .notifies, .bearerToken])
        #expect(http.capabilities == [.fetchesDetached])
        #expect(try SourceLocator.parse("/tmp/a.json").capabilities == [])
        #expect(Followed(serve).detached && Followed(serve).pushes && Followed(serve).listens)
        #expect(!Followed(hub).detached && Followed(hub).pushes && Followed(hub).listens)
        #expect(Followed(http).detached && !Followed(http).pushes && !Followed(http).listens)
        #expect(hub.kind?.trustRefusal?.contains("not signed") == true && http.kind?.trustRefusal == nil)
        #expect(hub.kind?.invalidRows == "holds rows that are not valid" && serve.kind?.invalidRows == "is not a valid snapshot")
        // The publisher: a kind that takes pushes is synced with, anything else served from a directory.
        let db = Support.temporaryDatabase()
        #expect(runCLI(["init"], db: db).status == 0)
        let toHub = runCLI(["publish", "postgres://h/db"], db: db)
        #expect(toHub.status == 64 && toHub.stderr.contains("hint: a hub takes this database's changes when synced with"), "\(toHub)")
        let toHTTP = runCLI(["publish", "https://h.example/log"], db: db)
        #expect(toHTTP.status == 64 && toHTTP.stderr.contains("hint: publish into a directory"), "\(toHTTP)")
        // A program on the core alone registers no kind: the hint says where the others come from.
        #expect(
            SourceKinds.sourceForms([])
                == "a SOURCE is a path, file://, - or a saved remote's name; network sources need LandmarkCatalogSync and its NetworkSources.register()"
        )
        // The CLI's help lists every kind it registers, from their declarations.
        let help = runCLI(["sync", "--help"]).stdout
        for kind in NetworkSources.kinds { #expect(help.replacingOccurrences(of: "\n", with: " ").contains(kind.help), "\(kind.name)") }
    }
}
