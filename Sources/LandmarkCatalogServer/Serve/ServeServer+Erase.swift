import Foundation
import LandmarkCatalog

extension ServeServer {
    // MARK: Erasing (docs/protocol.md §6a)

    /// `DELETE /v1/users/me` (the token's user) or `/v1/users/ID` (an edge token, or a user token naming
    /// its own user): erases the user (docs/erasure.md), one transaction, and wakes the long-polls.
    func erase(_ request: HTTPRequest) -> HTTPAction {
        guard let target = DeviceRoute.erasureTarget(path: request.path), let tokenUser = request.user else {
            return .reply(error(404, "not_found", "no such route; see docs/protocol.md"))
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
        if let high = try? writeLock.withLock({ try writer.changeSequence() }) { polls.noteCursor(high) }
        polls.poke()
        var w = JSONWriter(reservingCapacity: 192)
        w.raw("{\"erased\":true,\"updatedAt\":")
        Timestamp.write(milliseconds: summary.stamp.wallMilliseconds, to: &w)
        w.raw(",\"counter\":")
        w.int(summary.stamp.counter)
        w.raw(",\"node\":")
        w.string(summary.stamp.node)
        w.raw(",\"removedRow\":")
        w.bool(summary.removedRow)
        w.raw("}\n")
        return .reply(HTTPReply(status: 200, headers: [("Content-Type", "application/json; charset=utf-8")], body: w.bytes))
    }
}
