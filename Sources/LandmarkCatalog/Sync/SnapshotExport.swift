import Foundation

/// The snapshot format's identity (SPEC §6).
public enum SnapshotFormat {
    /// The value of the `format` key.
    public static let name = "landmark-catalog-snapshot"
    /// The newest version this binary reads and the one it writes.
    public static let version: Int64 = 1
}

extension CatalogStore {
    /// Writes the whole catalog — landmarks and positions, tombstones included, each with its
    /// last-writer-wins stamp — as a snapshot (SPEC §6), streamed in chunks of about 64 KiB.
    ///
    /// Shape: `{"format","version","node","generatedAt","landmarks":[…],"positions":[…]}`; the envelope
    /// comes first so a reader can refuse an unknown format before reading rows. Rows are in key order
    /// (landmarks by id, positions by user id), and each row's keys are sorted.
    ///
    /// - Parameter output: receives the bytes in order.
    /// - Throws: whatever `output` throws; `CatalogError` for database failures.
    public func exportSnapshot(_ output: ([UInt8]) throws -> Void) throws {
        try read {
            let node = try connection.scalarText(sql: "SELECT value FROM catalog_meta WHERE key = 'node'") ?? ""
            var w = JSONWriter(reservingCapacity: 1 << 17)
            w.raw("{"); w.key("format"); w.string(SnapshotFormat.name)
            w.raw(","); w.key("version"); w.int(SnapshotFormat.version)
            w.raw(","); w.key("node"); w.string(node)
            w.raw(","); w.key("generatedAt"); w.string(Timestamp.format(milliseconds: wallClock.nowMilliseconds()))
            w.raw(",\n"); w.key("landmarks"); w.raw("[")
            let landmarks = try connection.cachedStatement(sql: """
                SELECT \(Self.landmarkColumns), updated_ms, counter, node, deleted FROM landmarks ORDER BY id
                """)
            defer { landmarks.reset() }
            var first = true
            while try landmarks.step() {
                w.raw(first ? "\n" : ",\n")
                first = false
                if landmarks.isNull(12) {
                    Self.writeSnapshotRow(landmarks, to: &w)
                } else {
                    // Kept unknown keys merge into the sorted keys: the general path.
                    Self.landmark(from: landmarks).writeJSON(to: &w, nullStrings: .null, additional: [
                        ("counter", String(landmarks.int(14))),
                        ("deleted", landmarks.int(16) != 0 ? "true" : "false"),
                        ("node", Self.jsonString(landmarks.text(15) ?? "")),
                        ("updatedAt", Self.jsonString(Timestamp.format(milliseconds: landmarks.int(13)))),
                    ])
                }
                if w.bytes.count >= 1 << 16 {
                    try output(w.bytes)
                    w.bytes.removeAll(keepingCapacity: true)
                }
            }
            w.raw("],\n"); w.key("positions"); w.raw("[")
            let positions = try connection.cachedStatement(sql: """
                SELECT user_id, page, landmark_id, updated_ms, counter, node, deleted FROM positions ORDER BY user_id
                """)
            defer { positions.reset() }
            first = true
            while try positions.step() {
                w.raw(first ? "\n" : ",\n")
                first = false
                w.raw("{"); w.key("counter"); w.int(positions.int(4))
                w.raw(","); w.key("deleted"); w.bool(positions.int(6) != 0)
                w.raw(","); w.key("landmarkId"); w.int(positions.optionalInt(2))
                w.raw(","); w.key("node"); w.string(positions.text(5) ?? "")
                w.raw(","); w.key("page"); w.int(positions.int(1))
                w.raw(","); w.key("updatedAt"); w.string(Timestamp.format(milliseconds: positions.int(3)))
                w.raw(","); w.key("user"); w.string(positions.text(0) ?? "")
                w.raw("}")
                if w.bytes.count >= 1 << 16 {
                    try output(w.bytes)
                    w.bytes.removeAll(keepingCapacity: true)
                }
            }
            w.raw("]}\n")
            try output(w.bytes)
        }
    }

    /// Writes a snapshot to `path` atomically (temporary file in the same directory, fsync, rename).
    /// - Throws: `CatalogError` 73 when the file cannot be created, 74 on a write error.
    public func exportSnapshot(toFile path: String) throws {
        let file = try AtomicFileWriter(path: path)
        try exportSnapshot { try file.write($0) }
        try file.commit()
    }

    /// A landmark row without unknown keys as snapshot JSON, keys sorted, straight from the column bytes
    /// (the same text `Landmark.writeJSON(nullStrings: .null, additional: stamp)` gives).
    static func writeSnapshotRow(_ s: Statement, to w: inout JSONWriter) {
        func text(_ key: StaticString, _ column: Int) {
            w.raw(key)
            if let bytes = s.textBytes(column) { w.string(utf8: bytes) } else { w.raw("null") }
        }
        text("{\"category\":", 2)
        text(",\"city\":", 3)
        w.raw(",\"coordinates\":{\"latitude\":")
        w.double(s.double(10))
        w.raw(",\"longitude\":")
        w.double(s.double(11))
        w.raw("},\"counter\":")
        w.int(s.int(14))
        w.raw(",\"deleted\":")
        w.bool(s.int(16) != 0)
        text(",\"description\":", 6)
        w.raw(",\"id\":")
        w.int(s.int(0))
        text(",\"imageName\":", 7)
        w.raw(",\"isFavorite\":")
        w.bool(s.int(9) != 0)
        w.raw(",\"isFeatured\":")
        w.bool(s.int(8) != 0)
        text(",\"name\":", 1)
        text(",\"node\":", 15)
        text(",\"park\":", 5)
        text(",\"state\":", 4)
        w.raw(",\"updatedAt\":")
        w.string(Timestamp.format(milliseconds: s.int(13)))
        w.byte(0x7D)
    }

    static func jsonString(_ s: String) -> String {
        var w = JSONWriter(reservingCapacity: s.utf8.count + 2)
        w.string(s)
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
