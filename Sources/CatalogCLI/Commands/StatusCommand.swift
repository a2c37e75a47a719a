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
        static let verifyDigest = Flag(
            "--verify-digest",
            "Recompute the state digest from every row and compare it with the kept one, here and on each hub synced with: exit 0 when equal, 70 when not (with --json, both and the stale rows)."
        )
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
                remotes are named beside their URL (in the metrics, by a remote label). On a node that serves,
                a running serve that checked itself within 30 s and is ready counts as healthy without any sync
                run; one that is not running, silent for longer, or not ready (its /v1/readyz reason) is not.
                --prometheus prints gauges and counters for node_exporter's textfile collector; with --output
                the file is replaced atomically.
                """,
            options: [
                Options.json.spec, StatusOptions.check.spec, StatusOptions.maxAge.spec, StatusOptions.quiet.spec,
                StatusOptions.prometheus.spec, StatusOptions.output.spec, StatusOptions.verifyDigest.spec,
            ],
            validate: { p in
                let modes = [StatusOptions.check.spec.name, StatusOptions.prometheus.spec.name, StatusOptions.verifyDigest.spec.name].filter {
                    p.flags.contains($0)
                }
                if p.flags.contains(Options.json.spec.name) && (p[StatusOptions.check] || p[StatusOptions.prometheus]) {
                    throw UsageError(message: "--json cannot be combined with \(p[StatusOptions.check] ? "--check" : "--prometheus")", path: p.path)
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

    /// `status --verify-digest` (docs/repair.md §1): the kept digest against a recomputation.
    static func runVerifyDigest(_ i: Invocation, store: CatalogStore) throws -> Int32 {
        let (kept, recomputed, stale) = try StateDigest.verify(store)
        let equal = kept == recomputed && stale == 0
        // Each hub this node synced with: its kept digest against its recomputation, on the hub.
        let hubs = try HubDigestCheck.all(in: store)
        if i[Options.json] {
            var o = JSONObject()
            o.set("equal", equal)
            o.set("kept", kept.hex)
            o.set("keptRows", kept.rows)
            o.set("recomputed", recomputed.hex)
            o.set("recomputedRows", recomputed.rows)
            o.set("staleRows", Int64(stale))
            if !hubs.isEmpty { o.set("hubs", objects: hubs.map(hubCheckJSON)) }
            i.stdout.write(o.bytes + [0x0A])
        } else {
            i.stdout.write("kept digest \(kept), recomputed \(recomputed)\(stale > 0 ? ", \(stale) rows with a stale hash" : "")\n")
            for (name, check) in hubs {
                switch check {
                case .success(let c):
                    i.stdout.write(
                        "hub \(name): kept digest \(c.kept), recomputed \(c.recomputed)\(c.staleRows > 0 ? ", \(c.staleRows) rows with stale lanes" : "")\n"
                    )
                case .failure(let error): i.stdout.write("hub \(name): not checked: \(error.message)\n")
                }
            }
        }
        if let (name, c) = hubs.lazy.compactMap({ h in (try? h.check.get()).map { (h.name, $0) } }).first(where: { !$0.1.equal }) {
            throw CatalogError(
                .software, "the hub's kept state digest \(c.kept.hex) differs from its recomputation \(c.recomputed.hex), \(name)",
                hint:
                    "after a data-only restore of the hub (docs/hub.md §9), rebuild it: catalog gc --hub \(name) --rebuild-digest; otherwise report it: a hub write path did not keep the digest"
            )
        }
        guard equal else {
            throw CatalogError(
                .software, "the kept state digest \(kept.hex) differs from its recomputation \(recomputed.hex), \(store.path)",
                hint: "report it: a write path did not keep the digest")
        }
        return 0
    }

    /// One hub's `status --verify-digest --json` entry: `name`, then `equal`, `kept`, `recomputed`, `staleRows`
    /// or `error`.
    static func hubCheckJSON(_ hub: (name: String, check: Result<HubDigestCheck, CatalogError>)) -> JSONObject {
        var o = JSONObject()
        o.set("name", hub.name)
        switch hub.check {
        case .success(let c):
            o.set("equal", c.equal)
            o.set("kept", c.kept.hex)
            o.set("recomputed", c.recomputed.hex)
            o.set("staleRows", c.staleRows)
        case .failure(let error): o.set("error", error.message)
        }
        return o
    }

    static func runStatus(_ i: Invocation) throws -> Int32 {
        let store = try i.openStore(.read)
        if i[StatusOptions.check] { return try runStatusCheck(i, store: store) }
        if i[StatusOptions.verifyDigest] { return try runVerifyDigest(i, store: store) }
        if i[StatusOptions.prometheus] {
            let text = PrometheusText.render(try CatalogMonitor(store).metrics())
            if let output = i[StatusOptions.output], output != "-" {
                try AtomicOutput.write(Array(text.utf8), to: output)
            } else {
                i.stdout.write(text)
            }
            return 0
        }
        let facts = try StatusFacts(store)
        if i[Options.json] {
            i.stdout.write(statusJSON(facts).bytes + [0x0A])
        } else {
            i.stdout.write(statusText(facts))
        }
        return 0
    }

    /// What `status` shows, read from the store once.
    struct StatusFacts {
        let store: CatalogStore
        let status: CatalogStore.Status
        let digest: StateDigest
        let conflicts: Int
        let hubs: [HubStatus]
        /// Saved remotes' names by source.
        let remotes: [String: String]
        let collection: CollectionState

        init(_ store: CatalogStore) throws {
            self.store = store
            status = try CatalogMonitor(store).status()
            digest = try StateDigest(of: store)
            conflicts = try Conflicts(store).conflictCount()
            hubs = try HubStatus.all(in: store)
            remotes = try RemoteBook(store).remoteNames()
            collection = try Collector(store).state()
        }
    }

    /// `status --json`: one object, keys sorted.
    static func statusJSON(_ facts: StatusFacts) -> JSONObject {
        let s = facts.status
        var o = JSONObject()
        o.set("changeSequence", s.changeSequence)
        o.set("conflicts", facts.conflicts)
        o.set("database", facts.store.path)
        o.set("digest", facts.digest.hex)
        o.set("digestRows", facts.digest.rows)
        o.set("erasureRecords", facts.collection.erasureRecords)
        o.set("follower", followerJSON(FollowerStatus.running(on: facts.store)))
        if facts.collection.horizonMilliseconds > 0 {
            o.set("gcHorizon", Timestamp.format(milliseconds: facts.collection.horizonMilliseconds))
        } else {
            o.setNull("gcHorizon")
        }
        o.set("gcLastRunAt", facts.collection.lastRunMilliseconds.map { Timestamp.format(milliseconds: $0) })
        o.set("hubs", objects: hubStatusJSON(facts.hubs, local: facts.digest, remotes: facts.remotes))
        o.set("landmarkTombstones", s.landmarkTombstones)
        o.set("landmarks", s.landmarks)
        o.set(
            "lastRun",
            s.lastRun.map { r in
                var run = JSONObject()
                run.set("exitStatus", r.status.map(Int64.init))
                run.set("finishedAt", r.finished)
                run.set("message", r.message)
                run.set("outcome", r.outcome)
                run.set("startedAt", r.started)
                return run
            })
        o.set("node", s.node)
        o.set("positionTombstones", s.positionTombstones)
        o.set("positions", s.positions)
        o.set("quarantined", s.quarantined)
        o.set("schemaVersion", s.schemaVersion)
        o.set(
            "sources",
            objects: s.sources.map { src in
                var source = JSONObject()
                source.set("inUse", src.inUse)
                source.set("kind", src.kind)
                source.set("lastAttemptAt", src.lastAttempt)
                source.set("lastError", src.lastError)
                source.set("lastOutcome", src.outcome)
                source.set("lastStatus", src.lastStatus)
                source.set("lastSuccessAt", src.lastSuccess)
                source.set("remote", src.remote)
                source.set("source", src.source)
                return source
            })
        return o
    }

    /// `status`'s text: the counts, then the last run, the follower and serve, the sources and the hubs.
    static func statusText(_ facts: StatusFacts) -> String {
        let s = facts.status
        var out = """
            database:    \(facts.store.path)
            node:        \(s.node)
            schema:      version \(s.schemaVersion)
            landmarks:   \(s.landmarks) live, \(plural(s.landmarkTombstones, "tombstone"))
            positions:   \(s.positions) live, \(plural(s.positionTombstones, "tombstone"))
            changes:     \(s.changeSequence)
            digest:      \(facts.digest)
            quarantine:  \(plural(s.quarantined, "row"))
            conflicts:   \(facts.conflicts) kept
            erasures:    \(plural(facts.collection.erasureRecords, "record"))
            gc:          \(gcText(facts.collection))

            """
        if let r = s.lastRun, let finished = r.finished, let status = r.status {
            out += "last sync:   \(finished) \(r.outcome) (exit \(status))\(r.message.map { ": \(Table.escaped($0))" } ?? "")\n"
        } else if let r = s.lastRun {
            out += "last sync:   running since \(r.started)\n"
        } else {
            out += "last sync:   never\n"
        }
        out += processesText(facts.store)
        for src in s.sources where src.inUse {
            // Messages quote keys and paths from other machines' files: control characters are shown escaped.
            out +=
                "source:      \(Table.escaped(sourceLabel(src.source, facts.remotes))) last good \(src.lastSuccess ?? "never"); last attempt \(src.outcome ?? "-")"
            if let error = src.lastError { out += "; last error: \(Table.escaped(error))" }
            out += "\n"
        }
        let idle = s.sources.filter { !$0.inUse }.count
        if idle > 0 {
            out += "other:       \(plural(idle, "source")) synced before, not in the last run and not a remote (status --json lists them)\n"
        }
        return out + hubStatusText(facts.hubs, local: facts.digest, remotes: facts.remotes)
    }

    /// `status`'s gc line: the horizon and the last collection, or that none ran.
    static func gcText(_ c: CollectionState) -> String {
        guard let last = c.lastRunMilliseconds else {
            return c.horizonMilliseconds > 0 ? "collected up to \(Timestamp.format(milliseconds: c.horizonMilliseconds))" : "never collected"
        }
        return "collected up to \(Timestamp.format(milliseconds: c.horizonMilliseconds)), last run \(Timestamp.format(milliseconds: last))"
    }

    /// `status`'s lines for the follower and serve running on this database, when they have a marker.
    static func processesText(_ store: CatalogStore) -> String {
        var out = ""
        if let follower = FollowerStatus.running(on: store) {
            out +=
                follower.alive
                ? "following:   since \(follower.since) (pid \(follower.pid) on \(follower.host))\n"
                : "following:   no: the follower started at \(follower.since) (pid \(follower.pid)) is not running\n"
        }
        if let serving = ServeMarker(databasePath: store.path).read() {
            out +=
                serving.alive
                ? "serving:     \(serving.listen) since \(serving.since) (pid \(serving.pid) on \(serving.host))"
                    + (serving.checked.map { "; checked at \($0): \(serving.state ?? "ready")" } ?? "") + "\n"
                : "serving:     no: the serve started at \(serving.since) (pid \(serving.pid)) is not running\n"
        }
        return out
    }

    /// `status --check`: one line, and 0 or ``unhealthyStatus``.
    static func runStatusCheck(_ i: Invocation, store: CatalogStore) throws -> Int32 {
        var health = try CatalogMonitor(store).checkHealth(maxAgeMilliseconds: i[StatusOptions.maxAge].map { Int64(($0 * 1000).rounded(.up)) })
        serveHealth(&health, store: store, now: i.context.wallClock.nowMilliseconds())
        // A follower that was killed (its marker left behind, its pid gone) syncs nothing any more.
        if let follower = FollowerStatus.running(on: store) {
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
    /// How old serve's heartbeat may be before `status --check` says serve stopped checking itself (it beats
    /// every 5 s).
    static let serveHeartbeatLimitMilliseconds: Int64 = 30_000

    /// `status --check` on a node that serves (docs/operations.md §3): a serve whose heartbeat is fresh and
    /// ready makes a node without any sync run healthy; a serve that is not running, has not checked itself
    /// within ``serveHeartbeatLimitMilliseconds`` or is not ready is a problem.
    static func serveHealth(_ health: inout HealthCheck, store: CatalogStore, now: Int64) {
        guard let serving = ServeMarker(databasePath: store.path).read() else { return }
        let started = "the serve started at \(serving.since) (pid \(serving.pid))"
        var problem: String?
        if !serving.alive {
            problem = "\(started) is not running"
        } else if let checked = serving.checked, let at = Timestamp.parse(checked), let state = serving.state {
            if now - at > serveHeartbeatLimitMilliseconds {
                problem = "\(started) has not checked itself since \(checked) (\(Durations.describe(milliseconds: now - at)) ago)"
            } else if state != "ready" {
                problem = "\(started) is \(state)"
            }
        }
        if let problem {
            health.problems.insert(problem, at: 0)
            return
        }
        // A node that only serves records no sync run: serving, and ready, is its health.
        let syncless = ["no sync run is recorded yet", "no sync run has succeeded yet"]
        let hadRun = !health.problems.contains(where: syncless.contains)
        health.problems.removeAll(where: syncless.contains)
        let line = "serving \(serving.listen) since \(serving.since) (pid \(serving.pid)), ready at \(serving.checked ?? serving.since)"
        if health.healthy { health.summary = hadRun && !health.summary.isEmpty ? health.summary + "; " + line : "healthy: " + line }
    }

    /// `status --json`'s `follower`: nil (written `null`), or pid, host, since, interval, alive and polls per source.
    static func followerJSON(_ f: FollowerStatus?) -> JSONObject? {
        guard let f else { return nil }
        var o = JSONObject()
        o.set("alive", f.alive)
        o.set("host", f.host)
        o.set("intervalSeconds", f.intervalSeconds)
        o.set("pid", Int(f.pid))
        o.set("since", f.since)
        o.set(
            "sources",
            objects: f.sources.map { s in
                var source = JSONObject()
                source.set("failedPolls", s.failures)
                source.set("polls", s.polls)
                source.set("source", s.source)
                return source
            })
        return o
    }
}
