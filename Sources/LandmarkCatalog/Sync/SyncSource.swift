import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a sync run hands each source.
struct SyncContext {
    let store: CatalogStore
    let options: SyncOptions
    /// The descriptor `-` reads.
    let standardInput: Int32
    /// Warnings and errors, with their source.
    let diagnostics: (Diagnostic) -> Void
}

/// One kind of sync source behind one small protocol: it fetches what is new since its cursor and
/// yields feeds of rows; the engine merges them in one transaction per source and stores the cursor
/// the source reports. The merger never knows whether rows came from a file, HTTP, a log or a hub.
protocol SyncSource: AnyObject {
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
}

/// Rows to merge: decoded and handed to a ``RowMerger`` inside the source's transaction.
protocol ChangeFeed {
    /// Decodes every row and merges it.
    /// - Throws: `CatalogError` (65 for malformed rows, 76 for an incompatible format, 74 for a read
    ///   error), which fails the source: its transaction rolls back.
    func merge(into merger: inout RowMerger) throws
}

/// A snapshot (SPEC §6) on an open descriptor, decoded on a reading thread while the merger applies it.
final class SnapshotFeed: ChangeFeed {
    let fd: Int32
    let name: String
    private let owned: Bool

    /// - Parameter owned: close `fd` when the feed is released.
    init(fd: Int32, name: String, owned: Bool) {
        self.fd = fd
        self.name = name
        self.owned = owned
    }

    deinit { if owned { close(fd) } }

    func merge(into merger: inout RowMerger) throws {
        let decoder = SnapshotDecoder(source: name)
        let fd = self.fd
        let reading = ReadingThread { queue in decoder.run(fd: fd, queue: queue) }
        defer { reading.finish() }
        while true {
            let batch = reading.queue.take()
            try merger.apply(batch)
            if batch.isLast {
                if let failure = batch.failure { throw failure }
                if let failure = merger.failure() { throw failure }
                return
            }
        }
    }
}

/// `-`: one snapshot read from standard input. It has no cursor.
final class StandardInputSource: SyncSource {
    let locator = SourceLocator.standardInput
    var nextCursor: SourceCursor? { nil }
    private(set) var bytesFetched: Int64 = 0

    func fetch(since cursor: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]? {
        [SnapshotFeed(fd: context.standardInput, name: locator.description, owned: false)]
    }
}

/// A local file: a snapshot (read whole every run; its size and modification time are the cursor, so
/// an unchanged file is not read again).
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
        let fd = try CatalogStore.openForReading(path)
        var info = stat()
        fstat(fd, &info)
        bytesFetched = Int64(info.st_size)
        nextCursor = nil
        return [SnapshotFeed(fd: fd, name: path, owned: true)]
    }
}

/// An HTTP(S) URL serving a snapshot, fetched with conditional GET (the validators are the cursor).
final class HTTPSnapshotSource: SyncSource {
    let locator: SourceLocator
    let url: String
    private(set) var nextCursor: SourceCursor?
    private(set) var bytesFetched: Int64 = 0
    private var spooled: [String] = []

    init(url: String) {
        self.url = url
        self.locator = .http(url: url)
    }

    deinit { for path in spooled { unlink(path) } }

    func fetch(since cursor: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]? {
        let options = context.options
        let fetcher = HTTPFetcher(timeout: options.timeoutSeconds, retries: options.retries, maxBytes: options.maxBytes,
                                  backoff: options.backoffSeconds)
        guard let parsed = URL(string: url) else { throw CatalogError(.usage, "not a valid URL: \(locator)") }
        let name = locator.description
        switch try fetcher.fetch(parsed, etag: cursor?["etag"], lastModified: cursor?["lastModified"], log: { message in
            context.diagnostics(Diagnostic(severity: .warning, message: message, file: name, kind: "retry"))
        }) {
        case .notModified:
            nextCursor = cursor
            return nil
        case .fetched(let path, let bytes, let etag, let lastModified):
            spooled.append(path)
            bytesFetched += bytes
            var next = SourceCursor()
            next["etag"] = etag
            next["lastModified"] = lastModified
            nextCursor = next
            let fd = try CatalogStore.openForReading(path)
            unlink(path)
            spooled.removeAll { $0 == path }
            return [SnapshotFeed(fd: fd, name: name, owned: true)]
        }
    }
}
