import LandmarkCatalog

extension CatalogCLI {
    static var migrateCommand: CommandSpec {
        CommandSpec(
            name: "migrate",
            abstract: "Apply pending schema migrations (done on every open), or list them.",
            options: [
                .flag("--status", "List every migration: version, description, checksum, applied time (UTC)."),
                .flag("--json", "With --status, print JSON."),
            ],
            run: runMigrate)
    }

    static func runMigrate(_ parsed: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let store = try openStore(parsed, context)  // opening applies pending migrations
        guard parsed.has("--status") else { return 0 }
        let status = try store.migrationStatus()
        if parsed.has("--json") {
            var w = JSONWriter()
            w.byte(0x5B)
            for (i, m) in status.enumerated() {
                if i > 0 { w.byte(0x2C) }
                w.raw("{"); w.key("appliedAt"); w.string(m.appliedAt)
                w.raw(","); w.key("checksum"); w.string(m.checksum)
                w.raw(","); w.key("description"); w.string(m.description)
                w.raw(","); w.key("version"); w.int(Int64(m.version)); w.raw("}")
            }
            w.raw("]\n")
            context.stdout.write(w.bytes)
        } else {
            var rows = [["VERSION", "DESCRIPTION", "CHECKSUM", "APPLIED (UTC)"]]
            for m in status {
                rows.append([String(format: "%04d", m.version), m.description, m.checksum, m.appliedAt ?? "pending"])
            }
            context.stdout.write(Table.render(rows))
        }
        return 0
    }

    static var initCommand: CommandSpec {
        CommandSpec(
            name: "init",
            abstract: "Create and migrate the database; print its path and node id.",
            options: [
                .value("--node", "ID", "Set this database's node id (1–64 of A–Z a–z 0–9 . _ -)."),
            ],
            run: runInit)
    }

    static func runInit(_ parsed: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let store = try openStore(parsed, context)
        if let node = parsed.value("--node") { try store.setNodeID(node) }
        context.stdout.line("\(store.path) node \(try store.nodeID())")
        return 0
    }
}
