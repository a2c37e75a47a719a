import Foundation
import LandmarkCatalog

extension ServeServer {
    // MARK: Auth (docs/protocol.md §2)

    /// nil when the request carries a valid token (its user then set on the request), else the 401.
    func authenticate(_ request: HTTPRequest) -> HTTPReply? {
        guard let header = request.header("Authorization") else {
            metrics.refused(.missing)
            return error(
                401, "invalid_token", "this route needs Authorization: Bearer TOKEN",
                headers: ["WWW-Authenticate": #"Bearer realm="catalog""#])
        }
        let invalid = { ["WWW-Authenticate": #"Bearer realm="catalog", error="invalid_token""#] }
        // What devices send, `Bearer TOKEN`: no split, no lower-casing (the same token as below; the seven
        // characters dropped must be the seven bytes, not a space joined to a combining mark).
        let rest = header.dropFirst(7)
        let plain = header.utf8.starts(with: "Bearer ".utf8) && rest.utf8.count == header.utf8.count - 7
        var token = plain ? HTTPText.trimmingBlanks(rest) : ""
        if token.isEmpty {
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                metrics.refused(.notBearer)
                return error(401, "invalid_token", "the Authorization header is not a Bearer token", headers: invalid())
            }
            token = HTTPText.trimmingBlanks(parts[1])
        }
        switch verifier.verify(token, now: Int64(Date().timeIntervalSince1970)) {
        case .failure(let refusal):
            metrics.refused(refusal.cause)
            // An erased account has its own code, so a device can tell "gone" from "sign in again" (docs/protocol.md §2).
            let code = refusal.cause == .accountErased ? "account_erased" : "invalid_token"
            return error(401, code, refusal.reason, headers: invalid())
        case .success(let identity):
            request.user = identity.user
            request.edge = identity.isEdge
            return nil
        }
    }

    /// nil when the token's user may have this request now (counted in hand until it is finished), else the 429.
    ///
    /// Refused: over the user's requests in hand, or a POST over the user's rate (docs/serve.md §3). An edge
    /// token (a server node) is not limited.
    func admit(_ request: HTTPRequest) -> HTTPReply? {
        guard let user = request.user, !request.edge else { return nil }
        // Idle kept-alive connections count too: past the cap, this one is closed once answered, so one
        // user cannot hold the server's connections between requests (docs/serve.md §3).
        if let daemon, daemon.own(request, by: user) > options.maxRequestsPerUser { request.closeAfter = true }
        guard userLimits.enter(user) else {
            return error(
                429, "too_many_requests", "this user has \(options.maxRequestsPerUser) requests open already; try again when one is answered",
                headers: ["Retry-After": "1"])
        }
        // Counted from here, so a refusal below is let go by `finished` like any answer.
        request.holdsUserSlot = true
        if request.method == "POST", let wait = userLimits.takePost(user) {
            return error(
                429, "rate_limited",
                "more than \(options.postBurst) POSTs at once, or \(HTTPText.rate(options.postRate)) a second, for this user; try again",
                headers: ["Retry-After": String(wait)])
        }
        return nil
    }
}
