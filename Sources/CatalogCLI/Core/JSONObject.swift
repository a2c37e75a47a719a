import LandmarkCatalog

/// A JSON object built field by field and written with its keys sorted (the tool's JSON outputs all
/// sort their keys), so a command need not order its fields by hand.
struct JSONObject {
    private var fields: [(key: String, value: [UInt8])] = []

    /// A string, or `null`.
    mutating func set(_ key: String, _ value: String?) {
        var w = JSONWriter(reservingCapacity: 64)
        w.string(value)
        fields.append((key, w.bytes))
    }

    /// An integer, or `null`.
    mutating func set(_ key: String, _ value: Int64?) {
        var w = JSONWriter(reservingCapacity: 24)
        w.int(value)
        fields.append((key, w.bytes))
    }

    mutating func set(_ key: String, _ value: Int) { set(key, Int64(value)) }

    /// An array of strings.
    mutating func set(_ key: String, strings: [String]) {
        var w = JSONWriter(reservingCapacity: 64)
        w.byte(0x5B)
        for (n, string) in strings.enumerated() {
            if n > 0 { w.byte(0x2C) }
            w.string(string)
        }
        w.byte(0x5D)
        fields.append((key, w.bytes))
    }

    /// `true` or `false`.
    mutating func set(_ key: String, _ value: Bool) { fields.append((key, Array((value ? "true" : "false").utf8))) }

    /// JSON text written as it is (an array or object built elsewhere, or stored JSON).
    mutating func set(_ key: String, json: [UInt8]) { fields.append((key, json)) }

    mutating func set(_ key: String, json: String) { fields.append((key, Array(json.utf8))) }

    /// The count fields of a merge.
    mutating func set(counts c: MergeCounts) {
        for field in MergeCounts.fields { set(field.json, c[keyPath: field.keyPath]) }
    }

    /// The object, keys in byte order.
    var bytes: [UInt8] {
        var w = JSONWriter()
        w.byte(0x7B)
        for (n, f) in fields.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
            if n > 0 { w.byte(0x2C) }
            w.key(f.key)
            w.bytes += f.value
        }
        w.byte(0x7D)
        return w.bytes
    }

    /// A JSON array of `items`.
    static func array(_ items: [JSONObject]) -> [UInt8] {
        var out: [UInt8] = [0x5B]
        for (n, item) in items.enumerated() {
            if n > 0 { out.append(0x2C) }
            out += item.bytes
        }
        out.append(0x5D)
        return out
    }
}
