// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import Testing

    @testable import LandmarkCatalog
    @testable import LandmarkCatalogClient

    /// A database's stored position row, read with sqlite3 (the server's copy, as a device test checks it).
    package enum StoredPositions {
        /// A row's stamp in the order of docs/merge-rules.md §1: updated_ms, counter, node as bytes.
        package struct Stamp: Comparable, CustomStringConvertible {
            package var ms: Int64
            package var counter: Int64
            package var node: String
            package static func < (a: Stamp, b: Stamp) -> Bool {
                if a.ms != b.ms { return a.ms < b.ms }
                if a.counter != b.counter { return a.counter < b.counter }
                return Array(a.node.utf8).lexicographicallyPrecedes(Array(b.node.utf8))
            }
            package var description: String { "\(ms)/\(counter)/\(node)" }
        }

        /// The position row of `user` in the database at `path`: page, landmark, stamp, deleted.
        package static func row(_ path: String, _ user: String) throws -> (page: Int64, landmark: Int64?, stamp: Stamp, deleted: Int64)? {
            let rows = try dumpRows(
                path, sql: "SELECT page, landmark_id, updated_ms, counter, node, deleted FROM positions WHERE user_id = '\(user)'")
            guard let r = rows.first, case .integer(let page) = r[0], case .integer(let ms) = r[2], case .integer(let counter) = r[3],
                case .text(let node) = r[4], case .integer(let deleted) = r[5]
            else { return nil }
            let landmark: Int64? = if case .integer(let id) = r[1] { id } else { nil }
            return (page, landmark, Stamp(ms: ms, counter: counter, node: node), deleted)
        }
    }
#endif
