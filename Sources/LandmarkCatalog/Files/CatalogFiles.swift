import Foundation

#if os(Linux)
    import Glibc
#endif

/// What a catalog's files need without an open store: the default database path, a path's directory, how a
/// file is opened for reading, why a database cannot be written, whether one holds any data.
public enum CatalogFiles {
    /// `<real path of the database><suffix>`: a file kept beside the database (its sync lock, a follower's or
    /// serve's marker, serve's cursor mark), named after the file a symbolic link points to, so every path
    /// to one database names the same file; the path as given while the database does not exist yet.
    package static func besideDatabase(_ databasePath: String, suffix: String) -> String {
        guard let resolved = realpath(databasePath, nil) else { return databasePath + suffix }
        defer { free(resolved) }
        return String(cString: resolved) + suffix
    }

    /// Creates the directories of a database about to be created (`.write`), and refuses a path that is a
    /// directory.
    /// - Throws: `CatalogError.cantCreate` (73) when a directory cannot be created or the path is one.
    static func prepareDirectory(for path: String) throws {
        guard path != ":memory:" else { return }
        let directory = Self.directory(of: path)
        if !directory.isEmpty, let failure = makeDirectories(directory) {
            throw CatalogError(.cantCreate, "cannot create the database directory: \(failure.path): \(failure.reason), \(directory)")
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CatalogError(.cantCreate, "the database path is a directory, \(path)", hint: "pass a file path with --db")
        }
    }

    /// Why this user cannot open the database at `path` for writing, when the file system says so: a
    /// read-only mount, or a file or directory this user may not write (SQLite creates `<path>-wal` and
    /// `<path>-shm` beside the database).
    ///
    /// Nil when neither applies.
    static func writeAccessProblem(_ path: String) -> (cause: String, hint: String)? {
        guard path != ":memory:" else { return nil }
        let directory = directory(of: path).isEmpty ? "." : directory(of: path)
        let exists = FileManager.default.fileExists(atPath: path)
        if isOnReadOnlyFileSystem(exists ? path : directory) {
            return (
                "the file system is mounted read-only",
                "the reading commands (featured, positions, status, export, remote list, migrate --status) still work there; write to a copy on a writable file system"
            )
        }
        if exists && access(path, W_OK) != 0 {
            return (
                "this user cannot write the database file",
                "run as the database's owner, or give this user write access to the file and its directory"
            )
        }
        if access(directory, W_OK) != 0 {
            return (
                "this user cannot write the directory \(directory), where SQLite keeps the -wal and -shm files",
                "run as the database's owner, or give this user write access to the directory"
            )
        }
        return nil
    }

    /// Whether `path` lies on a file system mounted read-only (`statvfs`'s `ST_RDONLY`).
    static func isOnReadOnlyFileSystem(_ path: String) -> Bool {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return false }
        return info.f_flag & UInt(ST_RDONLY) != 0
    }

    /// Makes a rename or link in `path`'s directory durable (`fsync(2)` of the directory); a directory that
    /// cannot be opened is left as it is.
    package static func syncDirectory(of path: String) {
        let parent = directory(of: path)
        let fd = open(parent.isEmpty ? "." : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// The directory part of a path ("" when it has none): `a/b/c.sqlite` → `a/b`, `/c.sqlite` → `/`.
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The default database path (docs/cli.md §1): `$CATALOG_DB`, else `$XDG_DATA_HOME/landmark-catalog/catalog.sqlite`,
    /// else `~/.local/share/landmark-catalog/catalog.sqlite`.
    ///
    /// Never the working directory.
    /// - Parameter environment: the process environment.
    /// - Returns: the path (its directory may not exist yet).
    public static func defaultPath(environment: [String: String]) -> String {
        if let db = environment["CATALOG_DB"], !db.isEmpty { return db }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return xdg + "/landmark-catalog/catalog.sqlite"
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/share/landmark-catalog/catalog.sqlite"
    }

    /// The size of the regular file open at `fd`, or nil (a pipe, a terminal).
    package static func regularFileSize(_ fd: Int32) -> Int64? {
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Opens a file to read, refusing a directory; the caller closes the descriptor.
    /// - Parameter path: the file's path.
    /// - Returns: a descriptor open read-only (close-on-exec).
    /// - Throws: `CatalogError` 66 (`noInput`) when the file is missing, unreadable or a directory.
    public static func openForReading(_ path: String) throws -> Int32 {
        let fd = systemOpen(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw CatalogError(.noInput, "cannot open the file (\(reason)), \(path)")
        }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw CatalogError(.noInput, "is a directory, not a file, \(path)")
        }
        return fd
    }

    /// `path` made absolute against `directory` (already absolute: only standardized), as a saved remote's
    /// path or token file is kept, so it means the same from cron or another working directory.
    package static func absolutePath(_ path: String, in directory: String) -> String {
        URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: directory, isDirectory: true)).standardizedFileURL.path
    }
}
