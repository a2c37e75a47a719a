import Foundation

extension RepairMessage {
    /// Bytes each part keeps free beside its rows: the version, flags, key, horizon and length varints.
    static let partOverhead = 64

    /// This message as parts that each encode to at most `maxBytes`.
    ///
    /// For a peer that bounds a request's body (a serve's `--max-body`, docs/repair.md §4): first parts
    /// holding rows only, then parts holding the ranges, in key order, the last one with the rows left
    /// over when they fit. Every part carries the key and horizon.
    ///
    /// The receiver merges each part's rows as they come and answers each part's ranges on their own
    /// (a part without ranges with a message that asks nothing), so the sender joins the parts' answers
    /// into one (``combined(_:)``). A part is a proper share of this message, so splitting it again ends.
    /// - Parameter maxBytes: the largest encoded part wanted, in bytes.
    /// - Returns: the parts, in order to send; `[self]` when it fits, or when it cannot be divided (one
    ///   row or one range alone): it then travels whole, over the bound.
    /// - Throws: `CatalogError` 65 when the rows are not a snapshot document.
    package func split(maxBytes: Int) throws -> [RepairMessage] {
        guard encoded().count > maxBytes else { return [self] }
        var parts = try rowParts(maxBytes: maxBytes)
        var ranges = rangeParts(maxBytes: maxBytes)
        // The last rows ride with the last ranges when both fit.
        if let last = parts.last, let tail = ranges.last, tail.encoded().count + last.rows.count + 8 <= maxBytes {
            ranges[ranges.count - 1].rows = last.rows
            parts.removeLast()
        }
        let all = parts + ranges
        return all.count > 1 ? all : [self]
    }

    /// This message's rows as parts holding rows only, each under `maxBytes`: a row larger than that alone.
    private func rowParts(maxBytes: Int) throws -> [RepairMessage] {
        guard !rows.isEmpty else { return [] }
        let arrays = try SnapshotArrays(rows)
        // Beside the part's own bytes, the document's frame: its format, version and array names.
        let budget = max(1, maxBytes - Self.partOverhead - 128)
        var chunks: [[UInt8]] = []
        var current = SnapshotArrays.Builder()
        for (table, element) in arrays.elements {
            if !current.isEmpty, current.size + element.count + 1 > budget {
                chunks.append(current.document())
                current = SnapshotArrays.Builder()
            }
            current.add(element, to: table)
        }
        if !current.isEmpty { chunks.append(current.document()) }
        return chunks.map { chunk in
            var part = emptyPart()
            part.rows = chunk
            return part
        }
    }

    /// This message's ranges as parts without rows, each under `maxBytes` (a range larger than that
    /// alone), the ranges kept in table and key order: none when it asks nothing.
    private func rangeParts(maxBytes: Int) -> [RepairMessage] {
        var parts: [RepairMessage] = []
        var current = emptyPart()
        var size = Self.partOverhead
        for table in RepairTable.allCases {
            for item in items[table.rawValue] {
                // Counted as written unchained: never less than it takes in the part.
                var bytes: [UInt8] = []
                item.encode(to: &bytes, previousUpper: nil)
                if !current.isFinal, size + bytes.count > maxBytes {
                    parts.append(current)
                    current = emptyPart()
                    size = Self.partOverhead
                }
                current.items[table.rawValue].append(item)
                size += bytes.count
            }
        }
        if !current.isFinal { parts.append(current) }
        return parts
    }

    /// A part with this message's key and horizon, asking nothing and holding no rows.
    private func emptyPart() -> RepairMessage {
        var part = RepairMessage(key: key)
        part.horizon = horizon
        return part
    }

    /// The answers to a split message's parts as one answer: each table's ranges in the parts' order, the
    /// rows of all in one snapshot document, the greatest horizon any raised to.
    /// - Parameter answers: the answers, in the order their parts were sent.
    /// - Returns: the one answer (the only one unchanged).
    /// - Throws: `CatalogError` 65 when an answer's rows are not a snapshot document.
    package static func combined(_ answers: [RepairMessage]) throws -> RepairMessage {
        guard answers.count > 1 else { return answers.first ?? RepairMessage() }
        var out = RepairMessage()
        out.horizon = answers.compactMap(\.horizon).max()
        var rows = SnapshotArrays.Builder()
        for answer in answers {
            for table in RepairTable.allCases { out.items[table.rawValue] += answer.items[table.rawValue] }
            guard !answer.rows.isEmpty else { continue }
            for (table, element) in try SnapshotArrays(answer.rows).elements { rows.add(element, to: table) }
        }
        if !rows.isEmpty { out.rows = rows.document() }
        return out
    }

    /// This message without landmark rows (for a peer that takes none, docs/repair.md §5).
    /// - Throws: `CatalogError` 65 when the rows are not a snapshot document.
    package func withoutLandmarkRows() throws -> RepairMessage {
        guard !rows.isEmpty else { return self }
        let arrays = try SnapshotArrays(rows)
        let landmarks = SnapshotArrays.tables.firstIndex(of: SnapshotKey.landmarks)
        guard arrays.elements.contains(where: { $0.table == landmarks }) else { return self }
        var kept = SnapshotArrays.Builder()
        for (table, element) in arrays.elements where table != landmarks { kept.add(element, to: table) }
        var out = self
        out.rows = kept.isEmpty ? [] : kept.document()
        return out
    }

    /// What a message that ``split(maxBytes:)`` cannot divide holds, for an error: its one row (the
    /// table, the row's key and its size) or its one range.
    package var undividedContent: String {
        if isFinal, let arrays = try? SnapshotArrays(rows), arrays.elements.count == 1 {
            let (table, element) = arrays.elements[0]
            // Named by its key: a landmark's id, a position's user, an erasure's user hash.
            let object = (try? JSONSerialization.jsonObject(with: Data(element))) as? [String: Any]
            let name = ["id", "user", "userHash"].lazy.compactMap { key in object?[key].map { "\(key) \($0)" } }.first
            return "one row of \(SnapshotArrays.tables[table]) (\(name ?? "unnamed")) of \(element.count) bytes"
        }
        return "one range of \(encoded().count) bytes"
    }
}

/// The keys of a snapshot document's arrays of rows.
enum SnapshotKey {
    static let landmarks = "landmarks"
    static let positions = "positions"
    static let erasures = "erasures"
}

/// The rows of a snapshot document (docs/snapshot-format.md §2) as its top-level arrays' elements, each
/// the element's bytes as written, so that they can be put into several documents unchanged.
struct SnapshotArrays {
    /// The arrays split, in this order: the snapshot format's keys (docs/snapshot-format.md §2).
    static let tables = [SnapshotKey.landmarks, SnapshotKey.positions, SnapshotKey.erasures]
    /// Each element with its array's index in ``tables``, in document order.
    private(set) var elements: [(table: Int, bytes: ArraySlice<UInt8>)] = []

    /// Reads `document`'s top-level object; keys other than ``tables`` are skipped.
    /// - Throws: `CatalogError` 65 when it is not a JSON object.
    init(_ document: [UInt8]) throws {
        var r = Scanner(bytes: document)
        try r.expect(UInt8(ascii: "{"))
        r.skipBlanks()
        if r.peek == UInt8(ascii: "}") { return }
        while true {
            r.skipBlanks()
            let key = try r.string()
            r.skipBlanks()
            try r.expect(UInt8(ascii: ":"))
            r.skipBlanks()
            if let table = Self.tables.firstIndex(of: key), r.peek == UInt8(ascii: "[") {
                r.i += 1
                r.skipBlanks()
                if r.peek == UInt8(ascii: "]") {
                    r.i += 1
                } else {
                    while true {
                        r.skipBlanks()
                        let start = r.i
                        try r.skipValue()
                        elements.append((table, document[start..<r.i]))
                        r.skipBlanks()
                        if r.peek == UInt8(ascii: "]") {
                            r.i += 1
                            break
                        }
                        try r.expect(UInt8(ascii: ","))
                    }
                }
            } else {
                try r.skipValue()
            }
            r.skipBlanks()
            if r.peek == UInt8(ascii: "}") { return }
            try r.expect(UInt8(ascii: ","))
        }
    }

    /// A document built from elements, each kept in its array.
    struct Builder {
        private var arrays: [[ArraySlice<UInt8>]] = SnapshotArrays.tables.map { _ in [] }
        /// The elements' bytes with a separator each, without the document's frame.
        private(set) var size = 0
        var isEmpty: Bool { size == 0 }

        mutating func add(_ element: ArraySlice<UInt8>, to table: Int) {
            arrays[table].append(element)
            size += element.count + 1
        }

        /// The snapshot document: `format`, `version`, `landmarks` and `positions`, and `erasures` when it has any.
        func document() -> [UInt8] {
            var out = Array(#"{"format":"\#(SnapshotFormat.name)","version":\#(SnapshotFormat.version)"#.utf8)
            for (n, name) in SnapshotArrays.tables.enumerated() where n < 2 || !arrays[n].isEmpty {
                out += Array(",\"\(name)\":[".utf8)
                for (i, element) in arrays[n].enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    out += element
                }
                out.append(UInt8(ascii: "]"))
            }
            out.append(UInt8(ascii: "}"))
            return out
        }
    }

    /// A cursor over JSON bytes that finds where values end, strings and nesting included.
    private struct Scanner {
        let bytes: [UInt8]
        var i = 0
        var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

        mutating func skipBlanks() {
            while let b = peek, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { i += 1 }
        }

        mutating func expect(_ byte: UInt8) throws {
            guard peek == byte else { throw Self.malformed(i) }
            i += 1
        }

        /// A string's text (escapes kept as written: keys have none).
        mutating func string() throws -> String {
            let start = i + 1
            try skipString()
            return String(decoding: bytes[start..<(i - 1)], as: UTF8.self)
        }

        mutating func skipString() throws {
            try expect(UInt8(ascii: "\""))
            while let b = peek {
                i += 1
                if b == UInt8(ascii: "\\") {
                    i += 1
                } else if b == UInt8(ascii: "\"") {
                    return
                }
            }
            throw Self.malformed(i)
        }

        /// Skips one value: a string, an object or array (to its matching end), or a bare word or number.
        mutating func skipValue() throws {
            guard let first = peek else { throw Self.malformed(i) }
            if first == UInt8(ascii: "\"") { return try skipString() }
            if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
                var depth = 0
                while let b = peek {
                    if b == UInt8(ascii: "\"") {
                        try skipString()
                        continue
                    }
                    i += 1
                    if b == UInt8(ascii: "{") || b == UInt8(ascii: "[") { depth += 1 }
                    if b == UInt8(ascii: "}") || b == UInt8(ascii: "]") {
                        depth -= 1
                        if depth == 0 { return }
                    }
                }
                throw Self.malformed(i)
            }
            let start = i
            while let b = peek, b != UInt8(ascii: ","), b != UInt8(ascii: "}"), b != UInt8(ascii: "]"), b > 0x20 { i += 1 }
            if i == start { throw Self.malformed(i) }
        }

        static func malformed(_ offset: Int) -> CatalogError {
            CatalogError(.dataInvalid, "a repair message's rows are not a snapshot document (at byte \(offset))")
        }
    }
}
