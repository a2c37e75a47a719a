internal import CLibPQ
import LandmarkCatalog

/// Reading a large result without holding it: a server-side cursor fetched `batch` rows at a time.
///
/// Why a cursor (`DECLARE … NO SCROLL CURSOR` + `FETCH FORWARD n`) and not libpq's single-row mode
/// ("Retrieving Query Results Row-by-Row", https://www.postgresql.org/docs/15/libpq-single-row-mode.html; PostgreSQL 15 has no
/// chunked mode):
/// - memory is bounded by `batch` rows in one `PGresult`, and nothing else: the server produces rows only
///   when asked, whereas single-row mode allocates one `PGresult` per row and lets the server stream
///   ahead until TCP pushes back;
/// - each `FETCH` is an ordinary bounded statement, so the per-call deadline and `statement_timeout`
///   apply to every batch (a slow consumer is never mistaken for a hung server, and a hung server is
///   caught within one deadline);
/// - stopping early is a `CLOSE`, not a cancel of a statement still sending rows, and the connection is
///   free for other statements between batches;
/// - the rows come from one snapshot (the cursor lives in a transaction), which a pull wants anyway.
/// The cost is one round trip per batch, which at 1,000 rows is noise. SQL "DECLARE"
/// (https://www.postgresql.org/docs/15/sql-declare.html), "FETCH" (https://www.postgresql.org/docs/15/sql-fetch.html).
extension PGConnection {
    /// Runs the query `sql` through a cursor and calls `body` with each batch of at most `batch` rows,
    /// in order.
    ///
    /// The previous batch is released before the next is fetched (unless `body` keeps it).
    ///
    /// Outside a transaction, the cursor gets its own (`BEGIN` … `COMMIT`, rolled back on error); inside one,
    /// it uses the caller's and is closed before returning.
    /// - Parameters:
    ///   - sql: a `SELECT` or `VALUES` query (what `DECLARE CURSOR` accepts), with `$n` parameters.
    ///   - params: one value per `$n`.
    ///   - batch: rows of the first `FETCH` (and of every one without `nextBatch`), > 0.
    ///   - timeout: the deadline of each statement (`DECLARE`, each `FETCH`), not of the whole stream.
    ///   - nextBatch: given a full batch, the rows to ask for next (at least 1): a caller whose rows vary
    ///     in size keeps batches near a size in bytes.
    ///   - body: called per batch; throwing stops the stream and is rethrown.
    /// - Throws: `PGError` as `execute` does, or what `body` throws.
    func forEachBatch(
        sql: String, _ params: [PGValue?] = [], batch: Int = 1000, timeout: Duration? = nil,
        nextBatch: ((PGResult) -> Int)? = nil, _ body: (PGResult) throws -> Void
    ) throws {
        precondition(batch > 0, "batch must be positive")
        _ = try liveHandle(statement: sql)
        let ownsTransaction = !isInTransaction
        cursorSerial += 1
        let cursor = "catalog_cursor_\(cursorSerial)"
        var declared = false
        if ownsTransaction { try execute(sql: "BEGIN", timeout: timeout) }
        do {
            try execute(sql: "DECLARE \(cursor) NO SCROLL CURSOR FOR \(sql)", params, timeout: timeout)
            declared = true
            var size = batch
            while true {
                let result = try execute(sql: "FETCH FORWARD \(size) FROM \(cursor)", timeout: timeout)
                let count = result.rowCount
                if count > 0 { try body(result) }
                if count < size { break }
                if let nextBatch { size = max(1, nextBatch(result)) }
            }
            declared = false
            try execute(sql: "CLOSE \(cursor)", timeout: timeout)
            if ownsTransaction { try execute(sql: "COMMIT", timeout: timeout) }
        } catch {
            if ownsTransaction {
                if isInTransaction { _ = try? execute(sql: "ROLLBACK") }
            } else if declared, let conn = handle, PQtransactionStatus(conn) == PQTRANS_INTRANS {
                _ = try? execute(sql: "CLOSE \(cursor)")  // leave the caller's transaction as it was
            }
            throw error
        }
    }

    /// Runs the query `sql` through a cursor and calls `body` with each row, in order: `forEachBatch`
    /// row by row.
    ///
    /// At most one batch of rows is held at a time.
    /// - Throws: `PGError` as `execute` does, or what `body` throws.
    func forEachRow(
        sql: String, _ params: [PGValue?] = [], batch: Int = 1000, timeout: Duration? = nil,
        _ body: (PGRow) throws -> Void
    ) throws {
        try forEachBatch(sql: sql, params, batch: batch, timeout: timeout) { result in
            for index in 0..<result.rowCount { try body(PGRow(result: result, index: index)) }
        }
    }
}
