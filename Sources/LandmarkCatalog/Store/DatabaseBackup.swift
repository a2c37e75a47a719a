import Foundation

#if os(Linux)
    import Glibc
#endif

/// `catalog backup --output FILE` (docs/operations.md §12): a consistent copy of a database taken while
/// others write to it.
///
/// The copy is SQLite's `VACUUM INTO` (https://sqlite.org/lang_vacuum.html#vacuuminto): one read
/// transaction of the source, so it holds exactly the commits made before it began, and in WAL mode it
/// never blocks a writer. It is written to a temporary file beside FILE, given a new serve database id
/// (so a `catalog serve` started on it hands out cursors of another database and devices push again,
/// docs/protocol.md §3), checkpointed and renamed onto FILE: FILE is whole or absent.
package struct DatabaseBackup {
    /// The store it copies.
    let store: CatalogStore

    /// Copies `store`'s database.
    package init(_ store: CatalogStore) { self.store = store }

    /// Writes the copy to `path`.
    /// - Parameters:
    ///   - path: the file to write.
    ///   - replacing: replace an existing `path` (`--force`); otherwise one is refused.
    /// - Throws: `CatalogError` 73 when `path` exists (without `replacing`), is the database itself, or
    ///   cannot be written; 75 when the database stays busy.
    package func write(to path: String, replacing: Bool) throws {
        let source = URL(fileURLWithPath: store.path).resolvingSymlinksInPath().path
        if URL(fileURLWithPath: path).resolvingSymlinksInPath().path == source {
            throw CatalogError(.cantCreate, "--output is the database itself, \(path)", hint: "write the backup to another file")
        }
        // Never over a file the database lives by (its WAL: a --force over it lost acknowledged writes), nor
        // over anything but a regular file (`--output /dev/null --force` replaced the device).
        let sidecars = ["-wal", "-shm", "-journal", ".serve", ".serve-cursor", ".sync-lock", ".building"]
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        if let suffix = sidecars.first(where: { resolved == source + $0 }) {
            throw CatalogError(.cantCreate, "--output is the database's own \(suffix) file, \(path)", hint: "write the backup to another file")
        }
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
            throw CatalogError(.cantCreate, "--output is not a regular file, \(path)", hint: "write the backup to a new file")
        }
        if !replacing && FileManager.default.fileExists(atPath: path) {
            throw CatalogError(.cantCreate, "\(path) exists; refusing to replace it", hint: "choose another --output, or pass --force")
        }
        let directory = CatalogFiles.directory(of: path).isEmpty ? "." : CatalogFiles.directory(of: path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CatalogError(
                .cantCreate, "cannot write the backup: its directory \(directory) does not exist, \(path)",
                hint: "create the directory first (mkdir -p \(directory))")
        }
        guard access(directory, W_OK) == 0 else {
            throw CatalogError(
                .cantCreate, "cannot write the backup: this user cannot write its directory \(directory), \(path)",
                hint: "write it where this user may, or run as a user who may write \(directory)")
        }
        let temporary = directory + "/.\(URL(fileURLWithPath: path).lastPathComponent).backup-\(getpid())"
        defer {
            for suffix in ["", "-wal", "-shm", "-journal"] { unlink(temporary + suffix) }
        }
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(temporary + suffix) }
        do {
            try store.connection.execute(sql: "VACUUM INTO ?", [.text(temporary)])
        } catch let error as SQLiteError {
            if [.busy, .locked].contains(error.code.primary) { throw CatalogError(error, path: store.path) }
            if [.full, .ioError].contains(error.code.primary) { throw CatalogError(error, path: path) }
            throw CatalogError(
                .cantCreate, "cannot write the backup (\(error.message)), \(path)", hint: "check the disk's free space and the directory")
        }
        do {
            // Its own scope: the copy's connection is closed (its WAL checkpointed away) before the rename.
            let copy = try CatalogStore.open(path: temporary, wallClock: store.wallClock)
            _ = try copy.write { try copy.metaTable.newServeID() }
            try copy.connection.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            try copy.connection.execute(sql: "PRAGMA journal_mode = DELETE")
        } catch let error as SQLiteError {
            throw CatalogError(error, path: temporary)
        }
        let fd = open(temporary, O_RDONLY)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
        guard rename(temporary, path) == 0 else {
            throw CatalogError(.cantCreate, "cannot write the backup (\(String(cString: strerror(errno)))), \(path)")
        }
    }
}
