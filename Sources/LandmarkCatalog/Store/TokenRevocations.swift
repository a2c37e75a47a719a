/// The bearer-token revocations of this database (`catalog token revoke`, docs/serve.md §10): what
/// `catalog serve` refuses, read again whenever `PRAGMA data_version` moves.
///
/// Each call is one transaction.
package struct TokenRevocations {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    package init(_ store: CatalogStore) { self.store = store }

    /// Every revocation in force, by kind and subject.
    /// - Throws: `CatalogError` when the database cannot be read.
    package func all() throws -> [TokenRevocation] {
        try store.read { try store.revocationsTable.all() }
    }

    /// Records `revocation` (replacing one of the same kind and subject), in one transaction.
    /// - Throws: `CatalogError` when the database cannot be written.
    package func revoke(_ revocation: TokenRevocation) throws {
        try store.write { try store.revocationsTable.upsert(revocation) }
    }

    /// Removes the revocation of `kind` and `subject`, in one transaction.
    /// - Returns: whether there was one.
    /// - Throws: `CatalogError` when the database cannot be written.
    package func lift(kind: TokenRevocation.Kind, subject: String) throws -> Bool {
        try store.write { try store.revocationsTable.delete(kind: kind, subject: subject) }
    }
}
