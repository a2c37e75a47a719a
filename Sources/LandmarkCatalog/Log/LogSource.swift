import Foundation

#if os(Linux)
    import Glibc
#endif

/// Where a snapshot log's files come from: a local directory or an HTTP(S) base URL.
package protocol LogFileFetcher: AnyObject {
    /// The largest file (and manifest) accepted, in bytes (`--max-bytes`).
    var maxBytes: Int64 { get }
    /// The manifest's name in messages.
    var manifestName: String { get }
    /// Fetches the manifest; nil when a conditional request found it not modified.
    /// - Parameter validators: from the previous fetch, or nil for an unconditional one.
    /// - Returns: the manifest's bytes and its new validators, or nil when it was not modified.
    /// - Throws: `CatalogError` when the manifest cannot be read or fetched, or is too large.
    func fetchManifest(validators: HTTPValidators?) throws -> (bytes: [UInt8], validators: HTTPValidators?)?
    /// Fetches one file of the log and checks its size and SHA-256 against the manifest's before anything
    /// from it is merged.
    /// - Returns: a feed that reads it.
    /// - Throws: ``LogFileGone`` when the file is not there (404, or no such file); `CatalogError` 65 when
    ///   its size or hash differs from the manifest's, 69 when it cannot be fetched.
    func fetchFile(_ file: LogManifest.File) throws -> any ChangeFeed
    /// Bytes fetched so far.
    var bytesFetched: Int64 { get }
    /// Fetches the manifest's signature (`manifest.json.minisig` beside it, docs/trust.md §2), unconditionally.
    /// - Returns: its bytes, or nil when there is none (no such file, 404).
    /// - Throws: `CatalogError` 69 when it cannot be fetched, 77 when it is larger than a signature can be.
    func fetchSignature() throws -> [UInt8]?
}

/// The name of a manifest's signature file: minisign's default for `minisign -Vm manifest.json`.
package let manifestSignatureFileName = LogManifest.fileName + ".minisig"
/// The largest signature file read (a minisign signature with a long trusted comment is well under this).
package let maxSignatureBytes = 16 << 10

/// A file the manifest names is not there (any more): the publisher may have rolled a generation.
package struct LogFileGone: Error {
    package let name: String
    package init(name: String) { self.name = name }
}

/// A snapshot-log reader (docs/log-format.md §6): the consumer side of ``LogPublisher/publishLog(to:options:progress:)``.
///
/// With a cursor (generation, through) it fetches the manifest, then only the deltas past the cursor;
/// on a new generation, or when the deltas no longer chain from the cursor, the base and every delta.
/// Each file is checked (size, SHA-256) before anything from it is merged; a file gone meanwhile means
/// one fresh, unconditional look at the manifest, then 69.
package struct LogReader {
    let fetcher: any LogFileFetcher
    /// The keys a manifest must be signed by (docs/trust.md §3); empty: no signature needed.
    let trusted: [MinisignPublicKey]
    package init(fetcher: any LogFileFetcher, trusted: [MinisignPublicKey] = []) {
        self.fetcher = fetcher
        self.trusted = trusted
    }

    /// Why the manifest is not trusted, or nil when it is signed by a trusted key (or none is required).
    /// - Returns: the error, and whether it may be a publisher's race (a trusted key's signature that does
    ///   not match this manifest: the signature of the manifest before or after it), and whether the
    ///   signature's authentic trusted comment names another version than this manifest (then it surely is).
    func untrusted(_ manifest: [UInt8]) throws -> (error: CatalogError, race: Bool, otherVersion: Bool)? {
        guard !trusted.isEmpty else { return nil }
        guard SignatureAlgorithms.registered != nil else {
            // The core links no signature algorithm (MinisignFormat.swift): refusing is the safe answer.
            return (
                CatalogError(
                    .untrusted, "this source must be signed, and this program cannot check signatures; nothing merged, \(fetcher.manifestName)",
                    hint: "link LandmarkCatalogSync and call NetworkSources.register() before syncing"), false, false
            )
        }
        let trustedIDs = trusted.map(\.id).joined(separator: ", ")
        let trustedText = trusted.count == 1 ? "the trusted key \(trustedIDs)" : "one of the trusted keys \(trustedIDs)"
        let source = fetcher.manifestName
        guard let bytes = try fetcher.fetchSignature() else {
            return (
                CatalogError(
                    .untrusted,
                    "the snapshot log is not signed (no \(manifestSignatureFileName) beside the manifest), and this source must be signed by \(trustedText); nothing merged, \(source)",
                    hint: "the publisher signs with 'catalog publish DIR --sign KEY'; without a signature this source is never merged"), false, false
            )
        }
        let signature = try MinisignSignature(text: String(decoding: bytes, as: UTF8.self), source: source + ".minisig")
        guard let key = trusted.first(where: { $0.keyID == signature.keyID }) else {
            return (
                CatalogError(
                    .untrusted,
                    "the snapshot log is signed by key \(signature.keyIDText), which this source does not trust (it trusts \(trustedIDs)); nothing merged, \(source)",
                    hint: "if the publisher changed its key on purpose, trust the new one too (docs/trust.md §5)"), false, false
            )
        }
        if signature.verifies(manifest, with: key) { return nil }
        var otherVersion = false
        if signature.commentVerifies(with: key), let parsed = try? LogManifest.parse(manifest, source: source) {
            otherVersion = !signature.trustedComment.hasSuffix("generation:\(parsed.generation) through:\(parsed.through)")
        }
        return (
            CatalogError(
                .untrusted,
                "the manifest's signature by key \(signature.keyIDText) does not verify: the manifest or its signature was changed after signing; nothing merged, \(source)",
                hint: "fetch it again later; if it persists, the host serves a manifest that the key's owner did not sign"), true, otherVersion
        )
    }

    /// What to fetch for `cursor` from `manifest`: nil when the cursor is already at its end.
    static func plan(_ manifest: LogManifest, cursor: SourceCursor?) -> [LogManifest.File]? {
        if let cursor, cursor["generation"] == manifest.generation, let through = cursor["through"].flatMap(Int64.init) {
            if through == manifest.through { return nil }
            if through >= manifest.base.through, through < manifest.through {
                let needed = manifest.deltas.filter { $0.through > through }
                if let first = needed.first, first.from <= through { return needed }
            }
        }
        // A cursor in the generation an erasure ended crosses over the bridge, without the base (§4).
        if let bridge = manifest.bridge, let cursor, cursor["generation"] == bridge.generation,
            let through = cursor["through"].flatMap(Int64.init), through >= bridge.file.from, through <= bridge.file.through
        {
            return [bridge.file] + manifest.deltas
        }
        return [manifest.base] + manifest.deltas
    }

    /// Why the manifest's ranges are not what its files prove, or nil (docs/log-format.md §7): each file's
    /// name states its generation, its range and its hash (`base-<generation>-<through>-<sha256 prefix>.json`,
    /// `delta-<generation>-<from>-<through>-<sha256 prefix>.json`, as the publisher names them, §1), so a
    /// manifest that claims more than its files cover (a forged `through`: one at Int64.max froze
    /// the cursor) is refused before its cursor can be stored.
    static func unproven(_ manifest: LogManifest, source: String) -> CatalogError? {
        let files = [(manifest.base, false)] + (manifest.bridge.map { [($0.file, true)] } ?? []) + manifest.deltas.map { ($0, true) }
        for (file, delta) in files {
            let range = delta ? "\(file.from)-\(file.through)" : "\(file.through)"
            let expected = "\(delta ? "delta" : "base")-\(manifest.generation)-\(range)-\(file.sha256.prefix(12)).json"
            guard file.name != expected else { continue }
            let claim = delta ? "changes \(file.from + 1)…\(file.through)" : "changes through \(file.through)"
            return CatalogError(
                .dataInvalid,
                "the manifest says \(file.name) covers \(claim) of generation \(manifest.generation), which its name does not (a publisher names it \(expected)); the manifest's through \(manifest.through) is not proven by its files: nothing fetched, the cursor kept, \(source)",
                hint:
                    "a manifest not written by catalog publish (a forgery, a hand edit); sign the log and trust its key (docs/trust.md) so only the publisher's manifests are read"
            )
        }
        return nil
    }

    /// How many tries in a row found the manifest behind the cursor (kept in the cursor as `behind`).
    package static func behindCount(_ cursor: SourceCursor?) -> Int { cursor?["behind"].flatMap(Int.init) ?? 0 }

    /// Why `manifest` is older than what the cursor has read (docs/log-format.md §8), or nil: of the
    /// cursor's generation with a lower `through`, of a generation the cursor has left for a newer one
    /// (kept in the cursor as `retired`: a signed replay of an older generation, a host flipping between
    /// two, is not read again), or of a generation started before the cursor's (superseded).
    static func behind(_ manifest: LogManifest, cursor: SourceCursor?) -> String? {
        guard let cursor, let generation = cursor["generation"] else { return nil }
        if generation == manifest.generation {
            guard let through = cursor["through"].flatMap(Int64.init), through > manifest.through else { return nil }
            return
                "the manifest is behind this database's cursor (it covers changes through \(manifest.through), this database has read through \(through)): an old copy (a CDN, a mirror, a restored directory); nothing fetched, the cursor kept"
        }
        if retired(cursor).contains(manifest.generation) {
            return
                "the manifest is of generation \(manifest.generation), which this database has read and left for generation \(generation): an old copy or a replay; nothing fetched, the cursor kept"
        }
        // Superseded: a generation started before the cursor's (publishers' names sort by start), never
        // read here (a host flipping between two made a reader fetch the older one's base, then
        // take the newer one for a replay and stay on the older one).
        guard LogManifest.isPublisherGeneration(manifest.generation), LogManifest.isPublisherGeneration(generation),
            manifest.generation < generation
        else { return nil }
        return
            "the manifest is of generation \(manifest.generation), older than generation \(generation) that this database has read: an old copy; nothing fetched, the cursor kept"
    }

    /// The generations the cursor moved away from, oldest first (at most ``maxRetired``).
    static func retired(_ cursor: SourceCursor?) -> [String] {
        (cursor?["retired"] ?? "").split(separator: " ").map(String.init)
    }

    /// `cursor` when it was stored reading a log of `node` (or before cursors named their node), else nil:
    /// a cursor says how far this database has read one node's log, and nothing of another's.
    static func ofNode(_ node: String, _ cursor: SourceCursor?) -> SourceCursor? {
        guard let cursor, let read = cursor["node"], read != node else { return cursor }
        return nil
    }

    /// How many superseded generations a cursor remembers.
    static let maxRetired = 16

    /// Fetches what is new since `cursor`.
    /// - Parameters:
    ///   - cursor: the cursor stored after the last merge, or nil for a first sync.
    ///   - manifestBytes: the manifest, when the caller already fetched it (an HTTP source that found a
    ///     manifest where it expected a snapshot).
    ///   - validators: the manifest's validators from the previous fetch, for a conditional request.
    /// - Returns: the feeds (nil: nothing new), the cursor to store after merging them, and a note when
    ///   the manifest is behind the cursor (docs/log-format.md: a stale copy is not a change).
    /// - Throws: `CatalogError` when the manifest or its signature cannot be fetched, is malformed or is
    ///   not signed by a trusted key.
    package func fetch(since cursor: SourceCursor?, manifestBytes: [UInt8]? = nil, validators: HTTPValidators? = nil)
        throws -> (feeds: [any ChangeFeed]?, cursor: SourceCursor?, note: String?)
    {
        var looks = ManifestLooks()
        var given = manifestBytes
        var givenValidators = validators
        while true {
            guard let (bytes, manifestValidators) = try trustedManifest(given, validators: givenValidators, cursor: cursor, looks: &looks) else {
                return (nil, cursor, nil)  // 304: nothing new
            }
            let manifest = try LogManifest.parse(bytes, source: fetcher.manifestName)
            if let error = Self.unproven(manifest, source: fetcher.manifestName) { throw error }
            // Another node's log under this name (a link or a mount re-pointed): the cursor is not of this
            // log, so it is read from its base (docs/log-format.md §6).
            let ours = Self.ofNode(manifest.node, cursor)
            // A manifest behind the cursor (same generation, lower `through`: a CDN or a mirror serving an
            // old copy, a directory restored from a backup) is not a change: nothing is fetched, the cursor
            // stays, and files it names that are gone are no error.
            if let note = Self.behind(manifest, cursor: ours) {
                // Counted, so that `status --check` says so when it lasts (docs/operations.md §3).
                var kept = ours
                kept?["behind"] = String(Self.behindCount(ours) + 1)
                return (nil, kept, note)
            }
            let next = Self.cursor(after: manifest, ours: ours, validators: manifestValidators)
            guard let files = Self.plan(manifest, cursor: ours) else { return (nil, next, nil) }
            // A manifest names any size it likes: nothing over the limit is fetched at all.
            if let big = files.first(where: { $0.bytes > fetcher.maxBytes }) {
                throw CatalogError(
                    .dataInvalid,
                    "the log file \(big.name) is \(big.bytes) bytes, over the limit of \(fetcher.maxBytes) bytes; nothing from \(fetcher.manifestName) was merged",
                    hint: "raise it with --max-bytes")
            }
            do {
                let feeds = try files.map { try fetcher.fetchFile($0) }
                return (feeds, next, nil)
            } catch let gone as LogFileGone {
                guard !looks.fresh else {
                    throw CatalogError(
                        .unavailable,
                        "the log file \(gone.name) named by \(fetcher.manifestName) is not there, also after a fresh look at the manifest",
                        hint:
                            "the publisher may be removing files too early, and the next run tries again; if the file is gone for good, run 'catalog publish' on the publisher: it starts a new generation when files its manifest names are missing"
                    )
                }
                looks.fresh = true
                given = nil
                givenValidators = manifestValidators
            }
        }
    }

    /// The fresh looks one fetch has taken at the manifest.
    struct ManifestLooks {
        /// A file the manifest named was gone: the manifest is fetched again, unconditionally.
        var fresh = false
        /// The signature was of another version: both are fetched again, unconditionally.
        var race = false
        var raceLooks = 0
    }

    /// The manifest's bytes and validators, once its signature is trusted (docs/trust.md §3): `given`, or
    /// fetched (conditionally, with the cursor's validators, unless a fresh look is asked); nil on a 304.
    ///
    /// A trusted key's signature of another version (a publisher between writing the signature and the
    /// manifest) means one fresh look at both; a few more, backing off, while its trusted comment names
    /// another version.
    /// - Throws: `CatalogError` when the manifest cannot be fetched or is not signed by a trusted key.
    func trustedManifest(_ given: [UInt8]?, validators: HTTPValidators?, cursor: SourceCursor?, looks: inout ManifestLooks) throws
        -> (bytes: [UInt8], validators: HTTPValidators?)?
    {
        var bytes = given
        var manifestValidators = validators
        while true {
            if bytes == nil {
                let stored = HTTPValidators(etag: cursor?["etag"], lastModified: cursor?["lastModified"])
                let sent = looks.fresh || looks.race || (stored.etag == nil && stored.lastModified == nil) ? nil : stored
                guard let fetched = try fetcher.fetchManifest(validators: sent) else { return nil }
                bytes = fetched.bytes
                manifestValidators = fetched.validators
            }
            guard let (error, race, otherVersion) = try untrusted(bytes ?? []) else { return (bytes ?? [], manifestValidators) }
            // One fresh look; a few more (backing off, under a second in all) while the signature's
            // authentic trusted comment names another version: a busy publisher, not a forgery.
            guard race, looks.raceLooks < (otherVersion ? 5 : 1) else {
                var error = error
                if looks.race {
                    error.message = error.message.replacingOccurrences(of: "; nothing merged", with: ", also after a fresh look; nothing merged")
                }
                throw error
            }
            // The publisher renames the signature and the manifest microseconds apart: a moment later
            // both are of one version.
            looks.race = true
            bytes = nil
            usleep(20_000 << UInt32(looks.raceLooks))
            looks.raceLooks += 1
        }
    }

    /// The cursor to store once `manifest`'s files are merged: its node, generation and `through`, its
    /// validators, and the generations left behind (at most ``maxRetired``).
    static func cursor(after manifest: LogManifest, ours: SourceCursor?, validators: HTTPValidators?) -> SourceCursor {
        var next = SourceCursor()
        var retired = Self.retired(ours)
        if let left = ours?["generation"], left != manifest.generation {
            retired = Array((retired.filter { $0 != left } + [left]).suffix(Self.maxRetired))
        }
        if !retired.isEmpty { next["retired"] = retired.joined(separator: " ") }
        next["node"] = manifest.node
        next["generation"] = manifest.generation
        next["through"] = String(manifest.through)
        next["etag"] = validators?.etag
        next["lastModified"] = validators?.lastModified
        return next
    }
}

/// A log in a local directory.
package final class DirectoryLogFetcher: LogFileFetcher {
    let directory: String
    package let manifestName: String
    package let maxBytes: Int64
    package private(set) var bytesFetched: Int64 = 0

    /// - Parameters:
    ///   - directory: the log's directory.
    ///   - manifest: the manifest's path (default `directory/manifest.json`).
    ///   - maxBytes: the largest file read; local files are on disk already, so by default there is none.
    init(directory: String, manifest: String? = nil, maxBytes: Int64 = .max) {
        self.directory = directory
        self.manifestName = manifest ?? directory + "/" + LogManifest.fileName
        self.maxBytes = maxBytes
    }

    package func fetchManifest(validators: HTTPValidators?) throws -> (bytes: [UInt8], validators: HTTPValidators?)? {
        let fd = try CatalogFiles.openForReading(manifestName)
        defer { close(fd) }
        let bytes = try Self.readAll(fd, name: manifestName, limit: Int(min(maxBytes, LogManifest.maxManifestBytes)))
        bytesFetched += Int64(bytes.count)
        return (bytes, nil)
    }

    package func fetchSignature() throws -> [UInt8]? {
        let path = manifestName + ".minisig"
        let fd = systemOpen(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw CatalogError(.noInput, "cannot open the manifest's signature (\(errorText(errno))), \(path)")
        }
        defer { close(fd) }
        do {
            let bytes = try Self.readAll(fd, name: path, limit: maxSignatureBytes)
            bytesFetched += Int64(bytes.count)
            return bytes
        } catch let error as CatalogError where error.kind == .dataInvalid {
            throw CatalogError(.untrusted, "the manifest's signature is larger than \(maxSignatureBytes) bytes: not a minisign signature, \(path)")
        }
    }

    /// Checks the file's size now, and its SHA-256 while it is merged, in the same pass that reads it: a
    /// mismatch fails the source and its transaction rolls back, so nothing from the file is kept (the
    /// file is opened only then, so a log of any number of deltas holds one descriptor at a time).
    package func fetchFile(_ file: LogManifest.File) throws -> any ChangeFeed {
        let path = directory + "/" + file.name
        let fd = try Self.open(path, name: file.name)
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        guard Int64(info.st_size) == file.bytes else {
            throw CatalogError(
                .dataInvalid, "the log file is \(info.st_size) bytes, the manifest says \(file.bytes); nothing from it was merged, \(path)")
        }
        bytesFetched += file.bytes
        return CheckedFileFeed(path: path, identity: Self.identity(info), sha256: file.sha256)
    }

    static func identity(_ info: stat) -> String {
        let mtime = info.modificationTime
        return "\(info.st_dev):\(info.st_ino):\(info.st_size):\(mtime.tv_sec).\(mtime.tv_nsec)"
    }

    /// Opens a log file; a missing one is ``LogFileGone``.
    static func open(_ path: String, name: String) throws -> Int32 {
        let fd = systemOpen(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw LogFileGone(name: name) }
            throw CatalogError(
                errno == EMFILE || errno == ENFILE ? .tempFail : .noInput,
                "cannot open the log file (\(errorText(errno))), \(path)")
        }
        return fd
    }

    /// Reads `fd` to its end (at most `limit` bytes).
    package static func readAll(_ fd: Int32, name: String, limit: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CatalogError(.ioError, "cannot read \(name): \(errorText(errno))")
            }
            if n == 0 { return out }
            out += buffer[0..<n]
            if out.count > limit { throw CatalogError(.dataInvalid, "\(name) is larger than \(limit) bytes") }
        }
    }
}

/// A local log file whose size was checked: opened when merged, hashed as it is read, refused (and its
/// transaction rolled back) if it changed since, or if its SHA-256 is not the manifest's.
final class CheckedFileFeed: ChangeFeed {
    let path: String
    let identity: String
    let sha256: String

    init(path: String, identity: String, sha256: String) {
        self.path = path
        self.identity = identity
        self.sha256 = sha256
    }

    /// The hasher the reading thread feeds; read once that thread is done.
    final class Hashing: @unchecked Sendable {
        // Safe: the reading thread alone updates `hasher`; this thread reads it only after
        // `ReadingThread.finish()` returned (the thread has ended: the semaphore orders the accesses).
        var hasher = SHA256()
    }

    func merge(into merger: inout RowMerger) throws {
        let fd = try DirectoryLogFetcher.open(path, name: path)
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        guard DirectoryLogFetcher.identity(info) == identity else {
            throw CatalogError(.dataInvalid, "the log file changed after it was checked; nothing from it was merged, \(path)")
        }
        let hashing = Hashing()
        let decoder = SnapshotDecoder(source: path)
        let reading = ReadingThread { queue in decoder.run(fd: fd, queue: queue) { hashing.hasher.update($0) } }
        defer { reading.finish() }
        var failure: (any Error)?
        while true {
            let batch = reading.queue.take()
            if failure == nil {
                do { try merger.apply(batch) } catch { failure = error }
                merger.progress(merger.counts.seen, Int64(batch.bytesRead), Int64(info.st_size))
            }
            if batch.isLast {
                failure = failure ?? batch.failure ?? merger.failure()
                break
            }
        }
        reading.finish()
        // The hash decides first: a file that is not the manifest's says so, whatever else went wrong.
        let sha = SHA256.hex(hashing.hasher.finalize())
        guard sha == sha256 else {
            throw CatalogError(.dataInvalid, "the log file's SHA-256 is \(sha), the manifest says \(sha256); nothing from it was merged, \(path)")
        }
        if let failure { throw failure }
    }
}

/// Downloaded log files kept in one anonymous spool file (a delta after another), so a log of any
/// number of deltas holds one descriptor; each is read back through a range reader.
package final class LogSpool {
    let fd: Int32
    private(set) var size = 0

    package init(directory: String = NSTemporaryDirectory()) throws {
        fd = try Spool.makeAnonymousFile(in: directory)
    }

    deinit { close(fd) }

    /// Copies the whole of `source` (from offset 0) to the end of the spool.
    /// - Returns: where it is in the spool.
    /// - Throws: `CatalogError` 74 on a write error (disk full).
    package func append(_ source: Int32, count: Int64) throws -> Range<Int> {
        let start = size
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var offset: off_t = 0
        while offset < count {
            let n = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress, $0.count, offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CatalogError(.ioError, "cannot read a downloaded file: \(errorText(errno))")
            }
            if n == 0 { break }
            var written = 0
            while written < n {
                // `buffer` holds the n > 0 bytes just read, so it has a base address.
                // swift-format-ignore: NeverForceUnwrap
                let w = buffer.withUnsafeBytes { pwrite(fd, $0.baseAddress! + written, n - written, off_t(size + written)) }
                if w < 0 {
                    if errno == EINTR { continue }
                    throw CatalogError(
                        .ioError, "cannot write the download spool in \(NSTemporaryDirectory()): \(errorText(errno))",
                        hint: "free space there, or point TMPDIR elsewhere")
                }
                written += w
            }
            size += n
            offset += off_t(n)
        }
        return start..<size
    }
}

/// A snapshot held in part of a spool file.
package final class SpooledFeed: ChangeFeed {
    let spool: LogSpool
    let range: Range<Int>
    let name: String

    package init(spool: LogSpool, range: Range<Int>, name: String) {
        self.spool = spool
        self.range = range
        self.name = name
    }

    package func merge(into merger: inout RowMerger) throws {
        let decoder = SnapshotDecoder(source: name)
        let fd = spool.fd
        let range = self.range
        let reading = ReadingThread { queue in
            decoder.run(
                reader: JSONPullReader(fileDescriptor: fd, range: range, options: .init(allowTrailingCommas: false, maxDepth: 64)), queue: queue)
        }
        defer { reading.finish() }
        try reading.mergeAll(into: &merger)
    }
}
