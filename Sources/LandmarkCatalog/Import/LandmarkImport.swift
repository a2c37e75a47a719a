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
    /// A warning is accepted (unless `--strict`); an error fails the import.
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
    /// The file is streamed: one thread reads and validates records into small batches while this one
    /// writes them, so memory stays bounded by a few batches (about 2,000 records each) whatever the
    /// file size, and reading overlaps writing. A re-import of the same file rewrites no row and, when
    /// nothing changed, writes nothing at all. Keys absent from a record leave stored values as they
    /// were; optional keys given as `null` clear them.
    ///
    /// - Parameters:
    ///   - source: a file path, standard input or an open descriptor.
    ///   - options: strictness, pruning, dry run.
    ///   - diagnostics: called with each warning and error as it is found, in input order.
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
        case .standardInput: fd = 0
        case .descriptor(let descriptor, _): fd = descriptor
        case .file(let path): fd = try Self.openForReading(path)
        }
        defer { if case .file = source { close(fd) } }

        let queue = BatchQueue()
        var reading: LandmarkReadingThread?
        defer {
            if let reading {
                queue.cancel()
                reading.waitUntilDone()  // the descriptor is closed only after the reader is gone
            }
        }
        var writer = ImportWriter(store: self, file: source.displayName, options: options, diagnostics: diagnostics)
        do {
            return try write {
                // Read only once the write lock is held: a busy database fails fast, with no reader to stop.
                let thread = LandmarkReadingThread(fd: fd, file: source.displayName, options: options, queue: queue)
                thread.start()
                reading = thread
                try writer.run(queue: queue, progress: progress)
                if options.dryRun { throw DryRunRollback() }
                return writer.summary
            }
        } catch is DryRunRollback {
            var summary = writer.summary
            summary.dryRun = true
            return summary
        }
    }

    static func openForReading(_ path: String) throws -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw CatalogError(.noInput, "cannot open the file (\(reason)), \(path)")
        }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw CatalogError(.noInput, "is a directory, not a file, \(path)")
        }
        return fd
    }
}

private struct DryRunRollback: Error {}

/// A bounded hand-off of batches from the reading thread to the writing one (at most `capacity` waiting).
final class BatchQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [LandmarkBatch] = []
    private var cancelled = false
    private let capacity = 3

    /// Blocks while full. Returns false once the writer gave up (the reader should stop).
    func put(_ batch: LandmarkBatch) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !cancelled { condition.wait() }
        guard !cancelled else { return false }
        items.append(batch)
        condition.broadcast()
        return true
    }

    /// Blocks until a batch is there.
    func take() -> LandmarkBatch {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty { condition.wait() }
        let batch = items.removeFirst()
        condition.broadcast()
        return batch
    }

    func cancel() {
        condition.lock()
        cancelled = true
        items.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}

/// Reads and validates records on its own thread, handing batches to a `BatchQueue`.
final class LandmarkReadingThread: @unchecked Sendable {
    let fd: Int32
    let file: String
    let options: ImportOptions
    let queue: BatchQueue
    private let done = DispatchSemaphore(value: 0)

    init(fd: Int32, file: String, options: ImportOptions, queue: BatchQueue) {
        self.fd = fd
        self.file = file
        self.options = options
        self.queue = queue
    }

    func start() {
        let thread = Thread { [self] in
            read()
            done.signal()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    func waitUntilDone() { done.wait() }

    private func read() {
        var decoder = LandmarkDecoder(file: file, strict: options.strict)
        let reader = JSONPullReader(fileDescriptor: fd, options: .init(allowTrailingCommas: !options.strict, maxDepth: 64))
        var batch = LandmarkBatch()
        var index = 0
        do {
            let kind = try reader.peekKind()
            guard kind == .array else {
                decoder.report(batch, .error, "expected a JSON array of landmarks, found \(kind)", at: reader.position)
                batch.isLast = true
                _ = queue.put(batch)
                return
            }
            try reader.beginArray()
            while try reader.nextElement() {
                try decoder.decode(reader, index: index, into: batch)
                index += 1
                if batch.records.count >= LandmarkDecoder.batchSize || batch.bytes.count >= 1 << 21 {
                    batch.recordsRead = index
                    guard queue.put(batch) else { return }
                    batch = LandmarkBatch()
                }
                if decoder.errors > options.maxErrors { break }
            }
            if decoder.errors <= options.maxErrors { try reader.finish() }
        } catch let error as JSONSyntaxError {
            decoder.report(batch, .error, error.message, at: error.position)
        } catch let error as JSONStringContentError {  // the decoder reports these per field; any other one is fatal
            decoder.report(batch, .error, error.message, at: error.position)
        } catch let error as JSONReadError {
            batch.failure = CatalogError(.ioError, "cannot read \(file): \(String(cString: strerror(error.errno)))")
        } catch {
            batch.failure = error
        }
        for warning in reader.warnings {
            decoder.report(batch, .warning, warning.message + " (accepted: Apple's own landmarkData.json has one)", at: warning.position)
        }
        batch.recordsRead = index
        batch.seen = decoder.seen
        batch.isLast = true
        _ = queue.put(batch)
    }
}

/// Writes decoded batches inside the import's transaction and counts what happened.
struct ImportWriter {
    let store: CatalogStore
    let file: String
    let options: ImportOptions
    let diagnostics: (Diagnostic) -> Void
    var summary = ImportSummary()
    var errors = 0
    /// Warnings that `--strict` turned into errors.
    var strictWarnings = 0
    var stamp: HLCStamp?
    var stampStored = false

    init(store: CatalogStore, file: String, options: ImportOptions, diagnostics: @escaping (Diagnostic) -> Void) {
        self.store = store
        self.file = file
        self.options = options
        self.diagnostics = diagnostics
    }

    /// The upsert: absent keys (bit clear in ?17) keep the stored value (or the default, over a
    /// tombstone); the `WHERE` skips rows whose content would not change, so they are never rewritten.
    /// https://sqlite.org/lang_upsert.html
    static let upsertSQL: String = {
        func keep(_ column: String, _ bit: UInt16, _ cleared: String) -> String {
            "\(column) = CASE WHEN ?17 & \(bit) THEN excluded.\(column) WHEN landmarks.deleted THEN \(cleared) ELSE landmarks.\(column) END"
        }
        func differs(_ column: String, _ bit: UInt16) -> String {
            "(?17 & \(bit) AND landmarks.\(column) IS NOT excluded.\(column))"
        }
        typealias F = RawLandmark.Field
        let optional: [(String, UInt16, String)] = [
            ("category", F.bit(F.category), "NULL"), ("city", F.bit(F.city), "NULL"), ("state", F.bit(F.state), "NULL"),
            ("park", F.bit(F.park), "NULL"), ("description", F.bit(F.description), "NULL"),
            ("image_name", F.bit(F.imageName), "NULL"), ("is_featured", F.isFeatured, "0"), ("is_favorite", F.isFavorite, "0"),
            ("extra", F.extra, "NULL"),
        ]
        return """
            INSERT INTO landmarks (id, name, category, city, state, park, description, image_name, is_featured,
                                   is_favorite, latitude, longitude, extra, updated_ms, counter, node, deleted)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 0)
            ON CONFLICT (id) DO UPDATE SET
                name = excluded.name, latitude = excluded.latitude, longitude = excluded.longitude,
                \(optional.map { keep($0.0, $0.1, $0.2) }.joined(separator: ",\n    ")),
                updated_ms = excluded.updated_ms, counter = excluded.counter, node = excluded.node, deleted = 0
            WHERE landmarks.deleted = 1 OR landmarks.name IS NOT excluded.name
               OR landmarks.latitude IS NOT excluded.latitude OR landmarks.longitude IS NOT excluded.longitude
               OR \(optional.map { differs($0.0, $0.1) }.joined(separator: "\n   OR "))
            """
    }()

    mutating func report(_ diagnostic: Diagnostic) {
        var d = diagnostic
        if d.severity == .warning {
            if options.strict {
                d.severity = .error
                d.message += " (--strict)"
                strictWarnings += 1
            } else {
                summary.warnings += 1
            }
        }
        if d.severity == .error {
            errors += 1
            guard errors <= options.maxErrors else { return }
        }
        diagnostics(d)
    }

    mutating func run(queue: BatchQueue, progress: (Int) -> Void) throws {
        let db = store.connection
        let upsert = try db.cachedStatement(sql: Self.upsertSQL)
        let preImage = store.path == ":memory:" ? nil : try PreImage(path: store.path)
        let tombstonesBefore = try db.scalarInt(sql: "SELECT count(*) FROM landmarks WHERE deleted = 1") ?? 0
        let node = try db.scalarText(sql: "SELECT value FROM catalog_meta WHERE key = 'node'") ?? ""
        let clock = HybridLogicalClock(db: db, wall: store.wallClock)
        let candidate = try clock.peekSend(node: node)
        try upsert.bind(candidate.wallMilliseconds, at: 14)
        try upsert.bind(candidate.counter, at: 15)
        try upsert.bind(candidate.node, at: 16)
        var lastProgress = 0
        while true {
            let batch = queue.take()
            var next = 0
            for (i, record) in batch.records.enumerated() {
                while next < batch.diagnostics.count, batch.diagnostics[next].afterRecord <= i {
                    report(batch.diagnostics[next].diagnostic)
                    next += 1
                }
                if let first = record.duplicateOf {
                    let firstName = try db.scalarText(sql: "SELECT name FROM landmarks WHERE id = ?", [.integer(record.id)])
                    let name = batch.text(record, RawLandmark.Field.name) ?? ""
                    report(Diagnostic(severity: .error,
                                      message: "duplicate id \(record.id): record \(first)\(firstName.map { " (\(String(reflecting: $0)))" } ?? "") and record \(record.index) (\(String(reflecting: name))) both use it",
                                      file: file, position: record.position, index: record.index, id: record.id, field: "id"))
                    continue
                }
                guard errors == 0 else { continue }  // the transaction will roll back: skip the writes
                if let preImage, try preImage.seek(record.id), preImage.matches(record, in: batch) {
                    summary.unchanged += 1
                    continue
                }
                do {
                    try apply(record, in: batch, upsert: upsert, stamp: candidate, clock: clock)
                } catch let error as SQLiteError where error.code.primary == .tooBig {
                    report(Diagnostic(severity: .error, message: "a value is larger than SQLite stores (1,000,000,000 bytes)",
                                      file: file, position: record.position, index: record.index, id: record.id))
                }
            }
            while next < batch.diagnostics.count {
                report(batch.diagnostics[next].diagnostic)
                next += 1
            }
            summary.records = batch.recordsRead
            if summary.records - lastProgress >= 10_000 {
                lastProgress = summary.records
                progress(summary.records)
            }
            if let failure = batch.failure { throw failure }
            if batch.isLast {
                if errors > 0 { throw failure() }
                // A tombstone brought back counts as inserted, not updated.
                let tombstonesAfter = try db.scalarInt(sql: "SELECT count(*) FROM landmarks WHERE deleted = 1") ?? 0
                let resurrected = Int(tombstonesBefore - tombstonesAfter)
                summary.inserted += resurrected
                summary.updated -= resurrected
                if options.prune { try prune(seen: batch.seen, stamp: candidate, clock: clock) }
                return
            }
        }
    }

    func failure() -> CatalogError {
        // Reading stops once more than maxErrors were found, so past that the count is a lower bound.
        let count = errors > options.maxErrors
            ? "more than \(options.maxErrors) errors (the first \(options.maxErrors) shown)"
            : errors == 1 ? "1 error" : "\(errors) errors"
        return CatalogError(.dataInvalid, "\(count); nothing was imported, \(file)",
                            hint: strictWarnings > 0 ? "without --strict, Apple's known quirks are accepted with a warning" : nil)
    }

    /// Persists the import's stamp in the clock the first time a row really changes.
    mutating func noteWrite(_ stamp: HLCStamp, clock: HybridLogicalClock) throws {
        guard !stampStored else { return }
        try clock.store(stamp)
        stampStored = true
    }

    mutating func apply(_ record: RawLandmark, in batch: LandmarkBatch, upsert: Statement, stamp: HLCStamp,
                        clock: HybridLogicalClock) throws {
        var extra = record.extraJSON
        if let recordExtra = extra {
            // Unknown keys merge with the stored ones (rare: a slow path is fine).
            let stored = try store.connection.scalarText(sql: "SELECT extra FROM landmarks WHERE id = ? AND deleted = 0",
                                                         [.integer(record.id)])
            if let stored, let old = JSONValue.parseObject(stored), let new = JSONValue.parseObject(recordExtra) {
                var members = old
                for m in new {
                    if let i = members.firstIndex(where: { $0.key == m.key }) { members[i].value = m.value } else { members.append(m) }
                }
                extra = JSONValue.object(members).serialized()
            }
        }
        try batch.bytes.withUnsafeBufferPointer { bytes in
            func text(_ field: Int, at index: Int32) throws {
                let r = record.texts[field]
                if r.start < 0 {
                    try upsert.bind(.null, at: index)
                } else {
                    try upsert.bindStatic(UnsafeBufferPointer(rebasing: bytes[Int(r.start)..<Int(r.start + r.count)]), at: index)
                }
            }
            try upsert.bind(record.id, at: 1)
            try text(RawLandmark.Field.name, at: 2)
            for field in 1...6 { try text(field, at: Int32(field + 2)) }
            try upsert.bind(Int64(record.isFeatured ? 1 : 0), at: 9)
            try upsert.bind(Int64(record.isFavorite ? 1 : 0), at: 10)
            try upsert.bind(record.latitude, at: 11)
            try upsert.bind(record.longitude, at: 12)
            try upsert.bind(extra, at: 13)
            // ?14–?16 (the stamp) were bound once in `run`; reset keeps bindings.
            try upsert.bind(Int64(record.present), at: 17)
            store.connection.setLastInsertRowID(record.id &+ 1)
            try upsert.run()
        }
        guard store.connection.changes > 0 else {
            summary.unchanged += 1
            return
        }
        try noteWrite(stamp, clock: clock)
        if store.connection.lastInsertRowID == record.id { summary.inserted += 1 } else { summary.updated += 1 }
    }

    mutating func prune(seen: SeenIDs, stamp: HLCStamp, clock: HybridLogicalClock) throws {
        let db = store.connection
        let live = try db.cachedStatement(sql: "SELECT id FROM landmarks WHERE deleted = 0")
        var doomed: [Int64] = []
        while try live.step() {
            let id = live.int(0)
            if !seen.contains(id) { doomed.append(id) }
        }
        live.reset()
        guard !doomed.isEmpty else { return }
        try noteWrite(stamp, clock: clock)
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

/// The landmarks as they were before this import, read in id order through a second, read-only
/// connection (in WAL mode it sees the last committed state, not the import's own writes).
///
/// A file sorted by id is then compared with the stored rows by one forward scan instead of a seek per
/// record; out-of-order ids re-seek. Rows that match the record exactly are not even offered to the
/// upsert, which is what makes re-importing an unchanged file cheap.
final class PreImage {
    private let connection: Connection
    private let scan: Statement
    private var current: Int64?
    private var positioned = false
    /// The scan ran off the end after a seek to this id: larger ids are absent.
    private var exhaustedAfter: Int64?

    init(path: String) throws {
        connection = try Connection(path: path, readOnly: true)
        try connection.execute(sql: "PRAGMA cache_size = -8192")
        scan = try connection.makeStatement(sql: """
            SELECT id, name, category, city, state, park, description, image_name, is_featured, is_favorite,
                   latitude, longitude, extra, deleted FROM landmarks WHERE id >= ? ORDER BY id
            """)
    }

    deinit { scan.reset() }

    /// Moves to the stored row with `id`. Returns true when it exists (its columns are then readable).
    func seek(_ id: Int64) throws -> Bool {
        if positioned, let at = current {
            if at == id { return true }
            if at < id {
                for _ in 0..<8 {
                    guard try scan.step() else {
                        current = nil
                        exhaustedAfter = id
                        return false
                    }
                    let next = scan.int(0)
                    current = next
                    if next >= id { return next == id }
                }
            }
        } else if positioned, let end = exhaustedAfter, id >= end {
            return false
        }
        scan.reset()
        try scan.bind(id, at: 1)
        positioned = true
        exhaustedAfter = nil
        guard try scan.step() else {
            current = nil
            exhaustedAfter = id
            return false
        }
        current = scan.int(0)
        return current == id
    }

    /// Whether the current row already holds exactly what `record` would store (keys absent from the
    /// record keep stored values, so only present keys are compared). A tombstone never matches, nor
    /// does a record with unknown keys (those go through the upsert, which merges them).
    func matches(_ record: RawLandmark, in batch: LandmarkBatch) -> Bool {
        typealias F = RawLandmark.Field
        if scan.int(13) != 0 || record.present & F.extra != 0 { return false }
        guard scan.double(10) == record.latitude, scan.double(11) == record.longitude else { return false }
        if record.present & F.isFeatured != 0, (scan.int(8) != 0) != record.isFeatured { return false }
        if record.present & F.isFavorite != 0, (scan.int(9) != 0) != record.isFavorite { return false }
        return batch.bytes.withUnsafeBufferPointer { bytes in
            for field in 0...6 where field == F.name || record.present & F.bit(field) != 0 {
                let r = record.texts[field]
                let stored = scan.textBytes(field + 1)
                if r.start < 0 {
                    if stored != nil { return false }
                    continue
                }
                guard let stored, stored.count == Int(r.count) else { return false }
                if r.count > 0, memcmp(bytes.baseAddress! + Int(r.start), stored.baseAddress!, Int(r.count)) != 0 { return false }
            }
            return true
        }
    }
}

extension JSONValue {
    /// The value as a message names it: `the number 91`, `the string "x"`, `true`, or its kind (`an object`).
    var described: String {
        switch self {
        case .number(let n): return "the number \(n.literal)"
        case .string(let s): return "the string \(s.count > 40 ? String(reflecting: String(s.prefix(40)) + "…") : String(reflecting: s))"
        case .bool(let b): return "\(b)"
        default: return kind.description
        }
    }

    /// Parses stored `extra` text (a JSON object) back into its members; nil when it is not an object.
    static func parseObject(_ text: String) -> [JSONMember]? {
        let reader = JSONPullReader(bytes: Array(text.utf8), options: .init(allowTrailingCommas: false, maxDepth: 64))
        guard case .object(let members)? = try? reader.readValue() else { return nil }
        return members
    }
}
