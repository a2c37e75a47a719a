import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a file atomically: a temporary file in the same directory, `fsync`, then `rename` over the
/// target and `fsync` of the directory, so readers see the old file or the new one, never a part.
final class AtomicFileWriter {
    let path: String
    let temporaryPath: String
    private var fd: Int32
    private var committed = false

    /// A symbolic link is written through (its target is replaced); an existing file keeps its mode.
    /// - Throws: `CatalogError.cantCreate` (73) when the target exists and is not a regular file (a
    ///   device such as `/dev/null`, a FIFO, a directory), or the temporary file cannot be created.
    init(path requested: String) throws {
        var path = requested
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK, let resolved = realpath(path, nil) {
            path = String(cString: resolved)
            free(resolved)
        }
        var mode: mode_t = 0o644
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                throw CatalogError(.cantCreate, "not a regular file, refusing to replace it, \(requested)",
                                   hint: "write to a file path, or use --output - for standard output")
            }
            mode = info.st_mode & 0o7777
        }
        self.path = path
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        temporaryPath = directory + "/.\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        fd = Glibc.open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CatalogError(.cantCreate, "cannot create the file (\(String(cString: strerror(errno)))), \(path)")
        }
        fchmod(fd, mode)
    }

    /// Appends bytes.
    /// - Throws: `CatalogError.ioError` (74) on a write error such as a full disk.
    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CatalogError(.ioError, "cannot write \(path): \(String(cString: strerror(errno)))")
                }
                offset += n
            }
        }
    }

    /// Makes the new content durable and visible under `path`.
    func commit() throws {
        guard fsync(fd) == 0 else { throw CatalogError(.ioError, "cannot sync \(path): \(String(cString: strerror(errno)))") }
        close(fd)
        fd = -1
        guard rename(temporaryPath, path) == 0 else {
            throw CatalogError(.cantCreate, "cannot replace \(path): \(String(cString: strerror(errno)))")
        }
        committed = true
        let directory = Glibc.open(URL(fileURLWithPath: path).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    deinit {
        if fd >= 0 { close(fd) }
        if !committed { unlink(temporaryPath) }
    }
}
