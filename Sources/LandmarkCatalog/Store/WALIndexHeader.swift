import Foundation

/// The first copy of a WAL database's wal-index header (the first 48 bytes of its `-shm` file,
/// https://sqlite.org/walformat.html), as ``DataVersionProbe/walIndexHeader()`` reads it from SQLite's own
/// mapping: whether anything committed since an earlier look, with no SQLite call and no system call.
///
/// Every commit to the database, by any connection of any process, rewrites this copy last (its frame
/// count, change counter and checksums); so do a checkpoint that restarts the log and a rebuild of the
/// index. Two reads that differ say "something may have committed"; two that are equal, that nothing did
/// between them. A read made while a commit writes the header differs from both sides, so it can only
/// ever say "changed". `catalog serve` compares it on each landmarks 304 it answers from memory
/// (docs/serve.md §4).
package struct WALIndexHeader: Equatable, Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    /// Reads the 48 bytes at `region` (the start of the wal-index).
    init(reading region: UnsafeRawPointer) {
        words = (
            region.load(fromByteOffset: 0, as: UInt64.self), region.load(fromByteOffset: 8, as: UInt64.self),
            region.load(fromByteOffset: 16, as: UInt64.self), region.load(fromByteOffset: 24, as: UInt64.self),
            region.load(fromByteOffset: 32, as: UInt64.self), region.load(fromByteOffset: 40, as: UInt64.self)
        )
    }

    package static func == (a: Self, b: Self) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
            && a.words.4 == b.words.4 && a.words.5 == b.words.5
    }
}
