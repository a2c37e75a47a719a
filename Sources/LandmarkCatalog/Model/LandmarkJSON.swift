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
        if let extraJSON, let members = ImportRun.parseObject(extraJSON) {
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
