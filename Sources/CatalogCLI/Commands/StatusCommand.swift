import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

extension CatalogCLI {
    enum StatusOptions {
        static let check = Flag(
            "--check",
            "Exit 0 when the sync is healthy, 69 when not (no run yet; without --max-age, the last run failed; with it, a source's last good sync is older than DURATION), with one line saying why on stderr."
        )
        static let maxAge = Option<Double>(
            "--max-age", "DURATION",
            "With --check: the oldest a last good sync may be, per source of the last run (90s, 15m, 2h, 1d or seconds).", parse: Values.duration())
        static let prometheus = Flag("--prometheus", "Print the figures in Prometheus' text exposition format (names prefixed catalog_).")
        static let output = Options.output.with(
            help: "With --prometheus: write to FILE atomically (for node_exporter's textfile collector: name it *.prom).")
        static let quiet = Options.quiet.with(help: "With --check: print nothing when healthy.")
    }

    /// The exit status of `status --check` when the sync is not healthy: `EX_UNAVAILABLE` (sysexits).
    static let unhealthyStatus: Int32 = 69

    static var statusCommand: CommandSpec {
        CommandSpec(
            name: "status",
            abstract:
                "Show node id, schema version, counts, quarantine and the last good sync per source; check health (--check) or print metrics (--prometheus).",
            discussion: """
                --check is for alerting on staleness rather than on every transient failure: exit 0 when
                healthy (one line on stdout, none with --quiet), 69 when not, with one line on stderr saying
                why. Not healthy: no sync run recorded yet; without --max-age, the last run failed; with it, a
                source of the last run has had no good sync within DURATION (or never had one), or for a run
                without sources the last good run is older than DURATION. A failed run whose sources all
                synced within DURATION is healthy, and the line says the last run failed. Runs that found
                the lock held (75) are not the last run, for status, --check and --prometheus alike. Saved
                remotes are named beside their URL (in the metrics, by a remote label).
                --prometheus prints gauges and counters for node_exporter's textfile collector; with --output
                the file is replaced atomically.
                """,
            options: [
                Options.json.spec, StatusOptions.check.spec, StatusOptions.maxAge.spec, StatusOptions.quiet.spec,
                StatusOptions.prometheus.spec, StatusOptions.output.spec,
            ],
            validate: { p in
                let modes = [Options.json.spec.name, StatusOptions.check.spec.name, StatusOptions.prometheus.spec.name].filter {
                    p.flags.contains($0)
                }
                if modes.count > 1 { throw UsageError(message: "\(modes.joined(separator: " and ")) cannot be combined", path: p.path) }
                if p.given(StatusOptions.maxAge) && !p[StatusOptions.check] {
                    throw UsageError(message: "--max-age goes with --check", path: p.path)
                }
                if p[StatusOptions.quiet] && !p[StatusOptions.check] { throw UsageError(message: "--quiet goes with --check", path: p.path) }
                if p.given(StatusOptions.output) && !p[StatusOptions.prometheus] {
                    throw UsageError(message: "--output goes with --prometheus", path: p.path)
                }
            },
            run: runStatus)
    }

    static func runStatus(_ i: Invocation) throws -> Int32 {
        let store = try i.openStore(.read)
        if i[StatusOptions.check] { return try runStatusCheck(i, store: store) }
        if i[StatusOptions.prometheus] {
            let text = PrometheusText.render(try store.metrics())
            if let output = i[StatusOptions.output], output != "-" {
                try AtomicOutput.write(Array(text.utf8), to: output)
            } else {
                i.stdout.write(text)
            }
            return 0
        }
        let s = try store.status()
        let digest = try store.stateDigest()
        let conflicts = try store.conflictCount()
        let hubs = try store.hubStatuses()
        let remotes = try store.remoteNames()
        if i[Options.json] {
            var w = JSONWriter()
            w.raw("{")
            w.key("changeSequence")
            w.int(s.changeSequence)
            w.raw(",")
            w.key("conflicts")
            w.int(Int64(conflicts))
            w.raw(",")
            w.key("database")
            w.string(store.path)
            w.raw(",")
            w.key("digest")
            w.string(digest.hex)
            w.raw(",")
            w.key("digestRows")
            w.int(digest.rows)
            w.raw(",")
            w.key("follower")
            w.bytes += followerJSON(store.follower())
            w.raw(",")
            w.key("hubs")
            w.bytes += hubStatusJSON(hubs, local: digest, remotes: remotes)
            w.raw(",")
            w.key("landmarkTombstones")
            w.int(Int64(s.landmarkTombstones))
            w.raw(",")
            w.key("landmarks")
            w.int(Int64(s.landmarks))
            w.raw(",")
            w.key("lastRun")
            if let r = s.lastRun {
                w.raw("{")
                w.key("exitStatus")
                if let status = r.status { w.int(Int64(status)) } else { w.raw("null") }
                w.raw(",")
                w.key("finishedAt")
                w.string(r.finished)
                w.raw(",")
                w.key("message")
                w.string(r.message)
                w.raw(",")
                w.key("outcome")
                w.string(r.outcome)
                w.raw(",")
                w.key("startedAt")
                w.string(r.started)
                w.raw("}")
            } else {
                w.raw("null")
            }
            w.raw(",")
            w.key("node")
            w.string(s.node)
            w.raw(",")
            w.key("positionTombstones")
            w.int(Int64(s.positionTombstones))
            w.raw(",")
            w.key("positions")
            w.int(Int64(s.positions))
            w.raw(",")
            w.key("quarantined")
            w.int(Int64(s.quarantined))
            w.raw(",")
            w.key("schemaVersion")
            w.int(Int64(s.schemaVersion))
            w.raw(",")
            w.key("sources")
            w.raw("[")
            for (n, src) in s.sources.enumerated() {
                if n > 0 { w.raw(",") }
                w.raw("{")
                w.key("inUse")
                w.bool(src.inUse)
                w.raw(",")
                w.key("kind")
                w.string(src.kind)
                w.raw(",")
                w.key("lastAttemptAt")
                w.string(src.lastAttempt)
                w.raw(",")
                w.key("lastError")
                w.string(src.lastError)
                w.raw(",")
                w.key("lastOutcome")
                w.string(src.outcome)
                w.raw(",")
                w.key("lastStatus")
                w.int(src.lastStatus.map(Int64.init))
                w.raw(",")
                w.key("lastSuccessAt")
                w.string(src.lastSuccess)
                w.raw(",")
                w.key("remote")
                w.string(src.remote)
                w.raw(",")
                w.key("source")
                w.string(src.source)
                w.raw("}")
            }
            w.raw("]}\n")
            i.stdout.write(w.bytes)
            return 0
        }
        var out = """
            database:    \(store.path)
            node:        \(s.node)
            schema:      version \(s.schemaVersion)
            landmarks:   \(s.landmarks) live, \(plural(s.landmarkTombstones, "tombstone"))
            positions:   \(s.positions) live, \(plural(s.positionTombstones, "tombstone"))
            changes:     \(s.changeSequence)
            digest:      \(digest)
            quarantine:  \(plural(s.quarantined, "row"))
            conflicts:   \(conflicts) kept

            """
        if let r = s.lastRun, let finished = r.finished, let status = r.status {
            out += "last sync:   \(finished) \(r.outcome) (exit \(status))\(r.message.map { ": \(Table.escaped($0))" } ?? "")\n"
        } else if let r = s.lastRun {
            out += "last sync:   running since \(r.started)\n"
        } else {
            out += "last sync:   never\n"
        }
        if let follower = store.follower() {
            out +=
                follower.alive
                ? "following:   since \(follower.since) (pid \(follower.pid) on \(follower.host))\n"
                : "following:   no: the follower started at \(follower.since) (pid \(follower.pid)) is not running\n"
        }
        for src in s.sources where src.inUse {
            // Messages quote keys and paths from other machines' files: control characters are shown escaped.
            out +=
                "source:      \(Table.escaped(sourceLabel(src.source, remotes))) last good \(src.lastSuccess ?? "never"); last attempt \(src.outcome ?? "-")"
            if let error = src.lastError { out += "; last error: \(Table.escaped(error))" }
            out += "\n"
        }
        let idle = s.sources.filter { !$0.inUse }.count
        if idle > 0 {
            out += "other:       \(plural(idle, "source")) synced before, not in the last run and not a remote (status --json lists them)\n"
        }
        out += hubStatusText(hubs, local: digest, remotes: remotes)
        i.stdout.write(out)
        return 0
    }

    /// `status --check`: one line, and 0 or ``unhealthyStatus``.
    static func runStatusCheck(_ i: Invocation, store: CatalogStore) throws -> Int32 {
        var health = try store.checkHealth(maxAgeMilliseconds: i[StatusOptions.maxAge].map { Int64(($0 * 1000).rounded(.up)) })
        // A follower that was killed (its marker left behind, its pid gone) syncs nothing any more.
        if let follower = store.follower() {
            if !follower.alive {
                health.problems.insert("the follower started at \(follower.since) (pid \(follower.pid)) is not running", at: 0)
            } else if health.healthy {
                health.summary += "; following since \(follower.since) (pid \(follower.pid))"
            }
        }
        guard health.healthy else {
            let shown = health.problems.prefix(3).joined(separator: "; ")
            let more = health.problems.count > 3 ? "; and \(health.problems.count - 3) more (catalog status shows every source)" : ""
            i.reporter.error("unhealthy: \(shown)\(more)", kind: "unhealthy")
            return unhealthyStatus
        }
        if !i[StatusOptions.quiet] { i.stdout.line(Table.escaped(health.summary)) }
        return 0
    }
}

extension CatalogCLI {
    /// `status --json`'s `follower`: null, or pid, host, since, interval, alive and polls per source.
    static func followerJSON(_ f: FollowerStatus?) -> [UInt8] {
        guard let f else { return Array("null".utf8) }
        var w = JSONWriter()
        w.raw("{")
        w.key("alive")
        w.bool(f.alive)
        w.raw(",")
        w.key("host")
        w.string(f.host)
        w.raw(",")
        w.key("intervalSeconds")
        w.raw(String(f.intervalSeconds))
        w.raw(",")
        w.key("pid")
        w.int(Int64(f.pid))
        w.raw(",")
        w.key("since")
        w.string(f.since)
        w.raw(",")
        w.key("sources")
        w.raw("[")
        for (n, s) in f.sources.enumerated() {
            if n > 0 { w.raw(",") }
            w.raw("{")
            w.key("failedPolls")
            w.int(s.failures)
            w.raw(",")
            w.key("polls")
            w.int(s.polls)
            w.raw(",")
            w.key("source")
            w.string(s.source)
            w.raw("}")
        }
        w.raw("]}")
        return w.bytes
    }
}
