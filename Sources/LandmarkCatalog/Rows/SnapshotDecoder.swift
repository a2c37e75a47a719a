import Foundation

/// The snapshot format's identity (docs/snapshot-format.md §2).
public enum SnapshotFormat {
    /// The value of the `format` key.
    public static let name = "landmark-catalog-snapshot"
    /// The newest version this binary reads and the one it writes.
    public static let version: Int64 = 1
}

/// Decodes one snapshot document (docs/snapshot-format.md §2) into row batches, on a reading thread: the envelope
/// (`format`, `version`; an unknown format or a newer version ends it with exit 76), then landmark
/// rows and position rows, each validated, with diagnostics naming the source, line:column, record,
/// id and field.
///
/// Decoding knows nothing of the database: ``RowMerger`` applies what it yields.
struct SnapshotDecoder {
    /// The source's name in messages.
    let source: String
    /// Position rows per batch: the merger sorts each batch by user id before applying it.
    static let positionBatchSize = 25_000

    /// Reads the snapshot on `fd` to its end, putting batches on `queue`; the last has `isLast` set.
    /// - Parameters:
    ///   - fd: the descriptor to read.
    ///   - queue: receives the decoded batches.
    ///   - onRead: sees every chunk read, in order (to hash the file in the same pass).
    func run(fd: Int32, queue: BatchQueue, onRead: ((UnsafeRawBufferPointer) -> Void)? = nil) {
        let reader = JSONPullReader(fileDescriptor: fd, options: .init(allowTrailingCommas: false, maxDepth: 64))
        reader.onRead = onRead
        run(reader: reader, queue: queue)
    }

    func run(reader: JSONPullReader, queue: BatchQueue) {
        var state = State(source: source)
        var batch = RowBatch()
        do {
            try Self.openDocument(reader, &state, batch)
            var keys: Set<String> = []
            while let (key, at) = try reader.nextKey() {
                guard keys.insert(key).inserted else {
                    state.error(batch, "duplicate top-level key '\(key)' in a snapshot", at: at, field: key)
                    try reader.skipValue()
                    continue
                }
                guard try readMember(key, at: at, reader, &state, &batch, queue) else { return }
            }
            try reader.finish()
            if state.errors == 0 {
                if state.format == nil {
                    state.error(batch, "missing \"format\": \"\(SnapshotFormat.name)\"", at: nil, field: "format")
                } else if state.version == nil {
                    state.error(batch, "missing \"version\"", at: nil, field: "version")
                }
            }
        } catch is Stop {
        } catch let error as JSONSyntaxError {
            state.error(batch, error.message, at: error.position, kind: "syntax")
        } catch let error as JSONStringContentError {  // outside landmark rows (which the decoder reads): malformed as well
            state.error(batch, error.message, at: error.position, kind: "syntax")
        } catch let error as JSONReadError {
            batch.failure = CatalogError(.ioError, "cannot read \(source): \(String(cString: strerror(error.errno)))")
        } catch {
            batch.failure = error
        }
        batch.bytesRead = reader.position.offset
        batch.sourceNode = state.node
        batch.pageCursor = state.cursor
        batch.pageMore = state.more
        batch.isLast = true
        PositionRecord.sortForMerge(&batch.positions)
        _ = queue.put(batch)
    }

    /// Puts `b` on `queue` and starts a new batch; false when the consumer is gone.
    private static func emit(_ b: inout RowBatch, _ reader: JSONPullReader, _ state: State, _ queue: BatchQueue) -> Bool {
        b.bytesRead = reader.position.offset
        b.sourceNode = state.node
        let positions = !b.positions.isEmpty || !b.erasures.isEmpty
        PositionRecord.sortForMerge(&b.positions)  // here, off the writing thread
        guard queue.put(b) else { return false }
        b = RowBatch(reserving: !positions)  // position batches need no room for landmark text
        return true
    }

    /// Checks that the document is a JSON object (not a web page, not a `landmarkData.json`) and enters it.
    private static func openDocument(_ reader: JSONPullReader, _ state: inout State, _ batch: RowBatch) throws {
        let kind: JSONKind
        do {
            kind = try reader.peekKind()
        } catch is JSONSyntaxError where reader.peekNonWhitespace() == UInt8(ascii: "<") {
            // A web page: a directory listing or an error page, often for a log's URL without its "/".
            state.error(
                batch,
                "this is HTML, not a snapshot (a snapshot log over HTTP is its directory's URL with a trailing / "
                    + "or its manifest.json)", at: reader.position)
            throw Stop()
        }
        guard kind == .object else {
            // A landmarkData.json is an array of landmarks: it is imported, not synced.
            state.error(
                batch,
                "a snapshot must be a JSON object with \"format\": \"\(SnapshotFormat.name)\", found \(kind.description)"
                    + (kind == .array ? " (a landmarkData.json? load it with 'catalog import FILE')" : ""), at: reader.position)
            throw Stop()
        }
        try reader.beginObject()
    }

    /// Reads the value of top-level key `key`; false when the consumer is gone.
    private func readMember(
        _ key: String, at: SourcePosition, _ reader: JSONPullReader, _ state: inout State, _ batch: inout RowBatch, _ queue: BatchQueue
    ) throws -> Bool {
        switch key {
        case "format":
            guard case .string(let s) = try reader.readValue() else {
                state.error(batch, "format must be a string", at: at, field: "format")
                return true
            }
            state.format = s
            try state.checkEnvelope()
        case "version":
            guard case .number(let n) = try reader.readValue(), let v = n.int64Value else {
                state.error(batch, "version must be an integer", at: at, field: "version")
                return true
            }
            guard v >= 1 else {
                state.error(batch, "version must be 1 or more, found \(v)", at: at, field: "version")
                return true
            }
            state.version = v
            try state.checkEnvelope()
        case "landmarks": return try readRows(key, at: at, reader, &state, &batch, queue)
        case "positions": return try readRows(key, at: at, reader, &state, &batch, queue)
        case "erasures": return try readRows(key, at: at, reader, &state, &batch, queue)
        case "node":
            if case .string(let node) = try reader.readValue() { state.node = node }
        case "cursor":  // an answer of catalog serve (docs/protocol.md §4)
            if case .string(let cursor) = try reader.readValue() { state.cursor = cursor }
        case "more":
            if case .bool(let more) = try reader.readValue() { state.more = more }
        default:
            try reader.skipValue()  // generatedAt, and keys a later minor revision may add
        }
        return true
    }

    /// Reads the `landmarks`, `positions` or `erasures` array (`key`) row by row into batches; false when
    /// the consumer is gone.
    private func readRows(
        _ key: String, at: SourcePosition, _ reader: JSONPullReader, _ state: inout State, _ batch: inout RowBatch, _ queue: BatchQueue
    ) throws -> Bool {
        guard try reader.peekKind() == .array else {
            state.error(batch, "\(key) must be an array", at: at, field: key)
            try reader.skipValue()
            return true
        }
        let landmarks = key == "landmarks"
        try reader.beginArray()
        var index = 0
        while try reader.nextElement() {
            let full: Bool
            if landmarks {
                try state.landmarks.decode(reader, index: index, into: batch)
                full = batch.landmarks.count >= LandmarkDecoder.batchSize || batch.bytes.count >= 1 << 21
            } else if key == "erasures" {
                if let row = try state.readErasure(reader, index: index, batch: batch) { batch.erasures.append(row) }
                full = batch.erasures.count >= Self.positionBatchSize
            } else {
                if batch.positions.capacity == 0 {
                    batch.positions = queue.takeSpare() ?? []  // a merged batch's storage, when one is back
                    batch.positions.reserveCapacity(Self.positionBatchSize)
                }
                if let row = try state.readPosition(reader, index: index, batch: batch) { batch.positions.append(row) }
                full = batch.positions.count >= Self.positionBatchSize
            }
            index += 1
            batch.recordsRead += 1
            if full { guard Self.emit(&batch, reader, state, queue) else { return false } }
            if state.errors > state.maxErrors { throw Stop() }
        }
        return true
    }

    private struct Stop: Error {}

    /// What the decoder has seen so far.
    struct State {
        let source: String
        var landmarks: LandmarkDecoder
        var format: String?
        var version: Int64?
        var node: String?
        var cursor: String?
        var more = false
        var positionErrors = 0
        let maxErrors = 20
        var errors: Int { landmarks.errors + positionErrors }
        /// Hashes each position read, on the reading thread, so the writer does not (docs/repair.md §1).
        var rowHasher = RowHasher(capacity: 256)

        init(source: String) {
            self.source = source
            landmarks = LandmarkDecoder(file: source, mode: .snapshotRow)
        }

        mutating func error(
            _ batch: RowBatch, _ message: String, at position: SourcePosition?, index: Int? = nil, field: String? = nil,
            kind: String? = nil
        ) {
            positionErrors += 1
            batch.diagnostics.append(
                (
                    batch.landmarks.count,
                    Diagnostic(
                        severity: .error, message: message, file: source, position: position,
                        index: index, field: field, kind: kind)
                ))
        }

        func checkEnvelope() throws {
            if let format, format != SnapshotFormat.name {
                throw CatalogError(
                    .incompatible, "unknown snapshot format \(String(reflecting: format)) (expected \"\(SnapshotFormat.name)\"), \(source)")
            }
            if let version, version > SnapshotFormat.version {
                throw CatalogError(
                    .incompatible, "snapshot version \(version) is newer than this catalog reads (\(SnapshotFormat.version)), \(source)",
                    hint: "upgrade catalog on this machine")
            }
        }

        /// Reads one erasure record (docs/snapshot-format.md §3): `userHash` (64 lowercase hex digits),
        /// `updatedAt`, `counter` (may be absent: 0) and `node`.
        mutating func readErasure(_ reader: JSONPullReader, index: Int, batch: RowBatch) throws -> ErasureRecord? {
            let at = reader.position
            guard case .object(let object) = try reader.readValue() else {
                error(batch, "an erasure must be a JSON object", at: at, index: index, field: "erasures")
                return nil
            }
            let before = errors
            var hash: String?
            var wall: Int64?
            var counter: Int64 = 0
            var node: String?
            for member in object {
                let (key, value) = (member.key, member.value)
                func stamp(_ column: LandmarkColumn.Stamp) {
                    switch StampField.parse(column, value) {
                    case .success(.wall(let ms)): wall = ms
                    case .success(.counter(let c)): counter = c
                    case .success(.node(let n)): node = n
                    case .success(.deleted): break
                    case .failure(let problem): error(batch, "\(key) \(problem)", at: at, index: index, field: "erasures.\(key)")
                    }
                }
                switch key {
                case "userHash":
                    guard case .string(let s) = value, s.utf8.count == 64,
                        s.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
                    else {
                        error(batch, "userHash must be 64 lowercase hex digits", at: at, index: index, field: "erasures.userHash")
                        continue
                    }
                    hash = s
                case "updatedAt": stamp(.updatedMs)
                case "counter": stamp(.counter)
                case "node": stamp(.node)
                default: continue
                }
            }
            if errors == before {
                if hash == nil {
                    error(batch, "missing userHash", at: at, index: index, field: "erasures.userHash")
                } else if wall == nil {
                    error(batch, "missing updatedAt", at: at, index: index, field: "erasures.updatedAt")
                } else if node == nil {
                    error(batch, "missing node", at: at, index: index, field: "erasures.node")
                }
            }
            guard errors == before, let hash, let wall, let node else { return nil }
            return ErasureRecord(userHash: hash, stamp: HLCStamp(wallMilliseconds: wall, counter: counter, node: node), index: index)
        }

        /// What has been read of one position object so far.
        struct PositionReading {
            var user: String?
            var page: Int64?
            var landmark: Int64?
            var wall: Int64?
            var counter: Int64 = 0
            var node: String?
            var deleted = false
        }

        /// Reads one position object field by field (no intermediate tree).
        mutating func readPosition(_ reader: JSONPullReader, index: Int, batch: RowBatch) throws -> PositionRecord? {
            let at = reader.position
            guard try reader.peekKind() == .object else {
                let value = try reader.readValue()
                error(batch, "a position must be a JSON object, found \(value.kind.description)", at: at, index: index, field: "positions")
                return nil
            }
            let before = errors
            var p = PositionReading()
            var seenKeys: Set<String> = []
            try reader.beginObject()
            while let (key, keyAt) = try reader.nextKey() {
                guard seenKeys.insert(key).inserted else {
                    error(batch, "duplicate key '\(key)' in one position", at: keyAt, index: index, field: "positions.\(key)")
                    try reader.skipValue()
                    continue
                }
                try readPositionMember(key, at: keyAt, reader, index: index, into: &p, batch: batch)
            }
            if errors == before {
                if p.user == nil {
                    error(batch, "missing user", at: at, index: index, field: "positions.user")
                } else if p.page == nil {
                    error(batch, "missing page", at: at, index: index, field: "positions.page")
                } else if p.wall == nil {
                    error(batch, "missing updatedAt", at: at, index: index, field: "positions.updatedAt")
                } else if p.node == nil {
                    error(batch, "missing node", at: at, index: index, field: "positions.node")
                }
            }
            guard errors == before, let user = p.user, let page = p.page, let wall = p.wall, let node = p.node else { return nil }
            var row = PositionRecord(
                user: user, page: page, landmark: p.landmark,
                stamp: HLCStamp(wallMilliseconds: wall, counter: p.counter, node: node),
                deleted: p.deleted, index: index, position: at)
            row.hashAhead(with: &rowHasher)
            return row
        }

        /// Reads the value of key `key` of a position object (docs/snapshot-format.md §3); unknown keys are skipped.
        @inline(__always)
        mutating func readPositionMember(
            _ key: String, at keyAt: SourcePosition, _ reader: JSONPullReader, index: Int, into p: inout PositionReading, batch: RowBatch
        ) throws {
            let kind = try reader.peekKind()
            let field = "positions.\(key)"
            switch key {
            case "user":
                guard kind == .string else { return try wrong(reader, key, "a string", at: keyAt, index: index, batch: batch) }
                do { p.user = try UserID.normalize(try reader.readString()) } catch let e as CatalogError {
                    error(batch, e.message, at: keyAt, index: index, field: field)
                }
            case "page":
                guard kind == .number else { return try wrong(reader, key, "a non-negative integer", at: keyAt, index: index, batch: batch) }
                let n = try reader.readNumber()
                if let v = n.int64Value, v >= 0 {
                    p.page = v
                } else {
                    error(batch, "page must be a non-negative integer, found the number \(n.literal)", at: keyAt, index: index, field: field)
                }
            case "landmarkId":
                if kind == .null {
                    try reader.readNull()
                    p.landmark = nil
                    return
                }
                guard kind == .number else { return try wrong(reader, key, "an integer or null", at: keyAt, index: index, batch: batch) }
                let n = try reader.readNumber()
                if let v = n.int64Value {
                    p.landmark = v
                } else {
                    error(batch, "landmarkId must be an integer or null, found the number \(n.literal)", at: keyAt, index: index, field: field)
                }
            case "updatedAt", "counter", "node", "deleted":
                let role: LandmarkColumn.Stamp = key == "updatedAt" ? .updatedMs : key == "counter" ? .counter : key == "node" ? .node : .deleted
                switch StampField.parse(role, try reader.readValue()) {
                case .success(.wall(let ms)): p.wall = ms
                case .success(.counter(let c)): p.counter = c
                case .success(.node(let n)): p.node = n
                case .success(.deleted(let d)): p.deleted = d
                case .failure(let problem): error(batch, "\(key) \(problem)", at: keyAt, index: index, field: field)
                }
            default:
                try reader.skipValue()
            }
        }

        /// Reports that position key `key`'s value is not `what`, reading the value to name it.
        mutating func wrong(_ reader: JSONPullReader, _ key: String, _ what: String, at: SourcePosition, index: Int, batch: RowBatch) throws {
            let value = try reader.readValue()
            error(batch, "\(key) must be \(what), found \(value.described)", at: at, index: index, field: "positions.\(key)")
        }
    }
}
