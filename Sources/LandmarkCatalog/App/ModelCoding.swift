/// `Codable` for the two values an app shows: a ``Landmark`` in the `landmarkData.json` shape and a
/// ``CarouselPosition`` in the shape `catalog position get --json` prints (docs/swift-library.md).
///
/// Neither conformance has rules of its own. A `Landmark` is decoded by the import's own
/// `LandmarkDecoder` (required keys, ranges, `isFavourite`, the legacy `category: "Featured"`, kept
/// unknown keys) and encoded by ``LandmarkJSON``'s one writer of the ``LandmarkJSONShape/apple`` shape,
/// the bytes `catalog featured --json` prints; this file only carries JSON values between those and a
/// `Decoder` / `Encoder`.

extension Landmark {
    /// Two landmarks are equal when every field is, kept unknown keys compared as JSON members whatever
    /// their order (a `Decoder` gives them in its own order; the database keeps the file's).
    ///
    /// The fields are those of `LandmarkColumn`'s table of fields.
    public static func == (a: Landmark, b: Landmark) -> Bool {
        for column in LandmarkColumn.contentColumns {
            switch column.field {
            case .id(let p): if a[keyPath: p] != b[keyPath: p] { return false }
            case .requiredText(let p): if a[keyPath: p] != b[keyPath: p] { return false }
            case .text(let p): if a[keyPath: p] != b[keyPath: p] { return false }
            case .bool(let p): if a[keyPath: p] != b[keyPath: p] { return false }
            case .int(let p): if a[keyPath: p] != b[keyPath: p] { return false }
            case .optionalInt(let p): if a[keyPath: p] != b[keyPath: p] { return false }
            case .double(let p), .coordinate(let p, _): if a[keyPath: p] != b[keyPath: p] { return false }
            case .optionalDouble(let p): if a[keyPath: p] != b[keyPath: p] { return false }
            case .extra(let p):
                if a[keyPath: p] != b[keyPath: p] && !a.keptKeys.elementsEqual(b.keptKeys, by: ==) { return false }
            case .stamp: continue
            }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        for column in LandmarkColumn.contentColumns {
            switch column.field {
            case .id(let p): hasher.combine(self[keyPath: p])
            case .requiredText(let p): hasher.combine(self[keyPath: p])
            case .text(let p): hasher.combine(self[keyPath: p])
            case .bool(let p): hasher.combine(self[keyPath: p])
            case .int(let p): hasher.combine(self[keyPath: p])
            case .optionalInt(let p): hasher.combine(self[keyPath: p])
            case .double(let p), .coordinate(let p, _): hasher.combine(self[keyPath: p])
            case .optionalDouble(let p): hasher.combine(self[keyPath: p])
            case .extra:
                for kept in keptKeys {
                    hasher.combine(kept.key)
                    hasher.combine(kept.json)
                }
            case .stamp: continue
            }
        }
    }

    /// The kept unknown keys sorted by key, each with its compact JSON (``LandmarkJSON/keptKeys(in:)``).
    var keptKeys: [(key: String, json: String)] {
        guard var text = extraJSON else { return [] }
        return text.withUTF8 { LandmarkJSON.keptKeys(in: $0) }
    }
}

extension Landmark: Codable {
    /// Decodes one `landmarkData.json` object, with the rules of `catalog import` (docs/cli.md §2): what the
    /// import accepts with a warning is accepted here silently; what it refuses is a
    /// `DecodingError.dataCorrupted` naming the field.
    ///
    /// An absent optional key or `null` decodes as nil, `""` as `""`. Unknown keys are kept in ``extraJSON``
    /// sorted by key (a `Decoder` does not say in which order the file had them), so they survive a
    /// decode–encode round trip.
    public init(from decoder: any Decoder) throws {
        let value = try AnyJSON(from: decoder).value
        guard case .object = value else {
            throw DecodingError.typeMismatch(
                Landmark.self,
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "a landmark must be a JSON object, found \(value.kind)"))
        }
        let reader = JSONPullReader(bytes: Array(value.serialized().utf8), options: .init(allowTrailingCommas: false, maxDepth: 64))
        var landmarkDecoder = LandmarkDecoder(file: "", mode: .importRecord)
        let batch = RowBatch(reserving: false)
        try landmarkDecoder.decode(reader, index: 0, into: batch)
        if let error = batch.diagnostics.map(\.diagnostic).first(where: { $0.severity == .error }) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: error.message + (error.field.map { ", field \($0)" } ?? "")))
        }
        guard let raw = batch.landmarks.first else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a valid landmark"))
        }
        self = batch.withView(raw) { Landmark(fields: $0) }
    }

    /// Encodes the object `catalog featured --json` prints for this landmark: every key of
    /// `landmarkData.json` (a nil string as `""`, as Apple's tutorial `Landmark` needs it), plus the kept
    /// unknown keys. (So a nil string comes back as `""`: the file's shape has no null strings.)
    public func encode(to encoder: any Encoder) throws {
        let bytes = LandmarkJSON.bytes(LandmarkValue(landmark: self), shape: .apple)
        let value = try JSONPullReader(bytes: bytes, options: .init(allowTrailingCommas: false, maxDepth: 64)).readValue()
        try AnyJSON(value).encode(to: encoder)
    }
}

extension CarouselPosition {
    /// `Identifiable`: one position per user.
    public var id: String { user }
}

extension CarouselPosition: Codable {
    /// The object's keys: those of `catalog position get --json`, plus the page and landmark as stored.
    enum CodingKeys: String, CodingKey {
        case counter, currentPage, landmarkId, node, pageCount, updatedAt, user, storedPage, storedLandmarkId
    }

    /// Decodes `catalog position get --json` / `positions --json` output (or what ``encode(to:)``
    /// wrote).
    ///
    /// `updatedAt` is RFC 3339; `counter` and `node` may be absent (0, ""); without `storedPage` and
    /// `storedLandmarkId` the resolved page and landmark stand for them.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        user = try c.decode(String.self, forKey: .user)
        currentPage = try c.decodeIfPresent(Int.self, forKey: .currentPage)
        pageCount = try c.decode(Int.self, forKey: .pageCount)
        landmarkID = try c.decodeIfPresent(Int64.self, forKey: .landmarkId)
        storedPage = try c.decodeIfPresent(Int.self, forKey: .storedPage) ?? currentPage ?? 0
        storedLandmarkID = c.contains(.storedLandmarkId) ? try c.decodeIfPresent(Int64.self, forKey: .storedLandmarkId) : landmarkID
        let text = try c.decode(String.self, forKey: .updatedAt)
        guard let ms = Timestamp.parse(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: .updatedAt, in: c, debugDescription: "updatedAt must be an RFC 3339 date-time, found \(text)")
        }
        stamp = HLCStamp(
            wallMilliseconds: ms, counter: try c.decodeIfPresent(Int64.self, forKey: .counter) ?? 0,
            node: try c.decodeIfPresent(String.self, forKey: .node) ?? "")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(stamp.counter, forKey: .counter)
        try c.encode(currentPage, forKey: .currentPage)
        try c.encode(landmarkID, forKey: .landmarkId)
        try c.encode(stamp.node, forKey: .node)
        try c.encode(pageCount, forKey: .pageCount)
        try c.encode(Timestamp.format(milliseconds: stamp.wallMilliseconds), forKey: .updatedAt)
        try c.encode(user, forKey: .user)
        try c.encode(storedPage, forKey: .storedPage)
        try c.encode(storedLandmarkID, forKey: .storedLandmarkId)
    }
}

/// Any JSON value, carried through a `Decoder` or an `Encoder` as a ``JSONValue``.
///
/// Object members are sorted by their UTF-8 bytes (the order ``LandmarkJSON`` writes kept keys in).
struct AnyJSON: Codable {
    var value: JSONValue

    init(_ value: JSONValue) { self.value = value }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: Key.self) {
            var members: [JSONMember] = []
            for key in object.allKeys.sorted(by: { $0.stringValue.utf8.lexicographicallyPrecedes($1.stringValue.utf8) }) {
                members.append(
                    JSONMember(
                        key: key.stringValue, value: try object.decode(AnyJSON.self, forKey: key).value,
                        position: SourcePosition(line: 0, column: 0, offset: 0)))
            }
            value = .object(members)
            return
        }
        if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(AnyJSON.self).value) }
            value = .array(elements)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            value = .null
        } else if let b = try? single.decode(Bool.self) {
            value = .bool(b)
        } else if let i = try? single.decode(Int64.self) {
            value = .number(JSONNumber(literal: String(i), int64Value: i, doubleValue: Double(i)))
        } else if let d = try? single.decode(Double.self), d.isFinite {
            value = .number(JSONNumber(literal: "\(d)", int64Value: nil, doubleValue: d))
        } else {
            value = .string(try single.decode(String.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch value {
        case .object(let members):
            var object = encoder.container(keyedBy: Key.self)
            for member in members { try object.encode(AnyJSON(member.value), forKey: Key(stringValue: member.key)) }
        case .array(let elements):
            var array = encoder.unkeyedContainer()
            for element in elements { try array.encode(AnyJSON(element)) }
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let b):
            var single = encoder.singleValueContainer()
            try single.encode(b)
        case .number(let n):
            var single = encoder.singleValueContainer()
            if let i = n.int64Value { try single.encode(i) } else { try single.encode(n.doubleValue) }
        case .string(let s):
            var single = encoder.singleValueContainer()
            try single.encode(s)
        }
    }
}
