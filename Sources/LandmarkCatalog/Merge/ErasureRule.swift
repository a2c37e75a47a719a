/// The erasure and collection rule of this catalog, in one place (docs/erasure.md), beside
/// ``LastWriterWins``: every merge path (snapshot files, logs, the hub, serve, devices) asks it what
/// becomes of a row.
///
/// - An erasure of user U stamped E wins over every row of U stamped at or before E (on equal stamps the
///   erasure wins, as a tombstone does): applying it deletes them, and one arriving later is refused as
///   **erased**. A row of U stamped after E is a new user's and is merged by ``LastWriterWins``.
/// - Collection (`catalog gc`) removes tombstones and erasure records whose wall time is before the node's
///   horizon H. Afterwards a row stamped before H for a key that has no row is refused as **expired**: it is
///   older than a deletion this node may have forgotten, so it cannot come back.
/// - The state digest counts live rows always, and tombstones and erasure records only when stamped at or
///   after the horizon it is computed at: a node that collected below H and one that did not show the same
///   digest at H (``countsInDigest(deleted:stamp:horizonMilliseconds:)``).
///
/// Together these keep merging commutative, associative and idempotent over rows and erasures alike: the
/// state for a user is the last-writer-wins winner among the rows stamped after the greatest erasure.
package enum ErasureRule {
    /// Why a row is refused; the raw value is the outcome's name in answers and counts.
    package enum Refusal: String, Sendable {
        /// The row's user was erased at or after the row's stamp.
        case erased
        /// The row is stamped before the collection horizon and its key has no row.
        case expired
    }

    /// The key an erasure record is stored and sent under: the SHA-256 of the UTF-8 bytes of the
    /// NFC-normalised user id, in lowercase hex (so no file holds an erased user's id).
    package static func userHash(_ normalizedUser: String) -> String {
        SHA256.hex(SHA256.hash(Array(normalizedUser.utf8)))
    }

    /// Whether a writer may send an erasure of the user keyed `userHash` (docs/protocol.md §6, §6a): an edge
    /// writer any user's; a user's writer that user's alone.
    /// - Parameters:
    ///   - userHash: the erased user's key (``userHash(_:)``).
    ///   - writer: the writer's own user id, NFC-normalised (a token's `sub`).
    ///   - edge: whether the writer speaks for every user (an edge token).
    /// - Returns: true when the writer may send it; a refused one fails the writer's whole request.
    package static func mayErase(userHash: String, writer: String, edge: Bool) -> Bool {
        edge || userHash == Self.userHash(writer)
    }

    /// Whether an erasure stamped `erasure` removes a row stamped `row`: at or before it.
    package static func erases(_ erasure: HLCStamp, row: HLCStamp) -> Bool { !(erasure < row) }

    /// What becomes of an incoming row of a user, before last-writer-wins is asked.
    /// - Parameters:
    ///   - row: the incoming row's stamp.
    ///   - erasure: the stored erasure of the row's user, if any (positions only; landmarks have none).
    ///   - hasStoredRow: whether the row's key has a stored row (live or tombstone).
    ///   - horizonMilliseconds: this node's collection horizon (ms since the epoch, UTC; 0 before any).
    /// - Returns: the refusal, or nil when the row goes on to ``LastWriterWins``.
    package static func refusal(row: HLCStamp, erasure: HLCStamp?, hasStoredRow: Bool, horizonMilliseconds: Int64) -> Refusal? {
        if let erasure, erases(erasure, row: row) { return .erased }
        if !hasStoredRow && row.wallMilliseconds < horizonMilliseconds { return .expired }
        return nil
    }

    /// Whether an incoming erasure replaces the stored erasure of the same user: its stamp is greater
    /// (an erasure's content is its stamp, so equal stamps are the same record).
    package static func replaces(_ incoming: HLCStamp, stored: HLCStamp?) -> Bool { stored.map { $0 < incoming } ?? true }

    /// Whether a tombstone or erasure record stamped `stamp` is collected at `horizonMilliseconds`.
    package static func collected(_ stamp: HLCStamp, horizonMilliseconds: Int64) -> Bool {
        stamp.wallMilliseconds < horizonMilliseconds
    }

    /// Whether a row counts in the state digest computed at `horizonMilliseconds`: live rows always,
    /// tombstones and erasure records only when not below the horizon.
    package static func countsInDigest(deleted: Bool, stamp: HLCStamp, horizonMilliseconds: Int64) -> Bool {
        !deleted || !collected(stamp, horizonMilliseconds: horizonMilliseconds)
    }

    /// The default collection horizon's age: 30 days, in ms.
    package static let defaultHorizonAge: Int64 = 30 * 24 * 3600 * 1000
}
