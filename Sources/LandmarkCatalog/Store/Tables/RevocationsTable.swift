/// Token revocations (`token_revocations`, `catalog token revoke`, docs/serve.md §10): the row type, the
/// column map and every statement that touches the table.

/// One revocation in force: serve refuses the tokens it names (docs/serve.md §10).
package struct TokenRevocation: Sendable, Equatable, Hashable {
    /// What a revocation names.
    package enum Kind: String, Sendable, CaseIterable {
        /// Every token of a user issued before ``TokenRevocation/before`` (and every one of theirs without `iat`).
        case user
        /// The one token whose `jti` claim is ``TokenRevocation/subject``.
        case jti
    }

    package var kind: Kind
    /// For ``Kind/user``, the user id's hash (SHA-256 of the NFC-normalised id in lowercase hex, as an
    /// erasure record keeps it: migration 0014 replaced the ids stored before); for ``Kind/jti``, the `jti`.
    package var subject: String
    /// For ``Kind/user``: tokens whose `iat` is before this (s since the epoch) are refused; 0 for ``Kind/jti``.
    package var before: Int64
    /// When it was recorded (UTC, RFC 3339).
    package var revokedAt: String

    package init(kind: Kind, subject: String, before: Int64, revokedAt: String) {
        self.kind = kind
        self.subject = subject
        self.before = before
        self.revokedAt = revokedAt
    }
}

/// `token_revocations`' columns, in select-list order.
package enum RevocationColumn: Int32, TableColumn {
    case kind, subject, beforeS, revokedAt, source

    package static let tableName = "token_revocations"
}

extension TokenRevocation {
    /// Decodes a row selected with ``RevocationColumn/selectList``.
    init(row s: Statement) {
        self.init(
            kind: Kind(rawValue: s.text(RevocationColumn.kind) ?? "") ?? .user, subject: s.text(RevocationColumn.subject) ?? "",
            before: s.int(RevocationColumn.beforeS), revokedAt: s.text(RevocationColumn.revokedAt) ?? "")
    }
}

/// `token_revocations`' statements on one connection; call inside the store's `read` or `write`.
package struct RevocationsTable {
    let db: Connection

    /// The revocations recorded here (`source` `database`) or the copy of the hub's (`hub`), or with nil
    /// both, by kind and subject.
    func all(source: String?) throws -> [TokenRevocation] {
        var rows: [TokenRevocation] = []
        let filter = source == nil ? "" : " WHERE source = ?"
        try db.forEachRow(
            sql: "SELECT \(RevocationColumn.selectList) FROM token_revocations\(filter) ORDER BY kind, subject, source",
            source.map { [.text($0)] } ?? []
        ) { rows.append(TokenRevocation(row: $0)) }
        return rows
    }

    /// Records `revocation` from `source`, replacing the one of the same source, kind and subject.
    func upsert(_ revocation: TokenRevocation, source: String) throws {
        try db.execute(
            sql: """
                INSERT INTO token_revocations (\(RevocationColumn.selectList)) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (source, kind, subject) DO UPDATE SET before_s = excluded.before_s, revoked_at = excluded.revoked_at
                """,
            [
                .text(revocation.kind.rawValue), .text(revocation.subject), .integer(revocation.before), .text(revocation.revokedAt),
                .text(source),
            ])
    }

    /// Removes `source`'s revocation of `kind` and `subject`; whether there was one.
    func delete(kind: TokenRevocation.Kind, subject: String, source: String) throws -> Bool {
        try db.execute(
            sql: "DELETE FROM token_revocations WHERE source = ? AND kind = ? AND subject = ?",
            [.text(source), .text(kind.rawValue), .text(subject)])
        return db.changes > 0
    }

    /// Removes the revocations recorded here that can refuse no token any more: a user's whose time is
    /// `maxLifetime` s or more before `now`, a `jti`'s recorded that long ago (its token was issued before);
    /// how many.
    func deleteSpent(now: Int64, maxLifetime: Int64) throws -> Int {
        let limit = now - maxLifetime
        try db.execute(
            sql: """
                DELETE FROM token_revocations WHERE source = 'database'
                AND ((kind = 'user' AND before_s <= ?) OR (kind = 'jti' AND revoked_at <= ?))
                """,
            [.integer(limit), .text(Timestamp.format(milliseconds: limit * 1000))])
        return db.changes
    }

    /// Removes every revocation of `source`.
    func deleteAll(source: String) throws {
        try db.execute(sql: "DELETE FROM token_revocations WHERE source = ?", [.text(source)])
    }
}

extension CatalogStore {
    /// `token_revocations`' statements on this store's connection.
    package var revocationsTable: RevocationsTable { RevocationsTable(db: connection) }
}
