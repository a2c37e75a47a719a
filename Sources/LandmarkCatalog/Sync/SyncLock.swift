import Foundation

#if os(Linux)
    import Glibc
#endif

/// One sync at a time per database: an exclusive `flock(2)` on `<database>.sync-lock`, where
/// `<database>` is the file's real path (symbolic links and `..` resolved), so every name that leads to
/// the file through links takes the same lock.
///
/// A hard link is another name for the same file with its own real path: two syncs through two hard links are not
/// kept apart (docs/operations.md §9 says: keep one name). The kernel drops the lock when the process exits or
/// dies (even by SIGKILL), so a stale lock never blocks the next run. The file holds the holder's pid, host and
/// start time, for the message a second run prints.
package final class SyncLock {
    private let fd: Int32

    /// Wraps a descriptor that already holds the lock.
    ///
    /// Only `acquire` makes one: an initializer that throws after its properties are set would run
    /// `deinit` and close the descriptor twice (and a descriptor number closed twice may by then
    /// belong to another file of this process).
    private init(holding fd: Int32) {
        self.fd = fd
    }

    /// Takes the lock for the database at `databasePath`.
    /// - Parameters:
    ///   - databasePath: the database's path; the lock file is beside it.
    ///   - now: the time written in the holder line, in ms since 1970.
    ///   - following: the holder is `sync --follow` (said in the holder line a second run prints).
    /// - Returns: the lock, held until it is released.
    /// - Throws: `CatalogError.tempFail` (75) at once when another process holds the lock, naming it;
    ///   `CatalogError.cantCreate` (73) when the lock file cannot be opened.
    package static func acquire(databasePath: String, now: Int64, following: Bool = false) throws -> SyncLock {
        let path = lockPath(for: databasePath)
        let fd = systemOpen(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw CatalogError(.cantCreate, "cannot open the sync lock (\(String(cString: strerror(errno)))), \(path)")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let reason = errno
            var buffer = [UInt8](repeating: 0, count: 512)
            let n = pread(fd, &buffer, buffer.count, 0)
            close(fd)
            let holder = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self).trimmingWhitespace() : "another process"
            guard reason == EWOULDBLOCK else {
                throw CatalogError(.cantCreate, "cannot lock (\(String(cString: strerror(reason)))), \(path)")
            }
            // A follower holds the lock for its whole life: cron's next run would meet it too.
            let hint =
                holder.hasSuffix(", following")
                ? "a follower (sync --follow) syncs this database; add the source to its saved remotes and send it SIGHUP, or stop it first; nothing was changed"
                : "it exits 75 so cron retries at the next run; nothing was changed"
            throw CatalogError(.tempFail, "another sync is running on this database (\(holder)), \(path)", hint: hint, reason: .syncInProgress)
        }
        let holder =
            "pid \(getpid()) on \(ProcessInfo.processInfo.hostName) since \(Timestamp.format(milliseconds: now))\(following ? ", following" : "")\n"
        ftruncate(fd, 0)
        _ = holder.withCString { pwrite(fd, $0, strlen($0), 0) }
        return SyncLock(holding: fd)
    }

    /// `<real path of the database>.sync-skipped`: runs that found the lock held and could not write
    /// their ledger row at once append one line here; the holder moves them into the ledger.
    package static func skippedPath(for databasePath: String) -> String {
        CatalogFiles.besideDatabase(databasePath, suffix: ".sync-skipped")
    }

    /// Appends one line (`O_APPEND`: lines from several processes never interleave).
    package static func noteSkipped(databasePath: String, line: String) {
        let fd = systemOpen(skippedPath(for: databasePath), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let text = line + "\n"
        _ = text.withCString { write(fd, $0, strlen($0)) }
    }

    /// Takes the lines noted by skipped runs (the caller holds the lock) and hands each to `record`, in
    /// order; a line leaves the file only once it is recorded.
    ///
    /// The lines are moved aside first (`.taking`), so runs that note themselves meanwhile append to a
    /// fresh file. When `record` throws, that line and the ones after it are kept in `.taking` for the
    /// next try, which takes them first (they were deleted whether or not they were recorded).
    ///
    /// - Parameters:
    ///   - databasePath: the database's path, as for ``skippedPath(for:)``.
    ///   - record: records one line (a ledger insert).
    /// - Throws: the first error of `record`; the lines not recorded are kept.
    package static func takeSkipped(databasePath: String, record: (String) throws -> Void) throws {
        let path = skippedPath(for: databasePath)
        let taken = path + ".taking"
        // Lines kept by a try that failed (or by a run that died while it held them) go first; then
        // the ones noted since.
        for _ in 0..<2 {
            var lines = Self.lines(of: taken)
            if lines.isEmpty {
                guard rename(path, taken) == 0 else { return }
                lines = Self.lines(of: taken)
            }
            for (n, line) in lines.enumerated() {
                do { try record(line) } catch {
                    // When even this cannot be written, `.taking` keeps every line (some twice then).
                    try? keep(Array(lines[n...]), in: taken)
                    throw error
                }
            }
            unlink(taken)
        }
    }

    /// The lines of the file at `path` (none when it is missing).
    private static func lines(of path: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Replaces the file at `path` with `lines` (atomically: a crash leaves the old lines or the new).
    private static func keep(_ lines: [String], in path: String) throws {
        let file = try AtomicFileWriter(path: path)
        try file.write(Array(lines.map { $0 + "\n" }.joined().utf8))
        try file.commit()
    }

    /// `<real path of the database>.sync-lock` (the path as given when it does not exist yet).
    package static func lockPath(for databasePath: String) -> String {
        CatalogFiles.besideDatabase(databasePath, suffix: ".sync-lock")
    }

    deinit {
        ftruncate(fd, 0)
        flock(fd, LOCK_UN)
        close(fd)
    }
}
