import Foundation

/// A user's place in the featured carousel, resolved against the featured set as it is now (docs/cli.md §4).
///
/// `Identifiable` by `user`; `Codable` as `position get --json` prints it (see `App/ModelCoding.swift`).
public struct CarouselPosition: Sendable, Hashable, Identifiable {
    /// The user id (NFC-normalised).
    public var user: String
    /// The 0-based page now: the index of the stored landmark among the featured ones; if it is no longer
    /// featured, the stored page clamped into `0..<pageCount`; nil when nothing is featured.
    public var currentPage: Int?
    /// How many featured landmarks there are (pages in the carousel).
    public var pageCount: Int
    /// The landmark on `currentPage`, nil when nothing is featured.
    public var landmarkID: Int64?
    /// The page and landmark as written.
    public var storedPage: Int
    public var storedLandmarkID: Int64?
    /// The last-writer-wins stamp of the write.
    public var stamp: HLCStamp
}

/// What `position set` points at.
public enum PositionTarget: Sendable, Equatable {
    /// A 0-based page of the carousel.
    case page(Int)
    /// A featured landmark's id.
    case landmark(Int64)
}

/// Where each user is in the featured carousel: set, clear and read positions in a catalog, each call one
/// transaction of the store's (docs/cli.md §4).
///
/// ```swift
/// let positions = Positions(store)
/// try positions.setPosition(user: "ann", to: .page(2))
/// let page = try positions.position(user: "ann")?.currentPage
/// ```
public struct Positions {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension Positions {
    /// Writes a local position row (a set or a tombstone) stamped `stamp`, taking the next change
    /// sequence number.
    ///
    /// A tombstone keeps the stored page and landmark.
    func writeLocalPosition(user: String, page: Int64, landmark: Int64?, stamp: HLCStamp, deleted: Bool) throws {
        try store.positionTable.writeLocal(
            user: user, page: page, landmark: landmark, stamp: stamp, deleted: deleted, seq: try store.lastChangeSequence() + 1)
    }

    /// Stores where `user` is, stamped with a fresh HLC stamp, in one transaction.
    ///
    /// - Parameters:
    ///   - user: the user id (validated and NFC-normalised).
    ///   - target: a page in `0..<pageCount`, or a featured landmark.
    /// - Returns: the stored position, resolved.
    /// - Throws: `CatalogError.usage` (64) for a bad user id, a page out of range, a landmark that is not
    ///   featured, or an empty carousel; nothing is stored then.
    @discardableResult
    public func setPosition(user: String, to target: PositionTarget) throws -> CarouselPosition {
        let user = try UserID.normalize(user)
        return try store.write {
            let featured = try store.landmarkTable.featuredIDs()
            let page: Int
            switch target {
            case .page(let p):
                guard !featured.isEmpty else {
                    throw CatalogError(
                        .usage, "no landmarks are featured, so there is no page \(p)", hint: "import a file with featured landmarks first",
                        reason: .pageOutOfRange)
                }
                guard p >= 0, p < featured.count else {
                    throw CatalogError(
                        .usage, "page \(p) is out of range: the carousel has \(plural(featured.count, "page")) (0…\(featured.count - 1))",
                        reason: .pageOutOfRange)
                }
                page = p
            case .landmark(let id):
                guard let index = featured.firstIndex(of: id) else {
                    throw CatalogError(
                        .usage, "landmark \(id) is not featured, so it is on no page",
                        hint: featured.isEmpty ? "no landmarks are featured" : "featured: \(featured.map(String.init).joined(separator: ", "))",
                        reason: .notFeatured)
                }
                page = index
            }
            let stamp = try store.issueLocalStamp()
            try writeLocalPosition(user: user, page: Int64(page), landmark: featured[page], stamp: stamp, deleted: false)
            return Self.resolve(user: user, page: page, landmarkID: featured[page], stamp: stamp, featured: featured)
        }
    }

    /// Writes a tombstone for `user`'s position (a deletion that takes part in last-writer-wins).
    /// - Throws: `CatalogError.usage` for a bad user id.
    public func clearPosition(user: String) throws {
        let user = try UserID.normalize(user)
        try store.write {
            try writeLocalPosition(user: user, page: 0, landmark: nil, stamp: try store.issueLocalStamp(), deleted: true)
        }
    }

    /// `user`'s position resolved against today's featured set, or nil when there is none (never set, or cleared).
    public func position(user: String) throws -> CarouselPosition? {
        let user = try UserID.normalize(user)
        return try store.read {
            let featured = try store.landmarkTable.featuredIDs()
            return try store.positionTable.live(user: user) { Self.resolvePosition($0, featured: featured) }
        }
    }

    /// Every live position, resolved, ordered by user id (byte order).
    public func positions() throws -> [CarouselPosition] {
        try store.read {
            let featured = try store.landmarkTable.featuredIDs()
            let pages = Dictionary(uniqueKeysWithValues: featured.enumerated().map { ($1, $0) })
            var result: [CarouselPosition] = []
            try store.positionTable.forEachLive { s in
                result.append(Self.resolvePosition(s, featured: featured, pageOf: { pages[$0] }))
            }
            return result
        }
    }

    /// Whether a tombstone is stored for `user` (for tests and status).
    public func hasTombstone(user: String) throws -> Bool {
        let user = try UserID.normalize(user)
        return try store.read {
            try store.positionTable.hasTombstone(user: user)
        }
    }

    static func resolvePosition(_ s: Statement, featured: [Int64], pageOf: ((Int64) -> Int?)? = nil) -> CarouselPosition {
        resolve(
            user: s.text(PositionColumn.userID) ?? "", page: Int(s.int(PositionColumn.page)), landmarkID: s.optionalInt(PositionColumn.landmarkID),
            stamp: HLCStamp(
                wallMilliseconds: s.int(PositionColumn.updatedMs), counter: s.int(PositionColumn.counter),
                node: s.text(PositionColumn.node) ?? ""),
            featured: featured, pageOf: pageOf)
    }

    /// docs/cli.md §4: follow the landmark; if it is no longer featured, clamp the page; nothing featured → nil.
    static func resolve(
        user: String, page: Int, landmarkID: Int64?, stamp: HLCStamp, featured: [Int64],
        pageOf: ((Int64) -> Int?)? = nil
    ) -> CarouselPosition {
        var current: Int?
        if featured.isEmpty {
            current = nil
        } else if let landmarkID, let index = pageOf.map({ $0(landmarkID) }) ?? featured.firstIndex(of: landmarkID) {
            current = index
        } else {
            current = min(max(page, 0), featured.count - 1)
        }
        return CarouselPosition(
            user: user, currentPage: current, pageCount: featured.count,
            landmarkID: current.map { featured[$0] }, storedPage: page, storedLandmarkID: landmarkID,
            stamp: stamp)
    }
}
