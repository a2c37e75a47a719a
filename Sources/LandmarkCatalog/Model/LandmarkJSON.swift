extension Landmark {
    /// How nil optional strings are written.
    public enum NullStrings: Sendable {
        /// As `""`, so Apple's tutorial `Landmark` (whose `park`, `state`, `city`, `category`,
        /// `description` and `imageName` are non-optional `String`s) decodes every row.
        case emptyString
        /// As `null` (snapshots: `null` means cleared, and merges must keep that).
        case null
    }

    /// Writes this landmark as a JSON object in the shape of `landmarkData.json`: `category`, `city`,
    /// `coordinates {latitude, longitude}`, `description`, `id`, `imageName`, `isFavorite`, `isFeatured`,
    /// `name`, `park`, `state`, plus the kept unknown keys and `additional` fields, all keys sorted.
    ///
    /// - Parameters:
    ///   - writer: the output.
    ///   - nullStrings: how nil strings are written.
    ///   - additional: extra keys with raw JSON values (used by snapshots for `updatedAt`, `counter`, …).
    public func writeJSON(to writer: inout JSONWriter, nullStrings: NullStrings = .emptyString,
                          additional: [(key: String, json: String)] = []) {
        var fields: [(key: String, json: String?)] = []
        if let extraJSON, let members = JSONValue.parseObject(extraJSON) {
            for m in members { fields.append((m.key, m.value.serialized())) }
        }
        for a in additional { fields.append((a.key, a.json)) }
        fields.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        var pending = fields[...]
        func flushExtras(before key: StaticString, _ w: inout JSONWriter) {
            let k = key.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
            while let f = pending.first, f.key.utf8.lexicographicallyPrecedes(k.utf8) {
                w.key(f.key)
                w.raw(f.json ?? "null")
                w.byte(0x2C)
                pending.removeFirst()
            }
        }
        func str(_ key: StaticString, _ value: String?, _ w: inout JSONWriter) {
            flushExtras(before: key, &w)
            w.raw("\""); w.raw(key); w.raw("\":")
            if let value { w.string(value) } else if nullStrings == .emptyString { w.raw("\"\"") } else { w.raw("null") }
            w.byte(0x2C)
        }
        writer.byte(0x7B)
        str("category", category, &writer)
        str("city", city, &writer)
        flushExtras(before: "coordinates", &writer)
        writer.raw("\"coordinates\":{\"latitude\":")
        writer.double(latitude)
        writer.raw(",\"longitude\":")
        writer.double(longitude)
        writer.raw("},")
        str("description", description, &writer)
        flushExtras(before: "id", &writer)
        writer.raw("\"id\":")
        writer.int(id)
        writer.byte(0x2C)
        str("imageName", imageName, &writer)
        flushExtras(before: "isFavorite", &writer)
        writer.raw("\"isFavorite\":")
        writer.bool(isFavorite)
        writer.byte(0x2C)
        flushExtras(before: "isFeatured", &writer)
        writer.raw("\"isFeatured\":")
        writer.bool(isFeatured)
        writer.byte(0x2C)
        str("name", name, &writer)
        str("park", park, &writer)
        flushExtras(before: "state", &writer)
        writer.raw("\"state\":")
        if let state { writer.string(state) } else if nullStrings == .emptyString { writer.raw("\"\"") } else { writer.raw("null") }
        for f in pending {
            writer.byte(0x2C)
            writer.key(f.key)
            writer.raw(f.json ?? "null")
        }
        writer.byte(0x7D)
    }
}

extension CatalogStore {
    /// Writes each featured landmark, in page order, as the JSON object of `Landmark.writeJSON` (Apple's
    /// shape, nil strings as `""`), straight from SQLite's column bytes: no `String` per field.
    /// - Parameters:
    ///   - writer: receives the objects, comma-separated (the caller writes the brackets).
    ///   - flush: called whenever the writer holds 64 KiB or more, to pass the bytes on.
    /// - Returns: how many landmarks were written.
    @discardableResult
    public func writeFeaturedJSON(to writer: inout JSONWriter, flush: (inout JSONWriter) throws -> Void) throws -> Int {
        var count = 0
        try read {
            let s = try connection.cachedStatement(sql: Self.featuredSQL)
            defer { s.reset() }
            while try s.step() {
                if count > 0 { writer.byte(0x2C) }
                count += 1
                if !s.isNull(12) {
                    Self.landmark(from: s).writeJSON(to: &writer)  // kept unknown keys: merge them in key order
                } else {
                    func text(_ key: StaticString, _ column: Int) {
                        writer.raw(key)
                        if let bytes = s.textBytes(column) { writer.string(utf8: bytes) } else { writer.raw("\"\"") }
                    }
                    text("{\"category\":", 2)
                    text(",\"city\":", 3)
                    writer.raw(",\"coordinates\":{\"latitude\":")
                    writer.double(s.double(10))
                    writer.raw(",\"longitude\":")
                    writer.double(s.double(11))
                    writer.raw("}")
                    text(",\"description\":", 6)
                    writer.raw(",\"id\":")
                    writer.int(s.int(0))
                    text(",\"imageName\":", 7)
                    writer.raw(",\"isFavorite\":")
                    writer.bool(s.int(9) != 0)
                    writer.raw(",\"isFeatured\":")
                    writer.bool(s.int(8) != 0)
                    text(",\"name\":", 1)
                    text(",\"park\":", 5)
                    text(",\"state\":", 4)
                    writer.byte(0x7D)
                }
                if writer.bytes.count >= 1 << 16 { try flush(&writer) }
            }
        }
        return count
    }
}
