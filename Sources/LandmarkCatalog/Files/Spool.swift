import Foundation

/// Anonymous temporary files for downloaded bodies.
package enum Spool {
    /// Creates a file in `directory` and unlinks it at once, returning its descriptor (read-write,
    /// close-on-exec, mode 0600, positioned at 0).
    ///
    /// The file has no name from the moment this returns, so nothing is left behind however the process
    /// ends (even SIGKILL): the kernel frees the space when the descriptor is closed. `open(2)` with
    /// `O_CREAT | O_EXCL | O_CLOEXEC` and a random name, then `unlink(2)`, rather than Linux's `O_TMPFILE`,
    /// which some filesystems refuse and macOS lacks.
    ///
    /// - Parameter directory: an existing, writable directory.
    /// - Returns: the descriptor; the caller closes it.
    /// - Throws: `CatalogError(.ioError)` (74) when the disk is full or failing (ENOSPC, EDQUOT, EIO),
    ///   `CatalogError(.cantCreate)` (73) for anything else (missing directory, no permission).
    package static func makeAnonymousFile(in directory: String) throws -> Int32 {
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        for _ in 0..<100 {
            let path = prefix + ".catalog-spool-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd < 0 {
                if errno == EEXIST { continue }
                throw error(errno, "cannot create a spool file in \(directory)")
            }
            guard unlink(path) == 0 else {
                let code = errno
                close(fd)
                throw error(code, "cannot unlink the spool file \(path)")
            }
            return fd
        }
        throw CatalogError(.cantCreate, "cannot create a spool file in \(directory): 100 random names were all taken")
    }

    /// Writes all of `buffer` to `fd`, retrying short writes and EINTR.
    ///
    /// - Returns: 0, or the `errno` of the failing `write(2)` (ENOSPC, EIO, …).
    package static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Int32 {
        guard var base = buffer.baseAddress else { return 0 }
        var left = buffer.count
        while left > 0 {
            let written = write(fd, base, left)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            precondition(written > 0, "write(2) returned 0 for a non-empty buffer")
            base += written
            left -= written
        }
        return 0
    }

    /// The error for a failed spool operation, by `errno`: a full or failing disk is 74, else 73.
    ///
    /// The message reads `<what>: <strerror>, <where>`.
    package static func error(_ code: Int32, _ what: String, at place: String? = nil) -> CatalogError {
        let message = "\(what): \(String(cString: strerror(code)))" + (place.map { ", \($0)" } ?? "")
        switch code {
        case ENOSPC, EDQUOT, EIO:
            return CatalogError(.ioError, message)
        default:
            return CatalogError(.cantCreate, message)
        }
    }
}
