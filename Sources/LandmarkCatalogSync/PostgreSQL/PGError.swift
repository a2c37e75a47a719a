internal import CLibPQ
import Foundation
import LandmarkCatalog

/// A five-character SQLSTATE error code, as the server reports it in `PG_DIAG_SQLSTATE` ("42P01").
///
/// An open struct, not a closed enum, so codes a later server adds still fit (like `SQLiteError.Code`).
/// The codes: Appendix A "PostgreSQL Error Codes", https://www.postgresql.org/docs/15/errcodes-appendix.html.
struct SQLState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    var rawValue: String
    init(rawValue: String) { self.rawValue = rawValue }
    init(_ rawValue: String) { self.rawValue = rawValue }

    /// The class: the first two characters ("08" for every connection exception).
    var errorClass: String { String(rawValue.prefix(2)) }
    var description: String { rawValue }

    static let undefinedTable = SQLState("42P01")
    static let uniqueViolation = SQLState("23505")
    static let invalidAuthorization = SQLState("28000")
    static let invalidPassword = SQLState("28P01")
    static let queryCanceled = SQLState("57014")
    static let adminShutdown = SQLState("57P01")
    static let crashShutdown = SQLState("57P02")
    static let cannotConnectNow = SQLState("57P03")
    static let serializationFailure = SQLState("40001")
    static let deadlockDetected = SQLState("40P01")
    static let lockNotAvailable = SQLState("55P03")
    static let invalidCatalogName = SQLState("3D000")
}

/// An error from the PostgreSQL layer: the server's SQLSTATE and messages, or a client-side failure
/// (connecting, a deadline, a broken connection), with the statement that was running.
///
/// Never holds parameter values, and never a password: connection messages are redacted with the
/// passwords found in the connection string (see `PGConnInfo.redact`). Map it to a `CatalogError`
/// with `CatalogError(_:)` (one place decides the exit status).
struct PGError: Error, Sendable, CustomStringConvertible {
    /// Where the failure happened.
    enum Kind: Sendable, Equatable {
        /// The server refused a statement; `sqlState` says why.
        case server
        /// Opening the connection failed: refused, unknown host, TLS, authentication, no such database.
        case connectFailed
        /// The connection broke while in use (the server shut down or crashed, the network went away).
        case lostConnection
        /// A client-side deadline passed (connecting, or waiting for a statement's answer).
        case timedOut
        /// Refused before reaching the server, or a misuse the server cannot report (a NUL byte in
        /// text, a `COPY` sent through `execute`, a `COMMIT` that rolled back).
        case client
        /// The connection string itself is wrong (libpq cannot parse it, an unknown keyword or URI
        /// parameter, an `sslmode` libpq does not know): a mistake to fix, not a hub to retry.
        case invalidConnectionString
    }

    var kind: Kind
    /// `PG_DIAG_SQLSTATE`; for a failed connection, the code the server sent with its refusal (28P01 for a
    /// wrong password), when it sent one.
    ///
    /// Nil for client-side failures.
    var sqlState: SQLState?
    /// The primary message (`PG_DIAG_MESSAGE_PRIMARY`), or libpq's message for a connection failure.
    var message: String
    /// `PG_DIAG_MESSAGE_DETAIL`, when the server sent one (it may quote row data, never parameters).
    var detail: String?
    /// `PG_DIAG_MESSAGE_HINT`, when the server sent one.
    var hint: String?
    /// The SQL that was running, as given (never with parameter values substituted).
    var statement: String?
    /// `PG_DIAG_STATEMENT_POSITION`: 1-based position of the error in `statement`, in characters.
    var position: Int?
    /// The server as `host:port/dbname user` (never the password), when known.
    var target: String?
    /// The server asked for a password and none was available (`PQconnectionNeedsPassword`).
    var passwordMissing = false

    init(
        kind: Kind, sqlState: SQLState? = nil, message: String, detail: String? = nil, hint: String? = nil,
        statement: String? = nil, position: Int? = nil, target: String? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.statement = statement
        self.position = position
        self.target = target
    }

    /// Builds the error from a failed `PGresult` (`PGRES_FATAL_ERROR`, `PGRES_BAD_RESPONSE`).
    ///
    /// `kind` is `.server`, or `.lostConnection` when the connection is gone (`connectionBroken`).
    init(result: OpaquePointer, statement: String?, target: String?, connectionBroken: Bool) {
        func field(_ code: Int32) -> String? {
            guard let value = PQresultErrorField(result, code) else { return nil }
            let text = String(cString: value).trimmingWhitespace()
            return text.isEmpty ? nil : text
        }
        let primary =
            field(clibpq_diag_message_primary())
            ?? PGConnection.oneLine(String(cString: PQresultErrorMessage(result)))
        self.init(
            kind: connectionBroken ? .lostConnection : .server,
            sqlState: field(clibpq_diag_sqlstate()).map(SQLState.init(rawValue:)),
            message: primary.isEmpty ? "unknown error" : primary,
            detail: field(clibpq_diag_message_detail()), hint: field(clibpq_diag_message_hint()),
            statement: statement, position: field(clibpq_diag_statement_position()).flatMap { Int($0) },
            target: target)
    }

    /// Whether the hub is unreachable rather than refusing a statement: a connection failure or loss,
    /// a deadline, or a server error of class 08 (connection exception), 57P01–57P03 (shutting down,
    /// crashed, starting up) or 57014 (cancelled, which `statement_timeout` also reports).
    var isUnavailable: Bool {
        switch kind {
        case .connectFailed, .lostConnection, .timedOut: return true
        case .client, .invalidConnectionString: return false
        case .server:
            guard let sqlState else { return false }
            return sqlState.errorClass == "08"
                || [.adminShutdown, .crashShutdown, .cannotConnectNow, .queryCanceled].contains(sqlState)
        }
    }

    /// Whether the server refused the credentials (SQLSTATE class 28), or wanted a password none supplied.
    var isAuthenticationFailure: Bool { sqlState?.errorClass == "28" || passwordMissing }

    /// `PostgreSQL error 42P01: relation "nope" does not exist — while executing `SELECT …``, with the
    /// detail and hint when present; the statement on one line, at most 160 characters.
    var description: String {
        var text: String
        switch kind {
        case .server: text = "PostgreSQL error \(sqlState?.rawValue ?? "?????"): \(message)"
        case .connectFailed: text = "cannot connect to PostgreSQL\(sqlState.map { " (\($0))" } ?? ""): \(message)"
        case .lostConnection: text = "PostgreSQL connection lost\(sqlState.map { " (\($0))" } ?? ""): \(message)"
        case .timedOut: text = "PostgreSQL timed out: \(message)"
        case .client: text = "PostgreSQL client error: \(message)"
        case .invalidConnectionString: text = message
        }
        if let detail { text += " (detail: \(detail))" }
        if let hint { text += " (hint: \(hint))" }
        if let excerpt = Self.excerpt(of: statement, position: position) { text += " — while executing `\(excerpt)`" }
        return text
    }

    /// The statement on one line, cut at 160 characters.
    ///
    /// For a long multi-line script with a known error position, the line holding the error instead
    /// (`line 12: CREATE TABLE …`).
    static func excerpt(of statement: String?, position: Int?) -> String? {
        guard let statement else { return nil }
        func cut(_ s: String) -> String { s.count > 160 ? s.prefix(160) + "…" : s }
        let lines = statement.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        let oneLine = lines.map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }.joined(separator: " ")
        guard oneLine.count > 160, lines.count > 1, let position, position > 0 else { return cut(oneLine) }
        // The position counts characters (code points) from 1; find the line it falls in.
        var consumed = 0
        for (number, line) in lines.enumerated() {
            consumed += line.unicodeScalars.count + 1
            if consumed >= position { return "line \(number + 1): " + cut(String(line).trimmingWhitespace()) }
        }
        return cut(oneLine)
    }
}

extension CatalogError {
    /// Maps a PostgreSQL error to the exit status a user can act on — the one place that decides it:
    /// unreachable hub (connection failure or loss, deadline, SQLSTATE class 08, 57P01–57P03, 57014) → 69,
    /// with a hint about `~/.pgpass` / `PGPASSFILE` when the credentials were refused (28P01, 28000);
    /// a database that does not exist (3D000) → 69 with a hint to check its name, not to wait for a retry;
    /// a role missing a GRANT (42501, insufficient_privilege) → 77 with a hint naming docs/hub.md §4;
    /// anything else → 70 (a caller that knows better maps the `PGError` itself first).
    init(_ error: PGError) {
        let place = error.target.map { ", \($0)" } ?? ""
        if error.isAuthenticationFailure {
            self.init(
                .unavailable, "PostgreSQL hub refused the login: \(error.message)\(place)",
                hint: "check the user and the password in ~/.pgpass (or the file PGPASSFILE names), mode 0600")
        } else if error.sqlState == .invalidCatalogName {
            // 69 all the same: a `serve --hub` started before its hub was created waits for it.
            self.init(
                .unavailable, "PostgreSQL hub has no such database: \(error.message)\(place)",
                hint: "check the database name in the URL or saved remote (catalog remote list), or create it (docs/hub.md)")
        } else if error.kind == .invalidConnectionString {
            self.init(
                .usage, "\(error)\(place)",
                hint:
                    "fix the connection string (libpq \"Connection Strings\": https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING)"
            )
        } else if error.isUnavailable {
            self.init(.unavailable, "\(error)\(place)", hint: "the hub is unreachable or not answering; the next run retries")
        } else if error.sqlState == SQLState("42501") {
            // insufficient_privilege: the role lacks a GRANT. Not a bug (70): this role is not permitted
            // what it asked (77, EX_NOPERM: a permission above the file system's), as serve's 401/403 are.
            self.init(
                .untrusted, "the PostgreSQL hub refused this role: \(error.message)\(place)",
                hint: "grant the edge's role what docs/hub.md §4 lists (a role with SELECT alone syncs pull-only)")
        } else {
            self.init(.software, "\(error)\(place)")  // the server's hint is already in the description
        }
    }
}
