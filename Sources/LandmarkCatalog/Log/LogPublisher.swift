import Foundation

#if os(Linux)
    import Glibc
#endif

/// How `catalog publish` behaves.
public struct PublishOptions: Sendable {
    /// Files the manifest stopped naming are removed this many seconds later (default 3600), so a peer
    /// that read the previous manifest can still fetch them.
    public var graceSeconds: Double = 3600
    /// When the manifest would name more deltas than this, they are merged into one (default 32), so
    /// the manifest a peer fetches on every run stays small.
    public var maxDeltas = 32
    /// `--sign FILE`: sign each manifest with this key (`manifest.json.minisig`, docs/trust.md §2).
    package var signingKey: (any LogSigningKey)?
    /// `--rotate-key`: a manifest signed by another key is taken over, a new generation signed by the
    /// signing key (docs/trust.md §5).
    ///
    /// Without it a signing publish that finds the directory's manifest signed by another key refuses
    /// (73), as two signers on one directory (a leftover `publish --sign OLD` beside a follower signing
    /// with the new key) would each start a new generation over the other's.
    public var rotateKey = false
    /// The key this publisher signed with before (a follower's, until SIGHUP read a new one): a manifest
    /// it signed is taken over as with ``rotateKey``.
    package var previousKey: MinisignPublicKey?

    public init() {}
}

/// What a publish did.
public struct PublishReport: Sendable {
    /// The log directory (its real path).
    public var directory: String
    /// False when nothing changed since the last publish: nothing was written, the manifest kept its
    /// bytes and modification time.
    public var changed: Bool
    /// True when a new generation (a fresh base) was started.
    public var newGeneration: Bool
    /// The manifest now in the directory.
    public var manifest: LogManifest
    /// Files written (the manifest last), and their bytes in all.
    public var written: [String] = []
    public var bytesWritten: Int64 = 0
    /// Files removed: retired longer than the grace period, or never named by any manifest.
    public var removed: [String] = []
    /// Files the previous manifest named that were gone or of another size (removed by hand, a cleanup
    /// job): the log could no longer be read, so a new generation was started (docs/log-format.md §3).
    public var missing: [String] = []
    /// The key id (as minisign prints it) the manifest is signed by, when publishing signs.
    public var signedBy: String?
}

/// Publishes a catalog as a snapshot log in a directory (docs/log-format.md): a new file of the changes
/// since the last publish, and the manifest that lists them, signed when asked.
public struct LogPublisher {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension LogPublisher {
    /// Publishes this database as a snapshot log in `directory` (docs/log-format.md §3), for any static web server.
    ///
    /// Work and bytes follow the changes since the previous publish: the rows whose change sequence
    /// number is past the manifest's `through` become one new immutable delta (a range read of the `seq`
    /// indexes), then the manifest is replaced atomically, last. Nothing changed: nothing is written.
    /// A new generation, with a fresh base, starts when the deltas outgrow the base, when the directory
    /// holds no manifest of this database's, or when the database is behind its own manifest (restored
    /// from a backup). Deltas past ``PublishOptions/maxDeltas`` are merged into one.
    ///
    /// Files are named `base-<generation>-<through>-<sha256 prefix>.json` and
    /// `delta-<generation>-<from>-<through>-<sha256 prefix>.json`, never rewritten; the directory holds a
    /// lock file `.catalog-publish.lock` (two publishers never interleave: the second exits 75).
    ///
    /// - Parameters:
    ///   - directory: the log's directory (created as needed).
    ///   - options: the grace period and when a new generation starts (``PublishOptions``).
    ///   - progress: called while each log file is written with the rows and bytes written to it so far
    ///     (phase `.writing`, subject the directory).
    /// - Returns: what was written, and what the manifest now names.
    /// - Throws: `CatalogError` 73 when the directory or a file cannot be created, 74 on a write error
    ///   (disk full), 75 when another publish holds the directory. Files written before a failure are
    ///   never named by a manifest and are removed later like any unreferenced file.
    public func publishLog(
        to directory: String, options: PublishOptions = PublishOptions(),
        progress: (CatalogProgress) -> Void = { _ in }
    ) throws -> PublishReport {
        let dir = try openLogDirectory(directory)
        let lock = try DirectoryLock(path: dir + "/.catalog-publish.lock")
        defer { withExtendedLifetime(lock) {} }
        let log = try readLogState(dir, options: options)
        var report = PublishReport(
            directory: dir, changed: false, newGeneration: false,
            manifest: log.continuing ?? log.existing
                ?? LogManifest(
                    node: log.node, generation: "", through: 0,
                    base: .init(name: "", bytes: 0, sha256: "", from: 0, through: 0), deltas: []))
        report.missing = log.missing
        if let continuing = log.continuing, continuing.through == log.current {
            // Unchanged: the manifest and its signature (by this key, as readLogState checked) keep their bytes.
            report.signedBy = options.signingKey?.publicKey.id
            report.removed = try removeUnreferenced(in: dir, manifest: continuing, now: log.now, grace: options.graceSeconds)
            return report
        }
        let (manifest, retired) = try extendLog(log, options: options, report: &report, progress: progress)
        try writeManifest(manifest, at: log.manifestPath, options: options, report: &report)
        try store.write {
            try store.publicationTable.record(
                directory: dir, Publication(generation: manifest.generation, through: manifest.through), retired: retired, at: log.now)
        }
        report.changed = true
        report.manifest = manifest
        report.removed = try removeUnreferenced(in: dir, manifest: manifest, now: log.now, grace: options.graceSeconds)
        return report
    }

    /// The usage error (64) for a publish path that is a URL, not a local directory; nil for a path.
    /// - Parameters:
    ///   - directory: the publish path.
    ///   - hint: what to do instead (by default: publish into a directory a web server serves).
    /// - Returns: the error, or nil when `directory` has no URL scheme.
    package static func schemeRefusal(_ directory: String, hint: String? = nil) -> CatalogError? {
        guard let scheme = urlScheme(of: directory) else { return nil }
        return CatalogError(
            .usage, "cannot publish to \(scheme):// (\(redactedURL(directory))): publish writes a local directory",
            hint: hint ?? "publish into a directory that a web server (nginx, a CDN, object storage sync) serves, and give peers its URL")
    }

    /// The log directory, created as needed, as its real path; refuses a URL and a directory this user
    /// cannot write.
    /// - Throws: `CatalogError` 64 for an empty path or a URL, 73 when it cannot be created, resolved or written.
    private func openLogDirectory(_ directory: String) throws -> String {
        guard !directory.isEmpty else { throw CatalogError(.usage, "the publish directory is empty") }
        if let refusal = Self.schemeRefusal(directory) { throw refusal }
        if let failure = makeDirectories(directory) {
            // The path that failed is named once: it is the directory itself, or one above it.
            let place = failure.path == directory || failure.path == "./" + directory ? directory : "\(failure.path) (for \(directory))"
            throw CatalogError(
                .cantCreate, "cannot create the log directory: \(failure.reason), \(place)",
                hint: failure.code == ENOTDIR && failure.path.hasSuffix(directory)
                    ? "a snapshot log is a directory; to write one snapshot file, use 'catalog export --output FILE'"
                    : failure.code == EACCES || failure.code == EPERM || failure.code == EROFS
                        ? "publish where this user may write, or create the directory for it" : nil)
        }
        guard let resolved = realpath(directory, nil) else {
            throw CatalogError(.cantCreate, "cannot resolve the log directory (\(errorText(errno))), \(directory)")
        }
        let dir = String(cString: resolved)
        free(resolved)
        guard access(dir, W_OK) == 0 else {
            throw CatalogError(
                .cantCreate, "cannot write the log directory (\(errorText(errno))), \(dir)",
                hint: "publish where this user may write, or give it write access to the directory")
        }
        return dir
    }

    /// What a publish starts from: the directory's manifest, this database's record of its last publish,
    /// and the manifest it continues, if any.
    private struct LogState {
        let dir: String
        let now: Int64
        let manifestPath: String
        let node: String
        /// The directory's manifest, if it is one.
        let existing: LogManifest?
        /// This database's change sequence now.
        let current: Int64
        /// The manifest this publish continues: nil for a new generation.
        let continuing: LogManifest?
        /// Files `existing` names that are gone or of another size.
        let missing: [String]
        /// The manifest this publish would have continued had no erasure come since: the new generation
        /// gets a bridge from it (docs/log-format.md §4).
        var erasedFrom: LogManifest? = nil
    }

    /// Reads the directory's manifest and this database's record of it; refuses another node's log and a
    /// manifest another key signed (``checkOneSigner(_:key:options:directory:)``).
    private func readLogState(_ dir: String, options: PublishOptions) throws -> LogState {
        let now = store.wallClock.nowMilliseconds()
        let manifestPath = dir + "/" + LogManifest.fileName
        let existingBytes = FileManager.default.contents(atPath: manifestPath).map(Array.init)
        let existing = existingBytes.flatMap { try? LogManifest.parse($0, source: manifestPath) }
        let node = try store.nodeID()
        let record = try store.read { try store.publicationTable.publication(directory: dir) }
        let current = try store.changeSequence()
        // Another node's log: replacing its manifest would silently cut its peers off.
        if let other = existing, other.node != node {
            throw CatalogError(
                .cantCreate, "\(dir) holds the snapshot log of node \(other.node); this database is node \(node)",
                hint: "publish into a directory of this node's own, or remove \(manifestPath) to take the directory over")
        }
        // The manifest continues only if it is this database's, at the point this database recorded,
        // and not ahead of it; anything else (another publisher, a restored database, a crash between
        // the manifest and the record) starts a new generation, which is always safe.
        // Signing, the directory is not trusted either (docs/trust.md §2): the manifest continues only when it
        // is the one this key signed, so a manifest changed by whoever else can write here is never signed
        // over; a first signed publish or a new key starts a new generation.
        let existingSignature = FileManager.default.contents(atPath: manifestPath + ".minisig")
            .flatMap { try? MinisignSignature(text: String(decoding: $0, as: UTF8.self), source: manifestPath) }
        if let key = options.signingKey, existing != nil, let signature = existingSignature {
            try Self.checkOneSigner(signature, key: key.publicKey, options: options, directory: dir)
        }
        let signedByUs =
            options.signingKey.map { key in
                existingBytes.map { bytes in existingSignature?.verifies(bytes, with: key.publicKey) == true } ?? false
            } ?? true
        var continuing = existing.flatMap { m in
            m.node == node && record?.generation == m.generation && record?.through == m.through && m.through <= current && signedByUs ? m : nil
        }
        // A manifest naming a file that is gone (or of another size) cannot be read by anyone: every
        // reader would fail with 69 until the deltas outgrew the base. A new generation repairs it.
        var missing: [String] = []
        if let m = continuing {
            missing = m.files.filter { file in
                var info = stat()
                return stat(dir + "/" + file.name, &info) != 0 || Int64(info.st_size) != file.bytes
            }.map(\.name)
            if !missing.isEmpty { continuing = nil }
        }
        // An erasure since the last publish starts a new generation (docs/erasure.md §3): the fresh base holds
        // no row of the erased user, and the files that held them are removed after the grace period.
        // It alone: a reader at this manifest can cross to the new generation over a bridge (§4).
        var erasedFrom: LogManifest?
        if let m = continuing, try store.read({ try store.erasureTable.maxSeq() }) > m.through {
            continuing = nil
            erasedFrom = m
        }
        return LogState(
            dir: dir, now: now, manifestPath: manifestPath, node: node, existing: existing, current: current, continuing: continuing,
            missing: missing, erasedFrom: erasedFrom)
    }

    /// The manifest after this publish, and the files it no longer names: a new delta on the manifest
    /// continued (its deltas merged into one past ``PublishOptions/maxDeltas``), or a new generation when
    /// there is none or the deltas outgrew the base.
    private func extendLog(
        _ log: LogState, options: PublishOptions, report: inout PublishReport, progress: (CatalogProgress) -> Void
    ) throws -> (LogManifest, retired: [String]) {
        let (dir, node, now, existing) = (log.dir, log.node, log.now, log.existing)
        var retired: [String] = []
        var manifest: LogManifest
        if let m = log.continuing {
            manifest = m
            var delta = try writeLogFile(in: dir, generation: m.generation, after: m.through, report: &report, progress: progress)
            manifest.deltas.append(delta)
            if manifest.deltas.count > options.maxDeltas {
                retired += manifest.deltas.map(\.name)
                delta = try writeLogFile(in: dir, generation: m.generation, after: m.base.through, report: &report, progress: progress)
                manifest.deltas = [delta]
            }
            manifest.through = delta.through
            if manifest.deltas.reduce(0, { $0 + $1.bytes }) > manifest.base.bytes {
                retired += manifest.deltas.map(\.name)
                manifest = try newGeneration(in: dir, node: node, now: now, after: existing?.generation, report: &report, progress: progress)
            }
        } else {
            manifest = try newGeneration(in: dir, node: node, now: now, after: existing?.generation, report: &report, progress: progress)
            if let old = log.erasedFrom {
                manifest.bridge = try writeBridge(in: dir, from: old, to: manifest, report: &report, progress: progress)
            }
        }
        if let old = existing, old.generation != manifest.generation {
            retired += old.files.map(\.name)
        }
        let named = Set(manifest.files.map(\.name))
        retired = Array(Set(retired).subtracting(named)).sorted()
        return (manifest, retired)
    }

    /// Writes the manifest atomically, and its signature first (or removes a signature that would no
    /// longer match).
    private func writeManifest(_ manifest: LogManifest, at manifestPath: String, options: PublishOptions, report: inout PublishReport) throws {
        // The signature goes first (docs/trust.md §2): a reader that meets the new signature with the old
        // manifest, or the reverse, takes one fresh look. Publishing unsigned removes a signature that
        // would no longer match, so readers are told "not signed" rather than "bad signature".
        // Both are written and synced first, then renamed one right after the other, so the window in which
        // a reader meets the new signature with the old manifest is a few microseconds.
        let signaturePath = manifestPath + ".minisig"
        let file = try AtomicFileWriter(path: manifestPath)
        try file.write(manifest.bytes)
        try file.flush()
        if let key = options.signingKey {
            let signature = key.sign(
                manifest.bytes,
                trustedComment: "landmark-catalog-log node:\(manifest.node) generation:\(manifest.generation) through:\(manifest.through)")
            let signatureFile = try AtomicFileWriter(path: signaturePath)
            try signatureFile.write(Array(signature.fileText.utf8))
            try signatureFile.flush()
            try signatureFile.commit(syncDirectory: false)
            report.written.append(manifestSignatureFileName)
            report.signedBy = key.publicKey.id
        } else if unlink(signaturePath) != 0 && errno != ENOENT {
            throw CatalogError(.cantCreate, "cannot remove the old signature (\(errorText(errno))), \(signaturePath)")
        }
        try file.commit()
        report.written.append(LogManifest.fileName)
        report.bytesWritten += Int64(manifest.bytes.count)
    }

    /// Refuses to sign over a manifest that another key signed (docs/trust.md §2), unless the key is being
    /// rotated on purpose (``PublishOptions/rotateKey``, or the follower's own ``PublishOptions/previousKey``).
    ///
    /// - Parameters:
    ///   - signature: the signature beside the directory's manifest.
    ///   - key: the key this publish signs with.
    ///   - options: whether a rotation is asked for.
    ///   - directory: the log directory, for the message.
    /// - Throws: `CatalogError` 73 when another key signed it: two signers on one directory.
    static func checkOneSigner(_ signature: MinisignSignature, key: MinisignPublicKey, options: PublishOptions, directory: String) throws {
        guard signature.keyID != key.keyID, !options.rotateKey, signature.keyID != options.previousKey?.keyID else { return }
        throw CatalogError(
            .cantCreate,
            "the snapshot log is signed by key \(signature.keyIDText), and this publish signs with key \(key.id): another publisher signs this directory with another key (a leftover 'publish --sign' with an old key?); nothing written, \(directory)",
            hint:
                "stop the other signer; to switch the log to key \(key.id) on purpose, publish once with --rotate-key (docs/trust.md §5)")
    }

    private func newGeneration(
        in dir: String, node: String, now: Int64, after previous: String?, report: inout PublishReport,
        progress: (CatalogProgress) -> Void
    ) throws -> LogManifest {
        var generation = Self.makeGeneration(now: now)
        // A directory's generations sort in the order they were started, also when this clock went back
        // (or another publisher's ran ahead): a reader takes an older one for a stale copy (§8).
        if let previous, LogManifest.isPublisherGeneration(previous), generation <= previous {
            let next = min(0xFF_FFFF, (UInt32(previous.suffix(6), radix: 16) ?? 0) + 1)
            generation = String(previous.prefix(18)) + String(format: "%06x", next)
        }
        let base = try writeLogFile(in: dir, generation: generation, after: nil, report: &report, progress: progress)
        report.newGeneration = true
        return LogManifest(node: node, generation: generation, through: base.through, base: base, deltas: [])
    }

    /// The bridge from `old` to the new generation `new` (docs/log-format.md §4): one delta of the rows and
    /// erasure records changed after `old`'s base, up to `new`'s base.
    ///
    /// Merged over any state of `old`'s chain it gives the state of `new`'s base: the rows changed since are
    /// in it, and the erasure records in it remove the erased users' rows the old chain held (docs/erasure.md §1).
    /// - Returns: nil, the file removed, when it would not save a reader anything (as large as the base), or
    ///   when a write came between the base and the bridge (it would not end at the base).
    private func writeBridge(
        in dir: String, from old: LogManifest, to new: LogManifest, report: inout PublishReport, progress: (CatalogProgress) -> Void
    ) throws -> LogManifest.Bridge? {
        let file = try writeLogFile(in: dir, generation: new.generation, after: old.base.through, report: &report, progress: progress)
        guard file.through == new.base.through, file.bytes < new.base.bytes else {
            unlink(dir + "/" + file.name)
            report.written.removeAll { $0 == file.name }
            report.bytesWritten -= file.bytes
            return nil
        }
        return LogManifest.Bridge(generation: old.generation, file: file)
    }

    /// `g<UTC time>-<6 random hex digits>`: unique, and sorting by time.
    static func makeGeneration(now: Int64) -> String {
        let t = Timestamp.format(milliseconds: now).filter { $0.isNumber || $0 == "T" }.prefix(15)
        return "g\(t)Z-\(String(format: "%06x", UInt32.random(in: 0...0xFF_FFFF)))"
    }

    /// Writes one immutable log file: the base (every row, `after` nil) or the delta of the rows changed
    /// after `after`, read in one transaction with the change sequence number it covers up to.
    private func writeLogFile(
        in dir: String, generation: String, after: Int64?, report: inout PublishReport,
        progress: (CatalogProgress) -> Void
    ) throws -> LogManifest.File {
        let file = try AtomicFileWriter(path: dir + "/.pending-\(generation).json")
        var hasher = SHA256()
        let through = try store.read { () throws -> Int64 in
            let through = try store.lastChangeSequence()
            _ = try SnapshotExporter(store).exportSnapshotInTransaction(
                changes: after.map { ($0 + 1)...max($0 + 1, through) },
                progress: { rows, bytes in
                    progress(CatalogProgress(records: rows, bytes: bytes, totalBytes: nil, phase: .writing, subject: dir))
                }
            ) { bytes in
                hasher.update(bytes)
                try file.write(bytes)
            }
            return through
        }
        let sha = SHA256.hex(hasher.finalize())
        let name =
            after.map { "delta-\(generation)-\($0)-\(through)-\(sha.prefix(12)).json" } ?? "base-\(generation)-\(through)-\(sha.prefix(12)).json"
        try file.commit(as: dir + "/" + name)
        report.written.append(name)
        report.bytesWritten += file.bytesWritten
        return LogManifest.File(name: name, bytes: file.bytesWritten, sha256: sha, from: after ?? 0, through: through)
    }

    /// Removes the log files in `dir` that `manifest` does not name: retired ones once the grace period
    /// has passed since they were retired, and ones never recorded as retired (left by a crash, or by a
    /// publisher that is gone) once they are older than the grace period.
    private func removeUnreferenced(in dir: String, manifest: LogManifest, now: Int64, grace: Double) throws -> [String] {
        let named = Set(manifest.files.map(\.name))
        let retired = try store.read { try store.publicationTable.retiredFiles(directory: dir) }
        var removed: [String] = []
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        for name in names where (name.hasPrefix("base-") || name.hasPrefix("delta-")) && name.hasSuffix(".json") && !named.contains(name) {
            let path = dir + "/" + name
            let since: Int64
            if let at = retired[name] {
                since = at
            } else {
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                since = Int64(info.modificationTime.tv_sec) * 1000
            }
            if Double(now - since) / 1000 >= grace, unlink(path) == 0 || errno == ENOENT {
                removed.append(name)
            }
        }
        let gone = Set(removed).union(Set(retired.keys).subtracting(names))
        if !gone.isEmpty {
            try store.write { try store.publicationTable.forgetRetired(directory: dir, names: gone) }
        }
        return removed.sorted()
    }
}

/// An exclusive `flock(2)` on a file, released when the value goes away (or the process dies).
final class DirectoryLock {
    private let fd: Int32

    /// - Throws: `CatalogError` 75 at once when another process holds it, 73 when it cannot be opened.
    init(path: String) throws {
        let fd = systemOpen(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CatalogError(.cantCreate, "cannot open the lock (\(errorText(errno))), \(path)") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw CatalogError(.tempFail, "another publish is writing this log directory, \(path)", hint: "retry later")
        }
        self.fd = fd
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
