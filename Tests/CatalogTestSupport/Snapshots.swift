// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import Testing

    @_spi(Testing) @testable import CatalogCLI
    @testable import LandmarkCatalog
    @testable import LandmarkCatalogSync

    /// A snapshot document built by hand.
    package func snapshot(
        node: String = "n-test", landmarks: [String] = [], positions: [String] = [], version: Int = 1,
        format: String = "landmark-catalog-snapshot"
    ) -> String {
        """
        {"format": "\(format)", "version": \(version), "node": "\(node)", "generatedAt": "2026-11-30T01:02:03.456Z",
         "landmarks": [\(landmarks.joined(separator: ",\n"))],
         "positions": [\(positions.joined(separator: ",\n"))]}
        """
    }

    package func positionRow(
        _ user: String, page: Int, landmark: Int? = nil, at: String, counter: Int = 0, node: String = "n-test",
        deleted: Bool = false
    ) -> String {
        #"{"user": "\#(user)", "page": \#(page), "landmarkId": \#(landmark.map(String.init) ?? "null"), "updatedAt": "\#(at)", "counter": \#(counter), "node": "\#(node)", "deleted": \#(deleted)}"#
    }

    package func landmarkRow(
        _ id: Int, name: String, featured: Bool = true, at: String, counter: Int = 0, node: String = "n-test",
        deleted: Bool = false
    ) -> String {
        #"{"id": \#(id), "name": "\#(name)", "category": "Lakes", "city": null, "state": "Alaska", "park": null, "description": null, "imageName": "x", "isFeatured": \#(featured), "isFavorite": false, "coordinates": {"latitude": 61.2, "longitude": -149.9}, "updatedAt": "\#(at)", "counter": \#(counter), "node": "\#(node)", "deleted": \#(deleted)}"#
    }

    /// Writes `text` to a new temporary file and returns its path.
    package func writeTemporary(_ text: String, name: String = "snapshot.json") throws -> String {
        let url = Support.temporaryDirectory().appending(path: name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// 2026-11-30T00:00:00Z in ms; the tests' "now".
    package let testNow: Int64 = 1_795_996_800_000

    /// A snapshot of `count` positions `u0…`, all stamped `at` by `node`, on `page`.
    package func positionsSnapshot(_ count: Int, at: String, page: Int = 0, node: String = "n-test", prefix: String = "u") -> String {
        snapshot(node: node, positions: (0..<count).map { positionRow("\(prefix)\($0)", page: page, at: at, node: node) })
    }

    /// Each line of `text` parsed as one JSON object (a line that is not one is recorded as an issue).
    package func jsonLines(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [[String: Any]] {
        text.split(separator: "\n", omittingEmptySubsequences: false).dropLast(text.hasSuffix("\n") ? 1 : 0).compactMap { line in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            if object == nil { Issue.record("not one JSON object: \(line)", sourceLocation: sourceLocation) }
            return object
        }
    }

    /// The page stored for `user`, or nil.
    package func storedPage(_ db: String, _ user: String) throws -> Int64? {
        guard let row = try dumpRows(db, sql: "SELECT page FROM positions WHERE user_id = '\(user)'").first, case .integer(let page) = row[0] else {
            return nil
        }
        return page
    }

    /// `testNow` plus `seconds`, as RFC 3339.
    package func at(_ seconds: Int64) -> String { Timestamp.format(milliseconds: testNow + seconds * 1000) }

    /// Writes a landmark file with ids 1001…1012 (like Apple's) where exactly `featured` are featured.
    package func landmarkFile(featured: Set<Int64>, ids: ClosedRange<Int64> = 1001...1012, renamed: [Int64: String] = [:]) throws -> String {
        var records: [[String: Any]] = []
        for id in ids {
            records.append([
                "id": id, "name": renamed[id] ?? "Landmark \(id)", "category": "Lakes", "state": "Alaska", "park": "Park \(id)",
                "isFeatured": featured.contains(id), "isFavorite": false, "imageName": "l\(id)",
                "coordinates": ["latitude": 60.0 + Double(id - 1000) / 100, "longitude": -150.0],
            ])
        }
        let url = Support.temporaryDirectory().appending(path: "landmarks.json")
        try JSONSerialization.data(withJSONObject: records, options: [.sortedKeys]).write(to: url)
        return url.path
    }

    /// Every row of both replicated tables, stamps included: equal dumps mean converged stores.
    package func canonicalDump(_ store: CatalogStore) throws -> [[SQLValue]] {
        var rows: [[SQLValue]] = []
        // `seq` is each database's own change sequence: not replicated, so not compared.
        for sql in [
            "SELECT \(LandmarkColumn.selectList.replacingOccurrences(of: ", seq", with: "")) FROM landmarks ORDER BY id",
            "SELECT \(PositionColumn.selectList.replacingOccurrences(of: ", seq", with: "")) FROM positions ORDER BY user_id",
        ] {
            let s = try store.connection.makeStatement(sql: sql)
            while try s.step() { rows.append((0..<s.columnCount).map { s.value($0) }) }
            rows.append([.text("--")])
        }
        return rows
    }

    extension CatalogStore {
        /// A path as sources are keyed (symbolic links resolved, as the tests' temporary root may be one).
        package static func realPathForTests(_ path: String) -> String {
            (try? SourceLocator.parse(path).description) ?? path
        }
    }
#endif
