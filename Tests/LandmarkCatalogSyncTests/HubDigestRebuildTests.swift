import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// The hub's kept digest through a TRUNCATE and a data-only `pg_restore`, and its rebuild
/// (`catalog gc --hub URL --rebuild-digest`, docs/hub.md §9) on a real PostgreSQL hub.
@Suite("The hub's kept digest: TRUNCATE and its rebuild", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"), .serialized)
struct HubDigestRebuildTests {
    /// Runs the PostgreSQL client tool `tool` (`pg_dump`, `pg_restore`) against `server` as `postgres`.
    static func tool(_ server: PostgresServer, _ tool: String, _ arguments: [String]) throws {
        let bin = try #require(PostgresServer.binDirectory)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "\(bin)/\(tool)")
        process.arguments = ["-h", server.socketDirectory, "-p", "\(server.port)", "-U", "postgres"] + arguments
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let message = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "\(tool) exited \(process.terminationStatus): \(String(decoding: message, as: UTF8.self))")
    }

    @Test("a TRUNCATE of positions, then of both tables, resets their kept totals in its transaction: kept equals recomputed")
    func truncateResetsTotals() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, edge) = try HubRepairTests.pair(box, server, users: 300)
        let before = try HubRepairTests.check(uri)
        try #require(before.equal, "\(before)")
        let landmarks = Int64(try #require(try HubSupport.scalar(server, name, "SELECT count(*) FROM landmarks"))) ?? -1
        let positions = Int64(try #require(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions"))) ?? -1
        #expect(landmarks > 0 && positions >= 300 && before.kept.rows == landmarks + positions, "\(before)")

        let pg = try HubSupport.connect(server, name)
        try pg.execute(sql: "TRUNCATE positions")
        let positionsGone = try HubRepairTests.check(uri)
        #expect(positionsGone.equal, "\(positionsGone)")
        #expect(positionsGone.kept.rows == landmarks, "\(positionsGone)")

        try pg.execute(sql: "TRUNCATE landmarks, positions")
        let bothGone = try HubRepairTests.check(uri)
        #expect(bothGone.equal && bothGone.kept.rows == 0, "\(bothGone)")
        // The edge's check of the hub agrees.
        let verify = try box.run(["status", "--verify-digest"], db: edge)
        #expect(verify.status == 0, "\(verify)")
    }

    @Test(
        "a data-only pg_restore of landmarks, positions and hub_digest_totals doubles the kept totals: status --verify-digest exits 70 pointing at gc --rebuild-digest, which rebuilds them (a stale row's lanes too); then 0"
    )
    func dataOnlyRestoreIsRebuilt() throws {
        let server = try PostgresServer.running()
        let box = try Sandbox()
        let (uri, name, edge) = try HubRepairTests.pair(box, server, users: 600)
        let before = try HubRepairTests.check(uri)
        try #require(before.equal, "\(before)")

        // As an operator would: dump, empty the tables, restore their data only.
        let dump = box.path("hub.dump")
        try Self.tool(server, "pg_dump", ["-Fc", "-f", dump, name])
        try HubSupport.connect(server, name).execute(sql: "TRUNCATE positions, landmarks, hub_digest_totals")
        try Self.tool(
            server, "pg_restore", ["-d", name, "--data-only", "-t", "positions", "-t", "landmarks", "-t", "hub_digest_totals", dump])
        let doubled = try HubRepairTests.check(uri)
        #expect(doubled.recomputed == before.recomputed, "\(doubled)")
        #expect(doubled.kept.rows == 2 * before.kept.rows && !doubled.equal, "\(doubled)")
        // A row's lanes changed by hand (h0 moved, so the row trigger leaves them): stale.
        try HubSupport.connect(server, name).execute(sql: "UPDATE positions SET h0 = h0 + 1 WHERE user_id = 'hub-user-0003'")
        #expect(try HubRepairTests.check(uri).staleRows == 1)

        let verify = try box.run(["status", "--verify-digest"], db: edge)
        #expect(verify.status == 70, "\(verify)")
        #expect(verify.stderr.contains("catalog gc --hub ") && verify.stderr.contains(" --rebuild-digest"), "\(verify.stderr)")

        let usage = try box.run(["gc", "--rebuild-digest"], db: edge)
        #expect(usage.status == 64 && usage.stderr.contains("--rebuild-digest goes with --hub"), "\(usage)")

        let run = try box.run(["gc", "--hub", uri, "--rebuild-digest", "--json"], db: edge)
        try #require(run.status == 0, "\(run)")
        let report = try HubRepairTests.json(run.stdout)
        let landmarks = Int(try #require(try HubSupport.scalar(server, name, "SELECT count(*) FROM landmarks"))) ?? -1
        let positions = Int(try #require(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions"))) ?? -1
        #expect(
            report["landmarks"] as? Int == landmarks && report["positions"] as? Int == positions && report["relanedRows"] as? Int == 1, "\(report)")
        let after = try HubRepairTests.check(uri)
        #expect(after.equal && after.kept == before.kept, "\(after) \(before)")
        // One row per table, and nothing collected.
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM hub_digest_totals") == "2")
        #expect(try HubSupport.scalar(server, name, "SELECT value FROM hub_meta WHERE key = 'gc_horizon_ms'") == "0")
        let again = try box.run(["status", "--verify-digest"], db: edge)
        #expect(again.status == 0, "\(again)")
    }
}
