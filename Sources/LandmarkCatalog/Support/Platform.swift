#if os(Linux)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `open(2)`, reachable from types that have an `open` method of their own.
package func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    open(path, flags, mode)
}

/// `write(2)`, likewise.
package func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}

/// The text of `errno` value `code`.
package func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

/// `mkdir -p`: creates `path` and its missing parents (mode 0755 before the umask).
/// - Returns: nil on success, else the path that could not be made and why (`strerror`).
package func makeDirectories(_ path: String) -> (path: String, reason: String, code: Int32)? {
    var current = path.hasPrefix("/") ? "" : "."
    for part in path.split(separator: "/", omittingEmptySubsequences: true) {
        current += "/" + part
        if mkdir(current, 0o755) != 0 && errno != EEXIST {
            return (current, errorText(errno), errno)
        }
        var info = stat()
        if stat(current, &info) != 0 || (info.st_mode & S_IFMT) != S_IFDIR {
            return (current, "not a directory", ENOTDIR)
        }
    }
    return nil
}

extension stat {
    /// The last modification time, seconds and nanoseconds since the epoch (UTC): `st_mtim` on Linux,
    /// `st_mtimespec` on Darwin (the one field of `stat(2)` the two spell differently).
    package var modificationTime: timespec {
        #if os(Linux)
            st_mtim
        #else
            st_mtimespec
        #endif
    }
}
