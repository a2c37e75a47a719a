import Foundation

/// A last-writer-wins stamp: the order key of SPEC §7, compared as (`wallMilliseconds`, `counter`, `node`).
public struct HLCStamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Physical part: ms since 1970-01-01 UTC.
    public var wallMilliseconds: Int64
    /// Logical part: orders events within one millisecond.
    public var counter: Int64
    /// The node that wrote it; the last tie-breaker.
    public var node: String

    public init(wallMilliseconds: Int64, counter: Int64, node: String) {
        self.wallMilliseconds = wallMilliseconds
        self.counter = counter
        self.node = node
    }

    public static func < (a: HLCStamp, b: HLCStamp) -> Bool {
        if a.wallMilliseconds != b.wallMilliseconds { return a.wallMilliseconds < b.wallMilliseconds }
        if a.counter != b.counter { return a.counter < b.counter }
        return a.node.utf8.lexicographicallyPrecedes(b.node.utf8)
    }

    public var description: String { "\(Timestamp.format(milliseconds: wallMilliseconds))/\(counter)/\(node)" }
}

/// A source of wall-clock time in ms since 1970-01-01 UTC; injected so tests can move time.
public protocol WallClock: Sendable {
    /// Now, in ms since the epoch (UTC).
    func nowMilliseconds() -> Int64
}

/// The system clock (`Date()`).
public struct SystemClock: WallClock {
    public init() {}
    public func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}

/// The hybrid logical clock of Kulkarni et al., "Logical Physical Clocks and Consistent Snapshots in
/// Globally Distributed Databases" (OPODIS 2014), persisted in the `hlc_clock` table.
///
/// Every stamp it issues is strictly greater than every stamp it issued or received before, across
/// process restarts (the state lives in the database), a wall clock stepping backwards, and merged
/// remote stamps. `send` is the paper's "send or local event" rule, `receive` its "receive event" rule.
struct HybridLogicalClock {
    let db: Connection
    let wall: any WallClock

    /// The last issued or observed (wall ms, counter).
    func load() throws -> (wall: Int64, counter: Int64) {
        let s = try db.cachedStatement(sql: "SELECT wall_ms, counter FROM hlc_clock WHERE id = 1")
        defer { s.reset() }
        guard try s.step() else { return (0, 0) }
        return (s.int(0), s.int(1))
    }

    /// The stamp `send` would issue now, without storing it (store it with `store(_:)` once used).
    func peekSend(node: String) throws -> HLCStamp {
        let last = try load()
        let now = wall.nowMilliseconds()
        let next: (wall: Int64, counter: Int64) = now > last.wall ? (now, 0) : (last.wall, last.counter + 1)
        return HLCStamp(wallMilliseconds: next.wall, counter: next.counter, node: node)
    }

    /// Records `stamp` as the last issued.
    func store(_ stamp: HLCStamp) throws {
        try store((stamp.wallMilliseconds, stamp.counter))
    }

    private func store(_ state: (wall: Int64, counter: Int64)) throws {
        try db.execute(sql: "UPDATE hlc_clock SET wall_ms = ?, counter = ? WHERE id = 1",
                       [.integer(state.wall), .integer(state.counter)])
    }

    /// Issues a stamp for a local write. Call inside the write transaction that uses it.
    func send(node: String) throws -> HLCStamp {
        let stamp = try peekSend(node: node)
        try store(stamp)
        return stamp
    }

    /// Moves the clock past a merged remote stamp, so later local writes order after it.
    func receive(wallMilliseconds remoteWall: Int64, counter remoteCounter: Int64) throws {
        let last = try load()
        let now = wall.nowMilliseconds()
        let w = max(last.wall, remoteWall, now)
        let c: Int64
        if w == last.wall && w == remoteWall { c = max(last.counter, remoteCounter) + 1 }
        else if w == last.wall { c = last.counter + 1 }
        else if w == remoteWall { c = remoteCounter + 1 }
        else { c = 0 }
        try store((w, c))
    }
}
