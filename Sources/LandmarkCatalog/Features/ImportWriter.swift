import Foundation

#if os(Linux)
    import Glibc
#endif

/// Imports Apple's `landmarkData.json` into a catalog (docs/cli.md §2): one transaction, stamped with the
/// store's clock.
///
/// ```swift
/// let summary = try Importer(store).importLandmarks(from: .file("landmarkData.json"))
/// ```
public struct Importer {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension Importer {
    /// Validates `source` and upserts its landmarks by `id` in one transaction (docs/cli.md §2).
    ///
    /// The file is streamed: one thread reads and validates records into small batches while this one
    /// writes them, so memory stays bounded by a few batches (about 2,000 records each) whatever the
    /// file size, and reading overlaps writing. A re-import of the same file rewrites no row and, when
    /// nothing changed, writes nothing at all. Keys absent from a record leave stored values as they
    /// were; optional keys given as `null` clear them. Every changed row takes the next number of the
    /// change sequence.
    ///
    /// - Parameters:
    ///   - source: a file path, standard input or an open descriptor.
    ///   - options: strictness, pruning, dry run.
    ///   - diagnostics: called with each warning and error as it is found, in input order.
    ///   - progress: called about every 10,000 records with the records and bytes done so far.
    ///   - shouldStop: asked after each batch (about 2,000 records); when it answers true the import
    ///     stops and rolls back (`Catalog` passes its task's cancellation here).
    /// - Returns: the counts; with `dryRun`, what would have happened.
    /// - Throws: `CatalogError` — 66 for a missing or unreadable file or a directory, 65 for invalid data
    ///   (after every error found, up to `maxErrors`, went to `diagnostics`), 74 for a read error;
    ///   `CancellationError` when `shouldStop` answered true; nothing is written in any of these cases.
    public func importLandmarks(
        from source: ImportSource, options: ImportOptions = ImportOptions(),
        diagnostics: @escaping (Diagnostic) -> Void = { _ in },
        progress: (CatalogProgress) -> Void = { _ in },
        shouldStop: () -> Bool = { false }
    ) throws -> ImportSummary {
        let fd: Int32
        switch source {
        case .standardInput: fd = 0
        case .descriptor(let descriptor, _): fd = descriptor
        case .file(let path): fd = try CatalogFiles.openForReading(path)
        }
        defer { if case .file = source { close(fd) } }
        let total = CatalogFiles.regularFileSize(fd)
        var writer = ImportWriter(store: store, file: source.displayName, options: options, diagnostics: diagnostics)
        return try store.transaction {
            // Read only once the write lock is held: a busy database fails fast, with no reader to stop.
            let file = source.displayName
            // The stamp the writer will use (nothing is written before it peeks again): a third thread
            // hashes each row as it will be stored, between the reader and the writer.
            let stamp = try store.peekLocalStamp()
            let reading = ReadingThread { queue in
                Self.decodeLandmarkFile(fd: fd, file: file, options: options, queue: queue)
            }
            let hashing = ReadingThread(after: reading) { batch in Self.hashLandmarks(batch, stamp: stamp) }
            defer { hashing.finish() }
            writer.stamp = stamp
            try writer.run(queue: hashing.queue, shouldStop: shouldStop) { records, bytes in
                progress(CatalogProgress(records: records, bytes: bytes, totalBytes: total))
            }
            var summary = writer.summary
            summary.dryRun = options.dryRun
            return options.dryRun ? .rollback(summary) : .commit(summary)
        }
    }

    /// Sets ``RowBatch/landmarkHashes``: each record's row hash as the import stores it with `stamp`
    /// (docs/repair.md §1), computed off the writing thread.
    static func hashLandmarks(_ batch: RowBatch, stamp: HLCStamp) {
        var hasher = RowHasher()
        batch.landmarkHashes.reserveCapacity(batch.landmarks.count)
        for record in batch.landmarks {
            batch.landmarkHashes.append(batch.withView(record) { hasher.landmark(StampedFields($0, stamp: stamp)) })
        }
    }

    /// The reading thread's work for an import: the top-level array of `landmarkData.json`.
    static func decodeLandmarkFile(fd: Int32, file: String, options: ImportOptions, queue: BatchQueue) {
        var decoder = LandmarkDecoder(file: file, mode: .importRecord, strict: options.strict)
        let reader = JSONPullReader(fileDescriptor: fd, options: .init(allowTrailingCommas: !options.strict, maxDepth: 64))
        var batch = RowBatch()
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
                if batch.landmarks.count >= LandmarkDecoder.batchSize || batch.bytes.count >= 1 << 21 {
                    batch.recordsRead = index
                    batch.bytesRead = reader.position.offset
                    guard queue.put(batch) else { return }
                    batch = RowBatch()
                }
                if decoder.errors > options.maxErrors { break }
            }
            if decoder.errors <= options.maxErrors { try reader.finish() }
        } catch let error as JSONSyntaxError {
            decoder.report(batch, .error, error.message, at: error.position, kind: "syntax")
        } catch let error as JSONStringContentError {  // the decoder reports these per field; any other one is fatal
            decoder.report(batch, .error, error.message, at: error.position, kind: "syntax")
        } catch let error as JSONReadError {
            batch.failure = CatalogError(.ioError, "cannot read \(file): \(String(cString: strerror(error.errno)))")
        } catch {
            batch.failure = error
        }
        for warning in reader.warnings {
            decoder.report(
                batch, .warning, warning.message + " (accepted: Apple's own landmarkData.json has one)", at: warning.position, kind: "quirk")
        }
        batch.recordsRead = index
        batch.bytesRead = reader.position.offset
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
    var stampStored = false
    /// The change sequence number the next changed row takes.
    var nextSeq: Int64 = 0
    /// The stamp every written row takes; peeked from the store's clock when not set before `run`.
    var stamp: HLCStamp?
    /// The hashes of the rows inserted, for the kept digest (updates move it row by row, in `rehash`).
    var digest = LaneSums()

    init(store: CatalogStore, file: String, options: ImportOptions, diagnostics: @escaping (Diagnostic) -> Void) {
        self.store = store
        self.file = file
        self.options = options
        self.diagnostics = diagnostics
    }

    mutating func report(_ diagnostic: Diagnostic) {
        var d = diagnostic
        if d.severity == .warning {
            if options.strict {
                d.severity = .error
                // The warning says what would have been done ("is kept", "is read as"): say that it was not.
                d.message = "refused by --strict (without it, a warning: " + d.message + ")"
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

    /// Writes every batch of `queue`; `shouldStop` is asked after each one (true throws `CancellationError`).
    mutating func run(queue: BatchQueue, shouldStop: () -> Bool = { false }, progress: (Int, Int64) -> Void) throws {
        let table = store.landmarkTable
        // Nothing stored, nothing to compare with (and a new database built without a journal,
        // NewDatabaseBuild, has no committed state for a second connection to read).
        let empty = try store.path == ":memory:" || table.maxID() == nil
        let preImage = empty ? nil : try PreImage(store: store)
        let tombstonesBefore = try table.tombstoneCount()
        let stamp = try self.stamp ?? store.peekLocalStamp()
        nextSeq = try store.lastChangeSequence() + 1
        try table.withImportUpsert { upsert in
            try upsert.bind(stamp.wallMilliseconds, to: LandmarkColumn.updatedMs)
            try upsert.bind(stamp.counter, to: LandmarkColumn.counter)
            try upsert.bind(stamp.node, to: LandmarkColumn.node)
            try upsert.bind(Int64(0), to: LandmarkColumn.deleted)
            var lastProgress = 0
            while true {
                let batch = queue.take()
                if shouldStop() { throw CancellationError() }
                var next = 0
                for (i, record) in batch.landmarks.enumerated() {
                    while next < batch.diagnostics.count, batch.diagnostics[next].afterRecord <= i {
                        report(batch.diagnostics[next].diagnostic)
                        next += 1
                    }
                    if let first = record.duplicateOf {
                        let firstName = try table.name(id: record.id)
                        let name = batch.text(record, .name) ?? ""
                        report(
                            Diagnostic(
                                severity: .error,
                                message:
                                    "duplicate id \(record.id): record \(first)\(firstName.map { " (\(String(reflecting: $0)))" } ?? "") and record \(record.index) (\(String(reflecting: name))) both use it",
                                file: file, position: record.position, index: record.index, id: record.id, field: "id"))
                        continue
                    }
                    guard errors == 0 else { continue }  // the transaction will roll back: skip the writes
                    if let preImage, try preImage.seek(record.id), preImage.matches(record, in: batch) {
                        summary.unchanged += 1
                        continue
                    }
                    do {
                        let hash = batch.landmarkHashes.count == batch.landmarks.count ? batch.landmarkHashes[i] : nil
                        try apply(record, in: batch, upsert: upsert, stamp: stamp, hash: hash)
                    } catch let error as SQLiteError where error.code.primary == .tooBig {
                        report(
                            Diagnostic(
                                severity: .error, message: "a value is larger than SQLite stores (1,000,000,000 bytes)",
                                file: file, position: record.position, index: record.index, id: record.id))
                    }
                }
                while next < batch.diagnostics.count {
                    report(batch.diagnostics[next].diagnostic)
                    next += 1
                }
                summary.records = batch.recordsRead
                if summary.records - lastProgress >= 10_000 || batch.isLast {
                    lastProgress = summary.records
                    progress(summary.records, Int64(batch.bytesRead))
                }
                if let failure = batch.failure { throw failure }
                if batch.isLast {
                    if errors > 0 { throw failure() }
                    // A tombstone brought back counts as inserted, not updated.
                    let tombstonesAfter = try table.tombstoneCount()
                    let resurrected = Int(tombstonesBefore - tombstonesAfter)
                    summary.inserted += resurrected
                    summary.updated -= resurrected
                    if options.prune { try prune(seen: batch.seen, stamp: stamp) }
                    try store.digestTotals.add("landmarks", digest)
                    return
                }
            }
        }
    }

    func failure() -> CatalogError {
        // Reading stops once more than maxErrors were found, so past that the count is a lower bound.
        let count =
            errors > options.maxErrors
            ? "more than \(options.maxErrors) errors (the first \(options.maxErrors) shown)"
            : errors == 1 ? "1 error" : "\(errors) errors"
        return CatalogError(
            .dataInvalid, "\(count); nothing was imported, \(file)",
            hint: strictWarnings > 0 ? "without --strict, Apple's known quirks are accepted with a warning" : nil)
    }

    /// Persists the import's stamp in the clock the first time a row really changes.
    mutating func noteWrite(_ stamp: HLCStamp) throws {
        guard !stampStored else { return }
        try store.storeClock(HybridLogicalClock(wall: stamp.wallMilliseconds, counter: stamp.counter))
        stampStored = true
    }

    mutating func apply(_ record: RawLandmark, in batch: RowBatch, upsert: Statement, stamp: HLCStamp, hash: RowHash?) throws {
        var extra = record.extraJSON
        if let recordExtra = extra {
            // Unknown keys merge with the stored ones (rare: a slow path is fine).
            let stored = try store.landmarkTable.liveExtra(id: record.id)
            if let stored, let old = JSONValue.parseObject(stored), let new = JSONValue.parseObject(recordExtra) {
                var members = old
                for m in new {
                    if let i = members.firstIndex(where: { $0.key == m.key }) { members[i].value = m.value } else { members.append(m) }
                }
                extra = JSONValue.object(members).serialized()
            }
        }
        let write = try batch.withView(record) { view in
            try view.bindContent(to: upsert)
            try upsert.bind(extra, to: LandmarkColumn.extra)
            try upsert.bind(nextSeq, to: LandmarkColumn.seq)
            // The stamp was bound once in `run`; `run()` keeps bindings.
            try upsert.bind(Int64(record.present), at: LandmarksTable.presentParameter)
            // The hash of the row as inserted; an update keeps the stored one until `rehash` below.
            let hash = hash ?? RowHash(landmark: StampedFields(view, stamp: stamp))
            try RowHashColumns.bind(hash, to: upsert, at: LandmarksTable.importHashParameter)
            let write = try store.landmarkTable.runImportUpsert(upsert, id: record.id)
            if write == .inserted { digest.add(hash) }
            return write
        }
        if write == .updated { try store.landmarkTable.rehash(id: record.id) }
        guard write != .unchanged else {
            summary.unchanged += 1
            return
        }
        nextSeq += 1
        try noteWrite(stamp)
        if write == .inserted { summary.inserted += 1 } else { summary.updated += 1 }
    }

    mutating func prune(seen: SeenIDs, stamp: HLCStamp) throws {
        var doomed: [Int64] = []
        try store.landmarkTable.forEachLiveID { id in
            if !seen.contains(id) { doomed.append(id) }
        }
        guard !doomed.isEmpty else { return }
        try noteWrite(stamp)
        try store.landmarkTable.withTombstone { tombstone in
            try tombstone.bind(stamp.wallMilliseconds, at: 1)
            try tombstone.bind(stamp.counter, at: 2)
            try tombstone.bind(stamp.node, at: 3)
            for id in doomed {
                try tombstone.bind(nextSeq, at: 4)
                try tombstone.bind(id, at: 5)
                try tombstone.run()
                try store.landmarkTable.rehash(id: id)
                nextSeq += 1
            }
        }
        summary.pruned = doomed.count
    }
}

extension JSONValue {
    /// Parses stored `extra` text (a JSON object) back into its members; nil when it is not an object.
    static func parseObject(_ text: String) -> [JSONMember]? {
        let reader = JSONPullReader(bytes: Array(text.utf8), options: .init(allowTrailingCommas: false, maxDepth: 64))
        guard case .object(let members)? = try? reader.readValue() else { return nil }
        return members
    }
}
