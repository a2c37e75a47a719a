import LandmarkCatalog

/// A JSON object built field by field and written with its keys sorted (the tool's JSON outputs all
/// sort their keys), so a command need not order its fields, or place its commas, by hand.
///
/// Every JSON object the command line writes (`--json`, `--log-format json`) is one of these; only
/// bodies the core library writes (a landmark in the app's file shape, a stored snapshot row) come in
/// as JSON text.
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

    /// An integer, or `null`.
    mutating func set(_ key: String, _ value: Int?) { set(key, value.map(Int64.init)) }

    /// A number in its shortest round-trip form (`0.25`, `1.0`, as Swift prints a `Double`), or `null`
    /// (also for infinity and NaN, which JSON cannot write).
    mutating func set(_ key: String, _ value: Double?) {
        guard let value, value.isFinite else { return setNull(key) }
        var w = JSONWriter(reservingCapacity: 24)
        w.double(value)
        fields.append((key, w.bytes))
    }

    /// `true` or `false`, or `null`.
    mutating func set(_ key: String, _ value: Bool?) {
        guard let value else { return setNull(key) }
        fields.append((key, Array((value ? "true" : "false").utf8)))
    }

    /// `null`.
    mutating func setNull(_ key: String) { fields.append((key, Array("null".utf8))) }

    /// A nested object, or `null`.
    mutating func set(_ key: String, _ object: JSONObject?) {
        guard let object else { return setNull(key) }
        fields.append((key, object.bytes))
    }

    /// An array of objects.
    mutating func set(_ key: String, objects: [JSONObject]) { fields.append((key, Self.array(objects))) }

    /// An array of strings.
    mutating func set(_ key: String, strings: [String]) {
        var w = JSONWriter(reservingCapacity: 64)
        w.stringArray(strings)
        fields.append((key, w.bytes))
    }

    /// JSON text written as it is (an array or object built elsewhere, or stored JSON).
    mutating func set(_ key: String, json: [UInt8]) { fields.append((key, json)) }

    mutating func set(_ key: String, json: String) { fields.append((key, Array(json.utf8))) }

    /// The count fields of a merge.
    mutating func set(counts c: MergeCounts) {
        for field in MergeCounts.fields { set(field.json, c[keyPath: field.keyPath]) }
    }

    /// Whether a field named `key` is set.
    func contains(_ key: String) -> Bool { fields.contains { $0.key == key } }

    /// The fields, keys in byte order.
    private var sortedFields: [(key: String, value: [UInt8])] {
        fields.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
    }

    /// `"key":value` for each field, between commas.
    private static func members(_ fields: some Sequence<(key: String, value: [UInt8])>, into w: inout JSONWriter, leadingComma: Bool) {
        for (n, f) in fields.enumerated() {
            if n > 0 || leadingComma { w.byte(0x2C) }
            w.key(f.key)
            w.bytes += f.value
        }
    }

    /// The object, keys in byte order.
    var bytes: [UInt8] {
        var w = JSONWriter()
        w.byte(0x7B)
        Self.members(sortedFields, into: &w, leadingComma: false)
        w.byte(0x7D)
        return w.bytes
    }

    /// The object's text up to the value of `key`, which the caller then streams (a long array written as
    /// it is read): `{"a":1,"key":`, the fields sorted before `key`.
    ///
    /// ``closing(after:)``, written after the value, ends the object; fields may still be set in between (a
    /// count known once the value is written). `key` itself is not set.
    func opening(before key: String) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 256)
        w.byte(0x7B)
        let before = sortedFields.filter { $0.key.utf8.lexicographicallyPrecedes(key.utf8) }
        Self.members(before, into: &w, leadingComma: false)
        if !before.isEmpty { w.byte(0x2C) }
        w.key(key)
        return w.bytes
    }

    /// The rest of the object after the streamed value of `key` (see ``opening(before:)``): `,"z":2}`, the
    /// fields sorted after `key`.
    func closing(after key: String) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 256)
        Self.members(sortedFields.filter { key.utf8.lexicographicallyPrecedes($0.key.utf8) }, into: &w, leadingComma: true)
        w.byte(0x7D)
        return w.bytes
    }

    /// A JSON array of `items`.
    static func array(_ items: [JSONObject]) -> [UInt8] { array(json: items.map(\.bytes)) }

    /// A JSON array of values written elsewhere (landmarks in the core library's shape).
    static func array(json items: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = [0x5B]
        for (n, item) in items.enumerated() {
            if n > 0 { out.append(0x2C) }
            out += item
        }
        out.append(0x5D)
        return out
    }
}
