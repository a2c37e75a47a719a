/// What an erasure did on this node (docs/erasure.md §1).
public struct ErasureSummary: Sendable, Equatable {
    /// The erasure's stamp.
    public var stamp: HLCStamp
    /// Whether the user had a row here, now removed.
    public var removedRow: Bool
    /// Quarantined rows, recorded ties and ledger messages about the user removed.
    public var removedRecords: Int
    /// The stamp of the erasure record this database already held for the user, replaced by this one;
    /// nil when the user was not erased here before.
    public var previouslyErased: HLCStamp? = nil

    /// The one warning every front end (`catalog user erase`, `DELETE /v1/users/…`) gives about this
    /// erasure, nil when it removed a row (docs/erasure.md §1): erasing an id with no row is recorded all
    /// the same but may be a typo; erasing again says when the first erasure was.
    public var warning: String? { warning(namedBy: "id") }

    /// ``warning``, naming what the user was given as, `id` or `hash` (`catalog user erase --hash`).
    public func warning(namedBy key: String) -> String? {
        if removedRow { return nil }
        if let previous = previouslyErased {
            return "this user was already erased in this database at \(Timestamp.format(milliseconds: previous.wallMilliseconds)); "
                + "the erasure is recorded again with a new stamp"
        }
        return "no row of this user was stored in this database: check the \(key); the erasure is recorded all the same"
    }

    /// The kind of ``warning`` for machine-readable output: `already_erased`, `no_row`, or nil.
    public var warningKind: String? {
        if removedRow { return nil }
        return previouslyErased == nil ? "no_row" : "already_erased"
    }
}

/// Erases users from a catalog (docs/erasure.md): the one place an erasure is written and its user's
/// traces removed, whether it is this node's own (`catalog user erase`, `DELETE /v1/users/me`,
/// `Catalog.eraseUser`) or merged from a source.
///
/// ```swift
/// try UserErasure(store).eraseUser("ann")
/// ```
public struct UserErasure {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension UserErasure {
    /// Erases `user`: in one transaction, stores an erasure record stamped with a fresh HLC stamp (it
    /// wins over every row of the user stamped before it, on every node it reaches), removes the user's
    /// row, quarantined rows and recorded ties, and the ledger's messages naming the user; then
    /// checkpoints the WAL so no file keeps the deleted bytes (``scrub()``).
    ///
    /// Erasing a user who has no row still stores the erasure (a device may push an old row later).
    /// - Parameter user: the user id (validated and NFC-normalised).
    /// - Returns: the erasure's stamp and what was removed.
    /// - Throws: `CatalogError.usage` (64) for a bad user id; `CatalogError` from the database (75 busy,
    ///   74 full); nothing is written then.
    @discardableResult
    public func eraseUser(_ user: String) throws -> ErasureSummary {
        let user = try UserID.normalize(user)
        return try erase(userHash: ErasureRule.userHash(user)) { _ in [user] }
    }

    /// Erases the user whose id's hash is `userHash` (64 lowercase hex digits, the key of erasure
    /// records, docs/erasure.md §2) as ``eraseUser(_:)`` does, for an operator who keeps hashes rather
    /// than ids: the user's row, quarantined rows and ties are found by hashing the ids stored here.
    /// - Returns: the erasure's stamp and what was removed.
    /// - Throws: `CatalogError.usage` (64) when `userHash` is not 64 lowercase hex digits; `CatalogError`
    ///   from the database (75 busy, 74 full); nothing is written then.
    @discardableResult
    public func eraseUser(hash userHash: String) throws -> ErasureSummary {
        try Self.validate(hash: userHash)
        return try erase(userHash: userHash) { store in
            let named: (String) -> Bool = { ErasureRule.userHash($0) == userHash }
            return Set(
                try store.positionTable.users(matching: named) + store.quarantineTable.positionUsers(matching: named)
                    + store.conflictTable.positionUsers(matching: named)
            ).sorted()
        }
    }

    /// Stores the erasure of `userHash` and forgets the users `users` names, in one transaction; then scrubs.
    private func erase(userHash: String, users: (CatalogStore) throws -> [String]) throws -> ErasureSummary {
        let summary = try store.write {
            let previous = try store.erasureTable.stamp(userHash: userHash)
            let stamp = try store.issueLocalStamp()
            try store.erasureTable.upsert(
                ErasureRecord(userHash: userHash, stamp: stamp), seq: try store.lastChangeSequence() + 1)
            var summary = ErasureSummary(stamp: stamp, removedRow: false, removedRecords: 0, previouslyErased: previous)
            for user in try users(store) {
                let (removed, records) = try UserTraces(store).forget(user: user, stampedAtOrBefore: stamp)
                summary.removedRow = summary.removedRow || removed
                summary.removedRecords += records
            }
            return summary
        }
        scrub()
        return summary
    }

    /// The stamp of the erasure record stored here for the user whose id's hash is `userHash`, or nil
    /// when none is (never erased here, or collected: docs/erasure.md §4).
    /// - Throws: `CatalogError.usage` (64) when `userHash` is not 64 lowercase hex digits; `CatalogError`
    ///   from the database.
    public func erasureStamp(hash userHash: String) throws -> HLCStamp? {
        try Self.validate(hash: userHash)
        return try store.read { try store.erasureTable.stamp(userHash: userHash) }
    }

    /// Refuses a user hash that is not 64 lowercase hex digits (docs/erasure.md §2).
    static func validate(hash: String) throws {
        let hex = hash.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        guard hash.utf8.count == 64, hex else {
            throw CatalogError(.usage, "a user hash is 64 lowercase hex digits (the SHA-256 of the user id), got '\(hash)'")
        }
    }

    /// Checkpoints the WAL into the database file and truncates it to zero bytes (`UserTraces.scrub()`).
    public func scrub() { UserTraces(store).scrub() }

    /// Whether an erasure of `user` is stored here (the record keeps only the id's hash).
    /// - Throws: `CatalogError.usage` for a bad user id; `CatalogError` from the database.
    public func isErased(_ user: String) throws -> Bool {
        let hash = ErasureRule.userHash(try UserID.normalize(user))
        return try store.read { try store.erasureTable.stamp(userHash: hash) != nil }
    }
}
