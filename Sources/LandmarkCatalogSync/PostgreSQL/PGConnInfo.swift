internal import CLibPQ
import Foundation
import LandmarkCatalog

/// A libpq connection string taken apart with `PQconninfoParse`: the options it sets explicitly, and the
/// passwords it holds, so that messages can be redacted before anyone sees them.
///
/// Both forms libpq accepts are understood, exactly as libpq reads them: a URI
/// (`postgresql://user:secret@host:5432/db?sslmode=require`, percent-decoded) or keyword/value pairs
/// (`host=h dbname=db password='se cret'`). Options the string leaves out (host, user, password, sslmode…)
/// are filled in later by libpq itself from `PG*` environment variables, a service file
/// (`service=`, `PGSERVICEFILE`) and compiled-in defaults; a password from `~/.pgpass` / `PGPASSFILE`
/// (`passfile=`) is read at connect time. libpq "Connection Strings" and "Parameter Key Words"
/// (https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING), "The Password File" (https://www.postgresql.org/docs/15/libpq-pgpass.html),
/// "The Connection Service File" (https://www.postgresql.org/docs/15/libpq-pgservice.html).
struct PGConnInfo: Sendable {
    /// Every option the string sets, as (keyword, value), in libpq's keyword order.
    var options: [(keyword: String, value: String)]
    /// Texts that must never appear in a message: the password as parsed, its raw (still percent-encoded)
    /// form in a URI, and `PGPASSWORD`.
    ///
    /// Longest first, so a longer secret is masked before its substrings.
    var secrets: [String]

    /// Parses `conninfo`.
    /// - Throws: `PGError` (`.invalidConnectionString`) when libpq cannot parse it (or it holds a NUL
    ///   byte, where C would silently cut it), or it sets an `sslmode` libpq does not know. libpq's message
    ///   quotes fragments of the string, which may hold a password, so every quoted part is masked —
    ///   except the name in "invalid connection option" and "invalid URI query parameter", a keyword.
    init(parsing conninfo: String) throws {
        guard !conninfo.utf8.contains(0) else {
            throw PGError(kind: .invalidConnectionString, message: "invalid connection string: it holds a NUL byte")
        }
        var failure: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(conninfo, &failure) else {
            defer { if let failure { PQfreemem(failure) } }
            let text = (failure.map { String(cString: $0) } ?? "out of memory").trimmingWhitespace()
            let namesKeyword = ["invalid connection option \"", "invalid URI query parameter: \""].contains { text.hasPrefix($0) }
            throw PGError(
                kind: .invalidConnectionString,
                message: "invalid connection string: " + (namesKeyword ? text : Self.maskQuoted(text)))
        }
        defer { PQconninfoFree(parsed) }
        var options: [(keyword: String, value: String)] = []
        var option = parsed
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                options.append((String(cString: keyword), String(cString: value)))
            }
            option += 1
        }
        self.options = options
        // libpq checks sslmode only when it connects, and then it is "cannot connect": say it here.
        if let mode = options.last(where: { $0.keyword == "sslmode" })?.value, !Self.sslModes.contains(mode) {
            throw PGError(
                kind: .invalidConnectionString,
                message: "invalid connection string: sslmode \"\(mode)\" is not one of \(Self.sslModes.joined(separator: ", "))")
        }
        var secrets = options.filter { $0.keyword == "password" }.map(\.value) + Self.rawURIPasswords(conninfo)
        if let environment = ProcessInfo.processInfo.environment["PGPASSWORD"] { secrets.append(environment) }
        self.secrets = Array(Set(secrets.filter { !$0.isEmpty })).sorted { $0.count > $1.count }
    }

    /// The values libpq 15 accepts for `sslmode` ("SSL Support", https://www.postgresql.org/docs/15/libpq-ssl.html).
    static let sslModes = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]

    /// The value the string sets for `keyword`, or nil when it does not set it.
    func value(_ keyword: String) -> String? { options.last { $0.keyword == keyword }?.value }

    /// `text` with every secret replaced by `********`.
    func redact(_ text: String) -> String {
        secrets.reduce(text) { $0.replacingOccurrences(of: $1, with: "********") }
    }

    /// Replaces every `"…"` part of a libpq message with `"…"`.
    static func maskQuoted(_ text: String) -> String {
        var result = ""
        var inQuote = false
        for character in text {
            if character == "\"" {
                result += inQuote ? "…\"" : "\""
                inQuote.toggle()
            } else if !inQuote {
                result.append(character)
            }
        }
        return inQuote ? result + "…" : result
    }

    /// The passwords of a URI as written and percent-decoded (`user:p%40ss@host` gives `p%40ss` and
    /// `p@ss`; also the `password=` query parameter, which wins over the user info when both are given),
    /// for redacting a message that might echo any of them.
    static func rawURIPasswords(_ conninfo: String) -> [String] {
        guard let scheme = ["postgresql://", "postgres://"].first(where: { conninfo.hasPrefix($0) }) else { return [] }
        let rest = conninfo.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        var found: [String] = []
        if let at = authority.lastIndex(of: "@") {
            let userinfo = authority[..<at]
            if let colon = userinfo.firstIndex(of: ":") { found.append(String(userinfo[userinfo.index(after: colon)...])) }
        }
        if let question = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: question)...].split(separator: "&") where pair.hasPrefix("password=") {
                found.append(String(pair.dropFirst("password=".count)))
            }
        }
        return found + found.compactMap { $0.removingPercentEncoding }
    }
}
