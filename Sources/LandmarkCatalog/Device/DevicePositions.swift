/// Why a device's POST body was refused (docs/protocol.md §1): the status's code word, a message and the
/// field at fault, as a JSON path into the request (`positions[3].page`).
package struct DeviceBodyError: Error, Sendable {
    /// `malformed_json`, `invalid_field`, `too_many_rows` or `insufficient_scope`.
    package var code: String
    package var message: String
    package var field: String?
}

/// A POST body of position rows and erasure records (docs/protocol.md §6): `{"positions":[…]}`,
/// `{"positions":[…],"erasures":[…]}` or a whole snapshot document.
package struct DevicePositionsBody: Sendable {
    package var positions: [PositionRecord]
    /// The body holds landmark rows (a user token may not write them).
    package var hasLandmarks: Bool
    /// The erasure records (docs/erasure.md §2), in the request's order.
    package var erasures: [ErasureRecord] = []

    /// Each row's user, in order.
    package var users: [String] { positions.map(\.user) }
}

extension DevicePositionsBody {
    /// Decodes a POST body with the snapshot decoder's row reader (docs/snapshot-format.md §3), so a row is
    /// valid here exactly when it is valid in a snapshot file.
    ///
    /// The first error found is the answer; its field is a JSON path into the request (`positions[3].page`,
    /// `erasures[0].userHash`).
    /// - Parameters:
    ///   - bytes: the whole body.
    ///   - maxRows: more position rows and erasure records together than this are refused (`too_many_rows`).
    /// - Returns: the body's position rows and erasure records.
    /// - Throws: ``DeviceBodyError``.
    package static func decode(_ bytes: [UInt8], maxRows: Int) throws(DeviceBodyError) -> DevicePositionsBody {
        let reader = JSONPullReader(bytes: bytes, options: .init(allowTrailingCommas: false, maxDepth: 64))
        var state = SnapshotDecoder.State(source: "request")
        let batch = RowBatch(reserving: false)
        var body = DevicePositionsBody(positions: [], hasLandmarks: false)
        func firstError() -> DeviceBodyError? {
            guard let d = batch.diagnostics.first?.diagnostic else { return nil }
            var field = d.field
            for array in ["positions", "erasures"] {
                if let f = field, f.hasPrefix(array + "."), let index = d.index {
                    field = "\(array)[\(index)]." + f.dropFirst(array.count + 1)
                } else if field == array, let index = d.index {
                    field = "\(array)[\(index)]"
                }
            }
            return DeviceBodyError(code: "invalid_field", message: d.message, field: field)
        }
        do {
            guard try reader.peekKind() == .object else {
                throw DeviceBodyError(code: "malformed_json", message: "the body must be a JSON object with a positions array", field: nil)
            }
            try reader.beginObject()
            var keys: Set<String> = []
            var sawPositions = false
            var sawErasures = false
            while let (key, _) = try reader.nextKey() {
                guard keys.insert(key).inserted else {
                    throw DeviceBodyError(code: "malformed_json", message: "duplicate key '\(key)'", field: key)
                }
                switch key {
                case "positions":
                    sawPositions = true
                    body.positions = try readRows(reader, field: key, besides: body.erasures.count, maxRows: maxRows, firstError: firstError) {
                        try state.readPosition(reader, index: $0, batch: batch)
                    }
                case "erasures":
                    sawErasures = true
                    body.erasures = try readRows(reader, field: key, besides: body.positions.count, maxRows: maxRows, firstError: firstError) {
                        try state.readErasure(reader, index: $0, batch: batch)
                    }
                case "landmarks":
                    guard try reader.peekKind() == .array else {
                        throw DeviceBodyError(code: "invalid_field", message: "landmarks must be an array", field: "landmarks")
                    }
                    try reader.beginArray()
                    while try reader.nextElement() {
                        body.hasLandmarks = true
                        try reader.skipValue()
                    }
                case "format":
                    guard case .string(let s) = try reader.readValue(), s == SnapshotFormat.name else {
                        throw DeviceBodyError(code: "invalid_field", message: "format must be \"\(SnapshotFormat.name)\"", field: "format")
                    }
                case "version":
                    guard case .number(let n) = try reader.readValue(), let v = n.int64Value, v >= 1, v <= SnapshotFormat.version else {
                        throw DeviceBodyError(code: "invalid_field", message: "version must be \(SnapshotFormat.version)", field: "version")
                    }
                default:
                    try reader.skipValue()
                }
            }
            try reader.finish()
            guard sawPositions || sawErasures || body.hasLandmarks else {
                throw DeviceBodyError(code: "invalid_field", message: "missing positions", field: "positions")
            }
        } catch let error as DeviceBodyError {
            throw error
        } catch let error as JSONSyntaxError {
            throw DeviceBodyError(code: "malformed_json", message: error.description, field: nil)
        } catch let error as JSONStringContentError {
            throw DeviceBodyError(code: "malformed_json", message: error.message, field: nil)
        } catch {
            throw DeviceBodyError(code: "malformed_json", message: "the body is not valid JSON", field: nil)
        }
        return body
    }

    /// Reads the array `field` (`positions` or `erasures`), each element by `read` (given its index) as a
    /// snapshot's (docs/snapshot-format.md §3); `besides` elements of the other array were read already,
    /// and the two together are at most `maxRows`.
    private static func readRows<Row>(
        _ reader: JSONPullReader, field: String, besides: Int, maxRows: Int, firstError: () -> DeviceBodyError?,
        _ read: (Int) throws -> Row?
    ) throws -> [Row] {
        guard try reader.peekKind() == .array else {
            throw DeviceBodyError(code: "invalid_field", message: "\(field) must be an array", field: field)
        }
        try reader.beginArray()
        var rows: [Row] = []
        var index = 0
        while try reader.nextElement() {
            guard index + besides < maxRows else {
                throw DeviceBodyError(code: "too_many_rows", message: "more than \(maxRows) rows in one request", field: field)
            }
            let row = try read(index)
            if let error = firstError() { throw error }
            if let row { rows.append(row) }
            index += 1
        }
        return rows
    }
}
