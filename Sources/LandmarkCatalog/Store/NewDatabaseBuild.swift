import Foundation

#if os(Linux)
    import Glibc
#endif

/// A database that does not exist yet, built whole in a file of its own beside it and moved into place
/// once complete (docs/performance.md §2).
///
/// A first import writes every page once, with no rollback journal (`PRAGMA journal_mode = MEMORY`,
/// https://sqlite.org/pragma.html#pragma_journal_mode) instead of twice (the WAL, then its checkpoint).
/// Nothing is lost on a failure: until the build is complete the database's own path holds nothing, and
/// the build file (`PATH.building`, locked with `flock(2)` while in use) is removed, or found stale and
/// reused by the next build. Once complete, it is switched back to WAL, made durable (`fsync`), and
/// linked into place with `link(2)`, which never replaces a database that appeared meanwhile (the caller
/// then writes into that one).
package enum NewDatabaseBuild {
    /// A database appeared at the path while the build ran; the build was removed, nothing else written.
    package struct Appeared: Error {}

    /// Builds the database at `path` with `body`, when neither it nor its WAL exists.
    ///
    /// - Parameters:
    ///   - path: the database's path.
    ///   - wallClock: the clock the store stamps with.
    ///   - body: the writes (one transaction of its own); its store is closed after it returns.
    /// - Returns: what `body` returned; nil when the database (or another build of it) exists, so the
    ///   caller writes into it the usual way.
    /// - Throws: what opening the store or `body` throws (nothing is left at `path`); ``Appeared`` when a
    ///   database appeared at `path` while this one was built (another command's first run: write into it
    ///   the usual way); `CatalogError` 74 when the build cannot be made durable or moved into place.
    package static func build<T>(path: String, wallClock: any WallClock, _ body: (CatalogStore) throws -> T) throws -> T? {
        let fm = FileManager.default
        // Nothing at all at the path: a symbolic link (dangling too) is opened the usual way, through the link.
        var info = stat()
        guard path != ":memory:", lstat(path, &info) != 0, errno == ENOENT, !fm.fileExists(atPath: path + "-wal") else { return nil }
        try CatalogFiles.prepareDirectory(for: path)
        let building = path + ".building"
        let lock = open(building, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0 else { return nil }
        defer { close(lock) }
        // Another build of the same database holds it: write the usual way (and wait on its lock there).
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { return nil }
        // What a build that was killed left: start again from an empty file.
        for leftover in ["-journal", "-wal", "-shm"] { unlink(building + leftover) }
        guard ftruncate(lock, 0) == 0 else { return nil }
        var done = false
        defer { if !done { unlink(building) } }
        let result: T
        do {
            let store = try CatalogStore.open(path: building, wallClock: wallClock)
            // The rollback journal in memory holds only the pages the build overwrites (the schema's few):
            // every new page goes straight to the file. (`OFF` is refused on a defensive connection.)
            _ = try store.connection.scalarText(sql: "PRAGMA journal_mode = MEMORY")
            try store.connection.execute(sql: "PRAGMA synchronous = OFF")
            result = try body(store)
            let mode = try store.connection.scalarText(sql: "PRAGMA journal_mode = WAL")
            guard mode?.lowercased() == "wal" else {
                throw CatalogError(.ioError, "cannot switch the new database back to WAL (journal_mode is \(mode ?? "unknown")), \(path)")
            }
        } catch let error as SQLiteError {
            throw CatalogError(error, path: path)
        }
        guard fsync(lock) == 0 else {
            throw CatalogError(.ioError, "cannot make the new database durable (\(String(cString: strerror(errno)))), \(path)")
        }
        guard link(building, path) == 0 else {
            if errno == EEXIST { throw Appeared() }
            throw CatalogError(.ioError, "cannot move the new database into place (\(String(cString: strerror(errno)))), \(path)")
        }
        done = true
        unlink(building)
        CatalogFiles.syncDirectory(of: path)
        return result
    }
}
