import Foundation
import LandmarkCatalog

extension ServeServer {
    // MARK: Erasure records in a POST (docs/protocol.md §6)

    /// The 403 for a POST whose erasure records the token may not send (`ErasureRule.mayErase`: a user
    /// token only its own user's), naming the first such record; nil when it may send them all.
    func refuseErasures(_ erasures: [ErasureRecord], _ request: HTTPRequest) -> HTTPReply? {
        guard !erasures.isEmpty else { return nil }
        let writer = request.user.flatMap { try? UserID.normalize($0) } ?? ""
        guard let i = erasures.firstIndex(where: { !ErasureRule.mayErase(userHash: $0.userHash, writer: writer, edge: request.edge) })
        else { return nil }
        return error(
            403, "insufficient_scope", "erasure \(i) is of another user; a user token may erase its own user only; nothing was written",
            field: "erasures[\(i)].userHash")
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
