import Foundation

/// A last-writer-wins stamp: the order key of docs/merge-rules.md §1, compared as (`wallMilliseconds`, `counter`, `node`).
public struct HLCStamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Physical part: ms since 1970-01-01 UTC.
    public var wallMilliseconds: Int64
    /// Logical part: orders events within one millisecond; 0…``maxCounter``.
    public var counter: Int64
    /// The node that wrote it; the last tie-breaker, compared as UTF-8 bytes.
    public var node: String

    /// The largest counter a stamp may carry: 2³² − 1.
    ///
    /// Snapshots and hubs with a larger one are refused where they enter (exit 65), and the clock never
    /// issues one: when its counter would pass this, it moves to the next millisecond instead, so
    /// stamps still only grow and nothing can overflow.
    public static let maxCounter: Int64 = 4_294_967_295

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
/// Globally Distributed Databases" (OPODIS 2014): the paper's rules as pure functions on the last
/// issued or observed (wall, counter); the store persists the state in `hlc_clock`.
///
/// Every stamp it issues is strictly greater than every stamp it issued or received before, across
/// process restarts, a wall clock stepping backwards, and merged remote stamps. Counters stay within
/// ``HLCStamp/maxCounter`` (see there); no input can make it trap.
struct HybridLogicalClock: Equatable {
    /// The last issued or observed physical part (ms) and counter.
    var wall: Int64
    var counter: Int64

    /// The paper's "send or local event" rule: the next stamp's (wall, counter) at `now`.
    func sent(now: Int64) -> HybridLogicalClock {
        now > wall ? HybridLogicalClock(wall: now, counter: 0) : Self.bounded(wall: wall, counter: counter)
    }

    /// The paper's "receive event" rule: the state after observing a remote (wall, counter) at `now`.
    func received(wall remoteWall: Int64, counter remoteCounter: Int64, now: Int64) -> HybridLogicalClock {
        let remoteCounter = min(max(remoteCounter, 0), HLCStamp.maxCounter)
        let w = max(wall, remoteWall, now)
        if w == wall && w == remoteWall { return Self.bounded(wall: w, counter: max(counter, remoteCounter)) }
        if w == wall { return Self.bounded(wall: w, counter: counter) }
        if w == remoteWall { return Self.bounded(wall: w, counter: remoteCounter) }
        return HybridLogicalClock(wall: w, counter: 0)
    }

    /// (wall, counter + 1), or (wall + 1 ms, 0) when the counter is at its bound.
    private static func bounded(wall: Int64, counter: Int64) -> HybridLogicalClock {
        counter >= HLCStamp.maxCounter
            ? HybridLogicalClock(wall: wall &+ 1, counter: 0)
            : HybridLogicalClock(wall: wall, counter: counter + 1)
    }
}
