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
