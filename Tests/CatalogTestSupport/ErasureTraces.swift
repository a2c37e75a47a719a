// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import Testing

    @testable import LandmarkCatalog
    @testable import LandmarkCatalogClient
    @testable import LandmarkCatalogSync

    /// Where an erased user's id is still written: byte counts in a database and its WAL and shared memory.
    package enum ErasureTraces {
        /// A user id no other byte of a database spells by chance.
        package static let user = "erasable-user-7f3a"

        /// How many times `needle` occurs in the file at `path` (0 when there is no file).
        package static func occurrences(of needle: String, in path: String) -> Int {
            guard let data = FileManager.default.contents(atPath: path) else { return 0 }
            let bytes = [UInt8](data)
            let n = Array(needle.utf8)
            guard bytes.count >= n.count else { return 0 }
            var count = 0
            var i = 0
            while i <= bytes.count - n.count {
                if bytes[i] == n[0] && Array(bytes[i..<i + n.count]) == n {
                    count += 1
                    i += n.count
                } else {
                    i += 1
                }
            }
            return count
        }

        /// The id's occurrences in the database, its WAL and its shared-memory file.
        package static func traces(_ db: String, _ id: String = user) -> [Int] {
            [db, db + "-wal", db + "-shm"].map { occurrences(of: id, in: $0) }
        }
    }

    /// libfaketime preloaded into a `catalog` process: its wall clock days ahead.
    ///
    /// Its monotonic clock is left alone (poll timeouts and backoffs stay real). The collection tests check it took effect (``probe(_:)``)
    /// before relying on it.
    package enum FakeClock {
        /// The preload library of Debian's `libfaketime` (the multi-threaded one: serve and the follower run threads).
        package static let library = ["x86_64", "aarch64"].map { "/usr/lib/\($0)-linux-gnu/faketime/libfaketimeMT.so.1" }
            .first { FileManager.default.fileExists(atPath: $0) }

        /// Whether `faketime` is installed (`scripts/setup` installs it).
        package static var available: Bool { library != nil }

        /// The environment that moves a process's wall clock `days` ahead.
        package static func environment(daysAhead days: Int) -> [String: String] {
            ["LD_PRELOAD": library ?? "", "FAKETIME": "+\(days)d", "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1"]
        }

        /// The stamp (ms since the epoch) that `catalog position set` writes under `environment` in a scratch
        /// database: the faked process's own clock, as it stamps rows.
        package static func probe(_ box: Sandbox, _ environment: [String: String]) throws -> Int64? {
            let db = try box.seededDatabase("clock-probe-\(UUID().uuidString.prefix(8)).sqlite")
            let set = try box.run(["position", "set", "--user", "clock-probe", "--page", "1"], db: db, environment: environment)
            let sql = "SELECT updated_ms FROM positions WHERE user_id = 'clock-probe'"
            guard set.status == 0, case .integer(let ms)? = try dumpRows(db, sql: sql).first?.first else {
                return nil
            }
            return ms
        }
    }
#endif
