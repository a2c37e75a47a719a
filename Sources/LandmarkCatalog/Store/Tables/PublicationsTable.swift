/// What this database published as snapshot logs (docs/log-format.md §3): `log_publications` (per
/// directory, the generation and change sequence number its manifest was last written with) and
/// `log_retired_files` (files a manifest stopped naming, and when, so they are removed after the grace
/// period). Every statement that touches them.

/// One directory's last publication.
package struct Publication {
    /// The manifest's generation.
    var generation: String
    /// The change sequence number it was published through.
    var through: Int64
}

/// `log_publications`' columns, in select-list order.
package enum PublicationColumn: Int32, TableColumn {
    case directory, generation, through, publishedAt

    package static let tableName = "log_publications"
}

/// The publication tables' statements on one connection; call inside the store's `read` or `write`.
package struct PublicationsTable {
    let db: Connection

    /// The last publication to `directory` (its real path), or nil.
    func publication(directory: String) throws -> Publication? {
        try db.firstRow(sql: "SELECT \(PublicationColumn.selectList) FROM log_publications WHERE directory = ?", [.text(directory)]) { s in
            Publication(generation: s.text(PublicationColumn.generation) ?? "", through: s.int(PublicationColumn.through))
        }
    }

    /// Records a publication to `directory` at `now` (ms since the epoch), and the files it retired.
    func record(directory: String, _ publication: Publication, retired: [String], at now: Int64) throws {
        try db.execute(
            sql: """
                \(PublicationColumn.insertAllSQL)
                ON CONFLICT (directory) DO UPDATE SET generation = excluded.generation, through = excluded.through, published_at = excluded.published_at
                """,
            [.text(directory), .text(publication.generation), .integer(publication.through), .text(Timestamp.format(milliseconds: now))])
        for name in retired {
            try db.execute(
                sql: "INSERT INTO log_retired_files (directory, name, retired_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(directory), .text(name), .integer(now)])
        }
    }

    /// The files retired from `directory`, with when (ms since the epoch).
    func retiredFiles(directory: String) throws -> [String: Int64] {
        var retired: [String: Int64] = [:]
        try db.forEachRow(sql: "SELECT name, retired_at FROM log_retired_files WHERE directory = ?", [.text(directory)]) { s in
            retired[s.text(0) ?? ""] = s.int(1)
        }
        return retired
    }

    /// Forgets retired files that are gone.
    func forgetRetired(directory: String, names: Set<String>) throws {
        for name in names {
            try db.execute(sql: "DELETE FROM log_retired_files WHERE directory = ? AND name = ?", [.text(directory), .text(name)])
        }
    }

    /// How many directories this database has published to.
    func count() throws -> Int { Int(try db.scalarInt(sql: "SELECT count(*) FROM log_publications") ?? 0) }
}

extension CatalogStore {
    /// The publication tables' statements on this store's connection.
    package var publicationTable: PublicationsTable { PublicationsTable(db: connection) }
}
