import Foundation

#if os(Linux)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// What the core knows of a follower (`catalog sync --follow`, LandmarkCatalogSync's Follow/Follow.swift):
// the marker it leaves beside the sync lock, which `status`, `status --check` and the metrics read, and
// which a plain `sync` removes when it finds the lock free (docs/live-sync.md).

/// A follower as `status` shows it, read from the marker beside the sync lock (`<database>.sync-follow`).
public struct FollowerStatus: Sendable, Equatable {
    /// One followed source.
    public struct Source: Sendable, Equatable {
        public var source: String
        /// Polls since the follower started.
        public var polls: Int64
        /// Failed polls since the follower started.
        public var failures: Int64
        /// Write-to-visible lag of the rows merged from it after the follower's first cycle (a row's
        /// stamp to its local commit): counts per bucket of ``FollowerStatus/lagBoundsMilliseconds`` (the
        /// last is beyond them all), not cumulative; their number and sum in ms.
        public var lagBuckets: [Int64] = Array(repeating: 0, count: FollowerStatus.lagBoundsMilliseconds.count + 1)
        public var lagCount: Int64 = 0
        public var lagSumMilliseconds: Int64 = 0

        package init(source: String, polls: Int64, failures: Int64) {
            self.source = source
            self.polls = polls
            self.failures = failures
        }

        package mutating func observe(lagMilliseconds lag: Int64) {
            let bucket = FollowerStatus.lagBoundsMilliseconds.firstIndex { lag <= $0 } ?? FollowerStatus.lagBoundsMilliseconds.count
            lagBuckets[bucket] += 1
            lagCount += 1
            lagSumMilliseconds += max(0, lag)
        }
    }
    /// The upper bounds of the lag histogram's buckets, in ms.
    public static let lagBoundsMilliseconds: [Int64] = [50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000]
    /// The follower's process id and host.
    public var pid: Int32
    public var host: String
    /// When it started (UTC, RFC 3339).
    public var since: String
    /// Its poll interval, in seconds.
    public var intervalSeconds: Double
    /// Whether the process is running (checked by its pid when on this host; a marker of another host
    /// counts as running).
    public var alive: Bool
    public var sources: [Source]

    package init(pid: Int32, host: String, since: String, intervalSeconds: Double, alive: Bool, sources: [Source]) {
        self.pid = pid
        self.host = host
        self.since = since
        self.intervalSeconds = intervalSeconds
        self.alive = alive
        self.sources = sources
    }
}

/// The follower's marker: pid, host, start, interval and poll counts, replaced atomically.
package enum FollowMarker {
    package static func path(for databasePath: String) -> String {
        CatalogFiles.besideDatabase(databasePath, suffix: ".sync-follow")
    }

    package static func write(databasePath: String, status: FollowerStatus) {
        var w = JSONWriter()
        w.raw("{\"host\":")
        w.string(status.host)
        w.raw(",\"interval\":")
        w.raw(String(status.intervalSeconds))
        w.raw(",\"pid\":")
        w.int(Int64(status.pid))
        w.raw(",\"since\":")
        w.string(status.since)
        w.raw(",\"sources\":[")
        for (n, s) in status.sources.enumerated() {
            if n > 0 { w.byte(0x2C) }
            w.raw("{\"failures\":")
            w.int(s.failures)
            w.raw(",\"lag\":[")
            for (i, n) in s.lagBuckets.enumerated() {
                if i > 0 { w.byte(0x2C) }
                w.int(n)
            }
            w.raw("],\"lagCount\":")
            w.int(s.lagCount)
            w.raw(",\"lagSumMs\":")
            w.int(s.lagSumMilliseconds)
            w.raw(",\"polls\":")
            w.int(s.polls)
            w.raw(",\"source\":")
            w.string(s.source)
            w.raw("}")
        }
        w.raw("]}\n")
        let target = path(for: databasePath)
        let temporary = target + ".tmp"
        let fd = systemOpen(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        let ok = w.bytes.withUnsafeBytes { Spool.writeAll(fd, $0) } == 0
        close(fd)
        if ok { rename(temporary, target) } else { unlink(temporary) }
    }

    package static func remove(databasePath: String) { unlink(path(for: databasePath)) }

    package static func read(databasePath: String) -> FollowerStatus? {
        guard let data = FileManager.default.contents(atPath: path(for: databasePath)),
            let members = JSONValue.parseObject(String(decoding: data, as: UTF8.self))
        else { return nil }
        var fields: [String: JSONValue] = [:]
        for m in members { fields[m.key] = m.value }
        guard case .number(let p)? = fields["pid"], let pid = p.int64Value, case .string(let host)? = fields["host"],
            case .string(let since)? = fields["since"]
        else { return nil }
        var interval = 1.0
        if case .number(let i)? = fields["interval"] { interval = i.doubleValue }
        var sources: [FollowerStatus.Source] = []
        if case .array(let list)? = fields["sources"] {
            for item in list {
                guard case .object(let ms) = item else { continue }
                var f: [String: JSONValue] = [:]
                for m in ms { f[m.key] = m.value }
                guard case .string(let source)? = f["source"] else { continue }
                let polls: Int64 = {
                    if case .number(let n)? = f["polls"] { return n.int64Value ?? 0 }
                    return 0
                }()
                let failures: Int64 = {
                    if case .number(let n)? = f["failures"] { return n.int64Value ?? 0 }
                    return 0
                }()
                var entry = FollowerStatus.Source(source: source, polls: polls, failures: failures)
                if case .array(let buckets)? = f["lag"], buckets.count == entry.lagBuckets.count {
                    for (i, b) in buckets.enumerated() { if case .number(let n) = b { entry.lagBuckets[i] = n.int64Value ?? 0 } }
                }
                if case .number(let n)? = f["lagCount"] { entry.lagCount = n.int64Value ?? 0 }
                if case .number(let n)? = f["lagSumMs"] { entry.lagSumMilliseconds = n.int64Value ?? 0 }
                sources.append(entry)
            }
        }
        let alive = host != ProcessInfo.processInfo.hostName || kill(Int32(pid), 0) == 0 || errno == EPERM
        return FollowerStatus(pid: Int32(pid), host: host, since: since, intervalSeconds: interval, alive: alive, sources: sources)
    }
}

extension FollowerStatus {
    /// The follower running on `store`'s database, if its marker is there (`status`, `status --check`,
    /// the metrics).
    ///
    /// - Parameter store: the store whose database is followed into.
    /// - Returns: the follower as its marker beside the sync lock describes it; nil when there is no
    ///   marker (no follower runs, or the database is in memory).
    public static func running(on store: CatalogStore) -> FollowerStatus? {
        store.path == ":memory:" ? nil : FollowMarker.read(databasePath: store.path)
    }
}
