/// The six kinds of JSON value (RFC 8259 §3: https://www.rfc-editor.org/rfc/rfc8259#section-3).
public enum JSONKind: Sendable, Hashable, CustomStringConvertible {
    case object, array, string, number, bool, null

    /// The kind with its article, for messages: `an object`, `an array`, `a string`, `a number`,
    /// `a boolean`, `null`.
    public var description: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        }
    }
}

/// A JSON number (RFC 8259 §6), kept as written so that nothing is lost.
///
/// Equality and hashing compare all three properties, so `1.0` and `1` are different numbers;
/// compare `doubleValue` or `int64Value` to compare values.
public struct JSONNumber: Sendable, Hashable {
    /// The number exactly as written in the input, e.g., `-116.166868` or `1E+2`.
    public var literal: String
    /// The value when the literal is an integer (no fraction, no exponent) that fits `Int64`
    /// (−9223372036854775808 … 9223372036854775807); `nil` otherwise, e.g., for `1.0`, `1e2` or
    /// `9223372036854775808`.
    public var int64Value: Int64?
    /// The nearest `Double` (IEEE 754 binary64, rounded to nearest, ties to even, as `strtod(3)` in
    /// the C locale).
    ///
    /// RFC 8259 §6 allows any range, so a huge exponent gives ±infinity (`1e400`) and a tiny one gives
    /// ±0 (`1e-400`); `-0` gives −0.0.
    public var doubleValue: Double

    /// Creates a number from its three properties, which the caller keeps consistent.
    public init(literal: String, int64Value: Int64?, doubleValue: Double) {
        self.literal = literal
        self.int64Value = int64Value
        self.doubleValue = doubleValue
    }

    /// Parses a literal that follows the `number` rule of RFC 8259 §6 exactly (no surrounding
    /// whitespace, no `+`, no leading zeros, no `.5`, no `NaN`); `nil` otherwise.
    public init?(literal: String) {
        let reader = JSONPullReader(bytes: Array(literal.utf8), options: JSONPullReader.Options())
        guard let number = try? reader.readNumber(), (try? reader.finish()) != nil,
            number.literal == literal
        else { return nil }
        self = number
    }
}

/// One member of a JSON object: a key, its value, and where the key stood in the input.
public struct JSONMember: Sendable, Equatable {
    /// The key, with its escapes decoded.
    public var key: String
    /// The value.
    public var value: JSONValue
    /// The position of the key's opening quote (for values built in code: any position you like).
    public var position: SourcePosition

    /// Creates a member.
    public init(key: String, value: JSONValue, position: SourcePosition) {
        self.key = key
        self.value = value
        self.position = position
    }
}

/// A JSON value (RFC 8259 §3).
///
/// Objects keep their members in input order, duplicates included.
///
/// Equality is structural and exact: member order and positions count, numbers compare by
/// ``JSONNumber`` (literal included), strings by `String` equality.
///
/// Not declared `indirect`: arrays and objects already keep their elements in heap storage, and boxing
/// every string and number as well cost about 13% of the time of `JSONPullReader/readValue()`.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// The kind of this value.
    public var kind: JSONKind {
        switch self {
        case .null: .null
        case .bool: .bool
        case .number: .number
        case .string: .string
        case .array: .array
        case .object: .object
        }
    }

    /// Compact JSON text for this value (RFC 8259): no whitespace, object members in their order
    /// (duplicates kept), numbers as their literal, strings escaped as RFC 8259 §7 requires.
    ///
    /// Only `"` and `\` and the control characters U+0000…U+001F are escaped (`\b`, `\f`, `\n`, `\r`,
    /// `\t`, else `\u00XX` in lowercase hex); everything else, non-ASCII included, is written as UTF-8.
    /// Reading the result back gives an equal value (positions aside).
    /// - Returns: The JSON text.
    public func serialized() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        JSONValue.write(self, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func write(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.literal.utf8)
        case .string(let s): writeString(s, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, member) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                write(member.value, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ s: String, to out: inout [UInt8]) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
