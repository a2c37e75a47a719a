/// An erasure of a user: who (by the hash of the id) and when, stamped like any row (docs/erasure.md §2).
package struct ErasureRecord: Sendable, Equatable {
    /// The SHA-256 of the NFC-normalised user id, 64 lowercase hex digits.
    package var userHash: String
    /// The erasure's stamp: it wins over every row of the user stamped at or before it.
    package var stamp: HLCStamp
    /// Its index in the snapshot's `erasures` array, when it came from one.
    package var index: Int?

    package init(userHash: String, stamp: HLCStamp, index: Int? = nil) {
        self.userHash = userHash
        self.stamp = stamp
        self.index = index
    }

    /// The snapshot row (docs/snapshot-format.md §3), keys sorted: the one writer of this shape.
    func writeJSON(to w: inout JSONWriter) {
        w.raw("{\"counter\":")
        w.int(stamp.counter)
        w.raw(",\"node\":")
        w.string(stamp.node)
        w.raw(",\"updatedAt\":")
        Timestamp.write(milliseconds: stamp.wallMilliseconds, to: &w)
        w.raw(",\"userHash\":")
        w.string(userHash)
        w.byte(0x7D)
    }
}
