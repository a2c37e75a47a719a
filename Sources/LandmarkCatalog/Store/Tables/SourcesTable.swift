/// Per-source state (`sync_sources`, one row per source this database has synced with, by its key: an
/// absolute path, a URL without its password, a hub's connection string without it): the cursor stored
/// with each merge (docs/architecture.md §3), the last good sync and the last attempt. Its row type, its
/// column map and every statement that touches it.

extension CatalogStore {
    /// One source as `status` shows it (a `sync_sources` row, with what `status` adds).
    public struct SourceStatus: Sendable {
        public var source: String
        /// `file`, `stdin`, `http`, `log` or `hub`.
        public var kind: String?
        /// The last good sync (UTC, RFC 3339).
        public var lastSuccess: String?
        /// The last outcome: `merged`, `not-modified` or `failed`.
        public var outcome: String?
        /// The last attempt (UTC, RFC 3339), its exit status and its error.
        public var lastAttempt: String?
        public var lastStatus: Int?
        public var lastError: String?
        /// The saved remote whose source this is, if one is.
        public var remote: String?
        /// Whether the last sync run that ended had it, or a saved remote names it; a source synced
        /// once (a typo, a one-off file) or a removed remote is kept here but not in use.
        public var inUse = true
    }
}

/// `sync_sources`' columns, in select-list order.
package enum SourceColumn: Int32, TableColumn {
    case source, kind, cursor, lastSuccessAt, lastOutcome, lastAttemptAt, lastStatus, lastError

    package static let tableName = "sync_sources"
}

extension CatalogStore.SourceStatus {
    /// Decodes a row selected with ``SourceColumn/selectList``.
    init(row s: Statement) {
        self.init(
            source: s.text(SourceColumn.source) ?? "", kind: s.text(SourceColumn.kind), lastSuccess: s.text(SourceColumn.lastSuccessAt),
            outcome: s.text(SourceColumn.lastOutcome), lastAttempt: s.text(SourceColumn.lastAttemptAt),
            lastStatus: s.optionalInt(SourceColumn.lastStatus).map(Int.init), lastError: s.text(SourceColumn.lastError))
    }
}

/// `sync_sources`' statements on one connection; call inside the store's `read` or `write`.
package struct SourcesTable {
    let db: Connection

    /// Every source, by key.
    func all() throws -> [CatalogStore.SourceStatus] {
        var sources: [CatalogStore.SourceStatus] = []
        try db.forEachRow(sql: "SELECT \(SourceColumn.selectList) FROM sync_sources ORDER BY source") {
            sources.append(CatalogStore.SourceStatus(row: $0))
        }
        return sources
    }

    /// One source; nil when it never synced.
    func source(_ key: String) throws -> CatalogStore.SourceStatus? {
        try db.firstRow(sql: "SELECT \(SourceColumn.selectList) FROM sync_sources WHERE source = ?", [.text(key)]) {
            CatalogStore.SourceStatus(row: $0)
        }
    }

    /// The cursor stored with the source's last merge.
    func cursor(_ key: String) throws -> SourceCursor? {
        try db.firstRow(sql: "SELECT \(SourceColumn.selectList) FROM sync_sources WHERE source = ?", [.text(key)]) {
            SourceCursor(text: $0.text(SourceColumn.cursor))
        } ?? nil
    }

    /// Every source of one kind with its cursor, by key.
    package func cursors(kind: String) throws -> [(source: String, cursor: SourceCursor?)] {
        var rows: [(String, SourceCursor?)] = []
        try db.forEachRow(sql: "SELECT \(SourceColumn.selectList) FROM sync_sources WHERE kind = ? ORDER BY source", [.text(kind)]) { s in
            rows.append((s.text(SourceColumn.source) ?? "", SourceCursor(text: s.text(SourceColumn.cursor))))
        }
        return rows
    }

    /// Records a good sync: the cursor, the outcome, the time (ms since the epoch), no error.
    func noteSuccess(_ key: String, kind: String, cursor: SourceCursor?, outcome: String, at now: Int64) throws {
        try db.execute(
            sql: """
                INSERT INTO sync_sources (source, kind, cursor, last_success_at, last_outcome, last_attempt_at, last_status, last_error)
                VALUES (?1, ?2, ?3, ?4, ?5, ?4, 0, NULL)
                ON CONFLICT (source) DO UPDATE SET kind = excluded.kind, cursor = excluded.cursor, last_success_at = excluded.last_success_at,
                    last_outcome = excluded.last_outcome, last_attempt_at = excluded.last_attempt_at, last_status = 0, last_error = NULL
                """,
            [.text(key), .text(kind), cursor.map { .text($0.text) } ?? .null, .text(Timestamp.format(milliseconds: now)), .text(outcome)])
    }

    /// Records a failed attempt (the cursor and the last good sync are kept).
    func noteFailure(_ key: String, kind: String, at now: Int64, status: Int32, message: String) throws {
        try db.execute(
            sql: """
                INSERT INTO sync_sources (source, kind, last_outcome, last_attempt_at, last_status, last_error)
                VALUES (?1, ?2, ?6, ?3, ?4, ?5)
                ON CONFLICT (source) DO UPDATE SET kind = excluded.kind, last_outcome = excluded.last_outcome,
                    last_attempt_at = excluded.last_attempt_at, last_status = excluded.last_status, last_error = excluded.last_error
                """,
            [
                .text(key), .text(kind), .text(Timestamp.format(milliseconds: now)), .integer(Int64(status)), .text(message),
                .text(SourceReport.Outcome.failed.rawValue),
            ])
    }

    /// Gives source `to` the row of `from` (cursor, kind, last sync and attempt), unless `to` has one.
    func copy(_ from: String, to: String) throws {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO sync_sources (source, kind, cursor, last_success_at, last_outcome, last_attempt_at, last_status, last_error)
                SELECT ?2, kind, cursor, last_success_at, last_outcome, last_attempt_at, last_status, last_error
                FROM sync_sources WHERE source = ?1
                """,
            [.text(from), .text(to)])
    }

    /// Forgets a source (its remote was removed).
    func delete(_ key: String) throws {
        try db.execute(sql: "DELETE FROM sync_sources WHERE source = ?", [.text(key)])
    }
}

extension CatalogStore {
    /// `sync_sources`' statements on this store's connection.
    package var sourceTable: SourcesTable { SourcesTable(db: connection) }
}
