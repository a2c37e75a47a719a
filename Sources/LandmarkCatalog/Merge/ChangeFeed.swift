import Foundation

/// Rows to merge: decoded and handed to a ``RowMerger`` inside the source's transaction.
package protocol ChangeFeed {
    /// Decodes every row and merges it.
    /// - Throws: `CatalogError` (65 for malformed rows, 76 for an incompatible format, 74 for a read
    ///   error), which fails the source: its transaction rolls back.
    func merge(into merger: inout RowMerger) throws
}

/// A snapshot (docs/snapshot-format.md §1) on an open descriptor, decoded on a reading thread while the merger applies it.
package final class SnapshotFeed: ChangeFeed {
    let fd: Int32
    let name: String
    private let owned: Bool
    private let keeping: AnyObject?
    /// Bytes of the snapshot read so far.
    private(set) var bytesRead: Int64 = 0
    /// A document in memory instead of `fd` (an answer of catalog serve, merged as it is decoded).
    private let bytes: [UInt8]?
    /// After the merge: the document's `cursor` and `more`, when it was an answer of catalog serve
    /// (docs/protocol.md §4).
    package private(set) var pageCursor: String?
    package private(set) var pageMore = false

    /// - Parameters:
    ///   - fd: the descriptor the feed reads.
    ///   - name: the feed's name in messages.
    ///   - owned: close `fd` when the feed is released.
    ///   - keeping: an object that owns `fd` (a downloaded body), kept alive as long as the feed.
    package init(fd: Int32, name: String, owned: Bool, keeping: AnyObject? = nil) {
        self.fd = fd
        self.name = name
        self.owned = owned
        self.keeping = keeping
        bytes = nil
    }

    /// A document in memory, named `name` in messages.
    package init(bytes: [UInt8], name: String) {
        fd = -1
        self.name = name
        owned = false
        keeping = nil
        self.bytes = bytes
    }

    deinit { if owned { close(fd) } }

    package func merge(into merger: inout RowMerger) throws {
        let decoder = SnapshotDecoder(source: name)
        let fd = self.fd
        let total: Int64?
        let reading: ReadingThread
        if let bytes {
            total = Int64(bytes.count)
            reading = ReadingThread { queue in
                decoder.run(reader: JSONPullReader(bytes: bytes, options: .init(allowTrailingCommas: false, maxDepth: 64)), queue: queue)
            }
        } else {
            lseek(fd, 0, SEEK_SET)
            total = CatalogFiles.regularFileSize(fd)  // spooled HTTP bodies are regular files too
            reading = ReadingThread { queue in decoder.run(fd: fd, queue: queue) }
        }
        defer { reading.finish() }
        try reading.mergeAll(into: &merger) { batch, merger in
            bytesRead = Int64(batch.bytesRead)
            merger.progress(merger.counts.seen, bytesRead, total)
            if batch.isLast {
                pageCursor = batch.pageCursor
                pageMore = batch.pageMore
            }
        }
    }
}
