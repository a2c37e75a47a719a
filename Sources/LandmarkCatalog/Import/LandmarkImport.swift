import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where `catalog import` reads from.
public enum ImportSource: Sendable, Equatable {
    /// A file path.
    case file(String)
    /// Standard input (`-`).
    case standardInput
    /// An open file descriptor (not closed by the import), with the name to use in messages.
    case descriptor(Int32, name: String)

    /// The name used in messages: the path, or `<stdin>`.
    public var displayName: String {
        switch self {
        case .file(let path): return path
        case .standardInput: return "<stdin>"
        case .descriptor(_, let name): return name
        }
    }
}

/// How an import behaves (SPEC §3).
public struct ImportOptions: Sendable {
    /// Every warning (trailing comma, `isFavourite`, legacy shape, unknown key) becomes an error.
    public var strict = false
    /// Live landmarks missing from the file become tombstones.
    public var prune = false
    /// Validate and count, then roll back: nothing is written.
    public var dryRun = false
    /// At most this many errors are reported before the import stops looking for more.
    public var maxErrors = 20

    public init(strict: Bool = false, prune: Bool = false, dryRun: Bool = false) {
        self.strict = strict
        self.prune = prune
        self.dryRun = dryRun
    }
}

/// What an import did (or, with `dryRun`, would do).
public struct ImportSummary: Sendable, Equatable {
    /// Records read from the file.
    public var records = 0
    /// New ids (or ids that were tombstones).
    public var inserted = 0
    /// Existing rows whose content changed.
    public var updated = 0
    /// Existing rows left as they were (not rewritten).
    public var unchanged = 0
    /// Rows tombstoned by `--prune`.
    public var pruned = 0
    /// Warnings reported.
    public var warnings = 0
    /// True when nothing was written because of `dryRun`.
    public var dryRun = false

    public init() {}
}

/// A problem found in input data, with where it is: file, line:column, record index, id and field.
public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    public enum Severity: String, Sendable { case warning, error }
    public var severity: Severity
    /// What is wrong.
    public var message: String
    /// The file name (a path, or `<stdin>`).
    public var file: String
    /// Line and column, when known.
    public var position: SourcePosition?
    /// The record's 0-based index in the top-level array, when known.
    public var index: Int?
    /// The record's id, when known.
    public var id: Int64?
    /// The field, in dotted form (`coordinates.latitude`), when known.
    public var field: String?

    /// `<what>, <file>:<line>:<column>, record <index> (id <id>), field <field>`
    public var description: String {
        var location = file
        if let position { location += ":\(position.line):\(position.column)" }
        var parts = [message, location]
        if let index {
            parts.append("record \(index)" + (id.map { " (id \($0))" } ?? ""))
        } else if let id {
            parts.append("id \(id)")
        }
        if let field { parts.append("field \(field)") }
        return parts.joined(separator: ", ")
    }
}

extension CatalogStore {
    /// Validates `source` and upserts its landmarks by `id` in one transaction (SPEC §3).
    ///
    /// The file is streamed: memory stays bounded by one record plus an id set, whatever the file size.
    /// A re-import of the same file rewrites no row. Keys absent from a record leave stored values as
    /// they were; optional keys given as `null` clear them.
    ///
    /// - Parameters:
    ///   - source: a file path or standard input.
    ///   - options: strictness, pruning, dry run.
    ///   - diagnostics: called with each warning and error as it is found.
    ///   - progress: called about every 10,000 records with the count so far.
    /// - Returns: the counts; with `dryRun`, what would have happened.
    /// - Throws: `CatalogError` — 66 for a missing or unreadable file or a directory, 65 for invalid data
    ///   (after every error found, up to `maxErrors`, went to `diagnostics`), 74 for a read error;
    ///   nothing is written in any of these cases.
    public func importLandmarks(from source: ImportSource, options: ImportOptions = ImportOptions(),
                                diagnostics: @escaping (Diagnostic) -> Void = { _ in },
                                progress: (Int) -> Void = { _ in }) throws -> ImportSummary {
        let fd: Int32
        switch source {
        case .standardInput:
            fd = 0
        case .descriptor(let descriptor, _):
            fd = descriptor
        case .file(let path):
            fd = try Self.openForReading(path)
        }
        defer { if case .file = source { close(fd) } }
        let reader = JSONPullReader(fileDescriptor: fd,
                                    options: .init(allowTrailingCommas: !options.strict, maxDepth: 64))
        var run = ImportRun(store: self, file: source.displayName, options: options, diagnostics: diagnostics)
        do {
            return try write {
                try run.execute(reader: reader, progress: progress)
                if options.dryRun { throw DryRunRollback() }
                return run.summary
            }
        } catch is DryRunRollback {
            var summary = run.summary
            summary.dryRun = true
            return summary
        }
    }

    static func openForReading(_ path: String) throws -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw CatalogError(.noInput, "cannot open \(path): \(reason)")
        }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw CatalogError(.noInput, "\(path) is a directory, not a landmarkData.json file")
        }
        return fd
    }
}

private struct DryRunRollback: Error {}

/// The state of one import while it runs inside its transaction.
struct ImportRun {
    let store: CatalogStore
    let file: String
    let options: ImportOptions
    let diagnostics: (Diagnostic) -> Void
    var summary = ImportSummary()
    var errors = 0
    /// id → record index, for duplicate detection and `--prune`.
    var seen: [Int64: Int32] = [:]
    /// Keys already warned about in this file (one warning per key).
    var warnedKeys: Set<String> = []
    var stamp: HLCStamp?

    init(store: CatalogStore, file: String, options: ImportOptions, diagnostics: @escaping (Diagnostic) -> Void) {
        self.store = store
        self.file = file
        self.options = options
        self.diagnostics = diagnostics
    }

    mutating func report(_ severity: Diagnostic.Severity, _ message: String, at position: SourcePosition?,
                         index: Int? = nil, id: Int64? = nil, field: String? = nil) {
        let effective: Diagnostic.Severity = options.strict ? .error : severity
        if effective == .error {
            errors += 1
            guard errors <= options.maxErrors else { return }
        } else {
            summary.warnings += 1
        }
        diagnostics(Diagnostic(severity: effective, message: message + (severity == .warning && options.strict ? " (--strict)" : ""),
                               file: file, position: position, index: index, id: id, field: field))
    }

    mutating func execute(reader: JSONPullReader, progress: (Int) -> Void) throws {
        let db = store.connection
        let select = try db.cachedStatement(sql: """
            SELECT name, category, city, state, park, description, image_name, is_featured, is_favorite,
                   latitude, longitude, extra, deleted FROM landmarks WHERE id = ?
            """)
        let upsert = try db.cachedStatement(sql: """
            INSERT INTO landmarks (id, name, category, city, state, park, description, image_name, is_featured,
                                   is_favorite, latitude, longitude, extra, updated_ms, counter, node, deleted)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 0)
            ON CONFLICT (id) DO UPDATE SET
                name = excluded.name, category = excluded.category, city = excluded.city, state = excluded.state,
                park = excluded.park, description = excluded.description, image_name = excluded.image_name,
                is_featured = excluded.is_featured, is_favorite = excluded.is_favorite,
                latitude = excluded.latitude, longitude = excluded.longitude, extra = excluded.extra,
                updated_ms = excluded.updated_ms, counter = excluded.counter, node = excluded.node, deleted = 0
            """)
        do {
            guard try reader.peekKind() == .array else {
                let found = try reader.peekKind()
                report(.error, "expected a JSON array of landmarks, found \(found == .object ? "an object" : "a \(found)")",
                       at: reader.position)
                throw failure()
            }
            try reader.beginArray()
            var index = 0
            while try reader.nextElement() {
                let position = reader.position
                let value = try reader.readValue()
                if let record = validate(value, index: index, position: position) {
                    try apply(record, index: index, select: select, upsert: upsert)
                }
                index += 1
                summary.records = index
                if index % 10_000 == 0 { progress(index) }
                if errors > options.maxErrors { break }
            }
            if errors <= options.maxErrors { try reader.finish() }
        } catch let error as JSONSyntaxError {
            report(.error, error.message, at: error.position)
        }
        for warning in reader.warnings {
            report(.warning, warning.message + " (accepted: Apple's own landmarkData.json has one)", at: warning.position)
        }
        if errors > 0 { throw failure() }
        if options.prune { try prune() }
    }

    func failure() -> CatalogError {
        let shown = min(errors, options.maxErrors)
        let more = errors > options.maxErrors ? " (the first \(shown) shown)" : ""
        return CatalogError(.dataInvalid, "\(file) has \(errors == 1 ? "1 error" : "\(errors) errors")\(more); nothing was imported",
                            hint: options.strict ? "without --strict, Apple's known quirks are accepted with a warning" : nil)
    }

    // MARK: Validation

    /// A validated record: the keys it had, with their values. `nil` fields were absent; `.some(nil)` was `null`.
    struct Record {
        var id: Int64
        var name: String
        var latitude: Double
        var longitude: Double
        var category: String??
        var city: String??
        var state: String??
        var park: String??
        var description: String??
        var imageName: String??
        var isFeatured: Bool?
        var isFavorite: Bool?
        var extra: [JSONMember] = []
    }

    mutating func validate(_ value: JSONValue, index: Int, position: SourcePosition) -> Record? {
        guard case .object(let members) = value else {
            report(.error, "a landmark must be a JSON object, found \(Self.kindName(value))", at: position, index: index)
            return nil
        }
        let errorsBefore = errors
        // The id first, so every later message can name it.
        var id: Int64?
        var keys: Set<String> = []
        for member in members {
            if !keys.insert(member.key).inserted {
                report(.error, "duplicate key '\(member.key)' in one landmark", at: member.position, index: index, field: member.key)
            }
        }
        if let member = members.first(where: { $0.key == "id" }) {
            if case .number(let n) = member.value, let v = n.int64Value {
                id = v
            } else {
                report(.error, "id must be an integer that fits in 64 bits, found \(Self.describe(member.value))",
                       at: member.position, index: index, field: "id")
            }
        } else {
            report(.error, "missing required key 'id'", at: position, index: index, field: "id")
        }
        var record = Record(id: id ?? 0, name: "", latitude: .nan, longitude: .nan)
        var sawName = false, sawCoordinates = false
        for member in members {
            let at = member.position
            func text(_ field: String) -> String?? {
                switch member.value {
                case .string(let s): return .some(s)
                case .null: return .some(nil)
                default:
                    report(.error, "\(field) must be a string or null, found \(Self.describe(member.value))", at: at, index: index, id: id, field: field)
                    return nil
                }
            }
            func flag(_ field: String) -> Bool? {
                switch member.value {
                case .bool(let b): return b
                case .null: return false
                default:
                    report(.error, "\(field) must be true, false or null, found \(Self.describe(member.value))", at: at, index: index, id: id, field: field)
                    return nil
                }
            }
            switch member.key {
            case "id": break
            case "name":
                sawName = true
                if case .string(let s) = member.value {
                    if s.allSatisfy(\.isWhitespace) {
                        report(.error, "name must not be empty", at: at, index: index, id: id, field: "name")
                    }
                    record.name = s
                } else {
                    report(.error, "name must be a non-empty string, found \(Self.describe(member.value))", at: at, index: index, id: id, field: "name")
                }
            case "coordinates":
                sawCoordinates = true
                readCoordinates(member, into: &record, index: index, id: id)
            case "category": record.category = text("category")
            case "city": record.city = text("city")
            case "state": record.state = text("state")
            case "park": record.park = text("park")
            case "description": record.description = text("description")
            case "imageName": record.imageName = text("imageName")
            case "isFeatured": record.isFeatured = flag("isFeatured")
            case "isFavorite": record.isFavorite = flag("isFavorite")
            case "isFavourite":
                if keys.contains("isFavorite") {
                    report(.error, "both isFavorite and isFavourite are given; keep one", at: at, index: index, id: id, field: "isFavourite")
                } else {
                    warnOnce("isFavourite", "the British spelling 'isFavourite' is read as 'isFavorite'", at: at, index: index, id: id)
                    record.isFavorite = flag("isFavourite")
                }
            default:
                warnOnce(member.key, "unknown key '\(member.key)' is kept as it is (warned once per file)", at: at, index: index, id: id)
                record.extra.append(member)
            }
        }
        if !sawName { report(.error, "missing required key 'name'", at: position, index: index, id: id, field: "name") }
        if !sawCoordinates {
            report(.error, "missing required key 'coordinates'", at: position, index: index, id: id, field: "coordinates")
        }
        if record.isFeatured == nil, !keys.contains("isFeatured"), case .some(.some("Featured")) = record.category {
            warnOnce("\u{0}legacy", "legacy shape without isFeatured: category \"Featured\" is read as featured",
                     at: position, index: index, id: id)
            record.isFeatured = true
        }
        return errors == errorsBefore && id != nil ? record : nil
    }

    mutating func warnOnce(_ key: String, _ message: String, at: SourcePosition, index: Int, id: Int64?) {
        guard warnedKeys.insert(key).inserted else { return }
        report(.warning, message, at: at, index: index, id: id, field: key.hasPrefix("\u{0}") ? nil : key)
    }

    mutating func readCoordinates(_ member: JSONMember, into record: inout Record, index: Int, id: Int64?) {
        guard case .object(let parts) = member.value else {
            report(.error, "coordinates must be an object with latitude and longitude, found \(Self.describe(member.value))",
                   at: member.position, index: index, id: id, field: "coordinates")
            return
        }
        for (field, limit) in [("latitude", 90.0), ("longitude", 180.0)] {
            let name = "coordinates.\(field)"
            guard let part = parts.first(where: { $0.key == field }) else {
                report(.error, "missing required key '\(field)'", at: member.position, index: index, id: id, field: name)
                continue
            }
            guard case .number(let n) = part.value else {
                report(.error, "\(field) must be a number, found \(Self.describe(part.value))", at: part.position, index: index, id: id, field: name)
                continue
            }
            let v = n.doubleValue
            guard v.isFinite, v >= -limit, v <= limit else {
                report(.error, "\(field) \(n.literal) is outside −\(Int(limit))…\(Int(limit))", at: part.position, index: index, id: id, field: name)
                continue
            }
            if field == "latitude" { record.latitude = v } else { record.longitude = v }
        }
        for part in parts where part.key != "latitude" && part.key != "longitude" {
            report(.error, "unknown key '\(part.key)' in coordinates (only latitude and longitude are stored)",
                   at: part.position, index: index, id: id, field: "coordinates.\(part.key)")
        }
    }

    static func kindName(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .number(let n): return "the number \(n.literal)"
        case .string(let s): return "the string \(s.count > 40 ? String(reflecting: String(s.prefix(40)) + "…") : String(reflecting: s))"
        case .bool(let b): return "\(b)"
        default: return kindName(value)
        }
    }

    // MARK: Upsert

    mutating func apply(_ record: Record, index: Int, select: Statement, upsert: Statement) throws {
        if let first = seen[record.id] {
            let firstName = try store.connection.scalarText(sql: "SELECT name FROM landmarks WHERE id = ?", [.integer(record.id)])
            report(.error, "duplicate id \(record.id): record \(first)\(firstName.map { " (\(String(reflecting: $0)))" } ?? "") and record \(index) (\(String(reflecting: record.name))) both use it",
                   at: nil, index: index, id: record.id, field: "id")
            return
        }
        seen[record.id] = Int32(truncatingIfNeeded: index)
        guard errors == 0 else { return }  // the transaction will roll back: skip the writes

        try select.bind(record.id, at: 1)
        var merged: Landmark
        let isNew: Bool
        if try select.step(), select.int(12) == 0 {
            let old = Landmark(id: record.id, name: select.text(0) ?? "", category: select.text(1), city: select.text(2),
                               state: select.text(3), park: select.text(4), description: select.text(5),
                               imageName: select.text(6), isFeatured: select.int(7) != 0, isFavorite: select.int(8) != 0,
                               latitude: select.double(9), longitude: select.double(10), extraJSON: select.text(11))
            select.reset()
            merged = Self.merge(record, into: old)
            if merged == old {
                summary.unchanged += 1
                return
            }
            isNew = false
        } else {
            select.reset()
            merged = Self.merge(record, into: Landmark(id: record.id, name: record.name, latitude: record.latitude, longitude: record.longitude))
            isNew = true
        }
        let stamp = try writeStamp()
        try upsert.bind(merged.id, at: 1)
        try upsert.bind(merged.name, at: 2)
        try upsert.bind(merged.category, at: 3)
        try upsert.bind(merged.city, at: 4)
        try upsert.bind(merged.state, at: 5)
        try upsert.bind(merged.park, at: 6)
        try upsert.bind(merged.description, at: 7)
        try upsert.bind(merged.imageName, at: 8)
        try upsert.bind(Int64(merged.isFeatured ? 1 : 0), at: 9)
        try upsert.bind(Int64(merged.isFavorite ? 1 : 0), at: 10)
        try upsert.bind(merged.latitude, at: 11)
        try upsert.bind(merged.longitude, at: 12)
        try upsert.bind(merged.extraJSON, at: 13)
        try upsert.bind(stamp.wallMilliseconds, at: 14)
        try upsert.bind(stamp.counter, at: 15)
        try upsert.bind(stamp.node, at: 16)
        try upsert.run()
        if isNew { summary.inserted += 1 } else { summary.updated += 1 }
    }

    /// The stored landmark after applying the keys present in `record` (absent keys keep `old`'s values).
    static func merge(_ record: Record, into old: Landmark) -> Landmark {
        var l = old
        l.name = record.name
        l.latitude = record.latitude
        l.longitude = record.longitude
        if let v = record.category { l.category = v }
        if let v = record.city { l.city = v }
        if let v = record.state { l.state = v }
        if let v = record.park { l.park = v }
        if let v = record.description { l.description = v }
        if let v = record.imageName { l.imageName = v }
        if let v = record.isFeatured { l.isFeatured = v }
        if let v = record.isFavorite { l.isFavorite = v }
        if !record.extra.isEmpty {
            var members = old.extraJSON.flatMap(Self.parseObject) ?? []
            for member in record.extra {
                if let i = members.firstIndex(where: { $0.key == member.key }) {
                    members[i].value = member.value
                } else {
                    members.append(member)
                }
            }
            l.extraJSON = JSONValue.object(members).serialized()
        }
        return l
    }

    static func parseObject(_ text: String) -> [JSONMember]? {
        let reader = JSONPullReader(bytes: Array(text.utf8), options: .init(allowTrailingCommas: false, maxDepth: 64))
        guard case .object(let members)? = try? reader.readValue() else { return nil }
        return members
    }

    // MARK: Prune

    /// The one HLC stamp of this import's writes, issued at the first write (an import that changes
    /// nothing does not even advance the clock, so it rewrites no page).
    mutating func writeStamp() throws -> HLCStamp {
        if let stamp { return stamp }
        let issued = try store.localStamp()
        stamp = issued
        return issued
    }

    mutating func prune() throws {
        let db = store.connection
        let live = try db.cachedStatement(sql: "SELECT id FROM landmarks WHERE deleted = 0")
        var doomed: [Int64] = []
        while try live.step() {
            let id = live.int(0)
            if seen[id] == nil { doomed.append(id) }
        }
        live.reset()
        guard !doomed.isEmpty else { return }
        let stamp = try writeStamp()
        let tombstone = try db.cachedStatement(sql: "UPDATE landmarks SET deleted = 1, updated_ms = ?, counter = ?, node = ? WHERE id = ?")
        for id in doomed {
            try tombstone.bind(stamp.wallMilliseconds, at: 1)
            try tombstone.bind(stamp.counter, at: 2)
            try tombstone.bind(stamp.node, at: 3)
            try tombstone.bind(id, at: 4)
            try tombstone.run()
        }
        summary.pruned = doomed.count
    }
}
