import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// What a pushed erasure costs the hub (docs/hub.md): one lookup in the index on `catalog_user_hash(user_id)`
/// (hub migration 7) under the push lock, not a pass over every position.
@Suite("The cost of an erasure on the hub", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"), .serialized)
struct HubErasureCostTests {
    @Test("at 100k positions each pushed erasure deletes through the index on the hash (EXPLAIN), and 100 land")
    func erasuresAt100k() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name) = try HubSupport.makeHub(server)
        let edge = try box.seededDatabase("edge.sqlite")
        try #require(try box.run(["sync", "--quiet", uri], db: edge).status == 0)
        let old = Int64(Date().timeIntervalSince1970 * 1000) - 120_000
        try HubSupport.connect(server, name).execute(
            sql: """
                INSERT INTO positions SELECT 'user-' || lpad(i::text, 7, '0'), 1, NULL, $1, 0, 'n-src', false, nextval('hub_change_seq')
                FROM generate_series(0, 99999) AS i
                """, [.integer(old)])
        try HubSupport.connect(server, name).execute(sql: "ANALYZE positions")
        let plan = try HubSupport.connect(server, name).execute(
            sql: "EXPLAIN " + HubSQL.eraseUser, [.text(ErasureRule.userHash("user-0000007")), .integer(old), .integer(0), .text("n")])
        let text = (0..<plan.rowCount).compactMap { plan.text($0, 0) }.joined(separator: "\n")
        #expect(text.contains("Index Scan using positions_user_hash"), "\(text)")
        // The edge holds them too; then it erases 100 of those users (merged from a file, as a batch of
        // deletion requests: found through its own index) and pushes.
        try #require(try box.run(["sync", "--quiet", uri], db: edge).status == 0)
        let at = Timestamp.format(milliseconds: old + 60_000)
        let records = (0..<100).map { i in
            #"{"userHash":"\#(ErasureRule.userHash("user-" + String(format: "%07d", i * 997)))","updatedAt":"\#(at)","counter":0,"node":"n-e"}"#
        }
        let file = try box.write(
            #"{"format":"landmark-catalog-snapshot","version":1,"erasures":[\#(records.joined(separator: ","))]}"#, to: "erasures.json")
        #expect(try box.run(["sync", "--quiet", file], db: edge).status == 0)
        #expect(try dumpRows(edge, sql: "SELECT count(*) FROM positions WHERE user_id LIKE 'user-%'").first?.first == .integer(99_900))
        let pushed = try box.run(["sync", "--quiet", uri], db: edge)
        #expect(pushed.status == 0, "\(pushed)")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_erasures") == "100")
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions WHERE user_id LIKE 'user-%'") == "99900")
    }
}
