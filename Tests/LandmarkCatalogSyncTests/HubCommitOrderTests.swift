import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

#if canImport(Glibc)
    import Glibc
#endif

/// The commit-order gap (docs/hub.md §8): a hub sequence number is taken before its transaction commits, so a
/// puller could read number n+1 (committed) while n (taken earlier, committed later) is still invisible,
/// move its cursor past n, and never see that row.
///
/// Pushes hold the advisory push lock from before their first `nextval` until they commit, which closes it.
/// These tests make the interleaving happen deterministically: push A stops inside its transaction after
/// taking its numbers (a test hook), push B and a pull by C run meanwhile, then A commits and C pulls again.
@Suite("PostgreSQL hub: the commit-order gap", .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries"), .serialized)
struct HubCommitOrderTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.running() }

    /// What happened in one run of the interleaving.
    struct Outcome {
        /// Users C does not have at the end (pushed by A or B, both committed).
        var missing: [String]
        /// Whether push B was still waiting (for the push lock) when C pulled the first time.
        var bWaited: Bool
        /// What C saw in its first pull.
        var firstPull: [String]
    }

    /// An edge holding positions for `users` (stamped in the past, so nothing is quarantined).
    func edge(users: [String]) throws -> String {
        let db = Support.temporaryDatabase()
        let rows = users.map { positionRow($0, page: 1, at: "2026-11-30T00:00:00Z", node: "n-gap") }
        #expect(runCLI(["sync", try writeTemporary(snapshot(positions: rows))], db: db).status == 0)
        return db
    }

    /// Pushes `db` to `uri` through a `HubSource` with `hooks` (the push only: the returned feed is not merged).
    static func push(_ db: String, _ uri: String, hooks: HubTestHooks) throws {
        let store = try CatalogStore.open(path: db)
        let source = HubSource(conninfo: uri, hooks: hooks)
        _ = try source.fetch(since: nil, context: SyncContext(store: store, options: SyncOptions(), standardInput: 0, diagnostics: { _ in }))
    }

    /// Runs the interleaving; `skipLock` plants the bug (pushes take numbers without the lock).
    func run(skipLock: Bool) throws -> Outcome {
        let (uri, name) = try HubSupport.makeHub(server)
        let aUsers = (1...5).map { "a\($0)" }
        let bUsers = (1...5).map { "b\($0)" }
        let a = try edge(users: aUsers)
        let b = try edge(users: bUsers)
        let c = Support.temporaryDatabase()
        #expect(runCLI(["sync", uri], db: c).status == 0)  // creates the schema; C's cursor starts at 0

        let aPaused = DispatchSemaphore(value: 0)
        let releaseA = DispatchSemaphore(value: 0)
        let aDone = DispatchSemaphore(value: 0)
        let bDone = DispatchSemaphore(value: 0)
        let errors = Locked<[String]>([])
        Thread.detachNewThread {
            do {
                try Self.push(
                    a, uri,
                    hooks: HubTestHooks(
                        beforePushCommit: {
                            aPaused.signal()
                            _ = releaseA.wait(timeout: .now() + 30)
                        }, skipPushLock: skipLock))
            } catch {
                errors.update { $0.append("A: \(error)") }
                aPaused.signal()
            }
            aDone.signal()
        }
        try #require(aPaused.wait(timeout: .now() + 20) == .success, "push A never reached its commit")
        let aSequence = try HubSupport.scalar(server, name, "SELECT last_value FROM hub_change_seq")
        Thread.detachNewThread {
            do { try Self.push(b, uri, hooks: HubTestHooks(skipPushLock: skipLock)) } catch { errors.update { $0.append("B: \(error)") } }
            bDone.signal()
        }
        // B either finishes (no lock) or queues behind A for the push lock.
        let admin = try HubSupport.connect(server, name)
        var bFinished = false
        let settled = try HubSupport.wait(seconds: 20) {
            if bDone.wait(timeout: .now()) == .success {
                bFinished = true
                return true
            }
            return try admin.execute(
                sql: """
                    SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """
            ).int64(0, 0) == 1
        }
        #expect(settled)
        let first = runCLI(["sync", uri], db: c)
        #expect(first.status == 0, "\(first.stderr)")
        let firstPull = try dumpRows(c, sql: "SELECT user_id FROM positions ORDER BY user_id").map { "\($0[0])" }
        releaseA.signal()
        #expect(aDone.wait(timeout: .now() + 30) == .success)
        if !bFinished { #expect(bDone.wait(timeout: .now() + 30) == .success) }
        #expect(errors.current.isEmpty, "\(errors.current)")
        #expect(aSequence == "5", "A took the first five numbers before B started")
        let second = runCLI(["sync", uri], db: c)
        #expect(second.status == 0, "\(second.stderr)")
        let have = Set(
            try dumpRows(c, sql: "SELECT user_id FROM positions").compactMap { row -> String? in
                if case .text(let s) = row[0] { return s }
                return nil
            })
        #expect(try HubSupport.scalar(server, name, "SELECT count(*) FROM positions") == "10", "both pushes are on the hub")
        return Outcome(missing: (aUsers + bUsers).filter { !have.contains($0) }, bWaited: !bFinished, firstPull: firstPull)
    }

    @Test("a pull never skips rows of a push that took earlier numbers and commits later: pushes are serialised by the lock")
    func gapClosed() throws {
        let outcome = try run(skipLock: false)
        #expect(outcome.bWaited, "push B must queue behind push A")
        #expect(outcome.firstPull.isEmpty, "nothing was committed when C first pulled")
        #expect(outcome.missing.isEmpty, "C missed \(outcome.missing)")
    }

    @Test("the planted bug (numbers taken without the lock) makes the same interleaving lose push A's rows")
    func plantedBugIsCaught() throws {
        // The check `gapClosed` makes (`missing.isEmpty`) fails in this configuration: the interleaving
        // really exercises the gap, so `gapClosed` passing means the lock closes it.
        let outcome = try run(skipLock: true)
        #expect(!outcome.bWaited)
        #expect(outcome.firstPull.count == 5, "C saw B's committed rows, numbered after A's uncommitted ones")
        #expect(outcome.missing == (1...5).map { "a\($0)" })
    }
}
