/// What last-writer-wins decides for one incoming row against the stored one (docs/merge-rules.md §2).
public enum LWWDecision: String, Sendable, Equatable, CaseIterable {
    /// Nothing is stored under the key: the incoming row is stored.
    case insert
    /// The incoming stamp is greater: the incoming row replaces the stored one.
    case replace
    /// The incoming stamp is smaller: an old delivery, ignored.
    case stale
    /// The same stamp and the same content: the same row delivered again, ignored.
    case duplicate
    /// The same stamp, different content (two writers sharing a node id), settled by the fixed rule
    /// for the incoming row: it replaces the stored one.
    case tieWon = "tie-won"
    /// The same, settled for the stored row: the incoming one is ignored.
    case tieLost = "tie-lost"

    /// Whether the incoming row is written.
    public var applies: Bool { self == .insert || self == .replace || self == .tieWon }
    /// Whether this was a tie (equal stamps, different content).
    public var isTie: Bool { self == .tieWon || self == .tieLost }
}

/// The one last-writer-wins rule of this catalog, used by every merge path (landmarks, positions, the
/// hub): the row with the greater order key wins, the key being (`updatedAt` as an instant in ms,
/// `counter`, `node` as UTF-8 bytes); on equal keys the tombstone wins, else the greater content.
///
/// The winner is the maximum of a total order on (stamp, deleted, content), so merging is commutative,
/// associative and idempotent: any set of deliveries, in any order, any number of times, leaves the
/// same row (Shapiro et al., "Conflict-free Replicated Data Types", 2011: a last-writer-wins register).
public enum LastWriterWins {
    /// The tie rule, as messages and documentation state it.
    public static let tieRule = "equal stamps, different content: the tombstone wins, else the greater content"

    /// Decides for one incoming row.
    ///
    /// - Parameters:
    ///   - incoming: the incoming row's stamp.
    ///   - incomingDeleted: whether the incoming row is a tombstone.
    ///   - stored: the stored row's, or nil when there is none.
    ///   - compareContent: orders the incoming content against the stored one (called only when the
    ///     stamps and flags are equal; for landmarks the canonical JSON bytes, for positions (page,
    ///     landmark)). Must be a total order, the same on every node.
    /// - Returns: what becomes of the incoming row.
    public static func decide(
        incoming: HLCStamp, incomingDeleted: Bool, stored: (stamp: HLCStamp, deleted: Bool)?,
        compareContent: () -> ContentOrder
    ) -> LWWDecision {
        guard let stored else { return .insert }
        if incoming != stored.stamp { return stored.stamp < incoming ? .replace : .stale }
        if incomingDeleted != stored.deleted { return incomingDeleted == tombstoneWinsTie ? .tieWon : .tieLost }
        switch compareContent() {
        case .same: return .duplicate
        case .greater: return greaterContentWinsTie ? .tieWon : .tieLost
        case .less: return greaterContentWinsTie ? .tieLost : .tieWon
        }
    }

    /// How two contents order.
    public enum ContentOrder: Sendable { case less, same, greater }

    /// Orders two values by `<`.
    public static func order<T: Comparable>(_ a: T, _ b: T) -> ContentOrder { a < b ? .less : (a == b ? .same : .greater) }

    /// Orders two byte strings lexicographically (unsigned bytes, as `memcmp` and SQL's `COLLATE "C"`).
    public static func order<A: Sequence<UInt8>, B: Sequence<UInt8>>(bytes a: A, _ b: B) -> ContentOrder {
        var i = a.makeIterator()
        var j = b.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return .same
            case (nil, _): return .less
            case (_, nil): return .greater
            case (let x?, let y?): if x != y { return x < y ? .less : .greater }
            }
        }
    }

    /// The tie rule as data — the one place it is stated (docs/merge-rules.md §3).
    ///
    /// ``decide(incoming:incomingDeleted:stored:compareContent:)`` and every SQL statement that settles ties (the hub's upserts, its quarantine, its release
    /// order) are made from these two values, so flipping one flips every node and the hub alike. On equal order keys, a tombstone beats a live row
    /// (`true`), or a live row beats a tombstone.
    public static let tombstoneWinsTie = true
    /// On equal order keys and equal tombstone flags, the greater content wins (`true`), or the lesser.
    public static let greaterContentWinsTie = true

    /// The same rule as an SQL predicate, for upserts that decide inside the database (the hub, where
    /// concurrent pushes meet): true when the row `incoming` beats the row `stored`.
    ///
    /// The order key is a row-value comparison (`(a, b) > (c, d)`, alike in SQLite ≥ 3.15 and
    /// PostgreSQL: https://sqlite.org/rowvalue.html, PostgreSQL "Row Constructor Comparison"); the tie
    /// is ``sqlTieWins(_:over:content:)``. The tombstone column is `deleted` (booleans order false < true
    /// in PostgreSQL, 0 < 1 in SQLite).
    ///
    /// - Parameters:
    ///   - incoming: the incoming row's alias (`excluded`).
    ///   - stored: the stored row's alias (the table name).
    ///   - content: the content expressions in order for a row alias, e.g. `{ ["\($0).page"] }` (text
    ///     compared with its column's collation, which must be byte order: `COLLATE "C"` in PostgreSQL).
    /// - Returns: the predicate, an SQL boolean expression.
    public static func sqlIncomingWins(incoming: String, stored: String, content: (String) -> [String]) -> String {
        func key(_ alias: String) -> String { "(\(alias).updated_ms, \(alias).counter, \(alias).node)" }
        return
            "(\(key(incoming)) > \(key(stored)) OR (\(key(incoming)) = \(key(stored)) AND \(sqlTieWins(incoming, over: stored, content: content))))"
    }

    /// The tie rule as an SQL predicate: true when row `a` beats row `b` whose order keys are equal —
    /// `deleted` first (by ``tombstoneWinsTie``), then each content expression (by
    /// ``greaterContentWinsTie``), lexicographically.
    public static func sqlTieWins(_ a: String, over b: String, content: (String) -> [String]) -> String {
        let terms =
            [("\(a).deleted", "\(b).deleted", tombstoneWinsTie)]
            + zip(content(a), content(b)).map { ($0, $1, greaterContentWinsTie) }
        func beats(_ terms: ArraySlice<(String, String, Bool)>) -> String {
            guard let (x, y, greaterWins) = terms.first else { return "FALSE" }
            let op = greaterWins ? ">" : "<"
            let rest = terms.dropFirst()
            return rest.isEmpty ? "\(x) \(op) \(y)" : "(\(x) \(op) \(y) OR (\(x) = \(y) AND \(beats(rest))))"
        }
        return "(" + beats(terms[...]) + ")"
    }

    /// An SQL `ORDER BY` list that puts the winning row of each key first: the order key descending,
    /// then the tie rule (`deleted`, then each content expression, each in its winning direction).
    /// - Parameter content: the content expressions, unqualified.
    /// - Returns: the comma-separated `ORDER BY` terms.
    public static func sqlWinnerFirst(content: [String]) -> String {
        (["updated_ms DESC", "counter DESC", "node DESC", "deleted \(tombstoneWinsTie ? "DESC" : "ASC")"]
            + content.map { "\($0) \(greaterContentWinsTie ? "DESC" : "ASC")" }).joined(separator: ", ")
    }
}

extension PositionRecord {
    /// The tie rule's content order: the greater page, then the greater landmark (null lowest).
    func compareContent(page storedPage: Int64, landmark storedLandmark: Int64?) -> LastWriterWins.ContentOrder {
        if page != storedPage { return page < storedPage ? .less : .greater }
        return LastWriterWins.order(landmark ?? Int64.min, storedLandmark ?? Int64.min)
    }
}
