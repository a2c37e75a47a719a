/// The bearer-token revocations of this database (`catalog token revoke`, docs/serve.md §10): what
/// `catalog serve` refuses, read again whenever `PRAGMA data_version` moves.
///
/// Each call is one transaction.
package struct TokenRevocations {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    package init(_ store: CatalogStore) { self.store = store }

    /// The revocations recorded in this database, by kind and subject; with `hubCopy`, also the copy a
    /// `serve --hub` keeps of its hub's (every revocation serve enforces).
    /// - Throws: `CatalogError` when the database cannot be read.
    package func all(hubCopy: Bool = false) throws -> [TokenRevocation] {
        try store.read { try store.revocationsTable.all(source: hubCopy ? nil : "database") }
    }

    /// Records `revocation` (replacing one of the same kind and subject), in one transaction.
    /// - Throws: `CatalogError` when the database cannot be written.
    package func revoke(_ revocation: TokenRevocation) throws {
        try store.write { try store.revocationsTable.upsert(revocation, source: "database") }
    }

    /// Removes the revocation of `kind` and `subject`, in one transaction.
    /// - Returns: whether there was one.
    /// - Throws: `CatalogError` when the database cannot be written.
    package func lift(kind: TokenRevocation.Kind, subject: String) throws -> Bool {
        try store.write { try store.revocationsTable.delete(kind: kind, subject: subject, source: "database") }
    }

    /// Removes, in one transaction, the revocations that can refuse no token any more when no token lives
    /// longer than `maxLifetime` s (docs/serve.md §10): every token they refused has expired.
    /// - Parameters:
    ///   - now: seconds since the epoch.
    ///   - maxLifetime: the longest a token lives (`exp` − `iat`), plus the leeway, in s.
    /// - Returns: how many were removed.
    /// - Throws: `CatalogError` when the database cannot be written.
    package func prune(now: Int64, maxLifetime: Int64) throws -> Int {
        try store.write { try store.revocationsTable.deleteSpent(now: now, maxLifetime: maxLifetime) }
    }

    /// Replaces the copy of the hub's revocations with `revocations`, in one transaction: a `serve --hub`
    /// restarted while its hub is down enforces them from its first request (docs/serve.md §10).
    /// - Throws: `CatalogError` when the database cannot be written.
    package func replaceHubCopy(with revocations: [TokenRevocation]) throws {
        try store.write {
            try store.revocationsTable.deleteAll(source: "hub")
            for revocation in revocations { try store.revocationsTable.upsert(revocation, source: "hub") }
        }
    }
}
