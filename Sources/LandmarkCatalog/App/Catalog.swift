import Foundation

#if os(Linux)
    import Glibc
#endif

/// One `Sendable` handle on a catalog database, for any number of tasks: what an app binds to (docs/swift-library.md).
///
/// ```swift
/// let catalog = try Catalog(path: databaseURL.path)
/// let pages = try await catalog.featured()
/// try await catalog.setPosition(user: "u-1", to: .landmark(pages[2].id))
/// for try await featured in catalog.observe({ try await $0.featured() }) { show(featured) }
/// ```
///
/// ## Why a class over dispatch queues, not an actor
/// An actor runs its methods on Swift's cooperative thread pool, one at a time: a read would wait behind
/// a long import, and every SQLite call (which blocks on disk and on the busy timeout) would hold one of
/// the pool's few threads. Here the work runs on threads of its own instead:
/// - one **writer** connection on a serial `DispatchQueue`: writes are serialised in this process (and
///   `BEGIN IMMEDIATE` serialises them with other processes); imports and syncs run there;
/// - a **pool of reader connections** (at most `maxReaders`, opened on demand, read-only), each read on a
///   serial queue of its own: in WAL mode a reader never waits for the writer (https://sqlite.org/wal.html),
///   so a read during a long import returns at once, with the state before it. (Serial queues run on
///   dispatch's overcommit threads; a concurrent queue would share the CPU-count-limited threads of the
///   global queue, and wait behind whatever else in the process blocks them.)
/// Every method hops to those queues with a continuation, so no task ever blocks a cooperative thread.
///
/// ## A database replaced or gone
/// Each connection remembers the identity (device and inode) of the file it opened. Before one is used,
/// the file at `path` is checked (`stat`, a microsecond). The first call that finds another file there
/// (a restore, a `mv` over it) closes every connection to the old file — the writer last, waiting for a
/// write in progress — before it opens one to the new file. Whoever replaces the file must remove the old
/// `<path>-wal` and `<path>-shm` with it: SQLite would read a stale `-wal` into the new file
/// (https://sqlite.org/howtocorrupt.html#_unlinking_or_renaming_a_database_file_while_in_use). A
/// connection whose work failed with anything but a usage or data error is closed too, so the next call
/// reopens. Failures are thrown as `CatalogError`, never trapped.
public final class Catalog: Sendable {
    /// The database file.
    public let path: String
    /// Where HLC stamps read physical time.
    let wallClock: any WallClock
    /// Opened with `.read`: every write throws 73.
    let isReadOnly: Bool
    private let writerQueue = DispatchQueue(label: "LandmarkCatalog.Catalog.writer", qos: .userInitiated)
    /// Where ``sideWrite(_:)`` runs (a sync): one at a time, beside the writer.
    private let sideQueue = DispatchQueue(label: "LandmarkCatalog.Catalog.side-writer", qos: .userInitiated)
    private let writer: WriterSlot
    private let readers: ReaderPool
    /// Finds commits (this process's and others') for ``observe(_:)``.
    let monitor: ChangeMonitor
    private let closed = Protected(false)
    /// The identity of the file the open connections belong to.
    private let knownIdentity: Protected<FileIdentity?>

    /// Opens the catalog at `path`.
    ///
    /// - Parameters:
    ///   - path: a database file path (not `:memory:`: every connection must see the same database).
    ///   - access: `.write` (the default) creates the file and its directories as needed and applies pending
    ///     migrations now; `.read` needs an existing database and never writes (writes throw 73).
    ///   - wallClock: where HLC stamps read physical time (tests inject one).
    ///   - maxReaders: how many reader connections may be open at once (1…64; 4 by default). More
    ///     concurrent reads than that wait for a free connection, on a dispatch thread.
    /// - Throws: `CatalogError` as ``CatalogStore/open(path:access:wallClock:migrations:)``; 64 for `:memory:`.
    public init(path: String, access: CatalogStore.Access = .write, wallClock: any WallClock = SystemClock(), maxReaders: Int = 4) throws {
        guard path != ":memory:" else {
            throw CatalogError(.usage, "a Catalog needs a database file, not :memory: (each connection would see its own database)")
        }
        self.path = path
        self.wallClock = wallClock
        self.isReadOnly = access == .read
        self.writer = WriterSlot()
        self.readers = ReaderPool(limit: min(max(maxReaders, 1), 64))
        self.monitor = ChangeMonitor(path: path)
        // Open (create, migrate) now, so a bad path fails here and not at the first call.
        let store = try CatalogStore.open(path: path, access: access, wallClock: wallClock)
        self.knownIdentity = Protected(FileIdentity(path: path))
        if access == .write {
            writer.store = store
            writer.identity = FileIdentity(path: path)
        } else {
            readers.adopt(store, identity: FileIdentity(path: path))
        }
    }

    /// Closes every connection.
    ///
    /// Calls after this throw `CatalogError` 64 ("closed"); observations end. Work already running
    /// finishes first.
    public func close() {
        closed.withLock { $0 = true }
        writerQueue.sync { writer.store = nil }
        readers.close()
        monitor.close()
    }

    private func checkOpen() throws {
        if closed.withLock({ $0 }) {
            throw CatalogError(.usage, "the catalog was closed, \(path)", hint: "open a new Catalog", reason: .closed)
        }
    }

    // MARK: - Running work

    /// Runs `body` in one read transaction on a reader connection (one snapshot: several reads inside
    /// see the same state), on a reader thread; never waits for a write.
    /// - Throws: what `body` throws; `CatalogError` when the database cannot be opened (66 when it is gone).
    public func read<T: Sendable>(_ body: @escaping @Sendable (CatalogStore) throws -> T) async throws -> T {
        try await Self.run(on: DispatchQueue(label: "LandmarkCatalog.Catalog.reader", qos: .userInitiated)) { try self.withReader(body) }
    }

    /// Runs `body` on the writer connection, on the writer thread (writes are serialised).
    ///
    /// Each of the store's write methods is one transaction. Observers are woken when it returns.
    /// - Throws: what `body` throws; `CatalogError` 73 for a catalog opened with `.read`.
    public func write<T: Sendable>(_ body: @escaping @Sendable (CatalogStore) throws -> T) async throws -> T {
        defer { monitor.noteLocalWrite() }
        return try await Self.run(on: writerQueue) { try self.withWriter(body) }
    }

    /// Runs `work` on `queue` and resumes with its result.
    static func run<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Runs long work on the writer (an import) with a stop flag that is set when the calling task
    /// is cancelled; `body` checks it at its safe points (each batch) and rolls back.
    func cancellableWrite<T: Sendable>(_ body: @escaping @Sendable (CatalogStore, StopFlag) throws -> T) async throws -> T {
        let stop = StopFlag()
        return try await withTaskCancellationHandler {
            try await write { store in
                if stop.isSet { throw CancellationError() }
                return try body(store, stop)
            }
        } onCancel: {
            stop.set()
        }
    }

    /// Runs long work that waits on the network (a sync) on a write connection of its own, opened for it
    /// and closed after, on a queue of its own, so that the writer's short writes do not wait behind it;
    /// SQLite serialises the two connections' transactions.
    ///
    /// Throws `CancellationError` when the calling task was cancelled before it started. Observers are
    /// woken when it returns.
    func sideWrite<T: Sendable>(_ body: @escaping @Sendable (CatalogStore) throws -> T) async throws -> T {
        let stop = StopFlag()
        defer { monitor.noteLocalWrite() }
        return try await withTaskCancellationHandler {
            try await Self.run(on: sideQueue) {
                if stop.isSet { throw CancellationError() }
                try self.checkOpen()
                guard !self.isReadOnly else {
                    throw CatalogError(.cantCreate, "the catalog was opened for reading only, \(self.path)", hint: "open it with access: .write")
                }
                let store = try CatalogStore.open(path: self.path, access: .write, wallClock: self.wallClock)
                return try body(store)
            }
        } onCancel: {
            stop.set()
        }
    }

    /// Whether a connection that failed with `error` may be used again (a usage or data error says nothing
    /// about the connection; anything else may: it is closed, and the next call opens a new one).
    static func keepsConnection(after error: any Error) -> Bool {
        if error is CancellationError { return true }
        guard let error = error as? CatalogError else { return false }
        return [.usage, .dataInvalid, .noInput, .incompatible, .unavailable].contains(error.kind)
    }

    private func withWriter<T>(_ body: (CatalogStore) throws -> T) throws -> T {
        try checkOpen()
        guard !isReadOnly else {
            throw CatalogError(.cantCreate, "the catalog was opened for reading only, \(path)", hint: "open it with access: .write")
        }
        let identity = FileIdentity(path: path)
        if noteIdentity(identity) { readers.purge(keeping: identity) }
        if writer.store == nil || identity == nil || identity != writer.identity {
            writer.store = nil
            writer.store = try CatalogStore.open(path: path, access: .write, wallClock: wallClock)
            writer.identity = FileIdentity(path: path)
        }
        guard let store = writer.store else { throw CatalogError(.software, "no writer connection, \(path)") }
        do {
            return try body(store)
        } catch {
            if !Self.keepsConnection(after: error) { writer.store = nil }
            throw error
        }
    }

    private func withReader<T>(_ body: (CatalogStore) throws -> T) throws -> T {
        try checkOpen()
        let identity = FileIdentity(path: path)
        if noteIdentity(identity) {
            // Another file: close every connection to the old one (the writer last) before opening one.
            readers.purge(keeping: identity)
            if !isReadOnly { writerQueue.sync { if writer.identity != identity { writer.store = nil } } }
        }
        var (store, storeIdentity) = try readers.checkOut()
        do {
            if store == nil || identity == nil || storeIdentity != identity {
                store = nil
                store = try CatalogStore.open(path: path, access: .read, wallClock: wallClock)
                storeIdentity = identity
            }
        } catch {
            readers.discard()
            throw error
        }
        guard let store else {
            readers.discard()
            throw CatalogError(.software, "no reader connection, \(path)")
        }
        do {
            let value = try store.read { try body(store) }
            readers.checkIn(store, identity: storeIdentity)
            return value
        } catch {
            if Self.keepsConnection(after: error) { readers.checkIn(store, identity: storeIdentity) } else { readers.discard() }
            throw error
        }
    }

    /// Records the identity of the file at `path`; true when it differs from the one before (the file
    /// was replaced, removed or created).
    private func noteIdentity(_ identity: FileIdentity?) -> Bool {
        knownIdentity.withLock { known in
            defer { known = identity }
            return known != identity
        }
    }

    // MARK: - Reads

    /// The featured landmarks in `id` order: the carousel's pages, page 0 first (docs/cli.md §3).
    public func featured() async throws -> [Landmark] {
        try await read { try LandmarkReader($0).featuredLandmarks() }
    }

    /// The whole catalog: every live landmark, featured or not, smallest `id` first — what the tutorial's
    /// list view (`LandmarkList`) shows.
    ///
    /// Deleted landmarks (tombstones, e.g., after `import --prune`) are left out.
    ///
    /// One read transaction on a reader connection: it never waits for a write.
    /// - Returns: the live landmarks in `id` order; empty for an empty catalog.
    /// - Throws: `CatalogError` `.closed` after ``close()``, `.databaseMissing` (66) when the file is gone.
    public func landmarks() async throws -> [Landmark] {
        try await read { try LandmarkReader($0).landmarks() }
    }

    /// One live landmark by id, or nil (absent or deleted).
    public func landmark(id: Int64) async throws -> Landmark? {
        try await read { try LandmarkReader($0).landmark(id: id) }
    }

    /// `user`'s position resolved against today's featured set (docs/cli.md §4), or nil (never set, or cleared).
    /// - Throws: `CatalogError` 64 for an invalid user id.
    public func position(user: String) async throws -> CarouselPosition? {
        try await read { try Positions($0).position(user: user) }
    }

    /// Every live position, resolved, ordered by user id.
    public func positions() async throws -> [CarouselPosition] {
        try await read { try Positions($0).positions() }
    }

    /// The featured landmarks and `user`'s position, read in one snapshot (what a carousel shows).
    public func carousel(user: String) async throws -> CarouselSnapshot {
        try await read { store in
            CarouselSnapshot(pages: try LandmarkReader(store).featuredLandmarks(), position: try Positions(store).position(user: user))
        }
    }

    /// What `catalog status` shows: counts, node id, schema version, change sequence, quarantine, sources.
    public func status() async throws -> CatalogStore.Status {
        try await read { try CatalogMonitor($0).status() }
    }

    /// This database's node id (the last tie-breaker of the stamps it writes).
    public func nodeID() async throws -> String {
        try await read { try $0.nodeID() }
    }

    // MARK: - Writes

    /// Stores where `user` is, HLC-stamped, in one transaction (docs/cli.md §4).
    /// - Parameters:
    ///   - user: the user id (non-empty, at most 256 bytes of UTF-8, no control characters; NFC-normalised).
    ///   - target: a page in `0..<pageCount`, or a featured landmark (its page is stored).
    /// - Returns: the stored position, resolved.
    /// - Throws: `CatalogError` 64 for a bad user id, a page out of range or a landmark that is not
    ///   featured (nothing stored); 73 for a read-only catalog; 75 when the database stays busy for 5 s.
    @discardableResult
    public func setPosition(user: String, to target: PositionTarget) async throws -> CarouselPosition {
        try await write { try Positions($0).setPosition(user: user, to: target) }
    }

    /// Forgets `user`'s position (a tombstone, so the deletion syncs).
    /// - Throws: `CatalogError` 64 for a bad user id.
    public func clearPosition(user: String) async throws {
        try await write { try Positions($0).clearPosition(user: user) }
    }

    /// Erases `user` from this catalog: an erasure record that wins over every row of the user stamped
    /// before it on every copy that syncs with this one (snapshots, logs, the hub), the user's row and
    /// what the catalog recorded about them removed, the freed bytes zeroed and the WAL truncated
    /// (docs/erasure.md).
    ///
    /// An app that syncs through `catalog serve` erases on the server with `SyncSession.eraseUser()`
    /// (LandmarkCatalogClient), which also clears this device's copy and signs the session out.
    /// - Returns: the erasure's stamp and what was removed.
    /// - Throws: `CatalogError` 64 for a bad user id; 73 for a read-only catalog; 75 when the database
    ///   stays busy for 5 s.
    @discardableResult
    public func eraseUser(_ user: String) async throws -> ErasureSummary {
        try await write { try UserErasure($0).eraseUser(user) }
    }

    /// Imports a `landmarkData.json` file (docs/cli.md §2) in one transaction, on the writer thread.
    ///
    /// Reads run meanwhile and see the state before the import until it commits. Cancelling the calling
    /// task stops the import at its next batch (about 2,000 records) and rolls it back: nothing is written.
    /// (A source that blocks, such as a pipe nobody writes to, is noticed only when its next batch arrives.)
    /// - Parameters:
    ///   - source: a file path or standard input.
    ///   - options: `--strict`, `--prune`, `--dry-run` as ``ImportOptions``.
    ///   - progress: called on the writer thread about every 10,000 records.
    ///   - diagnostics: every warning and error, in input order.
    /// - Returns: the counts.
    /// - Throws: `CancellationError` when cancelled; `CatalogError` as ``Importer/importLandmarks(from:options:diagnostics:progress:shouldStop:)``.
    @discardableResult
    public func importLandmarks(
        from source: ImportSource, options: ImportOptions = ImportOptions(),
        progress: @escaping @Sendable (CatalogProgress) -> Void = { _ in },
        diagnostics: @escaping @Sendable (Diagnostic) -> Void = { _ in }
    ) async throws -> ImportSummary {
        try await cancellableWrite { store, stop in
            try Importer(store).importLandmarks(
                from: source, options: options, diagnostics: diagnostics, progress: progress,
                shouldStop: { stop.isSet })
        }
    }

    /// Writes a snapshot of the whole catalog (docs/snapshot-format.md §1) to `path` atomically, from a reader connection.
    ///
    /// Cancelling the calling task stops it at its next chunk (about 64 KiB); the file is then left as it was.
    /// - Parameters:
    ///   - path: the snapshot file to write (replaced atomically: a temporary file, fsync, rename).
    ///   - progress: called after each chunk with the rows and bytes written (phase `.writing`).
    /// - Returns: what was written.
    /// - Throws: `CancellationError`; `CatalogError` 64 for an empty path, 73 when the file cannot be
    ///   created, 74 on a write error.
    @discardableResult
    public func export(to path: String, progress: @escaping @Sendable (CatalogProgress) -> Void = { _ in }) async throws -> ExportSummary {
        try await cancellableRead { store, stop in
            let file = try AtomicFileWriter(path: path)
            let summary = try SnapshotExporter(store).exportSnapshotInTransaction(
                changes: nil,
                progress: { rows, bytes in
                    progress(CatalogProgress(records: rows, bytes: bytes, totalBytes: nil, phase: .writing, subject: path))
                }
            ) { bytes in
                if stop.isSet { throw CancellationError() }
                try file.write(bytes)
            }
            try file.commit()
            return summary
        }
    }

    /// The snapshot (docs/snapshot-format.md §1) as bytes, from a reader connection.
    public func exportSnapshot() async throws -> [UInt8] {
        try await cancellableRead { store, stop in
            var bytes: [UInt8] = []
            _ = try SnapshotExporter(store).exportSnapshotInTransaction(changes: nil) { chunk in
                if stop.isSet { throw CancellationError() }
                bytes += chunk
            }
            return bytes
        }
    }

    private func cancellableRead<T: Sendable>(_ body: @escaping @Sendable (CatalogStore, StopFlag) throws -> T) async throws -> T {
        let stop = StopFlag()
        return try await withTaskCancellationHandler {
            try await read { store in
                if stop.isSet { throw CancellationError() }
                return try body(store, stop)
            }
        } onCancel: {
            stop.set()
        }
    }
}

/// The featured landmarks and one user's position, read in one snapshot.
public struct CarouselSnapshot: Sendable, Hashable {
    /// The featured landmarks in page order.
    public var pages: [Landmark]
    /// The user's position resolved against `pages`, or nil (never set, or cleared).
    public var position: CarouselPosition?

    public init(pages: [Landmark], position: CarouselPosition?) {
        self.pages = pages
        self.position = position
    }
}

/// A file's identity: device and inode (what a replaced file changes), nil when there is no file.
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// A value behind a lock.
final class Protected<Value>: @unchecked Sendable {
    // Safe: `value` is only touched inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// A flag set once from any thread (a task's cancellation handler) and read by work on another.
final class StopFlag: Sendable {
    private let flag = Protected(false)
    func set() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}

/// The writer connection and the identity of the file it opened.
final class WriterSlot: @unchecked Sendable {
    // Safe: touched only on the catalog's serial writer queue (and in `Catalog.init`, before the queue
    // has any work), so never from two threads at once.
    var store: CatalogStore?
    var identity: FileIdentity?
}

/// Idle reader connections, and how many are open.
///
/// A connection is used by one thread at a time: it is taken out of `idle` under the lock and put back
/// when its read is done.
final class ReaderPool: @unchecked Sendable {
    // Safe: every stored property is touched only while `condition` is locked; a checked-out store
    // belongs to the one thread that took it until it is checked in or discarded.
    private let condition = NSCondition()
    private var idle: [(store: CatalogStore, identity: FileIdentity?)] = []
    private var open = 0
    private var isClosed = false
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// An idle connection, or (nil, nil) with a slot reserved for the caller to open one; waits while
    /// `limit` connections are busy.
    func checkOut() throws -> (CatalogStore?, FileIdentity?) {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if isClosed { throw CatalogError(.usage, "the catalog was closed", hint: "open a new Catalog", reason: .closed) }
            if let last = idle.popLast() { return (last.store, last.identity) }
            if open < limit {
                open += 1
                return (nil, nil)
            }
            condition.wait()
        }
    }

    /// Returns a connection for the next reader (or, after `close()`, closes it).
    func checkIn(_ store: CatalogStore, identity: FileIdentity?) {
        condition.lock()
        defer { condition.unlock() }
        if !isClosed { idle.append((store, identity)) } else { open -= 1 }
        condition.signal()
    }

    /// Adds a connection opened elsewhere (the one `Catalog.init` opened).
    func adopt(_ store: CatalogStore, identity: FileIdentity?) {
        condition.lock()
        defer { condition.unlock() }
        open += 1
        idle.append((store, identity))
    }

    /// Gives up a checked-out slot (its connection is dropped by the caller).
    func discard() {
        condition.lock()
        defer { condition.unlock() }
        open -= 1
        condition.signal()
    }

    /// Closes the idle connections to any file but `identity`'s.
    func purge(keeping identity: FileIdentity?) {
        condition.lock()
        defer { condition.unlock() }
        let before = idle.count
        idle.removeAll { $0.identity != identity }
        open -= before - idle.count
        condition.broadcast()
    }

    func close() {
        condition.lock()
        defer { condition.unlock() }
        isClosed = true
        open -= idle.count
        idle.removeAll()
        condition.broadcast()
    }
}
