import Foundation

#if os(Linux)
    import Glibc
#endif

/// The header of a WAL database's wal-index, its `-shm` file (https://sqlite.org/walformat.html), mapped
/// read-only: whether anything committed since an earlier look, with no SQLite call and no system call.
///
/// Every commit to the database, by any connection of any process, rewrites the header's first copy last
/// (its frame count, change counter and checksums); so do a checkpoint that restarts the log and a rebuild
/// of the index. Two reads that differ say "something may have committed"; two that are equal, that nothing
/// did between them. A read made while a commit writes the header differs from both sides, so it can only
/// ever say "changed". `catalog serve` asks it on each landmarks 304 it answers from memory
/// (docs/serve.md §4); ``DataVersionProbe`` stays the way to ask SQLite.
///
/// While a connection to the database is open the `-shm` file is neither truncated nor removed by SQLite,
/// so the mapping stays valid as long as its owner keeps one open.
package final class WALIndexStamp: @unchecked Sendable {
    // Safe: the mapping is made once in `init`, only read, and unmapped in `deinit`.
    private let mapping: UnsafeMutableRawPointer
    private static let mappedBytes = 4096

    /// The first copy of the header (48 bytes), as six words.
    package struct Header: Equatable, Sendable {
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

        package static func == (a: Header, b: Header) -> Bool {
            a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
                && a.words.4 == b.words.4 && a.words.5 == b.words.5
        }
    }

    /// Maps `<real path of databasePath>-shm`; nil when there is none or it is shorter than a wal-index header
    /// (a database not in WAL mode, opened immutable, on a file system without shared memory), or it cannot be
    /// mapped: the caller then asks SQLite (``DataVersionProbe``).
    package init?(databasePath: String) {
        guard let real = realpath(databasePath, nil) else { return nil }
        let shm = String(cString: real) + "-shm"
        free(real)
        let fd = open(shm, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        // The header's two copies and the checkpoint information: 136 bytes.
        guard fstat(fd, &info) == 0, info.st_size >= 136 else { return nil }
        guard let mapped = mmap(nil, Self.mappedBytes, PROT_READ, MAP_SHARED, fd, 0), mapped != MAP_FAILED else { return nil }
        mapping = mapped
    }

    deinit { munmap(mapping, Self.mappedBytes) }

    /// The header's first copy now.
    package func read() -> Header {
        let p = UnsafeRawPointer(mapping)
        return Header(
            words: (
                p.load(fromByteOffset: 0, as: UInt64.self), p.load(fromByteOffset: 8, as: UInt64.self),
                p.load(fromByteOffset: 16, as: UInt64.self), p.load(fromByteOffset: 24, as: UInt64.self),
                p.load(fromByteOffset: 32, as: UInt64.self), p.load(fromByteOffset: 40, as: UInt64.self)
            ))
    }
}
