import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog

/// Token revocations keep a user by hash (docs/serve.md §10): migration 14 and what `token revoke` stores.
@Suite("Token revocations by hash")
struct RevocationHashTests {
    @Test("migration 14 replaces the user ids revocations kept by their hashes; jti rows and hashes stay; no byte of an id is left")
    func migrationHashesStoredIDs() throws {
        let db = Support.temporaryDatabase()
        let all = try Migration.embedded()
        do {
            let c = try Connection(path: db)
            try Migrator(migrations: all.filter { $0.version < 14 }).migrate(c)
            try c.executeScript(
                sql: """
                    INSERT INTO token_revocations VALUES ('database', 'user', '\(ErasureTraces.user)', 1000, '2026-01-01T00:00:00.000Z');
                    INSERT INTO token_revocations VALUES ('hub', 'user', 'zoë', 2000, '2026-01-01T00:00:00.000Z');
                    INSERT INTO token_revocations VALUES ('database', 'jti', 'phone-7', 0, '2026-01-01T00:00:00.000Z');
                    INSERT INTO token_revocations VALUES ('database', 'user', '\(ErasureRule.userHash("kept"))', 3000, '2026-01-01T00:00:00.000Z');
                    """)
        }
        let store = try CatalogStore.open(path: db)
        let rows = try TokenRevocations(store).all(hubCopy: true)
        #expect(
            rows.map { "\($0.kind.rawValue)/\($0.subject)/\($0.before)" }.sorted()
                == [
                    "jti/phone-7/0", "user/\(ErasureRule.userHash(ErasureTraces.user))/1000", "user/\(ErasureRule.userHash("zoë"))/2000",
                    "user/\(ErasureRule.userHash("kept"))/3000",
                ].sorted())
        UserErasure(store).scrub()
        #expect(ErasureTraces.traces(db) == [0, 0, 0], "the migrated database still holds the id")
    }

    @Test("the migrator's hash function is ErasureRule's: NULL for NULL, the hex of the UTF-8 bytes for text")
    func hashFunction() throws {
        let c = try Connection(path: ":memory:")
        try Migrator(migrations: []).migrate(c)
        #expect(try c.scalarText(sql: "SELECT catalog_user_hash('zoë')") == ErasureRule.userHash("zoë"))
        #expect(try c.scalarText(sql: "SELECT catalog_user_hash('')") == ErasureRule.userHash(""))
        #expect(try c.scalarText(sql: "SELECT catalog_user_hash(NULL)") == nil)
        #expect(try c.scalarText(sql: "SELECT catalog_user_hash(7)") == nil)
    }

    @Test("token revoke --user writes no byte of the id; revocations list the hash; --lift by the id removes it")
    func revokeStoresTheHash() throws {
        let box = try Sandbox()
        let db = try box.seededDatabase()
        let user = ErasureTraces.user
        let revoked = try box.run(["token", "revoke", "--user", user, "--before", "2030-01-01T00:00:00Z"], db: db)
        #expect(revoked.status == 0 && revoked.stdout.contains("user \(user)"), "\(revoked)")
        #expect(ErasureTraces.traces(db) == [0, 0, 0], "the id was written")
        let listed = try box.run(["token", "revocations", "--json"], db: db)
        #expect(listed.stdout.contains(#""subject":"\#(ErasureRule.userHash(user))""#), "\(listed)")
        let lifted = try box.run(["token", "revoke", "--user", user, "--lift"], db: db)
        #expect(lifted.stdout == "lifted the revocation of user \(user)\n", "\(lifted)")
        #expect(try dumpRows(db, sql: "SELECT count(*) FROM token_revocations") == [[.integer(0)]])
    }
}
