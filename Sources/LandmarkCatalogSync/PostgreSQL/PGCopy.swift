internal import CLibPQ
import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// Bulk loading with `COPY … FROM STDIN` in text format: `PQputCopyData` in chunks of about 64 KiB,
/// `PQputCopyEnd`, then `PQgetResult` for the outcome. libpq "Functions Associated with the COPY Command"
/// (https://www.postgresql.org/docs/15/libpq-copy.html); SQL "COPY", text format (https://www.postgresql.org/docs/15/sql-copy.html).
extension PGConnection {
    /// Size of the chunks handed to `PQputCopyData`, in bytes.
    static let copyChunkBytes = 64 * 1024

    /// Loads `rows` with `sql`, a `COPY table (columns…) FROM STDIN` in text format (the default), one
    /// value per column, `nil` for NULL.
    ///
    /// The rows are encoded as they are read (`PGCopyText`): memory stays at one chunk whatever the row
    /// count.
    ///
    /// The load is one statement: all rows or none. Run it inside `transaction` to combine it with others.
    /// - Parameters:
    ///   - sql: the `COPY … FROM STDIN` statement (no parameters: COPY takes none).
    ///   - rows: the rows, each with as many values as the statement names columns.
    ///   - timeout: the deadline of each wait for the server — starting the copy, each chunk, the final
    ///     answer — not of the whole load, so a long healthy load is never cut off and a stalled one is.
    /// - Returns: the number of rows loaded (the `COPY n` tag).
    /// - Throws: `PGError` — `.server` for the server's refusal (bad value, constraint, missing table);
    ///   `.client` when a value holds a NUL byte (the copy is aborted, nothing is loaded) or `sql` is not a
    ///   `COPY FROM STDIN`; `.timedOut` (the connection is closed when the copy cannot be ended cleanly);
    ///   `.lostConnection`.
    @discardableResult
    func copyIn<Rows: Sequence>(sql: String, rows: Rows, timeout: Duration? = nil) throws -> Int
    where Rows.Element == [PGValue?] {
        var iterator = rows.makeIterator()
        return try copyIn(sql: sql, timeout: timeout) { buffer in
            guard let row = iterator.next() else { return false }
            do throws(PGError) {
                try PGCopyText.appendRow(row, to: &buffer)
            } catch {
                throw PGError(kind: .client, message: error.message, statement: sql, target: target)
            }
            return true
        }
    }

    /// Loads rows that `produce` writes straight into COPY's text format (``PGCopyText``): each call
    /// appends one row, newline included, to the buffer and returns true, or returns false when there
    /// are no more rows.
    ///
    /// For bulk loads that read their values as bytes (no `PGValue` per value).
    ///
    /// When `produce` throws, the copy is aborted (nothing is loaded) and its error rethrown. Otherwise
    /// as ``copyIn(sql:rows:timeout:)``.
    /// - Returns: the number of rows loaded (the `COPY n` tag).
    /// - Throws: what `produce` throws; `PGError` as ``copyIn(sql:rows:timeout:)`` does.
    @discardableResult
    func copyIn(sql: String, timeout: Duration? = nil, produce: (inout [UInt8]) throws -> Bool) throws -> Int {
        let limit = timeout ?? commandTimeout
        let conn = try liveHandle(statement: sql)
        try sendParameterised(conn, sql: sql, params: [])
        var deadline = ContinuousClock.now + limit
        try flush(conn, statement: sql, deadline: deadline, timeout: limit)
        guard let first = try nextResult(conn, statement: sql, deadline: deadline, timeout: limit) else {
            throw lost(conn, statement: sql)
        }
        guard PQresultStatus(first) == PGRES_COPY_IN else {
            // An error (no such table), or a statement that is not COPY FROM STDIN: read it to the end.
            _ = try finish(conn, statement: sql, deadline: deadline, timeout: limit, pending: first)
            throw PGError(kind: .client, message: "not a COPY … FROM STDIN statement", statement: sql, target: target)
        }
        PQclear(first)
        var chunk: [UInt8] = []
        chunk.reserveCapacity(Self.copyChunkBytes + 4096)
        var refusal: (any Error)?
        while true {
            do {
                guard try produce(&chunk) else { break }
            } catch {
                refusal = error
                break
            }
            if chunk.count >= Self.copyChunkBytes {
                try putCopyData(conn, chunk, statement: sql, timeout: limit)
                chunk.removeAll(keepingCapacity: true)
            }
        }
        if refusal == nil && !chunk.isEmpty { try putCopyData(conn, chunk, statement: sql, timeout: limit) }
        // Ending with an error message makes the server abort the COPY: nothing is loaded.
        let reason = refusal.map { ($0 as? PGError)?.message ?? "the client stopped the copy: \($0)" }
        try putCopyEnd(conn, failure: reason, statement: sql, timeout: limit)
        deadline = ContinuousClock.now + limit
        do {
            let result = try finish(conn, statement: sql, deadline: deadline, timeout: limit)
            if let refusal { throw refusal }
            return result.affectedRows
        } catch let error as PGError where refusal != nil && error.kind == .server {
            throw refusal ?? error  // the server only echoes our reason for aborting
        }
    }

    /// Queues `bytes` as copy data, waiting (bounded) while libpq's buffer is full, then flushes.
    private func putCopyData(_ conn: OpaquePointer, _ bytes: [UInt8], statement: String, timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        try bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            let data = UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
            while true {
                let queued = PQputCopyData(conn, data, Int32(buffer.count))
                if queued == 1 { break }
                if queued < 0 { try copyRefused(conn, statement: statement, timeout: timeout) }
                try waitWritable(conn, statement: statement, deadline: deadline, timeout: timeout)
            }
        }
        try flush(conn, statement: statement, deadline: deadline, timeout: timeout)
    }

    /// Ends the copy (`PQputCopyEnd`, with `failure` as the reason to abort it, or nil to commit the data).
    private func putCopyEnd(_ conn: OpaquePointer, failure: String?, statement: String, timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let queued = PQputCopyEnd(conn, failure)
            if queued == 1 { break }
            if queued < 0 { try copyRefused(conn, statement: statement, timeout: timeout) }
            try waitWritable(conn, statement: statement, deadline: deadline, timeout: timeout)
        }
        try flush(conn, statement: statement, deadline: deadline, timeout: timeout)
    }

    /// libpq refused copy data: the server has already ended the copy with an error (a bad value in an
    /// earlier chunk) or the connection broke.
    ///
    /// Throws the server's error.
    private func copyRefused(_ conn: OpaquePointer, statement: String, timeout: Duration) throws {
        if PQstatus(conn) == CONNECTION_BAD { throw lost(conn, statement: statement) }
        let message = Self.oneLine(String(cString: PQerrorMessage(conn)))
        _ = try finish(conn, statement: statement, deadline: ContinuousClock.now + timeout, timeout: timeout)
        throw PGError(
            kind: .client, message: message.isEmpty ? "the copy was refused" : message,
            statement: statement, target: target)
    }

    /// Waits until the socket takes more data, reading input meanwhile.
    private func waitWritable(
        _ conn: OpaquePointer, statement: String, deadline: ContinuousClock.Instant,
        timeout: Duration
    ) throws {
        switch Self.waitSocket(PQsocket(conn), events: Int16(POLLIN | POLLOUT), until: deadline, cancellation: cancellation) {
        case .ready: break
        case .expired: throw expire(statement: statement, timeout: timeout)
        case .failed(let reason): throw lost(conn, statement: statement, reason: reason)
        case .cancelled: throw stopped(statement: statement)
        }
        guard PQconsumeInput(conn) == 1 else { throw lost(conn, statement: statement) }
    }
}

/// COPY's text format, for `copyIn`: one line per row, values separated by a tab, `\N` for NULL, and in
/// values a backslash, tab, newline or carriage return written as `\\`, `\t`, `\n`, `\r` — the characters
/// that "must be preceded by a backslash if they appear as part of a column value" (SQL "COPY", File
/// Formats, Text Format).
///
/// Every other byte, UTF-8 included, goes as it is. A value can never read as `\N` or the end marker
/// `\.`: its own backslashes are doubled.
enum PGCopyText {
    /// Appends `row` as one line (values, tabs, a final newline) to `buffer`.
    /// - Throws: `PGError` (`.client`) when a value holds a NUL byte, which PostgreSQL text cannot store.
    static func appendRow(_ row: [PGValue?], to buffer: inout [UInt8]) throws(PGError) {
        for (index, value) in row.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: "\t")) }
            try appendValue(value, to: &buffer)
        }
        buffer.append(UInt8(ascii: "\n"))
    }

    /// Appends one value (`\N` for nil), escaped.
    /// - Throws: `PGError` (`.client`) for a NUL byte.
    static func appendValue(_ value: PGValue?, to buffer: inout [UInt8]) throws(PGError) {
        guard let value else {
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "N"))
            return
        }
        try appendEscaped(value.textForm.utf8, to: &buffer)
    }

    /// Appends a decimal integer (no `String` made), or `\N` for nil.
    @inline(__always)
    static func appendInteger(_ value: Int64?, to buffer: inout [UInt8]) {
        guard let value else {
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "N"))
            return
        }
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for the 20 digits of UInt64.max
        let count = withUnsafeMutableBytes(of: &digits) { raw -> Int in
            var n = 0
            repeat {
                raw[n] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                n += 1
            } while magnitude > 0
            return n
        }
        withUnsafeBytes(of: &digits) { raw in
            for i in stride(from: count - 1, through: 0, by: -1) { buffer.append(raw[i]) }
        }
    }

    /// Appends text given as UTF-8 bytes, escaped (or `\N` for nil).
    /// - Throws: `PGError` (`.client`) for a NUL byte.
    @inline(__always)
    static func appendText(_ bytes: UnsafeBufferPointer<UInt8>?, to buffer: inout [UInt8]) throws(PGError) {
        guard let bytes else {
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(UInt8(ascii: "N"))
            return
        }
        try appendEscaped(bytes, to: &buffer)
    }

    /// Appends `bytes` with COPY's text escapes: `\\`, `\t`, `\n`, `\r`; a NUL byte is refused.
    @inline(__always)
    private static func appendEscaped<Bytes: Sequence<UInt8>>(_ bytes: Bytes, to buffer: inout [UInt8]) throws(PGError) {
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\\"):
                buffer.append(byte)
                buffer.append(byte)
            case UInt8(ascii: "\t"):
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(UInt8(ascii: "t"))
            case UInt8(ascii: "\n"):
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"):
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(UInt8(ascii: "r"))
            case 0: throw PGError(kind: .client, message: "a COPY value holds a NUL byte, which PostgreSQL text cannot store")
            default: buffer.append(byte)
            }
        }
    }

    /// One row as text (for tests and messages).
    /// - Throws: `PGError` (`.client`) for a NUL byte.
    static func encodeRow(_ row: [PGValue?]) throws(PGError) -> String {
        var buffer: [UInt8] = []
        try appendRow(row, to: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
