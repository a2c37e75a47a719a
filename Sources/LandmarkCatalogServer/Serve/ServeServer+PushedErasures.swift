import Foundation
import LandmarkCatalog

extension ServeServer {
    // MARK: Erasure records in a POST (docs/protocol.md §6)

    /// The refusal of a POST whose erasure records the token may not send, naming the first such record;
    /// nil when it may send them all.
    ///
    /// - 403 `insufficient_scope` for another user's erasure with a user token (`ErasureRule.mayErase`: a
    ///   user token only its own user's).
    /// - 400 `invalid_field` (`erasures[i].updatedAt`) for a user token's erasure stamped more than the drift
    ///   allowance ahead of this server's clock: the fleet would apply it as it is (docs/erasure.md §1) and
    ///   refuse the user's rows until that time, so a user's clock far ahead is stopped where it enters.
    ///   An edge's is taken, with a warning: it may carry an erasure other nodes already applied.
    func refuseErasures(_ erasures: [ErasureRecord], _ request: HTTPRequest) -> HTTPReply? {
        guard !erasures.isEmpty else { return nil }
        let writer = request.user.flatMap { try? UserID.normalize($0) } ?? ""
        if let i = erasures.firstIndex(where: { !ErasureRule.mayErase(userHash: $0.userHash, writer: writer, edge: request.edge) }) {
            return error(
                403, "insufficient_scope", "erasure \(i) is of another user; a user token may erase its own user only; nothing was written",
                field: "erasures[\(i)].userHash")
        }
        guard !request.edge else { return nil }
        let limit = self.writer.wallClock.nowMilliseconds() &+ options.maxDriftMilliseconds
        guard let i = erasures.firstIndex(where: { $0.stamp.wallMilliseconds > limit }) else { return nil }
        return error(
            400, "invalid_field",
            "erasure \(i) is stamped \(Timestamp.format(milliseconds: erasures[i].stamp.wallMilliseconds)), more than \(options.maxDriftMilliseconds / 1000) s ahead of this server's clock; a user token's erasure is not taken from a clock that far ahead; nothing was written",
            field: "erasures[\(i)].updatedAt")
    }

    /// The answer's `erasureResults` array: one `{"userHash":…,"outcome":…}` per erasure record of the request, in
    /// its order (docs/protocol.md §6), written after `results`.
    func writeErasureResults(_ erasures: [ErasureRecord], _ outcomes: [DeviceRowOutcome], to w: inout JSONWriter) {
        w.raw(",\"erasureResults\":[")
        for (i, (record, outcome)) in zip(erasures, outcomes).enumerated() {
            if i > 0 { w.raw(",") }
            w.raw("{\"userHash\":")
            w.string(record.userHash)
            w.raw(",\"outcome\":")
            w.string(outcome.rawValue)
            w.raw("}")
        }
        w.raw("]")
    }
}
