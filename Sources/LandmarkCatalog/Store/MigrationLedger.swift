/// The rules of a migration ledger, shared by the catalog's migrator (SQLite, `schema_migrations`) and
/// the hub's (PostgreSQL, `hub_schema_migrations`): which applied rows a binary refuses, and what state
/// each migration is in.
///
/// Only the storage differs between the two (docs/cli.md §11, docs/hub.md §4).
package enum MigrationLedger {
    /// One applied row of a ledger.
    package struct Row: Sendable {
        package var description: String?
        package var checksum: String
        package var appliedAt: String

        package init(description: String? = nil, checksum: String, appliedAt: String) {
            self.description = description
            self.checksum = checksum
            self.appliedAt = appliedAt
        }
    }

    /// Why a binary refuses a ledger.
    package enum Refusal: Error, Equatable {
        /// An applied version this binary does not know: the database is newer than the program.
        case unknownVersion(Int, known: Int)
        /// An applied migration whose file changed since (its checksum differs).
        case changed(fileName: String, applied: String, binary: String)
    }

    /// The first refusal, in version order, or nil when every applied row is a known, unchanged migration.
    package static func refusal(_ rows: [Int: Row], migrations: [Migration]) -> Refusal? {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, row) in rows.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else { return .unknownVersion(version, known: migrations.last?.version ?? 0) }
            guard migration.checksum == row.checksum else {
                return .changed(fileName: migration.fileName, applied: row.checksum, binary: migration.checksum)
            }
        }
        return nil
    }

    /// Every migration the binary knows and every one the ledger has, with its state, refusing nothing:
    /// a changed migration shows the ledger's checksum (what was applied), an unknown one is listed last.
    package static func statuses(_ rows: [Int: Row], migrations: [Migration]) -> [MigrationStatus] {
        var ledger = rows
        var result = migrations.map { m -> MigrationStatus in
            guard let row = ledger.removeValue(forKey: m.version) else {
                return MigrationStatus(version: m.version, description: m.description, checksum: m.checksum, appliedAt: nil, state: .pending)
            }
            return MigrationStatus(
                version: m.version, description: m.description, checksum: row.checksum, appliedAt: row.appliedAt,
                state: row.checksum == m.checksum ? .applied : .changed)
        }
        result += ledger.sorted { $0.key < $1.key }.map {
            MigrationStatus(
                version: $0.key, description: $0.value.description ?? "", checksum: $0.value.checksum,
                appliedAt: $0.value.appliedAt, state: .unknown)
        }
        return result
    }
}
