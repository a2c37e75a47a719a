// The test support is built for debug test runs only (see Snapshots.swift).
#if DEBUG
    import Foundation

    /// A landmark file: ids 1…8, random featured flags and names, from `rng`.
    package func randomLandmarkFile<R: RandomNumberGenerator>(_ rng: inout R, in dir: URL, serial: Int) throws -> String {
        var records: [[String: Any]] = []
        for id in 1...8 where Bool.random(using: &rng) || id <= 2 {
            records.append([
                "id": id, "name": "L\(id)-\(Int.random(in: 0...3, using: &rng))", "isFeatured": Bool.random(using: &rng),
                "coordinates": ["latitude": Double(id), "longitude": Double(-id)],
                "park": Bool.random(using: &rng) ? NSNull() : "P\(id)",
            ])
        }
        let url = dir.appending(path: "import-\(serial).json")
        try JSONSerialization.data(withJSONObject: records).write(to: url)
        return url.path
    }
#endif
