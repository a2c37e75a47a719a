import Foundation

// The device protocol (docs/protocol.md) in one place: the routes, the row outcomes, an answer page and
// its cursor rules, and what a client may read of a token without verifying it. `catalog serve`, the
// app's `SyncSession` and the node's `catalog+http(s)` source all use these, so a rule holds for every
// side by construction.

/// A `/v1` route (docs/protocol.md §4–§7).
package enum DeviceRoute: String, Sendable, CaseIterable {
    case healthz, readyz, landmarks, positions
    /// `/v1/users/me` (the token's user) and `/v1/users/ID` (an edge token): `DELETE` erases the user
    /// (docs/protocol.md §6a). Its path in logs and metrics is `/v1/users`, never a user id.
    case users
    /// `/v1/repair`: `POST` one repair message, answered with the server's (docs/protocol.md §6b); an edge
    /// token only.
    case repair

    /// The path on the server: `/v1/healthz`, `/v1/readyz`, `/v1/landmarks`, `/v1/positions`, `/v1/users`,
    /// `/v1/repair`.
    package var path: String { "/v1/" + rawValue }

    /// The methods it takes (any other: 405 with `Allow`).
    package var methods: [String] {
        switch self {
        case .healthz, .readyz, .landmarks: return ["GET"]
        case .positions: return ["GET", "POST"]
        case .users: return ["DELETE"]
        case .repair: return ["POST"]
        }
    }

    /// The user a `/v1/users/…` path names: `me`, or a user id; nil for another path.
    ///
    /// `path` is the request's path as the HTTP layer hands it over, its percent-escapes already decoded
    /// (libmicrohttpd unescapes the URL): it is not decoded again, so `p%2541` names the user `p%41`. An id
    /// holding `/` cannot be named in a path; it is erased with its own token (`/v1/users/me`) or
    /// `catalog user erase` (docs/protocol.md §6a).
    package static func erasureTarget(path: String) -> String? {
        let prefix = "/v1/users/"
        guard path.hasPrefix(prefix) else { return nil }
        let rest = String(path.dropFirst(prefix.count))
        guard !rest.isEmpty, !rest.contains("/") else { return nil }
        return rest
    }

    /// The path the token's own user is erased at, relative to `/v1/`.
    package static let eraseMePath = "users/me"

    /// Whether it needs a bearer token (§2); `landmarks` not when the server runs with
    /// `--public-landmarks`.
    package func needsToken(publicLandmarks: Bool) -> Bool {
        switch self {
        case .healthz, .readyz: return false
        case .landmarks: return !publicLandmarks
        case .positions, .users, .repair: return true
        }
    }

    /// The route of a request path, nil when there is none.
    package init?(path: String) {
        if Self.erasureTarget(path: path) != nil {
            self = .users
            return
        }
        guard path.hasPrefix("/v1/"), path != "/v1/users", let route = DeviceRoute(rawValue: String(path.dropFirst(4))) else { return nil }
        self = route
    }
}

/// What a POST did to one row (docs/protocol.md §6); the raw value is the answer's `outcome`.
package enum DeviceRowOutcome: String, Sendable, CaseIterable {
    /// The stored row is this row: written now, or by an earlier try of the same request.
    case applied
    /// A row with a greater stamp is stored; this one was not written.
    case stale
    /// A row with an equal stamp and other content is stored and won the tie rule.
    case tie
    /// Stamped beyond the drift allowance: held in the quarantine, not applied.
    case quarantined
    /// The row's user was erased at or after its stamp: refused, never stored (docs/erasure.md §1). The
    /// device drops it from its outbox.
    case erased
    /// Stamped before the server's collection horizon for a user with no row: refused (docs/erasure.md §4).
    /// The device re-reads its state.
    case expired
}

/// A server's cursor (docs/protocol.md §3): `DATABASE:SEQUENCE`, opaque to clients but for one rule.
package enum ServerCursor {
    /// The database a cursor names: what comes before its last colon (the whole cursor when it has none).
    package static func database(_ cursor: String) -> Substring {
        guard let colon = cursor.lastIndex(of: ":") else { return cursor[...] }
        return cursor[..<colon]
    }

    /// Whether the server behind a URL forgot what it was sent.
    ///
    /// It did when the cursor it answers with names another database than the one held (a serve restored
    /// from a backup, its database replaced, another server behind the same name), or the same database at
    /// an earlier point than the one held: a server's answer never goes back in its sequence unless its
    /// database went back (restored in a way serve could not notice, docs/protocol.md §3). Then every client
    /// pushes all of its rows again, and the merge keeps the newer of each. Nothing held: nothing forgotten.
    /// - Parameters:
    ///   - held: the cursor of the last answer merged, if any.
    ///   - answered: the cursor of this answer.
    /// - Returns: true when the two name different databases, or the answer is behind the cursor held.
    package static func serverForgot(held: String?, answered: String) -> Bool {
        guard let held else { return false }
        guard database(held) == database(answered) else { return true }
        guard let was = sequence(held), let now = sequence(answered) else { return false }
        return now < was
    }

    /// The change sequence a cursor names: what follows its last colon, when it is a whole number.
    package static func sequence(_ cursor: String) -> Int64? {
        guard let colon = cursor.lastIndex(of: ":") else { return nil }
        return Int64(cursor[cursor.index(after: colon)...])
    }
}

/// One answer of `GET /v1/positions` or `/v1/landmarks` (docs/protocol.md §4): its cursor, whether more
/// follow, and how many rows it held.
package struct AnswerPage: Sendable, Equatable {
    package var cursor: String
    package var more: Bool
    package var rows: Int

    package init(cursor: String, more: Bool, rows: Int) {
        self.cursor = cursor
        self.more = more
        self.rows = rows
    }

    /// Checks the page rules of §4 against the cursor `after` it was asked with.
    /// - Throws: `CatalogError` 65 when the page says `more` without moving its cursor (asking again would
    ///   never end).
    package func check(after: String?, server: String) throws {
        if more && cursor == after {
            throw CatalogError(.dataInvalid, "the server \(server) answered \"more\" without moving its cursor (\(cursor)) (docs/protocol.md §4)")
        }
    }

    /// Reads the envelope of an answer (its `cursor` and `more`, counting the rows without decoding them).
    /// - Throws: `CatalogError` 65 when the answer is not a JSON object with a string `cursor`.
    package static func read(_ bytes: [UInt8], server: String) throws -> AnswerPage {
        let reader = JSONPullReader(bytes: bytes, options: .init(allowTrailingCommas: false, maxDepth: 64))
        var cursor: String?
        var more = false
        var rows = 0
        do {
            try reader.beginObject()
            while let (key, _) = try reader.nextKey() {
                switch key {
                case "cursor":
                    if case .string(let text) = try reader.readValue() { cursor = text }
                case "more":
                    if case .bool(let flag) = try reader.readValue() { more = flag }
                case "positions", "landmarks":
                    guard try reader.peekKind() == .array else {
                        try reader.skipValue()
                        continue
                    }
                    try reader.beginArray()
                    while try reader.nextElement() {
                        try reader.skipValue()
                        rows += 1
                    }
                default:
                    try reader.skipValue()
                }
            }
        } catch {
            throw CatalogError(.dataInvalid, "the server \(server) answered with something that is not a page of rows (docs/protocol.md §4)")
        }
        guard let cursor else {
            throw CatalogError(.dataInvalid, "the server \(server) answered without a cursor (not a catalog serve?) (docs/protocol.md §4)")
        }
        return AnswerPage(cursor: cursor, more: more, rows: rows)
    }
}

/// The answer to `POST /v1/positions` (docs/protocol.md §6): one outcome per row, in the request's order,
/// and one per erasure record sent.
package struct PushAnswer: Sendable, Equatable {
    package var outcomes: [DeviceRowOutcome]
    /// One outcome per erasure record sent, in order; nil when the answer has no `erasureResults` (a server
    /// that does not take erasures ignored them).
    package var erasureOutcomes: [DeviceRowOutcome]? = nil

    /// Reads an answer to a POST of `rows` rows and `erasures` erasure records.
    /// - Throws: `CatalogError` 65 when it has no `results`, not one per row, `erasureResults` not one per
    ///   erasure, or an outcome §6 does not name.
    package static func read(_ data: Data, rows: Int, erasures: Int = 0, server: String) throws -> PushAnswer {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let results = object["results"] as? [[String: Any]], results.count == rows
        else {
            throw CatalogError(.dataInvalid, "the server \(server) answered POST /v1/positions without one result per row (docs/protocol.md §6)")
        }
        var answer = PushAnswer(outcomes: try outcomes(results, server: server))
        if erasures > 0, let erased = object["erasureResults"] {
            guard let erased = erased as? [[String: Any]], erased.count == erasures else {
                throw CatalogError(
                    .dataInvalid, "the server \(server) answered POST /v1/positions without one result per erasure (docs/protocol.md §6)")
            }
            answer.erasureOutcomes = try outcomes(erased, server: server)
        }
        return answer
    }

    /// Each result's `outcome`, in order.
    private static func outcomes(_ results: [[String: Any]], server: String) throws -> [DeviceRowOutcome] {
        try results.map { result in
            let text = result["outcome"] as? String ?? ""
            guard let outcome = DeviceRowOutcome(rawValue: text) else {
                throw CatalogError(.dataInvalid, "the server \(server) answered an unknown outcome \(String(reflecting: text)) (docs/protocol.md §6)")
            }
            return outcome
        }
    }

    /// How many rows had `outcome`.
    package func count(_ outcome: DeviceRowOutcome) -> Int { outcomes.filter { $0 == outcome }.count }
}

/// What a client reads of a bearer token without verifying it.
///
/// The server verifies it (docs/protocol.md §2); a client only learns whose rows it speaks for and whether
/// it is an edge token. Never used to decide what to trust.
package struct TokenPeek: Sendable, Equatable {
    /// The `sub` claim, normalized as a user id.
    package var user: String
    /// Whether `scope` (space-separated, RFC 8693 §4.2) holds `edge`.
    package var isEdge: Bool

    /// Reads the payload of a compact JWS JWT (base64url JSON, RFC 7519 §3, RFC 7515 §7.1).
    /// - Returns: nil when the token has not three parts, its payload is not a JSON object, or `sub` is not
    ///   a valid user id.
    package static func peek(_ token: String) -> TokenPeek? {
        let parts = token.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: text),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let sub = object["sub"] as? String, let user = try? UserID.normalize(sub)
        else { return nil }
        let scope = object["scope"] as? String ?? ""
        return TokenPeek(user: user, isEdge: scope.split(separator: " ").contains("edge"))
    }
}
