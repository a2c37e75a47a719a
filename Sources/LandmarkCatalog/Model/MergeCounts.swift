/// What merging did (or, in a dry run, would do).
///
/// On every path `seen == applied + stale + quarantined + notAllowed + erased + expired` (erasure records
/// included on both sides); ties are also counted as applied or stale, whichever way the rule settled them.
public struct MergeCounts: Sendable, Equatable {
    /// Landmark rows read.
    public var landmarksSeen = 0
    /// Landmark rows that replaced (or created) the stored row.
    public var landmarksApplied = 0
    /// Position rows read.
    public var positionsSeen = 0
    /// Position rows that replaced (or created) the stored row.
    public var positionsApplied = 0
    /// Rows that did not replace the stored row: older, repeated, or tie losers.
    public var stale = 0
    /// Rows whose stamp equalled the stored one with different content, settled by the fixed rule.
    public var ties = 0
    /// Rows stamped beyond the allowed drift: kept in quarantine, not applied.
    public var quarantined = 0
    /// Rows of a kind the source may not write (its remote's `--allow`, docs/trust.md §4): not applied.
    public var notAllowed = 0
    /// Erasure records read (docs/erasure.md).
    public var erasuresSeen = 0
    /// Erasure records that were stored (each deleting its user's older rows).
    public var erasuresApplied = 0
    /// Rows of an erased user stamped at or before the erasure: refused (docs/erasure.md §1).
    public var erased = 0
    /// Rows stamped before the collection horizon for a key with no row: refused (docs/erasure.md §4).
    public var expired = 0

    public init() {}

    /// All rows seen, erasure records included.
    public var seen: Int { landmarksSeen + positionsSeen + erasuresSeen }
    /// All rows applied, erasure records included.
    public var applied: Int { landmarksApplied + positionsApplied + erasuresApplied }

    package static func + (a: MergeCounts, b: MergeCounts) -> MergeCounts {
        var c = a
        for field in fields { c[keyPath: field.keyPath] += b[keyPath: field.keyPath] }
        return c
    }

    /// One counter: its key in JSON (`sync --json`, `log --json`), its column in the run ledger
    /// (`sync_runs` and `sync_run_sources` alike) and the property that holds it.
    public struct Field: Sendable {
        public let json: String
        public let column: String
        // A key path literal of a struct's stored property is immutable and thread-safe to share.
        nonisolated(unsafe) public let keyPath: WritableKeyPath<MergeCounts, Int>
    }

    /// Every counter, once: the ledger's statements, its reader, the sum of two counts and the JSON
    /// outputs are made from this table, so a new counter is a property, a row here and a migration
    /// adding its column to the two ledger tables (docs/architecture.md §5.3).
    public static let fields: [Field] = [
        Field(json: "landmarksSeen", column: "landmarks_seen", keyPath: \.landmarksSeen),
        Field(json: "landmarksApplied", column: "landmarks_applied", keyPath: \.landmarksApplied),
        Field(json: "positionsSeen", column: "positions_seen", keyPath: \.positionsSeen),
        Field(json: "positionsApplied", column: "positions_applied", keyPath: \.positionsApplied),
        Field(json: "stale", column: "stale", keyPath: \.stale),
        Field(json: "ties", column: "ties", keyPath: \.ties),
        Field(json: "quarantined", column: "quarantined", keyPath: \.quarantined),
        Field(json: "notAllowed", column: "not_allowed", keyPath: \.notAllowed),
        Field(json: "erasuresSeen", column: "erasures_seen", keyPath: \.erasuresSeen),
        Field(json: "erasuresApplied", column: "erasures_applied", keyPath: \.erasuresApplied),
        Field(json: "erased", column: "erased", keyPath: \.erased),
        Field(json: "expired", column: "expired", keyPath: \.expired),
    ]

    /// The counters' ledger columns, comma-separated, in ``fields`` order.
    package static var columnList: String { fields.map(\.column).joined(separator: ", ") }

    /// The counters as SQL values, in ``fields`` order.
    package var sqlValues: [SQLValue] { Self.fields.map { .integer(Int64(self[keyPath: $0.keyPath])) } }

    /// Reads the counters from `statement`'s columns `first`, `first + 1`, … (selected with ``columnList``).
    package init(statement s: Statement, from first: Int) {
        self.init()
        for (i, field) in Self.fields.enumerated() { self[keyPath: field.keyPath] = Int(s.int(first + i)) }
    }
}
