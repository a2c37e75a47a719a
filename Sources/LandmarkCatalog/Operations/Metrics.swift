import Foundation

/// The figures `catalog status --prometheus` exposes, read in one read transaction.
public struct CatalogMetrics: Sendable, Equatable {
    /// One source as the metrics show it.
    public struct Source: Sendable, Equatable {
        public var source: String
        /// `file`, `http`, `hub`, … (empty when unknown).
        public var kind: String
        /// The last good sync, in ms since the epoch (UTC); nil when it never had one.
        public var lastSuccessMilliseconds: Int64?
        /// The last attempt, in ms since the epoch (UTC).
        public var lastAttemptMilliseconds: Int64?
        /// The exit status of the last attempt (0 = good).
        public var lastStatus: Int?
        /// Bytes fetched from it, over the run ledger.
        public var bytesFetched: Int64
        /// The saved remote whose source this is, if one is (the `remote` label).
        public var remote: String? = nil
    }

    public var node: String
    public var schemaVersion: Int
    public var landmarks = 0, landmarkTombstones = 0, positions = 0, positionTombstones = 0
    public var quarantined = 0
    /// Ties kept for `catalog conflicts` (see ``ConflictRetention``).
    public var conflictsRetained = 0
    public var changeSequence: Int64 = 0
    /// The database file's size in bytes (page count × page size; the WAL not included).
    public var databaseBytes: Int64 = 0
    /// The last run that ended (not one that found the lock held): when it finished (ms since the epoch), its outcome, exit
    /// status and duration (ms).
    public var lastRun: (finishedMilliseconds: Int64, outcome: String, exitStatus: Int, durationMilliseconds: Int64)?
    /// When the last run that succeeded (`ok` or `not-modified`) finished, in ms since the epoch.
    public var lastSuccessMilliseconds: Int64?
    /// Runs recorded, per outcome, in outcome order.
    public var runs: [(outcome: String, count: Int)] = []
    /// Totals over the run ledger.
    public var landmarksApplied = 0, positionsApplied = 0, stale = 0, ties = 0, quarantinedTotal = 0
    public var sources: [Source] = []
    /// The follower (`sync --follow`) from its marker, if one runs or was left by one killed.
    public var follower: FollowerStatus? = nil
    /// Erasure records held, the collection horizon and the last collection (``CollectionState``).
    public var collection = CollectionState(erasureRecords: 0, horizonMilliseconds: 0, lastRunMilliseconds: nil)

    public static func == (a: CatalogMetrics, b: CatalogMetrics) -> Bool {
        PrometheusText.render(a) == PrometheusText.render(b)
    }
}

extension CatalogMonitor {
    /// Reads every figure of ``CatalogMetrics`` in one read transaction.
    public func metrics() throws -> CatalogMetrics {
        try store.read {
            var m = CatalogMetrics(node: try store.currentNode(), schemaVersion: try store.schemaVersion())
            (m.landmarks, m.landmarkTombstones) = try store.landmarkTable.counts()
            (m.positions, m.positionTombstones) = try store.positionTable.counts()
            m.quarantined = try store.quarantineTable.count()
            m.conflictsRetained = try store.conflictTable.count()
            m.changeSequence = try store.lastChangeSequence()
            m.databaseBytes = try store.databaseBytes()
            let lastRunID = try lastEndedRunID()
            m.lastRun = try store.runLedger.run(id: lastRunID ?? 0).map { r in
                (Timestamp.parse(r.finishedAt) ?? 0, r.outcome, r.exitStatus, r.durationMilliseconds)
            }
            // A source synced once (a typo, a one-off file) or a removed remote is not a series that alerts forever.
            let current = try sourcesInUse(lastEndedRun: lastRunID)
            let remotes = try RemoteBook(store).remoteNamesBySourceKey()
            m.lastSuccessMilliseconds = try store.runLedger.lastSucceeded().flatMap { Timestamp.parse($0.finishedAt) }
            m.runs = try store.runLedger.countsByOutcome()
            let totals = try store.runLedger.totals()
            m.landmarksApplied = totals.landmarksApplied
            m.positionsApplied = totals.positionsApplied
            m.stale = totals.stale
            m.ties = totals.ties
            m.quarantinedTotal = totals.quarantined
            let bytes = try store.runLedger.bytesBySource()
            for s in try store.sourceTable.all() where current.contains(s.source) {
                m.sources.append(
                    CatalogMetrics.Source(
                        source: s.source, kind: s.kind ?? "", lastSuccessMilliseconds: s.lastSuccess.flatMap(Timestamp.parse),
                        lastAttemptMilliseconds: s.lastAttempt.flatMap(Timestamp.parse), lastStatus: s.lastStatus,
                        bytesFetched: bytes[s.source] ?? 0, remote: remotes[s.source]))
            }
            m.follower = FollowerStatus.running(on: store)
            m.collection = try Collector(store).state()
            return m
        }
    }
}

extension CatalogMonitor {
    /// The last sync run that ended, or nil: one still running has no outcome of its own yet.
    ///
    /// What `status --check` and the metrics judge (see ``lastRunID(includingRunning:)``). Call inside a
    /// read.
    func lastEndedRunID() throws -> Int64? { try lastRunID(includingRunning: false) }

    /// "The last run" for `status`, `status --check` and the metrics alike (docs/operations.md §3), the one place that
    /// decides it: the newest run in the ledger, except runs that found another sync holding the lock
    /// (`busy`, exit 75: nothing was done, and the holder is recorded when it ends).
    ///
    /// `status` shows a run still going (`includingRunning`); the health check and the metrics look at the last that
    /// ended. Call inside a read.
    func lastRunID(includingRunning: Bool) throws -> Int64? {
        try store.runLedger.lastRunID(includingRunning: includingRunning)
    }

    /// The sources in use: those of the last sync run that ended (`lastEndedRun`, from
    /// ``lastEndedRunID()``), and the saved remotes' — by the key `status` and the ledger show (an
    /// absolute path, a URL without its password).
    ///
    /// Call inside a read.
    func sourcesInUse(lastEndedRun: Int64?) throws -> Set<String> {
        var current = Set(try store.runLedger.sourceNames(ofRun: lastEndedRun ?? 0))
        for remote in try store.remoteTable.all() {
            if let key = Remote.sourceKey(url: remote.url) { current.insert(key) }
        }
        return current
    }
}

/// Prometheus' text exposition format, version 0.0.4
/// (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format): for each metric
/// family `# HELP`, `# TYPE`, then its samples; label values escape `\`, `"` and newline, help text `\`
/// and newline.
///
/// Names are prefixed `catalog_`; times are seconds since the epoch (UTC), durations seconds, sizes
/// bytes. Metrics with nothing to report yet (no run) are left out rather than made up.
package enum PrometheusText {
    /// One family: name, type (`gauge` or `counter`), help, samples (labels, value).
    struct Family {
        var name: String
        var type: String
        var help: String
        var samples: [(labels: [(String, String)], value: String)]
        /// Per sample, what follows the name (a histogram's `_bucket`, `_sum`, `_count`); empty for none.
        var suffixes: [String] = []
    }

    /// One sample's labels and value.
    typealias Sample = (labels: [(String, String)], value: String)

    /// The exposition of `m`, ending in a newline.
    package static func render(_ m: CatalogMetrics) -> String {
        exposition(runFamilies(m) + rowFamilies(m) + sourceFamilies(m) + (m.follower.map(followerFamilies) ?? []))
    }

    /// One sample without labels.
    static func one(_ value: String) -> [Sample] { [([], value)] }

    /// This database, and its sync runs from the ledger.
    static func runFamilies(_ m: CatalogMetrics) -> [Family] {
        var families: [Family] = []
        families.add(
            "catalog_info", "gauge", "This database: node id and schema version (the value is always 1).",
            [([("node", m.node), ("schema_version", String(m.schemaVersion)), ("version", CatalogVersion.string)], "1")])
        if let run = m.lastRun {
            families.add(
                "catalog_last_run_timestamp_seconds", "gauge", "When the last sync run finished, in seconds since the epoch.",
                one(seconds(run.finishedMilliseconds)))
            families.add(
                "catalog_last_run_success", "gauge", "1 when the last sync run succeeded (ok or not-modified), else 0.",
                one([RunOutcome.ok, .notModified].contains { $0.rawValue == run.outcome } ? "1" : "0"))
            families.add(
                "catalog_last_run_exit_status", "gauge", "The exit status of the last sync run (0 success, 69 unavailable, 75 busy, ...).",
                one(String(run.exitStatus)))
            families.add(
                "catalog_last_run_duration_seconds", "gauge", "How long the last sync run took, in seconds.", one(seconds(run.durationMilliseconds)))
        }
        if let last = m.lastSuccessMilliseconds {
            families.add(
                "catalog_last_success_timestamp_seconds", "gauge", "When the last successful sync run finished, in seconds since the epoch.",
                one(seconds(last)))
        }
        families.add(
            "catalog_sync_runs_total", "counter", "Sync runs recorded in the run ledger, by outcome.",
            m.runs.map { ([("outcome", $0.outcome)], String($0.count)) })
        return families
    }

    /// Rows held, and rows merged by sync runs.
    static func rowFamilies(_ m: CatalogMetrics) -> [Family] {
        var families: [Family] = []
        families.add(
            "catalog_landmarks", "gauge", "Landmark rows, live and tombstones.",
            [([("state", "live")], String(m.landmarks)), ([("state", "tombstone")], String(m.landmarkTombstones))])
        families.add(
            "catalog_positions", "gauge", "Carousel position rows, live and tombstones.",
            [([("state", "live")], String(m.positions)), ([("state", "tombstone")], String(m.positionTombstones))])
        families.add(
            "catalog_quarantined_rows", "gauge", "Rows held in quarantine (stamped beyond the allowed clock drift); see catalog quarantine list.",
            one(String(m.quarantined)))
        families.add(
            "catalog_conflicts_retained", "gauge", "Ties kept for catalog conflicts (30 days, at most 10000).", one(String(m.conflictsRetained)))
        families.add("catalog_change_sequence", "gauge", "The local change sequence's high-water mark.", one(String(m.changeSequence)))
        families.add("catalog_database_bytes", "gauge", "The database file's size in bytes (without the WAL).", one(String(m.databaseBytes)))
        families.add(
            "catalog_erasure_records", "gauge", "Erasure records held (one per erased user, by hash).", one(String(m.collection.erasureRecords)))
        families.add(
            "catalog_gc_horizon_timestamp_seconds", "gauge", "The collection horizon, in seconds since the epoch (0: never collected).",
            one(seconds(m.collection.horizonMilliseconds)))
        if let last = m.collection.lastRunMilliseconds {
            families.add(
                "catalog_gc_last_run_timestamp_seconds", "gauge", "When this database was last collected (gc), in seconds since the epoch.",
                one(seconds(last)))
        }
        families.add(
            "catalog_rows_applied_total", "counter", "Rows merged by sync runs that changed the database, by kind.",
            [([("kind", "landmark")], String(m.landmarksApplied)), ([("kind", "position")], String(m.positionsApplied))])
        families.add("catalog_rows_stale_total", "counter", "Rows sync runs read that did not win (older or repeated).", one(String(m.stale)))
        families.add(
            "catalog_ties_total", "counter", "Ties (equal stamps, different content) settled by the fixed rule in sync runs.", one(String(m.ties)))
        families.add(
            "catalog_rows_quarantined_total", "counter",
            "Rows found beyond the allowed clock drift by sync runs (a held row delivered again counts again).", one(String(m.quarantinedTotal)))
        return families
    }

    /// Per source: its last good sync and attempt, and the bytes fetched.
    static func sourceFamilies(_ m: CatalogMetrics) -> [Family] {
        var families: [Family] = []
        // A saved remote's source also carries its name (`remote="peer"`); others have no such label.
        func labels(_ s: CatalogMetrics.Source) -> [(String, String)] {
            [("kind", s.kind)] + (s.remote.map { [("remote", $0)] } ?? []) + [("source", s.source)]
        }
        families.add(
            "catalog_source_last_success_timestamp_seconds", "gauge",
            "When the source last had a good sync, in seconds since the epoch (0 when it never had one).",
            m.sources.map { (labels($0), $0.lastSuccessMilliseconds.map(seconds) ?? "0") })
        families.add(
            "catalog_source_last_attempt_timestamp_seconds", "gauge", "When the source was last tried, in seconds since the epoch.",
            m.sources.compactMap { s in s.lastAttemptMilliseconds.map { (labels(s), seconds($0)) } })
        families.add(
            "catalog_source_last_status", "gauge", "The exit status of the source's last attempt (0 when good).",
            m.sources.compactMap { s in s.lastStatus.map { (labels(s), String($0)) } })
        families.add(
            "catalog_source_up", "gauge", "1 when the source's last attempt was good, else 0.",
            m.sources.map { (labels($0), $0.lastStatus == 0 ? "1" : "0") })
        families.add(
            "catalog_source_fetched_bytes_total", "counter", "Bytes fetched from the source by the sync runs in the ledger.",
            m.sources.map { (labels($0), String($0.bytesFetched)) })
        return families
    }

    /// The running follower: whether it is up, its polls, and the lag of what it merged.
    static func followerFamilies(_ f: FollowerStatus) -> [Family] {
        var families: [Family] = []
        families.add(
            "catalog_follower_up", "gauge",
            "1 while sync --follow runs on this database (its pid alive), 0 when its marker was left by one that stopped.",
            one(f.alive ? "1" : "0"))
        families.add(
            "catalog_follow_polls_total", "counter", "Polls of each source by the running follower since it started (written every 10 s).",
            f.sources.map { ([("source", $0.source)], String($0.polls)) })
        families.add(
            "catalog_follow_failed_polls_total", "counter", "Polls of each source by the running follower that failed.",
            f.sources.map { ([("source", $0.source)], String($0.failures)) })
        // A histogram (Prometheus text format): cumulative buckets, then sum and count, per source.
        var lag: [Sample] = []
        for s in f.sources {
            var cumulative: Int64 = 0
            for (i, n) in s.lagBuckets.enumerated() {
                cumulative += n
                let le = i < FollowerStatus.lagBoundsMilliseconds.count ? seconds(FollowerStatus.lagBoundsMilliseconds[i]) : "+Inf"
                lag.append(([("source", s.source), ("le", le)], String(cumulative)))
            }
        }
        let sums = f.sources.map { (labels: [("source", $0.source)], value: seconds($0.lagSumMilliseconds)) }
        let counts = f.sources.map { (labels: [("source", $0.source)], value: String($0.lagCount)) }
        families.append(
            Family(
                name: "catalog_follow_lag_seconds", type: "histogram",
                help: "Write-to-visible lag of rows the follower merged (a row's stamp to its local commit), per source, since it started.",
                samples: lag + sums + counts,
                suffixes: Array(repeating: "_bucket", count: lag.count) + Array(repeating: "_sum", count: sums.count)
                    + Array(repeating: "_count", count: counts.count)))
        return families
    }

    /// The text of `families`, skipping those without samples.
    static func exposition(_ families: [Family]) -> String {
        var out = ""
        for f in families where !f.samples.isEmpty {
            out += "# HELP \(f.name) \(escapeHelp(f.help))\n# TYPE \(f.name) \(f.type)\n"
            for (n, s) in f.samples.enumerated() {
                out += f.name + (n < f.suffixes.count ? f.suffixes[n] : "")
                if !s.labels.isEmpty {
                    out += "{" + s.labels.map { "\($0.0)=\"\(escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
                }
                out += " \(s.value)\n"
            }
        }
        return out
    }

    /// A label value escaped: `\` → `\\`, `"` → `\"`, newline → `\n`.
    package static func escapeLabel(_ value: String) -> String {
        var out = ""
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// Help text escaped: `\` → `\\`, newline → `\n`.
    package static func escapeHelp(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Milliseconds as exact decimal seconds: `1795996800.123`, `0.5`, `-1.25`.
    static func seconds(_ ms: Int64) -> String {
        let sign = ms < 0 ? "-" : ""
        let magnitude = ms.magnitude
        let fraction = magnitude % 1000
        guard fraction != 0 else { return sign + String(magnitude / 1000) }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 3 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(sign)\(magnitude / 1000).\(digits)"
    }
}

extension [PrometheusText.Family] {
    /// Appends a family without suffixes.
    fileprivate mutating func add(_ name: String, _ type: String, _ help: String, _ samples: [PrometheusText.Sample]) {
        append(PrometheusText.Family(name: name, type: type, help: help, samples: samples))
    }
}
