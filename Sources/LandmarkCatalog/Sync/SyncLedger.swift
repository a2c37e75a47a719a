import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The sync run ledger and the per-source bookkeeping a sync writes (`sync_runs`, `sync_run_sources`,
/// `sync_sources`), and the runs noted beside the sync lock when the database could not be written.
extension CatalogStore {
    /// Notes a run beside the sync lock when the ledger cannot be written (the database busy): the next
    /// run moves the line into the ledger (replacing the run's `running` row when it has one).
    func noteRunBeside(started: Int64, sources: [String], outcome: String, error: CatalogError, status: Int32? = nil, runID: Int64? = nil) {
        guard path != ":memory:" else { return }
        var w = JSONWriter()
        w.raw("{\"exitStatus\":")
        w.int(Int64(status ?? error.exitStatus))
        w.raw(",\"finished\":")
        w.int(wallClock.nowMilliseconds())
        if let runID {
            w.raw(",\"id\":")
            w.int(runID)
        }
        w.raw(",\"message\":")
        w.string(error.message)
        w.raw(",\"outcome\":")
        w.string(outcome)
        w.raw(",\"sources\":[")
        for (i, source) in sources.enumerated() {
            if i > 0 { w.byte(0x2C) }
            w.string(source)
        }
        w.raw("],\"started\":")
        w.int(started)
        w.raw("}")
        SyncLock.noteSkipped(databasePath: path, line: String(decoding: w.bytes, as: UTF8.self))
    }

    func noteSourceSuccess(_ locator: SourceLocator, cursor: SourceCursor?, outcome: String, at now: Int64) throws {
        let time = Timestamp.format(milliseconds: now)
        try connection.execute(
            sql: """
                INSERT INTO sync_sources (source, kind, cursor, last_success_at, last_outcome, last_attempt_at, last_status, last_error)
                VALUES (?1, ?2, ?3, ?4, ?5, ?4, 0, NULL)
                ON CONFLICT (source) DO UPDATE SET kind = excluded.kind, cursor = excluded.cursor, last_success_at = excluded.last_success_at,
                    last_outcome = excluded.last_outcome, last_attempt_at = excluded.last_attempt_at, last_status = 0, last_error = NULL
                """, [.text(locator.description), .text(locator.kindName), cursor.map { .text($0.text) } ?? .null, .text(time), .text(outcome)])
    }

    func noteSourceFailure(_ locator: SourceLocator, error: CatalogError) throws {
        guard locator != .standardInput else { return }
        try write {
            try connection.execute(
                sql: """
                    INSERT INTO sync_sources (source, kind, last_outcome, last_attempt_at, last_status, last_error)
                    VALUES (?1, ?2, 'failed', ?3, ?4, ?5)
                    ON CONFLICT (source) DO UPDATE SET kind = excluded.kind, last_outcome = 'failed', last_attempt_at = excluded.last_attempt_at,
                        last_status = excluded.last_status, last_error = excluded.last_error
                    """,
                [
                    .text(locator.description), .text(locator.kindName), .text(Timestamp.format(milliseconds: wallClock.nowMilliseconds())),
                    .integer(Int64(error.exitStatus)), .text(error.message),
                ])
        }
    }

    /// Moves the runs that found the lock held, and noted themselves beside it, into the ledger.
    func recordSkippedRuns() throws {
        for line in SyncLock.takeSkipped(databasePath: path) {
            guard let members = JSONValue.parseObject(line) else { continue }
            var fields: [String: JSONValue] = [:]
            for m in members { fields[m.key] = m.value }
            guard case .number(let s)? = fields["started"], let started = s.int64Value,
                case .number(let f)? = fields["finished"], let finished = f.int64Value
            else { continue }
            var sources = "[]"
            if let list = fields["sources"] { sources = list.serialized() }
            let message: String? = { if case .string(let m)? = fields["message"] { return m } else { return nil } }()
            let outcome: String = { if case .string(let o)? = fields["outcome"] { return o } else { return "busy" } }()
            let status: Int64 = { if case .number(let n)? = fields["exitStatus"], let v = n.int64Value { return v } else { return 75 } }()
            let id: SQLValue = { if case .number(let n)? = fields["id"], let v = n.int64Value { return .integer(v) } else { return .null } }()
            try write {
                // A run that got the lock but could not write its end replaces its own `running` row.
                if case .integer = id { try connection.execute(sql: "DELETE FROM sync_runs WHERE id = ?", [id]) }
                try connection.execute(
                    sql: """
                        INSERT INTO sync_runs (id, started_at, finished_at, sources, outcome, exit_status, message, duration_ms)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    [
                        id, .text(Timestamp.format(milliseconds: started)), .text(Timestamp.format(milliseconds: finished)), .text(sources),
                        .text(outcome), .integer(status), message.map(SQLValue.text) ?? .null, .integer(finished - started),
                    ])
            }
        }
    }

    /// Records a run as `running` as soon as it holds the lock, so a run that dies (SIGKILL, a power
    /// cut) leaves a trace; the next run marks such rows `interrupted`.
    /// - Returns: the run's ledger id.
    func recordRunStart(started: Int64, sources: [String]) throws -> Int64 {
        try write {
            try connection.execute(
                sql: """
                    UPDATE sync_runs SET outcome = 'interrupted', exit_status = -1,
                        message = 'the run ended before it finished (the process was killed, or the machine stopped)'
                    WHERE outcome = 'running'
                    """)
            var w = JSONWriter()
            w.byte(0x5B)
            for (i, s) in sources.enumerated() {
                if i > 0 { w.byte(0x2C) }
                w.string(s)
            }
            w.byte(0x5D)
            try connection.execute(
                sql: "INSERT INTO sync_runs (started_at, finished_at, sources, outcome, exit_status) VALUES (?1, ?1, ?2, 'running', 0)",
                [.text(Timestamp.format(milliseconds: started)), .text(String(decoding: w.bytes, as: UTF8.self))])
            return connection.lastInsertRowID
        }
    }

    func recordRun(
        started: Int64, sources: [String], reports: [SourceReport], outcome: String, status: Int32, message: String?,
        counts: MergeCounts = MergeCounts(), runID: Int64? = nil
    ) throws {
        var w = JSONWriter()
        w.byte(0x5B)
        for (i, s) in sources.enumerated() {
            if i > 0 { w.byte(0x2C) }
            w.string(s)
        }
        w.byte(0x5D)
        let finished = wallClock.nowMilliseconds()
        try write {
            if let runID { try connection.execute(sql: "DELETE FROM sync_runs WHERE id = ?", [.integer(runID)]) }
            let counters = MergeCounts.fields.map { _ in "?" }.joined(separator: ", ")
            try connection.execute(
                sql: """
                    INSERT INTO sync_runs (id, started_at, finished_at, sources, outcome, exit_status, message, duration_ms, \(MergeCounts.columnList))
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, \(counters))
                    """,
                [
                    runID.map(SQLValue.integer) ?? .null, .text(Timestamp.format(milliseconds: started)),
                    .text(Timestamp.format(milliseconds: finished)),
                    .text(String(decoding: w.bytes, as: UTF8.self)), .text(outcome), .integer(Int64(status)), message.map(SQLValue.text) ?? .null,
                    .integer(finished - started),
                ] + counts.sqlValues)
            let run = connection.lastInsertRowID
            for (i, r) in reports.enumerated() {
                try connection.execute(
                    sql: """
                        INSERT INTO sync_run_sources (run_id, position, source, outcome, exit_status, bytes, duration_ms, message, \(MergeCounts.columnList))
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, \(counters))
                        """,
                    [
                        .integer(run), .integer(Int64(i)), .text(r.source), .text(r.outcome.rawValue), .integer(Int64(r.error?.exitStatus ?? 0)),
                        .integer(r.bytes), .integer(r.durationMilliseconds), r.error.map { .text($0.message) } ?? .null,
                    ] + r.counts.sqlValues)
            }
        }
    }
}
