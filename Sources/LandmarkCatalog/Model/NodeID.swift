/// A node id: the last tie-breaker of every last-writer-wins stamp (docs/merge-rules.md §1) — 1–64
/// characters of `A–Z a–z 0–9 . _ -`, compared as bytes.
///
/// The one place that rule is written: `init --node`, snapshot and log rows, hub rows and remote names
/// (which follow the same rule) all check here.
public struct NodeID: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// The id, or nil when `rawValue` is not 1–64 characters of `A–Z a–z 0–9 . _ -`.
    public init?(rawValue: String) {
        guard Self.isValid(utf8: rawValue.utf8) else { return nil }
        self.rawValue = rawValue
    }

    /// The id.
    /// - Throws: `CatalogError.usage` (64) naming `what` (`node id`, `remote name`) and the rule.
    public init(validating text: String, what: String = "node id") throws {
        guard let id = NodeID(rawValue: text) else {
            throw CatalogError(.usage, "invalid \(what) '\(text)': use \(Self.rule)")
        }
        self = id
    }

    /// The rule in words, for messages.
    public static let rule = "1–64 characters of A–Z a–z 0–9 . _ -"

    /// Whether `bytes` (UTF-8) is a valid node id.
    @inline(__always) public static func isValid<C: Collection<UInt8>>(utf8 bytes: C) -> Bool {
        !bytes.isEmpty && bytes.count <= 64 && bytes.allSatisfy(isIDByte)
    }

    /// Whether `b` may appear in a node id: `A–Z a–z 0–9 . _ -`.
    @inline(__always) static func isIDByte(_ b: UInt8) -> Bool {
        (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 46 || b == 95 || b == 45
    }

    public var description: String { rawValue }
}

extension HLCStamp {
    /// A stamp read from outside (a snapshot or log row, a hub row), or nil when a part is not valid: a
    /// time no RFC 3339 timestamp names (outside ``Timestamp/representable``: it could never be written to
    /// a snapshot), a counter outside 0…``HLCStamp/maxCounter``, or a node id that is not a ``NodeID``.
    ///
    /// The one validating initialiser; ``init(wallMilliseconds:counter:node:)`` trusts its caller.
    public init?(validatingWall wall: Int64, counter: Int64, node: String) {
        guard Self.isValidWall(wall), Self.isValidCounter(counter), NodeID(rawValue: node) != nil else { return nil }
        self.init(wallMilliseconds: wall, counter: counter, node: node)
    }

    /// Whether `wall` (ms since the epoch, UTC) is a time an RFC 3339 timestamp names (years 0000–9999).
    public static func isValidWall(_ wall: Int64) -> Bool { Timestamp.representable.contains(wall) }

    /// Whether `counter` is in 0…``maxCounter``.
    public static func isValidCounter(_ counter: Int64) -> Bool { (0...maxCounter).contains(counter) }
}
