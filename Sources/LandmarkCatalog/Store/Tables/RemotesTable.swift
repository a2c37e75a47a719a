/// Saved remotes (`sync_remotes`, `catalog remote add NAME URL`; `catalog sync` with no SOURCE syncs
/// them all): the row type, the column map and every statement that touches the table.

/// A remote saved with `catalog remote add`.
public struct Remote: Sendable, Equatable {
    /// The remote's name (1–64 of A–Z a–z 0–9 `.` `_` `-`).
    public var name: String
    /// A URL or an absolute path, as given (a password in it is never printed).
    public var url: String
    /// The minisign public keys (base64 lines) its snapshot log must be signed by; empty: none required.
    public var trustedKeys: [String] = []
    /// The kinds of rows it may write.
    public var allow: WriteGrant = .all
    /// For a `catalog serve` remote: the absolute path of the file holding its bearer token (never the token).
    public var tokenFile: String?
}

/// The kinds of rows a source may write (`remote add --allow`, docs/trust.md §4).
///
/// Rows of another kind are counted (``MergeCounts/notAllowed``), reported and not applied; the rest of
/// the source merges.
public enum WriteGrant: String, Sendable, CaseIterable {
    case all, landmarks, positions

    public var allowsLandmarks: Bool { self != .positions }
    public var allowsPositions: Bool { self != .landmarks }
}

/// `sync_remotes`' columns, in select-list order.
package enum RemoteColumn: Int32, TableColumn {
    case name, url, addedAt, trustedKeys, allow, tokenFile

    package static let tableName = "sync_remotes"
}

extension Remote {
    /// Decodes a row selected with ``RemoteColumn/selectList``.
    init(row s: Statement) {
        self.init(
            name: s.text(RemoteColumn.name) ?? "", url: s.text(RemoteColumn.url) ?? "",
            trustedKeys: (s.text(RemoteColumn.trustedKeys) ?? "").split(separator: "\n").map(String.init),
            allow: WriteGrant(rawValue: s.text(RemoteColumn.allow) ?? "") ?? .all,
            tokenFile: s.text(RemoteColumn.tokenFile).flatMap { $0.isEmpty ? nil : $0 })
    }
}

/// `sync_remotes`' statements on one connection; call inside the store's `read` or `write`.
package struct RemotesTable {
    let db: Connection

    /// Every remote, by name.
    func all() throws -> [Remote] {
        var remotes: [Remote] = []
        try db.forEachRow(sql: "SELECT \(RemoteColumn.selectList) FROM sync_remotes ORDER BY name") { remotes.append(Remote(row: $0)) }
        return remotes
    }

    /// The remote named `name`, or nil.
    func remote(named name: String) throws -> Remote? {
        try db.firstRow(sql: "SELECT \(RemoteColumn.selectList) FROM sync_remotes WHERE name = ?", [.text(name)]) { Remote(row: $0) }
    }

    /// Saves a remote (its keys as base64 lines), added at `now` (ms since the epoch).
    func insert(_ remote: Remote, at now: Int64) throws {
        try db.execute(
            sql: "INSERT INTO sync_remotes (\(RemoteColumn.selectList)) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(remote.name), .text(remote.url), .text(Timestamp.format(milliseconds: now)),
                .text(remote.trustedKeys.joined(separator: "\n")), .text(remote.allow.rawValue),
                .text(remote.tokenFile ?? ""),
            ])
    }

    /// Replaces the URL, keys, grant and token file of the remote named `remote.name`.
    func update(_ remote: Remote) throws {
        try db.execute(
            sql: "UPDATE sync_remotes SET url = ?, trusted_keys = ?, allow = ?, token_file = ? WHERE name = ?",
            [
                .text(remote.url), .text(remote.trustedKeys.joined(separator: "\n")), .text(remote.allow.rawValue), .text(remote.tokenFile ?? ""),
                .text(remote.name),
            ])
    }

    /// Removes the remote named `name`.
    func delete(named name: String) throws {
        try db.execute(sql: "DELETE FROM sync_remotes WHERE name = ?", [.text(name)])
    }

    /// How many remotes are saved.
    func count() throws -> Int { Int(try db.scalarInt(sql: "SELECT count(*) FROM sync_remotes") ?? 0) }
}

extension CatalogStore {
    /// `sync_remotes`' statements on this store's connection.
    package var remoteTable: RemotesTable { RemotesTable(db: connection) }
}
