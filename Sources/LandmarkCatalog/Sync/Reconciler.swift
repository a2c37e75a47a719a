/// One side of a repair (docs/repair.md §2–§4): answers a ``RepairMessage`` from its own store, knowing
/// nothing of the transport.
///
/// It compares the peer's keyed range fingerprints with its own, splits a differing range 16 ways
/// (by its own rows, in key order) until it holds at most ``listThreshold`` rows, then lists row ids;
/// from a peer's id list it sends the rows the peer lacks and asks for those it lacks. Rows that arrive
/// are handed to `merge` (the caller's transaction, by the merge rule of docs/merge-rules.md).
///
/// Which rows take part is decided by ``RepairRows`` alone.
package final class Reconciler {
    /// The copy this side answers from.
    let copy: any RepairCopy
    /// The session key every fingerprint is keyed with (16 bytes).
    package let key: [UInt8]
    /// Ranges holding at most this many rows are listed, not split.
    package static let listThreshold = 32
    /// Parts a differing range is split into.
    package static let fanOut = 16
    /// The session's horizon (ms since the epoch, UTC).
    ///
    /// This side's collection horizon, raised to the peer's when that is greater (docs/repair.md §4). Rows below it that do not count in the digest at
    /// it take no part (``RepairRows``).
    package private(set) var horizon: Int64
    /// Rows this side sent to the peer and received from it.
    package private(set) var rowsSent = 0
    package private(set) var rowsReceived = 0

    /// A side working on `store`, with the session key `key` (the opener's random key, or the one the
    /// opening message carried).
    /// - Throws: `CatalogError` when the store's horizon cannot be read.
    package convenience init(store: CatalogStore, key: [UInt8]) throws {
        try self.init(copy: StoreRepairCopy(store), key: key)
    }

    /// A side working on `copy` (a catalog database, or another store of the same rows).
    /// - Throws: `CatalogError` when the copy's horizon cannot be read.
    package init(copy: any RepairCopy, key: [UInt8]) throws {
        self.copy = copy
        self.key = key
        horizon = try copy.collectionHorizon()
    }

    /// A new random 16-byte session key.
    package static func makeKey() -> [UInt8] { (0..<16).map { _ in UInt8.random(in: 0...255) } }

    /// The opening message: the key and each table's whole-range fingerprint.
    package func opening() throws -> RepairMessage {
        var m = RepairMessage(key: key)
        m.horizon = horizon
        try copy.read {
            for table in RepairTable.allCases {
                let space = copy.rows(table, horizon: horizon)
                m.items[table.rawValue] = [
                    RepairItem(lower: [], upper: nil, payload: .fingerprint(fingerprint(table, try space.sums([], nil), bytes: 8)))
                ]
            }
        }
        return m
    }

    /// The answer to `message` (whose rows the caller has merged, or will: they lie in ranges this
    /// answer does not look at).
    package func answer(_ message: RepairMessage) throws -> RepairMessage {
        var reply = RepairMessage()
        if let theirs = message.horizon {
            // Both sides compare at the greater horizon; the peer learns it when it is this side's.
            if theirs > horizon { horizon = theirs } else if theirs < horizon { reply.horizon = horizon }
        }
        var send: [[[UInt8]]] = RepairTable.allCases.map { _ in [] }
        try copy.read {
            for table in RepairTable.allCases {
                let space = copy.rows(table, horizon: horizon)
                for item in message.items[table.rawValue] {
                    try answer(item, table: table, space: space, into: &reply.items[table.rawValue], send: &send[table.rawValue])
                }
            }
            if send.contains(where: { !$0.isEmpty }) {
                reply.rows = try copy.snapshot(landmarks: send[0], positions: send[1], erasures: send[2])
                rowsSent += send.reduce(0) { $0 + $1.count }
            }
        }
        return reply
    }

    /// Counts rows the peer sent (the caller merges them).
    package func received(_ rows: Int) { rowsReceived += rows }

    private func answer(_ item: RepairItem, table: RepairTable, space: any RepairRowSet, into out: inout [RepairItem], send: inout [[UInt8]]) throws {
        switch item.payload {
        case .fingerprint(let theirs):
            let mine = try space.sums(item.lower, item.upper)
            guard fingerprint(table, mine, bytes: theirs.count) != theirs else { return }
            if mine.rows <= Int64(Self.listThreshold) {
                var ids: [UInt32] = []
                try space.forEach(item.lower, item.upper) { _, hash in ids.append(id(hash)) }
                out.append(RepairItem(lower: item.lower, upper: item.upper, payload: .ids(ids)))
            } else {
                try split(item, rows: mine.rows, table: table, space: space, into: &out)
            }
        case .ids(let theirs):
            let theirSet = Set(theirs)
            var mine = Set<UInt32>()
            try space.forEach(item.lower, item.upper) { key, hash in
                let id = id(hash)
                mine.insert(id)
                if !theirSet.contains(id) { send.append(key) }
            }
            let wanted = theirs.filter { !mine.contains($0) }
            if !wanted.isEmpty { out.append(RepairItem(lower: item.lower, upper: item.upper, payload: .want(wanted))) }
        case .want(let wanted):
            let wantedSet = Set(wanted)
            try space.forEach(item.lower, item.upper) { key, hash in
                if wantedSet.contains(id(hash)) { send.append(key) }
            }
        }
    }

    /// Splits `item`'s range into ``fanOut`` parts of about equal row counts (this side's rows).
    ///
    /// Each cut lies within an eighth of a part of the even one, at the gap whose bound costs the fewest
    /// bytes: the shortest key bytes that separate the rows either side of it (``RepairRows/separator(_:_:)``),
    /// counted beyond the prefix they share with the part's lower bound, which the encoding omits.
    private func split(_ item: RepairItem, rows: Int64, table: RepairTable, space: any RepairRowSet, into out: inout [RepairItem]) throws {
        if let parts = try space.parts(item.lower, item.upper, count: Self.fanOut), !parts.isEmpty {
            split(item, parts: parts, table: table, space: space, into: &out)
            return
        }
        let parts = Int64(Self.fanOut)
        let slack = rows / (parts * 8)
        var index: Int64 = 0
        var part: Int64 = 0
        var lower = item.lower
        // The current part's rows before the best cut found so far (all its rows while there is none),
        // and the rows after that cut.
        var sums = LaneSums()
        var pending = LaneSums()
        var best: (bound: [UInt8], cost: Int)?
        var previous: [UInt8]?
        func cut() {
            guard let bound = best?.bound else { return }
            out.append(RepairItem(lower: lower, upper: bound, payload: .fingerprint(fingerprint(table, sums, bytes: 4))))
            lower = bound
            sums = pending
            pending = LaneSums()
            best = nil
            part += 1
        }
        try space.forEach(item.lower, item.upper) { key, hash in
            if let last = previous, part < parts - 1 {
                let target = rows * (part + 1) / parts
                if index >= target - slack && index <= target + slack {
                    let bound = space.separator(last, key)
                    let cost = bound.count - Self.sharedPrefix(bound, lower)
                    if best.map({ cost < $0.cost }) ?? true {
                        best = (bound, cost)
                        sums.add(pending)
                        pending = LaneSums()
                    }
                }
                if index >= target + slack { cut() }
            }
            if best == nil { sums.add(hash) } else { pending.add(hash) }
            previous = key
            index += 1
        }
        cut()
        out.append(RepairItem(lower: lower, upper: item.upper, payload: .fingerprint(fingerprint(table, sums, bytes: 4))))
    }

    /// Splits `item`'s range at the parts the copy computed where its rows are: part i ends at the
    /// separator of its last key and part i+1's first, so each range holds exactly its part's rows and
    /// its fingerprint is the part's sums. (Any cut is correct: the peer compares the fingerprints of
    /// the ranges it is given with its own rows in them.)
    private func split(_ item: RepairItem, parts: [RepairPart], table: RepairTable, space: any RepairRowSet, into out: inout [RepairItem]) {
        var lower = item.lower
        for (i, part) in parts.enumerated() {
            let upper = i + 1 < parts.count ? space.separator(part.last, parts[i + 1].first) : item.upper
            out.append(RepairItem(lower: lower, upper: upper, payload: .fingerprint(fingerprint(table, part.sums, bytes: 4))))
            if let upper { lower = upper }
        }
    }

    /// How many leading bytes `a` and `b` share.
    static func sharedPrefix(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var n = 0
        while n < a.count, n < b.count, a[n] == b[n] { n += 1 }
        return n
    }

    /// A row's id in lists (docs/repair.md §3): the first 4 bytes of HMAC-SHA-256 under the session key
    /// of the row hash's 16 bytes, so that no row can be made to collide with another ahead of a session.
    func id(_ hash: RowHash) -> UInt32 {
        var message: [UInt8] = []
        message.reserveCapacity(16)
        for v in hash.values { for shift in stride(from: 24, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: v >> Int64(shift))) } }
        return SHA256.hmac(key: key, message: message).prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The keyed fingerprint of a range (docs/repair.md §3): the first `bytes` bytes (8 for a whole
    /// table, 4 for a part) of HMAC-SHA-256 under the session key of the table number, the row count and
    /// the four lane sums (each 8 bytes, big-endian).
    func fingerprint(_ table: RepairTable, _ sums: LaneSums, bytes: Int) -> [UInt8] {
        var message: [UInt8] = [UInt8(table.rawValue)]
        for v in [sums.rows] + sums.sums {
            for shift in stride(from: 56, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: UInt64(bitPattern: v) >> UInt64(shift))) }
        }
        return Array(SHA256.hmac(key: key, message: message).prefix(min(max(bytes, 4), 8)))
    }
}
