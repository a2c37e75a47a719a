import Foundation
import LandmarkCatalog

extension ServeServer {
    // MARK: Repair (docs/protocol.md §6b)

    /// Answers `POST /v1/repair`, which the caller has checked carries an edge token.
    ///
    /// Merges the message's position rows and erasure records as a pushing node's POST is merged (one
    /// transaction), then answers with this server's message and its digest after. Nothing is kept
    /// between requests: the key and horizon come with each one.
    func repair(_ request: HTTPRequest) -> HTTPAction {
        if request.bodyTooLarge {
            return .reply(error(413, "body_too_large", "the body is over \(options.limits.bodyBytes) bytes"))
        }
        var dryRun = false
        if let text = request.query("dryRun") {
            guard text == "1" || text == "true" else {
                return .reply(error(400, "invalid_parameter", "dryRun must be 1 or true", field: "dryRun"))
            }
            dryRun = true
        }
        var message: RepairMessage
        do {
            message = try RepairMessage(decoding: request.body)
        } catch let failure {
            return .reply(error(400, "malformed_message", "the body is not a repair message (docs/repair.md §4): \(failure)"))
        }
        let opening = message.key != nil
        if let refusal = fillSession(&message, request) { return .reply(refusal) }
        var positions: [PositionRecord] = []
        var erasures: [ErasureRecord] = []
        if !message.rows.isEmpty {
            let body: DevicePositionsBody
            do {
                body = try DevicePositionsBody.decode(message.rows, maxRows: .max)
            } catch let e {
                return .reply(error(400, e.code, "the message's rows: \(e.message)", field: e.field.map { "rows." + $0 }))
            }
            positions = body.positions
            erasures = body.erasures
        }
        // Landmark rows are not taken through the device door (docs/protocol.md §6): skipped, as a
        // pushing node never sends them.
        if !dryRun, !positions.isEmpty || !erasures.isEmpty {
            do {
                let result = try writeLock.withLock {
                    try DeviceRows(writer).mergeDevicePositions(
                        positions, erasures: erasures, source: "serve repair (edge \(request.user ?? ""))",
                        maxDriftMilliseconds: options.maxDriftMilliseconds)
                }
                stateLock.withLock { writeFailing = false }
                polls.noteCursor(result.highWater)
                options.afterPostCommit?()
                polls.poke()
                metrics.applied(result.outcomes.filter { $0 == .applied }.count)
            } catch let failure {
                stateLock.withLock { writeFailing = true }
                return .reply(unavailable(failure))
            }
        }
        let answered: (answer: [UInt8], digest: StateDigest)
        var headers = [("Content-Type", RepairOverHTTP.mediaType)]
        do {
            answered = try readers.with { store in
                // Read before the answer's reads: whatever commits later lies past these cursors.
                if opening {
                    let points = try DeviceRows(store).cursorPoints()
                    headers.append((RepairOverHTTP.cursorsHeader, "\(databaseID):\(points.landmarks) \(databaseID):\(points.positions)"))
                }
                return try RepairOverHTTP.answer(message, store: store)
            }
        } catch let failure {
            return .reply(unavailable(failure))
        }
        headers.append((RepairOverHTTP.digestHeader, RepairOverHTTP.digestText(answered.digest)))
        return .reply(HTTPReply(status: 200, headers: headers, body: answered.answer))
    }

    /// Gives `message` the session key and horizon of the request's headers when it carries none (every
    /// message but the opening one); the 400 when a header is missing or malformed.
    private func fillSession(_ message: inout RepairMessage, _ request: HTTPRequest) -> HTTPReply? {
        if message.key == nil {
            guard let text = request.header(RepairOverHTTP.keyHeader), let key = RepairOverHTTP.key(hex: text) else {
                return error(
                    400, "invalid_field", "a repair message after the opening one needs the session key: 32 hex digits",
                    field: RepairOverHTTP.keyHeader)
            }
            message.key = key
        }
        if message.horizon == nil {
            guard let text = request.header(RepairOverHTTP.horizonHeader), let horizon = RepairOverHTTP.horizon(text) else {
                return error(
                    400, "invalid_field", "a repair message after the opening one needs the session's horizon: ms since the epoch",
                    field: RepairOverHTTP.horizonHeader)
            }
            message.horizon = horizon
        }
        return nil
    }
}
