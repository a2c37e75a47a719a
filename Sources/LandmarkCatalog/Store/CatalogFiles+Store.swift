import Foundation

extension CatalogFiles {
    /// Whether the catalog database at `path` holds no data: no landmark, position, saved remote,
    /// quarantined row or published log (only what opening it and recording runs wrote).
    ///
    /// Used to remove a database that a failed command created.
    /// - Throws: `CatalogError` when it cannot be read.
    public static func holdsNoData(path: String) throws -> Bool {
        let store = try CatalogStore.open(path: path, access: .read)
        return try store.read {
            let landmarks = try store.landmarkTable.counts()
            let positions = try store.positionTable.counts()
            return landmarks.live + landmarks.tombstones + positions.live + positions.tombstones + (try store.remoteTable.count())
                + (try store.quarantineTable.count()) + (try store.publicationTable.count()) == 0
        }
    }
}
