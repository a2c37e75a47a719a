import Foundation

#if os(Linux)
    import Glibc
#endif

/// What a sync run hands each source.
package struct SyncContext {
    package let store: CatalogStore
    package var options: SyncOptions
    /// The descriptor `-` reads.
    let standardInput: Int32
    /// Warnings and errors, with their source (a follower filters them per poll).
    package var diagnostics: (Diagnostic) -> Void
    /// How far merging has come (phase `.merging`), for a progress line.
    package var progress: (CatalogProgress) -> Void = { _ in }
    /// The keys this source's snapshot log must be signed by (docs/trust.md §3); empty: no signature needed.
    package var trustedKeys: [MinisignPublicKey] = []

    /// For a source that cannot carry a signature (a single snapshot, standard input, a hub): 77 when
    /// a signature is required of it.
    package func requireUnsigned(_ what: String, source: String) throws {
        guard !trustedKeys.isEmpty else { return }
        throw CatalogError(
            .untrusted,
            "\(what) cannot be signed, and this source must be signed by \(trustedKeys.count == 1 ? "key" : "one of the keys") \(trustedKeys.map(\.id).joined(separator: ", ")); nothing merged, \(source)",
            hint: "trust applies to snapshot logs: publish one with 'catalog publish DIR --sign KEY'")
    }
    /// A follower's polls: an unchanged source (nil feeds, the same cursor) whose last good sync is
    /// within this many ms is not written again (nil: every run notes its success).
    package var quietWhenUnchangedFor: Int64? = nil
    /// A follower's lag: each applied row's stamp (wall ms), inside the source's transaction.
    package var appliedStamp: ((Int64) -> Void)? = nil
    /// What sources keep open between a follower's polls (a hub's PostgreSQL connection); nil for a
    /// `sync` run, whose sources open their own and close them when the run ends.
    package var kept: KeptConnections? = nil

    package init(
        store: CatalogStore, options: SyncOptions, standardInput: Int32, diagnostics: @escaping (Diagnostic) -> Void,
        progress: @escaping (CatalogProgress) -> Void = { _ in }
    ) {
        self.store = store
        self.options = options
        self.standardInput = standardInput
        self.diagnostics = diagnostics
        self.progress = progress
    }
}

/// Connections sources keep open between a follower's polls, by source key (one PostgreSQL
/// connection per followed hub, not one per poll).
///
/// Opaque to the core: a source kind stores its own objects here and checks them before reuse. Used on
/// the follower's thread only, like the store; not `Sendable`.
package final class KeptConnections {
    private var kept: [String: AnyObject] = [:]

    package init() {}

    /// The object kept for a source key, or nil.
    package subscript(key: String) -> AnyObject? {
        get { kept[key] }
        set { kept[key] = newValue }
    }

    /// Drops (and so closes) what is kept for sources no longer followed.
    ///
    /// - Parameter keys: the source keys still followed.
    package func keepOnly(_ keys: Set<String>) {
        kept = kept.filter { keys.contains($0.key) }
    }
}

@available(*, unavailable)
extension KeptConnections: Sendable {}

/// One kind of sync source behind one small protocol: it fetches what is new since its cursor and
/// yields feeds of rows; the engine merges them in one transaction per source and stores the cursor
/// the source reports.
///
/// The merger never knows whether rows came from a file, HTTP, a log or a hub.
package protocol SyncSource: AnyObject {
    var locator: SourceLocator { get }
    /// Fetches what is new since `cursor`: network transfers and spooling happen here, outside any
    /// database transaction.
    /// - Returns: nil when nothing changed (an HTTP 304, a log already read to its end), else the
    ///   feeds to merge, in order.
    /// - Throws: `CatalogError` — the source fails alone and nothing from it is merged.
    func fetch(since cursor: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]?
    /// The cursor to store once the feeds are merged (or after an unchanged fetch).
    var nextCursor: SourceCursor? { get }
    /// Bytes fetched so far (for reports and metrics).
    var bytesFetched: Int64 { get }
    /// What this run pushed to the source (a hub); nil for sources that are only read.
    var pushed: PushCounts? { get }
    /// Something to say about an outcome that is no failure (a log's manifest behind the cursor).
    var note: String? { get }
    /// Reads, on the store's thread, what ``fetch(since:context:)`` would read from the database, so that
    /// the fetch can run on another thread (a follower's ``DetachedFetch``). The default reads nothing.
    ///
    /// - Parameters:
    ///   - cursor: the cursor the fetch will start from.
    ///   - context: the run's context.
    /// - Returns: false when the fetch must run on the store's thread this time (too much to read ahead).
    /// - Throws: `CatalogError`, as the fetch would.
    func prepareDetached(since cursor: SourceCursor?, context: SyncContext) throws -> Bool
    /// Whether the source has more to do at once (a follower syncs it again in the next cycle): a serve
    /// whose rows to push were more than were read ahead, or whose server's database changed.
    var wantsAgain: Bool { get }
    /// Whether the source answered as one that forgot this node and, because the run repairs
    /// (``SyncOptions/repair``), left the re-read to a repair (docs/repair.md §7). Only a source whose kind
    /// yields a repair peer for it (``SyncRepair/peer(for:context:)``) may: nothing else re-reads it.
    var forgotUs: Bool { get }
}

extension SyncSource {
    package var wantsAgain: Bool { false }
    package var forgotUs: Bool { false }
    package func prepareDetached(since cursor: SourceCursor?, context: SyncContext) throws -> Bool { true }
    package var pushed: PushCounts? { nil }
    package var note: String? { nil }
}

/// `-`: one snapshot read from standard input.
///
/// It has no cursor.
final class StandardInputSource: SyncSource {
    let locator = SourceLocator.standardInput
    var nextCursor: SourceCursor? { nil }
    private var feed: SnapshotFeed?
    /// What its snapshot held, in bytes, as far as it was read (the ledger logged 0 before).
    var bytesFetched: Int64 { feed?.bytesRead ?? 0 }

    func fetch(since cursor: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]? {
        try context.requireUnsigned("a snapshot on standard input", source: locator.description)
        let feed = SnapshotFeed(fd: context.standardInput, name: locator.description, owned: false)
        self.feed = feed
        return [feed]
    }
}

/// A local path: a snapshot file (read whole when it changed: its device, inode, size and modification
/// time are the cursor), or a snapshot log — its directory, or its manifest — read from the cursor on
/// (docs/log-format.md §6).
final class FileSource: SyncSource {
    let locator: SourceLocator
    let path: String
    private(set) var nextCursor: SourceCursor?
    private(set) var bytesFetched: Int64 = 0

    init(path: String) {
        self.path = path
        self.locator = .file(path: path)
    }

    func fetch(since cursor: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]? {
        // `--max-bytes` guards against what a server sends; a local log's files are on disk already.
        let maxBytes = Int64.max
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return try readLog(DirectoryLogFetcher(directory: path, maxBytes: maxBytes), cursor: cursor, trusted: context.trustedKeys)
        }
        let fd = try CatalogFiles.openForReading(path)
        var head = [UInt8](repeating: 0, count: 512)
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        if n > 0, LogManifest.looksLikeManifest(head[0..<n]) {
            close(fd)
            return try readLog(
                DirectoryLogFetcher(directory: CatalogFiles.directory(of: path), manifest: path, maxBytes: maxBytes), cursor: cursor,
                trusted: context.trustedKeys)
        }
        if !context.trustedKeys.isEmpty {
            close(fd)
            try context.requireUnsigned("a single snapshot file", source: path)
        }
        var info = stat()
        fstat(fd, &info)
        // The file's identity, size and modification time (ns) are its cursor: an unchanged file is not read again.
        var next = SourceCursor()
        next["file"] = "\(info.st_dev):\(info.st_ino):\(info.st_size):\(info.modificationTime.tv_sec).\(info.modificationTime.tv_nsec)"
        nextCursor = next
        if let cursor, cursor["file"] == next["file"] {
            close(fd)
            return nil
        }
        bytesFetched = Int64(info.st_size)
        return [SnapshotFeed(fd: fd, name: path, owned: true)]
    }

    private(set) var note: String?

    private func readLog(_ fetcher: DirectoryLogFetcher, cursor: SourceCursor?, trusted: [MinisignPublicKey]) throws -> [any ChangeFeed]? {
        defer { bytesFetched = fetcher.bytesFetched }
        let (feeds, next, note) = try LogReader(fetcher: fetcher, trusted: trusted).fetch(since: cursor)
        nextCursor = next
        self.note = note
        return feeds
    }
}
