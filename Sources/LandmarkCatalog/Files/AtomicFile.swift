import Foundation

#if os(Linux)
    import Glibc
#endif

/// Writes a file atomically: a temporary file in the same directory, `fsync`, then `rename` over the
/// target and `fsync` of the directory, so readers see the old file or the new one, never a part.
///
/// Temporary files are named `.<name>.tmp-catalog-<host>-<pid>-<8 hex digits>`. A writer that was
/// killed leaves its temporary behind; the next writer into the same directory removes every such
/// file whose process is gone (same host, no process with that pid) or that is older than a week.
package final class AtomicFileWriter {
    let path: String
    let temporaryPath: String
    private var fd: Int32
    private var committed = false
    private(set) var bytesWritten: Int64 = 0

    /// The marker in temporary file names.
    static let marker = ".tmp-catalog-"

    /// A symbolic link is written through (its target is replaced); an existing file keeps its mode.
    /// - Parameters:
    ///   - requested: the path to replace.
    ///   - newMode: the permission bits of a new file (an existing one keeps its own).
    /// - Throws: `CatalogError.usage` (64) for an empty path; `.cantCreate` (73) when the target exists and
    ///   is not a regular file (a device such as `/dev/null`, a FIFO, a directory), or the temporary file
    ///   cannot be created.
    package init(path requested: String, mode newMode: mode_t = 0o644) throws {
        guard !requested.isEmpty else {
            throw CatalogError(.usage, "the output path is empty", hint: "give a file path, or - for standard output")
        }
        var path = requested
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK, let resolved = realpath(path, nil) {
            path = String(cString: resolved)
            free(resolved)
        }
        var mode: mode_t = newMode
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                throw CatalogError(
                    .cantCreate, "not a regular file, refusing to replace it, \(requested)",
                    hint: "write to a file path, or use --output - for standard output")
            }
            mode = info.st_mode & 0o7777
        }
        self.path = path
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        Self.removeStaleTemporaries(in: directory)
        temporaryPath =
            directory
            + "/.\(url.lastPathComponent)\(Self.marker)\(Self.hostTag)-\(getpid())-\(String(format: "%08x", UInt32.random(in: 0...UInt32.max)))"
        fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CatalogError(.cantCreate, "cannot create a file in \(directory) (\(String(cString: strerror(errno)))), \(requested)")
        }
        fchmod(fd, mode)
    }

    /// This host's name with anything but letters, digits, `.` and `_` replaced by `_`.
    static let hostTag: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let name = String(decoding: bytes, as: UTF8.self)
        return String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_") ? $0 : "_" })
    }()

    /// Removes this tool's temporary files in `directory` whose writer is gone (see the type's docs).
    /// - Returns: the names removed.
    @discardableResult
    static func removeStaleTemporaries(in directory: String, now: Date = Date()) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var removed: [String] = []
        for name in names where name.hasPrefix(".") {
            guard let range = name.range(of: marker, options: .backwards) else { continue }
            let tail = name[range.upperBound...].split(separator: "-")
            guard tail.count >= 3, tail.last?.count == 8, let pid = Int32(tail[tail.count - 2]) else { continue }
            let host = tail.dropLast(2).joined(separator: "-")
            let full = directory + "/" + name
            var info = stat()
            guard lstat(full, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            let age = now.timeIntervalSince1970 - Double(info.modificationTime.tv_sec)
            let gone = host == hostTag && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH
            if gone || age > 7 * 86_400 {
                if unlink(full) == 0 { removed.append(name) }
            }
        }
        return removed
    }

    /// Appends bytes.
    /// - Throws: `CatalogError.ioError` (74) on a write error such as a full disk.
    package func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset < raw.count {
                let n = systemWrite(fd, base + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CatalogError(.ioError, "cannot write \(path): \(String(cString: strerror(errno)))")
                }
                offset += n
            }
        }
        bytesWritten += Int64(bytes.count)
    }

    /// Makes the new content durable and visible under `path` (or under `finalPath`, a path in the same
    /// directory, when the name is known only once the content is: content-addressed files).
    /// - Parameters:
    ///   - finalPath: the name to commit under instead of `path`, in the same directory; nil for `path`.
    ///   - syncDirectory: fsync the directory after the rename (false: the caller commits another file
    ///     into the same directory right after, whose commit syncs it).
    /// - Throws: `CatalogError` 74 when the data cannot be synced, 73 when the rename fails.
    package func commit(as finalPath: String? = nil, syncDirectory: Bool = true) throws {
        let path = finalPath ?? self.path
        try flush()
        guard rename(temporaryPath, path) == 0 else {
            throw CatalogError(.cantCreate, "cannot replace \(path): \(String(cString: strerror(errno)))")
        }
        committed = true
        if syncDirectory { CatalogFiles.syncDirectory(of: path) }
    }

    /// Makes the content durable (fsync) and closes the file, before ``commit(as:syncDirectory:)`` renames
    /// it: two files flushed first are then renamed within microseconds of each other.
    /// - Throws: `CatalogError` 74 when the data cannot be synced.
    package func flush() throws {
        guard fd >= 0 else { return }
        guard fsync(fd) == 0 else { throw CatalogError(.ioError, "cannot sync \(path): \(String(cString: strerror(errno)))") }
        close(fd)
        fd = -1
    }

    deinit {
        if fd >= 0 { close(fd) }
        if !committed { unlink(temporaryPath) }
    }
}
