import Foundation

#if os(Linux)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the OS says about a database's files: a descriptor that becomes readable when `<db>`, `<db>-wal`
/// or `<db>-journal` may have changed (created, written, closed after writing, removed, renamed to or
/// from), for ``ChangeMonitor``'s thread to `poll()`.
///
/// nil from `init` when the OS has no such events or refuses them: the monitor then checks once a second.
#if os(Linux)
    final class FileEvents {
        /// The inotify descriptor.
        let fd: Int32
        private let names: Set<String>

        /// Watches the database's directory (the files come and go: a `-wal` deleted at the last close and
        /// made again, a file renamed over the database).
        init?(path: String) {
            let url = URL(fileURLWithPath: path)
            let name = url.lastPathComponent
            names = [name, name + "-wal", name + "-journal"]
            fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard fd >= 0 else { return nil }
            let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM)
            // ENOSPC: out of watches (fs.inotify.max_user_watches). `deinit` closes `fd` (it runs when a
            // class's failable init fails after setting every property: closing it here too closed it twice).
            guard inotify_add_watch(fd, url.deletingLastPathComponent().path, mask) >= 0 else { return nil }
        }

        deinit { if fd >= 0 { close(fd) } }

        /// Reads every queued event.
        /// - Returns: whether one is about the database's files (or events were lost: the queue
        ///   overflowed); nil when the watch is gone (its directory removed).
        func drain() -> Bool? {
            var relevant = false
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { return relevant }
                var offset = 0
                while offset + 16 <= n {
                    // struct inotify_event: wd, mask, cookie, len, then len bytes of NUL-padded name.
                    let (mask, length) = buffer.withUnsafeBytes { raw in
                        (
                            raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                            Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                        )
                    }
                    if mask & UInt32(IN_IGNORED) != 0 { return nil }
                    if mask & UInt32(IN_Q_OVERFLOW) != 0 { relevant = true }
                    if length > 0 {
                        let bytes = buffer[(offset + 16)..<min(n, offset + 16 + length)]
                        if names.contains(String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)) { relevant = true }
                    }
                    offset += 16 + length
                }
            }
        }
    }
#elseif canImport(Darwin)
    final class FileEvents: @unchecked Sendable {
        // Safe: `directory` and `files` are touched only on `queue`; the descriptors are set once.
        /// The read end of a pipe the sources write a byte to.
        let fd: Int32
        private let poke: Int32
        private let path: String
        private let queue = DispatchQueue(label: "LandmarkCatalog.ChangeMonitor.events")
        private var directory: (any DispatchSourceFileSystemObject)?
        private var files: [any DispatchSourceFileSystemObject] = []

        /// Watches the directory (an entry made, removed or renamed: a new `-wal`, a replaced file) and
        /// the database and its WAL (written, extended, removed, renamed), with vnode dispatch sources.
        init?(path: String) {
            self.path = path
            var pipeFDs: [Int32] = [-1, -1]
            guard pipe(&pipeFDs) == 0 else { return nil }
            for end in pipeFDs { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
            fd = pipeFDs[0]
            poke = pipeFDs[1]
            let parent = URL(fileURLWithPath: path).deletingLastPathComponent().path
            let watched = queue.sync {
                directory = source(parent, [.write, .rename, .delete])
                watchFiles()
                return directory != nil
            }
            guard watched else { return nil }
        }

        deinit {
            // Not through `queue`: the last release may come from a handler running on it. Nothing else
            // touches the sources now (the handlers hold `self` weakly); `cancel()` may be called anywhere.
            directory?.cancel()
            for source in files { source.cancel() }
            close(fd)
            close(poke)
        }

        /// Reads the pokes.
        /// - Returns: true (the sources watch only the database's files).
        func drain() -> Bool? {
            var buffer = [UInt8](repeating: 0, count: 64)
            while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
            return true
        }

        /// On `queue`: (re)opens the sources on the database and its WAL, which a directory event may
        /// have replaced or created.
        private func watchFiles() {
            for source in files { source.cancel() }
            files = [path, path + "-wal"].compactMap { source($0, [.write, .extend, .delete, .rename]) }
        }

        /// On `queue`: a started source on `file`, or nil when it cannot be opened (not there).
        private func source(_ file: String, _ mask: DispatchSource.FileSystemEvent) -> (any DispatchSourceFileSystemObject)? {
            let descriptor = open(file, O_EVTONLY)
            guard descriptor >= 0 else { return nil }
            let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: descriptor, eventMask: mask, queue: queue)
            let isDirectory = file != path && file != path + "-wal"
            source.setEventHandler { [weak self] in
                guard let self else { return }
                if isDirectory { self.watchFiles() }
                var byte: UInt8 = 1
                _ = write(self.poke, &byte, 1)
            }
            source.setCancelHandler { close(descriptor) }
            source.resume()
            return source
        }
    }
#else
    final class FileEvents {
        let fd: Int32 = -1
        init?(path: String) { nil }
        func drain() -> Bool? { nil }
    }
#endif
