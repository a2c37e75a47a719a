import Foundation
import LandmarkCatalog

extension ServeServer {
    // MARK: Erasing (docs/protocol.md §6a)

    /// Answers `DELETE /v1/users/me` (a user token's user) or `/v1/users/ID` (an edge token, or a user token).
    ///
    /// Erases the user (docs/erasure.md) in one transaction, forgets the operator page's record of them, and
    /// wakes the long-polls. A user token may name only its own user; an edge token's subject is a node, so
    /// `/me` with it is a 400 (docs/protocol.md §6a).
    func erase(_ request: HTTPRequest) -> HTTPAction {
        guard let target = DeviceRoute.erasureTarget(path: request.path), let tokenUser = request.user else {
            return .reply(error(404, "not_found", "no such route; see docs/protocol.md"))
        }
        if target == "me" && request.edge {
            return .reply(
                error(
                    400, "invalid_parameter",
                    "an edge token names a node, not a user: erase a user with DELETE /v1/users/ID (docs/protocol.md §6a)",
                    field: "user"))
        }
        let user: String
        do {
            user = try UserID.normalize(target == "me" ? tokenUser : target)
        } catch let e {
            return .reply(error(400, "invalid_parameter", (e as? CatalogError)?.message ?? "not a user id", field: "user"))
        }
        guard ErasureRule.mayErase(userHash: ErasureRule.userHash(user), writer: tokenUser, edge: request.edge) else {
            return .reply(error(403, "insufficient_scope", "a user token may erase its own user only (DELETE /v1/users/me)"))
        }
        let summary: ErasureSummary
        do {
            summary = try writeLock.withLock { try UserErasure(writer).eraseUser(user) }
        } catch let failure {
            stateLock.withLock { writeFailing = true }
            return .reply(unavailable(failure))
        }
        stateLock.withLock { writeFailing = false }
        // In force before the answer: the user's other devices are refused from their next request (docs/serve.md §2).
        let userHash = ErasureRule.userHash(user)
        verifier.erased.note(userHash: userHash, milliseconds: summary.stamp.wallMilliseconds)
        activity.forget(userHashes: [userHash])
        if let high = try? writeLock.withLock({ try writer.changeSequence() }) { polls.noteCursor(high) }
        polls.poke()
        var w = JSONWriter(reservingCapacity: 192)
        w.raw("{\"erased\":true,\"userHash\":")
        w.string(userHash)
        w.raw(",\"updatedAt\":")
        Timestamp.write(milliseconds: summary.stamp.wallMilliseconds, to: &w)
        w.raw(",\"counter\":")
        w.int(summary.stamp.counter)
        w.raw(",\"node\":")
        w.string(summary.stamp.node)
        w.raw(",\"removedRow\":")
        w.bool(summary.removedRow)
        // The CLI's sentence (one source): a typo'd id, or a user already erased here, must not pass unseen.
        if let warning = summary.warning {
            w.raw(",\"warning\":")
            w.string(warning)
        }
        w.raw("}\n")
        return .reply(HTTPReply(status: 200, headers: [("Content-Type", "application/json; charset=utf-8")], body: w.bytes))
    }
}
