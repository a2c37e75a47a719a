/// A source's position between runs, kept by the store as one opaque value per source: HTTP
/// validators, a log's generation and position, a hub's push and pull positions.
///
/// Stored as a JSON object of strings.
public struct SourceCursor: Sendable, Equatable {
    public var values: [String: String]

    public init(_ values: [String: String] = [:]) { self.values = values }

    public subscript(key: String) -> String? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// The stored text: a JSON object with sorted keys.
    var text: String {
        var w = JSONWriter()
        w.byte(0x7B)
        for (i, key) in values.keys.sorted().enumerated() {
            if i > 0 { w.byte(0x2C) }
            w.key(key)
            w.string(values[key])
        }
        w.byte(0x7D)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Parses stored text; nil for nil or text that is not an object of strings (an unreadable cursor
    /// means starting over, which merging makes safe).
    package init?(text: String?) {
        guard let text, let members = JSONValue.parseObject(text) else { return nil }
        var values: [String: String] = [:]
        for m in members {
            if case .string(let s) = m.value { values[m.key] = s }
        }
        self.values = values
    }
}
