import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// inotify on the directories of local sources and of the database (docs/live-sync.md §2).
final class DirectoryWatcher {
    let fd: Int32
    private var directories: [Int32: String] = [:]

    init?() {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 { return nil }
    }

    deinit { close(fd) }

    /// Watches each directory for the union of its masks.
    ///
    /// A second `inotify_add_watch` of the same directory would replace the first mask. Directories that
    /// cannot be watched (not there yet) are skipped: their sources are polled at the interval.
    /// - Parameter masks: directory → the mask it needs.
    /// - Returns: the directories now watched.
    func watch(_ masks: [String: UInt32]) -> Set<String> {
        var watched = Set<String>()
        for (directory, mask) in masks {
            let wd = inotify_add_watch(fd, directory, mask)
            if wd >= 0 {
                directories[wd] = directory
                watched.insert(directory)
            }
        }
        return watched
    }

    /// The events queued: directory and file name.
    ///
    /// A watch the kernel dropped (its directory removed), or whose directory was renamed away, is forgotten, so the caller can watch the
    /// directory again when it reappears.
    /// - Parameter dropped: gains the directories whose watch the kernel dropped.
    /// - Returns: each event's directory and file name, in order.
    func drain(dropped: inout Set<String>) -> [(directory: String, name: String)] {
        var events: [(String, String)] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            var offset = 0
            while offset + 16 <= n {
                let (wd, mask, length) = buffer.withUnsafeBytes { raw in
                    (
                        raw.loadUnaligned(fromByteOffset: offset, as: Int32.self), raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                        Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    )
                }
                var name = ""
                if length > 0 {
                    let bytes = buffer[(offset + 16)..<min(n, offset + 16 + length)]
                    name = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                }
                if let directory = directories[wd] {
                    if mask & UInt32(IN_IGNORED) != 0 {
                        directories[wd] = nil
                        dropped.insert(directory)
                    } else if mask & UInt32(IN_MOVE_SELF) != 0 {
                        // Renamed away: the watch follows the old directory, not the path. Dropped here
                        // (its IN_IGNORED then finds no entry), so the path is watched again.
                        inotify_rm_watch(fd, wd)
                        directories[wd] = nil
                        dropped.insert(directory)
                    } else {
                        events.append((directory, name))
                    }
                }
                offset += 16 + length
            }
        }
        return events
    }
}
