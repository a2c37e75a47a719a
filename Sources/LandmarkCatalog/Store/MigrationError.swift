/// Why migrations cannot run: typed, so callers and tests match cases, not message text.
///
/// Mapped to a ``CatalogError`` (and its exit status) in one place, `CatalogError.init(_:path:)`.
public enum MigrationError: Error, Sendable, Equatable {
    /// A migration file is not named `NNNN_description.sql` (a bug in this binary: exit 70).
    case badFileName(String, reason: String)
    /// Two migration files share a version (exit 70).
    case duplicateVersion(Int, String, String)
    /// An applied migration's text changed since (exit 73).
    case changed(fileName: String, applied: String, binary: String)
    /// The database has a migration applied that this binary does not know: it is newer (exit 73).
    case newerDatabase(version: Int, known: Int)
    /// The file holds another application's tables and no ledger (exit 73).
    case foreignDatabase
    /// A migration's SQL failed; it was rolled back with its ledger row (exit 70).
    case failed(fileName: String, error: SQLiteError)
}

extension CatalogError {
    /// The message, hint and exit status of a migration failure for the database at `path`.
    public init(_ error: MigrationError, path: String) {
        switch error {
        case .badFileName(let name, let reason):
            self.init(.software, "bad migration file name '\(name)': \(reason)")
        case .duplicateVersion(let version, let a, let b):
            self.init(.software, "two migrations have version \(version): \(a) and \(b)")
        case .changed(let name, let applied, let binary):
            self.init(
                .cantCreate,
                "migration \(name) was changed after it was applied (checksum \(applied) in the database, \(binary) in this binary), \(path)",
                hint: "never edit a shipped migration; add a new one instead")
        case .newerDatabase(let version, let known):
            self.init(
                .cantCreate,
                "database has migration \(version) applied, which this catalog binary does not know (it knows up to \(known)), \(path)",
                hint: "the database was written by a newer catalog; upgrade this binary")
        case .foreignDatabase:
            self.init(
                .cantCreate, "not a catalog database (it holds another application's tables and no schema_migrations ledger), \(path)",
                hint: "point --db at a catalog database, or at a new file")
        case .failed(let name, let sqliteError):
            self.init(.software, "migration \(name) failed: \(sqliteError), \(path)")
        }
    }
}
