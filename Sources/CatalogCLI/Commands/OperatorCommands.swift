import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

extension CatalogCLI {
    enum RevokeOptions {
        static let user = Options.user.with(help: "Revoke this user's tokens (sub) issued before --before, and theirs without iat.")
        static let id = Option<String>(
            "--id", "JTI", "Revoke the one token whose jti claim is JTI.", parse: Values.nonEmpty)
        static let before = Option<Int64>(
            "--before", "TIME",
            "With --user: revoke the tokens issued (iat) before TIME, an RFC 3339 date-time (default: now); later ones stay good.",
            parse: Values.dateTimeSeconds)
        static let maxTTL = Option<Double>(
            "--max-ttl", "DURATION", "The longest any token lives (exp minus iat; 1h, 30d).", parse: Values.duration(atMost: 31_536_000)
        ).mandatory
        static let lift = Flag("--lift", "Remove the revocation of --user or --id instead (its tokens are served again).")
        static let hub = Option<String>(
            "--hub", "URL",
            "Also record it in this PostgreSQL hub (a postgresql:// URL or a saved remote): every serve --hub of the hub refuses the tokens.",
            parse: Values.nonEmpty)
    }

    enum BackupOptions {
        static let output = Options.output.with(help: "The file to write the copy to (never standard output).").mandatory
        static let force = Flag("--force", "Replace FILE if it exists.")
    }

    /// `token revoke` and `token revocations` (docs/serve.md §10).
    static var tokenRevocationCommands: [CommandSpec] {
        [
            CommandSpec(
                name: "revoke",
                abstract: "Make serve refuse a user's tokens (--user) or one token (--id) within 5 s; --lift undoes it.",
                discussion: """
                    Recorded in this database (the one serve serves, --db) and, with --hub, in the hub, which every
                    serve --hub of that hub reads every second. A revoked token gets 401 invalid_token saying it was
                    revoked. --user ID --before TIME refuses the tokens of ID issued before TIME (default now) and those
                    without iat: tokens issued later are good, so a user whose tokens leaked logs in again. A revocation
                    stays until --lift removes it; lift a user's once every token it refused has expired.
                    """,
                options: [
                    RevokeOptions.user.spec, RevokeOptions.id.spec, RevokeOptions.before.spec, RevokeOptions.lift.spec, RevokeOptions.hub.spec,
                ],
                oneOf: [RevokeOptions.user.spec.name, RevokeOptions.id.spec.name],
                validate: { p in
                    guard p.given(RevokeOptions.user) != p.given(RevokeOptions.id) else {
                        throw UsageError(message: "give exactly one of --user ID and --id JTI", path: p.path)
                    }
                    if p.given(RevokeOptions.before) && !p.given(RevokeOptions.user) {
                        throw UsageError(message: "--before goes with --user", path: p.path)
                    }
                    if p.given(RevokeOptions.before) && p[RevokeOptions.lift] {
                        throw UsageError(message: "--before does not go with --lift", path: p.path)
                    }
                },
                run: runTokenRevoke),
            CommandSpec(
                name: "prune",
                abstract: "Remove the revocations that can refuse no token any more, given no token lives longer than --max-ttl.",
                discussion: """
                    A user's revocation refuses tokens issued before its time, so once --max-ttl (plus the 60 s leeway)
                    has passed since that time, every token it refused has expired; a jti's, once --max-ttl has passed
                    since it was recorded. Those are removed from this database and, with --hub, from the hub.
                    """,
                options: [
                    RevokeOptions.maxTTL.spec, RevokeOptions.hub.with(help: "Also prune this hub's (a postgresql:// URL or a saved remote).").spec,
                ],
                run: runTokenPrune),
            CommandSpec(
                name: "revocations",
                abstract: "List the token revocations in force: this database's and, with --hub, the hub's.",
                options: [RevokeOptions.hub.with(help: "Also list this hub's (a postgresql:// URL or a saved remote).").spec, Options.json.spec],
                run: runTokenRevocations),
        ]
    }

    static var backupCommand: CommandSpec {
        CommandSpec(
            name: "backup",
            abstract: "Write a consistent copy of the database to FILE while serve, sync or import keep writing.",
            discussion: """
                The copy holds every commit made before it began (SQLite's VACUUM INTO: one read, no writer waits). It is
                written beside FILE and renamed onto it, so FILE is whole or absent; an existing FILE is kept unless
                --force. The copy gets a new serve database id: a serve started on it hands out cursors of another
                database, and devices push their rows again (docs/operations.md §12).
                """,
            options: [BackupOptions.output.spec, BackupOptions.force.spec],
            run: runBackup)
    }

    static func runBackup(_ i: Invocation) throws -> Int32 {
        let output = i[BackupOptions.output]
        guard output != "-" else {
            throw UsageError(message: "backup writes a database file (--output FILE), never to standard output", path: i.parsed.path)
        }
        guard i.databaseExists else {
            throw CatalogError(.noInput, "no catalog database, \(i.databasePath)", hint: "check --db / CATALOG_DB")
        }
        try DatabaseBackup(i.openStore(.read)).write(to: output, replacing: i[BackupOptions.force])
        return 0
    }

    static func runTokenRevoke(_ i: Invocation) throws -> Int32 {
        let now = i.context.wallClock.nowMilliseconds() / 1000
        let (kind, named): (TokenRevocation.Kind, String) =
            try i[RevokeOptions.user].map { (.user, try UserID.normalize($0)) } ?? (.jti, i[RevokeOptions.id] ?? "")
        // A user is stored by the hash an erasure keeps, never the id (docs/serve.md §10).
        let subject = kind == .user ? ErasureRule.userHash(named) : named
        let hub = i[RevokeOptions.hub]
        guard i.databaseExists || hub != nil else {
            throw CatalogError(
                .noInput, "no catalog database, \(i.databasePath)", hint: "check --db / CATALOG_DB (the database serve serves), or pass --hub")
        }
        let store = i.databaseExists ? try i.openStore() : nil
        let hubRevocations = try hub.map { try HubRevocations(hub: $0, remotes: (try store.map { try RemoteBook($0).remotes() }) ?? []) }
        defer { hubRevocations?.close() }
        let what = kind == .user ? "user \(named)" : "the token with jti \(named)"
        if i[RevokeOptions.lift] {
            var lifted = try store.map { try TokenRevocations($0).lift(kind: kind, subject: subject) } ?? false
            if let hubRevocations { lifted = try hubRevocations.lift(kind: kind, subject: subject) || lifted }
            i.stdout.line(lifted ? "lifted the revocation of \(what)" : "\(what) was not revoked")
            return 0
        }
        let before = kind == .user ? (i[RevokeOptions.before] ?? now + 1) : 0
        let revocation = TokenRevocation(kind: kind, subject: subject, before: before, revokedAt: Timestamp.format(milliseconds: now * 1000))
        // With --hub the hub holds it alone (each serve --hub keeps its own copy of the hub's): a local row
        // too could not be lifted from another node, and that node would go on refusing what the fleet lifted.
        if let hubRevocations {
            try hubRevocations.revoke(revocation)
        } else if let store {
            try TokenRevocations(store).revoke(revocation)
        }
        if kind == .user, i[RevokeOptions.before] == nil {
            // `iat` counts whole seconds: the cut-off is the next one, so a token issued after this command
            // returns (a script revoking and issuing anew) is good, never refused with the leaked ones.
            let wait = Double(before) - Date().timeIntervalSince1970
            if wait > 0, wait <= 1.1 { usleep(UInt32(wait * 1_000_000)) }
        }
        let tokens =
            kind == .user ? "the tokens of user \(named) issued before \(Timestamp.format(milliseconds: before * 1000))" : what
        i.stdout.line("revoked \(tokens); a running serve refuses \(kind == .user ? "them" : "it") within 5 s")
        return 0
    }

    static func runTokenPrune(_ i: Invocation) throws -> Int32 {
        let hub = i[RevokeOptions.hub]
        guard i.databaseExists || hub != nil else {
            throw CatalogError(.noInput, "no catalog database, \(i.databasePath)", hint: "check --db / CATALOG_DB, or pass --hub")
        }
        let now = i.context.wallClock.nowMilliseconds() / 1000
        let lifetime = Int64(i[RevokeOptions.maxTTL].rounded(.up)) + 60
        let store = i.databaseExists ? try i.openStore() : nil
        var removed = try store.map { try TokenRevocations($0).prune(now: now, maxLifetime: lifetime) } ?? 0
        if let hub {
            let reader = try HubRevocations(hub: hub, remotes: (try store.map { try RemoteBook($0).remotes() }) ?? [])
            defer { reader.close() }
            removed += try reader.prune(now: now, maxLifetime: lifetime)
        }
        i.stdout.line("removed \(plural(removed, "revocation")) that can refuse no token any more")
        return 0
    }

    static func runTokenRevocations(_ i: Invocation) throws -> Int32 {
        guard i.databaseExists || i[RevokeOptions.hub] != nil else {
            throw CatalogError(.noInput, "no catalog database, \(i.databasePath)", hint: "check --db / CATALOG_DB, or pass --hub")
        }
        let store = i.databaseExists ? try i.openStore(.read) : nil
        var rows: [(source: String, revocation: TokenRevocation)] = try (store.map { try TokenRevocations($0).all() } ?? []).map {
            ("database", $0)
        }
        if let hub = i[RevokeOptions.hub] {
            let reader = try HubRevocations(hub: hub, remotes: (try store.map { try RemoteBook($0).remotes() }) ?? [])
            defer { reader.close() }
            rows += try reader.all().map { ("hub", $0) }
        }
        if i[Options.json] {
            let items = rows.map { row -> JSONObject in
                var o = JSONObject()
                if row.revocation.kind == .user {
                    o.set("before", Timestamp.format(milliseconds: row.revocation.before * 1000))
                } else {
                    o.setNull("before")
                }
                o.set("kind", row.revocation.kind.rawValue)
                o.set("revokedAt", oneFormat(row.revocation.revokedAt))
                o.set("source", row.source)
                o.set("subject", row.revocation.subject)
                return o
            }
            i.stdout.write(JSONObject.array(items) + [0x0A])
            return 0
        }
        guard !rows.isEmpty else {
            i.stdout.line("no token revocations")
            return 0
        }
        var table = [["KIND", "SUBJECT", "ISSUED BEFORE (UTC)", "REVOKED AT (UTC)", "IN"]]
        for row in rows {
            let r = row.revocation
            table.append([
                r.kind.rawValue, Table.escaped(r.subject), r.kind == .user ? Timestamp.format(milliseconds: r.before * 1000) : "-",
                oneFormat(r.revokedAt), row.source,
            ])
        }
        i.stdout.write(Table.render(table))
        return 0
    }
}

extension CatalogCLI {
    /// A stored RFC 3339 time in the one format the CLI prints (`2026-05-01T12:00:08.000Z`).
    ///
    /// The hub and the database may keep it with or without the milliseconds. Left as stored when it does
    /// not parse.
    static func oneFormat(_ time: String) -> String {
        Timestamp.parse(time).map { Timestamp.format(milliseconds: $0) } ?? time
    }
}

extension Values {
    /// An RFC 3339 date-time (`2026-05-01T12:00:00Z`), as whole seconds since the epoch.
    static func dateTimeSeconds(_ text: String) throws -> Int64 {
        guard let ms = Timestamp.parse(text) else {
            throw ValueError(expected: "an RFC 3339 date-time such as 2026-05-01T12:00:00Z")
        }
        return ms / 1000
    }
}
