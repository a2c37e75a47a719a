/// The manifest of a snapshot log (docs/log-format.md §2): the only file of a log directory ever replaced.
///
/// It names an immutable base snapshot and the immutable deltas after it, each with its size and SHA-256, and the
/// change sequence numbers each covers.
///
/// ```json
/// {"format":"landmark-catalog-log","version":1,"node":"n-7f3a","generation":"g20261201T101500Z-3f9a1c","through":42,
/// "base":{"bytes":912,"name":"base-….json","sha256":"…","through":40},
/// "deltas":[
/// {"bytes":310,"from":40,"name":"delta-….json","sha256":"…","through":42}]}
/// ```
public struct LogManifest: Sendable, Equatable {
    /// The value of `format`.
    public static let format = "landmark-catalog-log"
    /// The newest version this binary reads and the one it writes.
    public static let version: Int64 = 1
    /// The file name in a log directory.
    public static let fileName = "manifest.json"
    /// The largest manifest read, in bytes (64 MiB, or `--max-bytes` when smaller).
    ///
    /// A publisher keeps its manifest to a few kilobytes (`--max-deltas`).
    public static let maxManifestBytes: Int64 = 64 << 20

    /// One immutable file of the log.
    public struct File: Sendable, Equatable {
        /// The file's name in the log directory (never a path).
        public var name: String
        /// Its size in bytes.
        public var bytes: Int64
        /// Its SHA-256, lowercase hex.
        public var sha256: String
        /// The change sequence range it covers: rows with numbers in `from + 1 … through` (a base: `0`).
        public var from: Int64
        public var through: Int64
    }

    /// The publishing node.
    public var node: String
    /// Which chain of base and deltas this is; a new one starts with a fresh base.
    public var generation: String
    /// The change sequence number the log covers up to.
    public var through: Int64
    public var base: File
    public var deltas: [File]
    /// The link from the generation before, when an erasure started this one (docs/log-format.md §4): nil otherwise.
    public var bridge: Bridge? = nil

    /// A way across from the previous generation to this one without the base (docs/log-format.md §4).
    ///
    /// The publisher writes it only when an erasure alone started this generation: a reader whose cursor is
    /// at `generation` with a `through` in `file.from … file.through` merges `file` (the rows and erasure
    /// records changed after the previous base) and stands where this generation's base does.
    public struct Bridge: Sendable, Equatable {
        /// The generation it leads from.
        public var generation: String
        /// The bridge delta, named as a delta of this generation; its `through` is the base's.
        public var file: File
    }

    /// The files the manifest names: the base, the bridge when there is one, the deltas.
    var files: [File] { [base] + (bridge.map { [$0.file] } ?? []) + deltas }

    /// The manifest as bytes, keys in the order of docs/log-format.md §2 (`format` first, so a reader can tell a
    /// manifest from a snapshot by its first key), one file per line: the same manifest is always the
    /// same bytes.
    var bytes: [UInt8] {
        var w = JSONWriter()
        func file(_ f: File, delta: Bool, generation: String? = nil) {
            w.raw("{\"bytes\":")
            w.int(f.bytes)
            if delta {
                w.raw(",\"from\":")
                w.int(f.from)
            }
            if let generation {
                w.raw(",\"generation\":")
                w.string(generation)
            }
            w.raw(",\"name\":")
            w.string(f.name)
            w.raw(",\"sha256\":")
            w.string(f.sha256)
            w.raw(",\"through\":")
            w.int(f.through)
            w.byte(0x7D)
        }
        w.raw("{\"format\":")
        w.string(Self.format)
        w.raw(",\"version\":")
        w.int(Self.version)
        w.raw(",\"node\":")
        w.string(node)
        w.raw(",\"generation\":")
        w.string(generation)
        w.raw(",\"through\":")
        w.int(through)
        w.raw(",\n\"base\":")
        file(base, delta: false)
        if let bridge {
            w.raw(",\n\"bridge\":")
            file(bridge.file, delta: true, generation: bridge.generation)
        }
        w.raw(",\n\"deltas\":[")
        for (i, d) in deltas.enumerated() {
            w.raw(i > 0 ? ",\n" : "\n")
            file(d, delta: true)
        }
        w.raw("]}\n")
        return w.bytes
    }

    /// Whether `name` may be a file of a log: a plain file name of letters, digits, `.`, `_` and `-`
    /// (never a path, so a hostile manifest cannot point a reader elsewhere).
    static func isValidFileName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 200 && name != "." && name != ".." && !name.hasPrefix(".")
            && name.utf8.allSatisfy {
                ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 46 || $0 == 95 || $0 == 45
            }
    }

    /// Parses a manifest.
    /// - Parameters:
    ///   - bytes: the manifest's JSON text.
    ///   - source: the manifest's name in messages.
    /// - Returns: the manifest.
    /// - Throws: `CatalogError` 76 for another format or a newer version, 65 for anything malformed (a
    ///   missing key, a bad file name, a size or hash of the wrong shape, ranges that do not chain).
    static func parse(_ bytes: [UInt8], source: String) throws -> LogManifest {
        let reader = JSONPullReader(bytes: bytes, options: .init(allowTrailingCommas: false, maxDepth: 8))
        func bad(_ what: String) -> CatalogError {
            CatalogError(.dataInvalid, "\(source) is not a valid snapshot-log manifest: \(what)")
        }
        let value: JSONValue
        do {
            value = try reader.readValue()
            try reader.finish()
        } catch let error as JSONSyntaxError {
            throw bad("\(error.message) at \(error.position)")
        }
        guard case .object(let members) = value else { throw bad("expected a JSON object") }
        var fields: [String: JSONValue] = [:]
        for m in members {
            guard fields[m.key] == nil else { throw bad("duplicate key '\(m.key)'") }
            fields[m.key] = m.value
        }
        guard case .string(let format)? = fields["format"] else { throw bad("missing \"format\"") }
        guard format == Self.format else {
            throw CatalogError(.incompatible, "unknown log format \(String(reflecting: format)) (expected \"\(Self.format)\"), \(source)")
        }
        guard case .number(let v)? = fields["version"], let version = v.int64Value, version >= 1 else { throw bad("missing or bad \"version\"") }
        guard version <= Self.version else {
            throw CatalogError(
                .incompatible, "snapshot-log version \(version) is newer than this catalog reads (\(Self.version)), \(source)",
                hint: "upgrade catalog on this machine")
        }
        func string(_ key: String, in f: [String: JSONValue]) throws -> String {
            guard case .string(let s)? = f[key] else { throw bad("missing or bad \"\(key)\"") }
            return s
        }
        func integer(_ key: String, in f: [String: JSONValue]) throws -> Int64 {
            guard case .number(let n)? = f[key], let i = n.int64Value, i >= 0 else { throw bad("missing or bad \"\(key)\"") }
            return i
        }
        func file(_ value: JSONValue?, delta: Bool) throws -> File {
            guard case .object(let ms)? = value else { throw bad("a file entry must be an object") }
            let f = Dictionary(ms.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
            let name = try string("name", in: f)
            guard isValidFileName(name) else { throw bad("bad file name \(String(reflecting: name))") }
            let sha = try string("sha256", in: f)
            guard sha.utf8.count == 64, sha.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
                throw bad("bad sha256 for \(name)")
            }
            let entry = File(
                name: name, bytes: try integer("bytes", in: f), sha256: sha, from: delta ? try integer("from", in: f) : 0,
                through: try integer("through", in: f))
            guard entry.from <= entry.through else { throw bad("\(name) covers \(entry.from)…\(entry.through)") }
            return entry
        }
        let base = try file(fields["base"], delta: false)
        guard case .array(let list)? = fields["deltas"] else { throw bad("missing \"deltas\"") }
        let deltas = try list.map { try file($0, delta: true) }
        var manifest = LogManifest(
            node: try string("node", in: fields), generation: try string("generation", in: fields),
            through: try integer("through", in: fields), base: base, deltas: deltas)
        if let value = fields["bridge"] {
            guard case .object(let ms) = value else { throw bad("\"bridge\" must be an object") }
            let from = try string("generation", in: Dictionary(ms.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a }))
            let bridge = Bridge(generation: from, file: try file(value, delta: true))
            guard !from.isEmpty, from.utf8.count <= 100, from != manifest.generation, bridge.file.from < bridge.file.through,
                bridge.file.through == base.through
            else { throw bad("the bridge \(bridge.file.name) (from \(from), \(bridge.file.from)…\(bridge.file.through)) does not end at the base") }
            manifest.bridge = bridge
        }
        var at = base.through
        for d in deltas {
            guard d.from <= at, d.through >= at else { throw bad("delta \(d.name) (\(d.from)…\(d.through)) does not follow \(at)") }
            at = d.through
        }
        guard at == manifest.through else { throw bad("the files cover up to \(at), the manifest says \(manifest.through)") }
        guard !manifest.generation.isEmpty, manifest.generation.utf8.count <= 100 else { throw bad("bad \"generation\"") }
        return manifest
    }

    /// Whether `bytes` (the start of a document) begin like a log manifest: the first key is `format`
    /// with this format's value.
    ///
    /// Our writers always put it first; a snapshot never has it.
    package static func looksLikeManifest(_ bytes: ArraySlice<UInt8>) -> Bool {
        let reader = JSONPullReader(bytes: Array(bytes), options: .init(allowTrailingCommas: false, maxDepth: 8))
        guard (try? reader.beginObject()) != nil, let (key, _) = try? reader.nextKey() else { return false }
        return key == "format" && (try? reader.readString()) == Self.format
    }
}

extension LogManifest {
    /// Whether `generation` is a name as a publisher makes it, `g<yyyyMMddTHHmmss>Z-<6 hex digits>`: such
    /// names sort in the order their generations were started (docs/log-format.md §2).
    ///
    /// - Parameter generation: a manifest's `generation`.
    /// - Returns: true for a publisher's name, false for anything else (a hand-made manifest's).
    static func isPublisherGeneration(_ generation: String) -> Bool {
        let c = Array(generation.utf8)
        guard c.count == 24, c[0] == UInt8(ascii: "g"), c[9] == UInt8(ascii: "T"), c[16] == UInt8(ascii: "Z"), c[17] == UInt8(ascii: "-")
        else { return false }
        let digits = c[1..<9] + c[10..<16]
        return digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } && c[18...].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
