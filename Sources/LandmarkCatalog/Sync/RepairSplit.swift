import Foundation

extension RepairMessage {
    /// Bytes each part keeps free beside its rows: the version, flags, key, horizon and length varints.
    static let partOverhead = 64

    /// This message as parts that each encode to at most `maxBytes`.
    ///
    /// For a peer that bounds a request's body (a serve's `--max-body`, docs/repair.md §4): first parts
    /// holding rows only (no ranges), then one holding the ranges and the rows left over. Every part
    /// carries the key and horizon.
    ///
    /// The receiver merges each part's rows as they come and answers a part with no ranges with a
    /// message that asks nothing, so the sender reads only the last part's answer. A single row larger
    /// than the bound travels alone, over it.
    /// - Parameter maxBytes: the largest encoded part wanted, in bytes.
    /// - Returns: the parts, in order to send; `[self]` when it fits.
    /// - Throws: `CatalogError` 65 when the rows are not a snapshot document.
    package func split(maxBytes: Int) throws -> [RepairMessage] {
        guard encoded().count > maxBytes, !rows.isEmpty else { return [self] }
        var ranges = self
        ranges.rows = []
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
        var parts = chunks.map { chunk -> RepairMessage in
            var part = RepairMessage(key: key)
            part.horizon = horizon
            part.rows = chunk
            return part
        }
        // The ranges ride with the last chunk when both fit, else alone.
        if let last = parts.last, ranges.encoded().count + last.rows.count + Self.partOverhead <= maxBytes {
            ranges.rows = last.rows
            parts.removeLast()
        }
        return parts + [ranges]
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
