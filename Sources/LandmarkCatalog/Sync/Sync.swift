import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How `catalog sync` behaves (SPEC §8).
public struct SyncOptions: Sendable {
    /// Merge, report, then roll back: nothing is written (not even the run ledger).
    public var dryRun = false
    /// Rows stamped more than this many ms ahead of this machine's clock are quarantined. Default 300 s.
    public var maxDriftMilliseconds: Int64 = 300_000
    /// HTTP: seconds to wait for an answer, per attempt.
    public var timeoutSeconds: Double = 30
    /// HTTP: retries on 429 / 5xx after the first attempt.
    public var retries = 3
    /// HTTP: first backoff delay in seconds (doubling).
    public var backoffSeconds: Double = 0.5
    /// Largest snapshot accepted from HTTP, in bytes.
    public var maxBytes: Int64 = 1 << 30
    /// After merging, write the merged state as a snapshot here (atomically).
    public var publishPath: String?
    /// Test hook: sleep this many ms inside the merge transaction before committing.
    public var pauseBeforeCommitMilliseconds = 0

    public init() {}
}

/// What happened to one source in a sync run.
public struct SourceReport: Sendable, Equatable {
    /// `merged`: the snapshot was read and merged; `not-modified`: an HTTP 304, nothing to read.
    public enum Outcome: String, Sendable { case merged, notModified = "not-modified" }
    /// The source: an absolute path, a URL, or `<stdin>`.
    public var source: String
    /// What happened to it.
    public var outcome: Outcome
    /// Bytes read (0 for not modified).
    public var bytes: Int64
}

/// What a sync run did.
public struct SyncReport: Sendable, Equatable {
    /// Each source, in the order given.
    public var sources: [SourceReport] = []
    /// Rows seen, applied, stale, tied and quarantined, over all sources.
    public var counts = MergeCounts()
    /// True when everything was rolled back (`--dry-run`).
    public var dryRun = false
    /// The path the merged snapshot was published to, if any.
    public var published: String?
}

/// A remote saved with `catalog remote add`.
public struct Remote: Sendable, Equatable {
    /// The remote's name (1–64 of A–Z a–z 0–9 . _ -).
    public var name: String
    /// An `http(s)://` or `file://` URL, or an absolute path.
    public var url: String
}

extension CatalogStore {
    /// Pulls every source, merges them all in one transaction with last-writer-wins (SPEC §7–8), records
    /// the run in the ledger, and optionally publishes the merged state.
    ///
    /// - Parameters:
    ///   - sources: paths, `file://` URLs, `http(s)://` URLs, or `-` (read from `standardInput`); empty means
    ///     the saved remotes.
    ///   - options: dry run, drift, HTTP limits, publish path.
    ///   - standardInput: the descriptor `-` reads.
    ///   - diagnostics: warnings (quarantine, ties, retries) and errors with their location.
    /// - Returns: per-source outcomes and merge counts.
    /// - Throws: `CatalogError` — 75 when another sync holds the lock (at once) or the database is busy,
    ///   69 when a source is unavailable, 66 for a missing file, 65 for a malformed snapshot, 76 for an
    ///   unknown format or newer version, 64 when there is nothing to sync. On any error nothing is merged
    ///   from any source.
    public func sync(sources requested: [String], options: SyncOptions = SyncOptions(), standardInput: Int32 = 0,
                     diagnostics: @escaping (Diagnostic) -> Void = { _ in }) throws -> SyncReport {
        let started = wallClock.nowMilliseconds()
        let lock = path == ":memory:" ? nil : try SyncLock.acquire(databasePath: path, now: started)
        defer { withExtendedLifetime(lock) {} }

        // A SOURCE that is the name of a saved remote (and not an existing file) means that remote.
        let saved = try remotes()
        var sources = requested.map { source in
            if let remote = saved.first(where: { $0.name == source }), !FileManager.default.fileExists(atPath: source) {
                return remote.url
            }
            return source
        }
        if sources.isEmpty {
            sources = saved.map(\.url)
            guard !sources.isEmpty else {
                throw CatalogError(.usage, "nothing to sync: no SOURCE given and no remotes saved",
                                   hint: "catalog remote add NAME URL, or catalog sync FILE|URL|-")
            }
        }
        do {
            let report = try syncLocked(sources: sources, options: options, standardInput: standardInput, diagnostics: diagnostics)
            if !options.dryRun {
                try recordRun(started: started, sources: sources, outcome: report.sources.allSatisfy { $0.outcome == .notModified } ? "not-modified" : "ok",
                              status: 0, counts: report.counts, message: nil)
            }
            return report
        } catch let error as CatalogError {
            if !options.dryRun {
                try? recordRun(started: started, sources: sources, outcome: "failed", status: error.exitStatus, counts: MergeCounts(), message: error.message)
            }
            throw error
        }
    }

    private func syncLocked(sources: [String], options: SyncOptions, standardInput: Int32,
                            diagnostics: @escaping (Diagnostic) -> Void) throws -> SyncReport {
        // 1. Fetch every source before touching the database: any failure fails the run.
        struct Pending { var source: String; var fd: Int32?; var temporary: String?; var bytes: Int64; var etag: String?; var lastModified: String? }
        var pending: [Pending] = []
        defer {
            for p in pending {
                if let fd = p.fd, fd != standardInput { close(fd) }
                if let t = p.temporary { unlink(t) }
            }
        }
        let fetcher = HTTPFetcher(timeout: options.timeoutSeconds, retries: options.retries, maxBytes: options.maxBytes,
                                  backoff: options.backoffSeconds)
        guard sources.filter({ $0 == "-" }).count <= 1 else {
            throw CatalogError(.usage, "'-' (standard input) can be given only once")
        }
        for source in sources {
            if source == "-" {
                pending.append(Pending(source: "<stdin>", fd: standardInput, bytes: 0))
            } else if source.hasPrefix("http://") || source.hasPrefix("https://") {
                guard let url = URL(string: source), url.host != nil else {
                    throw CatalogError(.usage, "not a valid URL: \(source)")
                }
                let validators = try read {
                    let s = try connection.cachedStatement(sql: "SELECT etag, last_modified FROM sync_sources WHERE source = ?")
                    defer { s.reset() }
                    try s.bind(source, at: 1)
                    return try s.step() ? (s.text(0), s.text(1)) : (nil, nil)
                }
                switch try fetcher.fetch(url, etag: validators.0, lastModified: validators.1, log: { message in
                    diagnostics(Diagnostic(severity: .warning, message: message, file: source))
                }) {
                case .notModified:
                    pending.append(Pending(source: source, fd: nil, bytes: 0, etag: validators.0, lastModified: validators.1))
                case .fetched(let path, let bytes, let etag, let lastModified):
                    let fd = try Self.openForReading(path)
                    pending.append(Pending(source: source, fd: fd, temporary: path, bytes: bytes, etag: etag, lastModified: lastModified))
                }
            } else {
                var path = try Self.resolveSource(source)
                if !path.hasPrefix("/") { path = FileManager.default.currentDirectoryPath + "/" + path }  // one key per file in status
                let fd = try Self.openForReading(path)
                var info = stat()
                fstat(fd, &info)
                pending.append(Pending(source: path, fd: fd, bytes: Int64(info.st_size)))
            }
        }

        // 2. Merge them all in one transaction.
        var report = SyncReport()
        report.dryRun = options.dryRun
        let now = wallClock.nowMilliseconds()
        do {
            try write {
                var maxSeen: (wall: Int64, counter: Int64) = (0, 0)
                for p in pending {
                    guard let fd = p.fd else {
                        report.sources.append(SourceReport(source: p.source, outcome: .notModified, bytes: 0))
                        try noteSource(p.source, etag: p.etag, lastModified: p.lastModified, outcome: "not-modified", at: now)
                        continue
                    }
                    let reader = JSONPullReader(fileDescriptor: fd, options: .init(allowTrailingCommas: false, maxDepth: 64))
                    var merger = SnapshotMerger(store: self, source: p.source, quarantineAfter: now + options.maxDriftMilliseconds,
                                                diagnostics: diagnostics)
                    try merger.merge(reader)
                    report.counts = report.counts + merger.counts
                    if merger.maxSeen > maxSeen { maxSeen = merger.maxSeen }
                    report.sources.append(SourceReport(source: p.source, outcome: .merged, bytes: p.bytes))
                    if p.source != "<stdin>" {
                        try noteSource(p.source, etag: p.etag, lastModified: p.lastModified, outcome: "ok", at: now)
                    }
                }
                // Rows held back earlier that are no longer beyond the allowance leave the quarantine: the next
                // delivery applies them, and `status` counts only what is still held back.
                try connection.execute(sql: "DELETE FROM sync_quarantine WHERE updated_ms <= ?",
                                       [.integer(now + options.maxDriftMilliseconds)])
                // Later local writes must order after everything merged (SPEC §7).
                if maxSeen > (0, 0) {
                    try HybridLogicalClock(db: connection, wall: wallClock).receive(wallMilliseconds: maxSeen.wall, counter: maxSeen.counter)
                }
                if options.pauseBeforeCommitMilliseconds > 0 {
                    usleep(UInt32(options.pauseBeforeCommitMilliseconds) * 1000)
                }
                if options.dryRun { throw SyncDryRun() }
            }
        } catch is SyncDryRun {
            return report
        }
        if let publish = options.publishPath {
            do {
                try exportSnapshot(toFile: publish)
            } catch let error as CatalogError {
                throw CatalogError(error.kind, "the merge was committed, but publishing failed: \(error.message)", hint: error.hint)
            }
            report.published = publish
        }
        return report
    }

    /// The file path a path or `file://` source names (`file:///x` or `file://localhost/x`).
    /// - Throws: `CatalogError.usage` for a `file://` URL naming another host, or a malformed URL.
    static func resolveSource(_ source: String) throws -> String {
        if source.hasPrefix("http://") || source.hasPrefix("https://") {
            guard let url = URL(string: source), let host = url.host, !host.isEmpty else {
                throw CatalogError(.usage, "not a valid URL: \(source)")
            }
            return source
        }
        guard source.hasPrefix("file://") else { return source }
        guard let url = URL(string: source), url.isFileURL, !url.path.isEmpty else {
            throw CatalogError(.usage, "not a valid file URL: \(source)")
        }
        if let host = url.host, !host.isEmpty, host != "localhost" {
            throw CatalogError(.usage, "file URL names another host '\(host)': \(source)", hint: "use file:///path for a local file")
        }
        return url.path
    }

    private func noteSource(_ source: String, etag: String?, lastModified: String?, outcome: String, at now: Int64) throws {
        try connection.execute(sql: """
            INSERT INTO sync_sources (source, etag, last_modified, last_success_at, last_outcome) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (source) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified,
                last_success_at = excluded.last_success_at, last_outcome = excluded.last_outcome
            """, [.text(source), etag.map(SQLValue.text) ?? .null, lastModified.map(SQLValue.text) ?? .null,
                  .text(Timestamp.format(milliseconds: now)), .text(outcome)])
    }

    private func recordRun(started: Int64, sources: [String], outcome: String, status: Int32, counts: MergeCounts, message: String?) throws {
        var w = JSONWriter()
        w.byte(0x5B)
        for (i, s) in sources.enumerated() {
            if i > 0 { w.byte(0x2C) }
            w.string(s)
        }
        w.byte(0x5D)
        try write {
            try connection.execute(sql: """
                INSERT INTO sync_runs (started_at, finished_at, sources, outcome, exit_status, landmarks_applied,
                                       positions_applied, stale, ties, quarantined, message)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [.text(Timestamp.format(milliseconds: started)), .text(Timestamp.format(milliseconds: wallClock.nowMilliseconds())),
                      .text(String(decoding: w.bytes, as: UTF8.self)), .text(outcome), .integer(Int64(status)),
                      .integer(Int64(counts.landmarksApplied)), .integer(Int64(counts.positionsApplied)), .integer(Int64(counts.stale)),
                      .integer(Int64(counts.ties)), .integer(Int64(counts.quarantined)), message.map(SQLValue.text) ?? .null])
        }
    }

    // MARK: Remotes

    /// The saved remotes, by name.
    public func remotes() throws -> [Remote] {
        try read {
            let s = try connection.cachedStatement(sql: "SELECT name, url FROM sync_remotes ORDER BY name")
            defer { s.reset() }
            var result: [Remote] = []
            while try s.step() { result.append(Remote(name: s.text(0) ?? "", url: s.text(1) ?? "")) }
            return result
        }
    }

    /// Saves a remote.
    /// - Throws: `CatalogError.usage` for a bad name or URL, or a name already taken.
    public func addRemote(name: String, url: String) throws {
        guard Self.isValidNodeID(name) else {
            throw CatalogError(.usage, "invalid remote name '\(name)': use 1–64 characters of A–Z a–z 0–9 . _ -")
        }
        let ok = url.hasPrefix("http://") || url.hasPrefix("https://") || url.hasPrefix("file://") || url.hasPrefix("/")
        guard ok, url != "/" else {
            throw CatalogError(.usage, "invalid remote URL '\(url)': use http://, https://, file:// or an absolute path")
        }
        _ = try Self.resolveSource(url)  // refuses file://host/…, a URL without a host, …
        try write {
            if try connection.scalarInt(sql: "SELECT count(*) FROM sync_remotes WHERE name = ?", [.text(name)]) != 0 {
                throw CatalogError(.usage, "a remote named '\(name)' already exists", hint: "catalog remote remove \(name) first")
            }
            try connection.execute(sql: "INSERT INTO sync_remotes (name, url, added_at) VALUES (?, ?, ?)",
                                   [.text(name), .text(url), .text(Timestamp.format(milliseconds: wallClock.nowMilliseconds()))])
        }
    }

    /// Removes a saved remote.
    /// - Throws: `CatalogError.usage` when there is no such remote.
    public func removeRemote(name: String) throws {
        try write {
            try connection.execute(sql: "DELETE FROM sync_remotes WHERE name = ?", [.text(name)])
            if connection.changes == 0 {
                throw CatalogError(.usage, "no remote named '\(name)'")
            }
        }
    }

    // MARK: Status

    /// What `catalog status` shows.
    public struct Status: Sendable {
        /// This database's node id.
        public var node: String
        /// The highest applied migration.
        public var schemaVersion: Int
        /// Live landmarks, and tombstones.
        public var landmarks: Int
        public var landmarkTombstones: Int
        /// Live positions, and tombstones.
        public var positions: Int
        public var positionTombstones: Int
        /// Rows kept in quarantine (stamped beyond the drift allowance), over all runs.
        public var quarantined: Int
        /// Per source: the last good sync time (UTC) and outcome.
        public var sources: [(source: String, lastSuccess: String?, outcome: String?)]
        /// The last run: finished time, outcome, exit status, message.
        public var lastRun: (finished: String, outcome: String, status: Int, message: String?)?
    }

    /// Counts, node id, schema version, quarantine and the last sync per source.
    public func status() throws -> Status {
        try read {
            func count(_ sql: String) throws -> Int { Int(try connection.scalarInt(sql: sql) ?? 0) }
            var sources: [(String, String?, String?)] = []
            let s = try connection.cachedStatement(sql: "SELECT source, last_success_at, last_outcome FROM sync_sources ORDER BY source")
            while try s.step() { sources.append((s.text(0) ?? "", s.text(1), s.text(2))) }
            s.reset()
            var lastRun: (String, String, Int, String?)?
            let r = try connection.cachedStatement(sql: "SELECT finished_at, outcome, exit_status, message FROM sync_runs ORDER BY id DESC LIMIT 1")
            if try r.step() { lastRun = (r.text(0) ?? "", r.text(1) ?? "", Int(r.int(2)), r.text(3)) }
            r.reset()
            return Status(
                node: try connection.scalarText(sql: "SELECT value FROM catalog_meta WHERE key = 'node'") ?? "",
                schemaVersion: try count("SELECT max(version) FROM schema_migrations"),
                landmarks: try count("SELECT count(*) FROM landmarks WHERE deleted = 0"),
                landmarkTombstones: try count("SELECT count(*) FROM landmarks WHERE deleted = 1"),
                positions: try count("SELECT count(*) FROM positions WHERE deleted = 0"),
                positionTombstones: try count("SELECT count(*) FROM positions WHERE deleted = 1"),
                quarantined: try count("SELECT count(*) FROM sync_quarantine"),
                sources: sources, lastRun: lastRun)
        }
    }
}

private struct SyncDryRun: Error {}
