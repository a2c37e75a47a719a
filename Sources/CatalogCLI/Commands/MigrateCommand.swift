import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

extension CatalogCLI {
    enum MigrateOptions {
        static let status = Flag("--status", "List every migration: version, description, checksum, applied time (UTC), state.")
        static let node = Option<String>("--node", "ID", "Set this database's node id (1–64 of A–Z a–z 0–9 . _ -).", parse: Values.nonEmpty)
        static let hub = Option<String>(
            "--hub", "HUB",
            "Create or migrate the schema of the PostgreSQL hub HUB (a URI, keyword string or remote's name) and nothing else; the local database is not opened.",
            completion: .remote, parse: Values.nonEmpty)
    }

    static var migrateCommand: CommandSpec {
        CommandSpec(
            name: "migrate",
            abstract: "Apply pending schema migrations (done on every open), or list them.",
            discussion: """
                --status lists without applying anything, and still lists a database this binary refuses to open (a changed migration, or one from a newer binary), then exits 73. \
                --hub HUB creates or migrates a PostgreSQL hub's schema and does nothing else: run it as the role that owns the hub's database, then grant the edges' role only what it uses (docs/hub.md §4).
                """,
            options: [MigrateOptions.status.spec, Options.json.with(help: "With --status, print JSON.").spec, MigrateOptions.hub.spec],
            validate: { p in
                if p[Options.json] && !p[MigrateOptions.status] {
                    throw UsageError(message: "--json goes with --status", path: p.path)
                }
                if p[MigrateOptions.hub] != nil && p[MigrateOptions.status] {
                    throw UsageError(message: "--hub and --status exclude each other", path: p.path)
                }
            },
            run: runMigrate)
    }

    static func runMigrate(_ i: Invocation) throws -> Int32 {
        if let hub = i[MigrateOptions.hub] {
            // A remote's name means its URL (its password, if it keeps one, stays inside).
            let remotes = i.databaseExists ? ((try? RemoteBook(i.openStore(.read)).remotes()) ?? []) : []
            guard let conninfo = HubSourceKind.conninfo(of: try SourceLocator.parse(hub, remotes: remotes)) else {
                let what =
                    remotes.contains { $0.name == hub }
                    ? "the remote '\(hub)' is not a hub"
                    : !hub.contains("/") && SourceLocator.scheme(of: hub) == nil
                        ? "no remote is named '\(hub)'\(i.databaseExists ? "" : " (there is no database at \(i.databasePath) to hold remotes)")"
                        : "\(hub) is not a hub"
                throw UsageError(
                    message: "--hub takes a PostgreSQL hub (postgres://, postgresql://, 'host=H dbname=D' or a remote naming one): \(what)",
                    path: i.parsed.path)
            }
            let report = try HubSchemaReport.migrate(conninfo: conninfo)
            i.stdout.line("\(report.name): hub schema at version \(report.version) (hub \(report.hubID))")
            return 0
        }
        guard i[MigrateOptions.status] else {
            _ = try i.openStore()  // opening applies pending migrations
            return 0
        }
        let path = i.databasePath
        let status = try CatalogStore.migrationStatus(path: path)
        defer {
            if let bad = status.first(where: { $0.state == .changed || $0.state == .unknown }) {
                i.reporter.error(
                    bad.state == .changed
                        ? "migration \(String(format: "%04d", bad.version)) was changed after it was applied, \(path)"
                        : "migration \(String(format: "%04d", bad.version)) was applied by a newer catalog binary, \(path)")
            }
        }
        if i[Options.json] {
            let items = status.map { m in
                var o = JSONObject()
                o.set("appliedAt", m.appliedAt)
                o.set("checksum", m.checksum)
                o.set("description", m.description)
                o.set("state", m.state.rawValue)
                o.set("version", m.version)
                return o
            }
            i.stdout.write(JSONObject.array(items) + [0x0A])
        } else {
            var rows = [["VERSION", "DESCRIPTION", "CHECKSUM", "APPLIED (UTC)", "STATE"]]
            for m in status {
                rows.append([String(format: "%04d", m.version), m.description, m.checksum, m.appliedAt ?? "-", m.state.rawValue])
            }
            i.stdout.write(Table.render(rows))
        }
        return status.contains { $0.state == .changed || $0.state == .unknown } ? 73 : 0
    }

    static var initCommand: CommandSpec {
        CommandSpec(
            name: "init",
            abstract: "Create and migrate the database; print its path and node id.",
            options: [MigrateOptions.node.spec],
            run: runInit)
    }

    static func runInit(_ i: Invocation) throws -> Int32 {
        if let node = i[MigrateOptions.node] { _ = try NodeID(validating: node) }  // before anything is created
        let store = try i.openStore()
        if let node = i[MigrateOptions.node] {
            let old = try store.nodeID()
            try store.setNodeID(node)
            let counts = try CatalogMonitor(store).status()  // counts only: listing every position here would load them all
            if old != node && counts.landmarks + counts.positions > 0 {
                i.reporter.warn(
                    "node id changed from \(old) to \(node); rows already written keep \(old) in their stamps, "
                        + "and a snapshot log this database published as \(old) is another node's now (publish to a new directory)")
            }
        }
        i.stdout.line("\(store.path) node \(try store.nodeID())")
        return 0
    }
}
