import Foundation

/// The store's old spellings of what moved to the feature types, kept only for the sync code
/// (`Sync/`, LandmarkCatalogSync), which another change moves off the store: each forwards to its new home.
///
/// Delete this file when that code calls the feature types itself (the store's func count then drops by
/// these 10, `StoreSizeTests`).
extension CatalogStore {
    /// ``RemoteBook/remotes()``.
    package func remotes() throws -> [Remote] { try RemoteBook(self).remotes() }

    /// ``RemoteBook/trustForSource(key:)``.
    func trustForSource(key: String) throws -> (keys: [MinisignPublicKey], allow: WriteGrant) {
        try RemoteBook(self).trustForSource(key: key)
    }

    /// ``DeviceRows/devicePositions(user:after:limit:)``.
    package func devicePositions(user: String?, after: Int64, limit: Int) throws -> (page: DeviceRowsPage, highWater: Int64) {
        try DeviceRows(self).devicePositions(user: user, after: after, limit: limit)
    }

    /// ``DeviceRows/positionsChanged(after:through:otherThan:)``.
    package func positionsChanged(after: Int64, through: Int64, otherThan user: String) throws -> Int {
        try DeviceRows(self).positionsChanged(after: after, through: through, otherThan: user)
    }

    /// ``SnapshotExporter/exportSnapshot(toFile:progress:)``.
    @discardableResult
    package func exportSnapshot(toFile path: String, progress: (CatalogProgress) -> Void = { _ in }) throws -> ExportSummary {
        try SnapshotExporter(self).exportSnapshot(toFile: path, progress: progress)
    }

    /// ``Quarantine/maintainAfterSync(maxDriftMilliseconds:diagnostics:)``.
    package func maintainAfterSync(maxDriftMilliseconds: Int64, diagnostics: @escaping (Diagnostic) -> Void) -> QuarantineRelease? {
        Quarantine(self).maintainAfterSync(maxDriftMilliseconds: maxDriftMilliseconds, diagnostics: diagnostics)
    }

    /// ``LogPublisher/publishLog(to:options:progress:)``.
    package func publishLog(
        to directory: String, options: PublishOptions = PublishOptions(), progress: (CatalogProgress) -> Void = { _ in }
    ) throws -> PublishReport {
        try LogPublisher(self).publishLog(to: directory, options: options, progress: progress)
    }

    /// ``CatalogFiles/directory(of:)``.
    package static func directory(of path: String) -> String { CatalogFiles.directory(of: path) }

    /// ``CatalogFiles/openForReading(_:)``.
    package static func openForReading(_ path: String) throws -> Int32 { try CatalogFiles.openForReading(path) }

    /// ``CatalogFiles/regularFileSize(_:)``.
    static func regularFileSize(_ fd: Int32) -> Int64? { CatalogFiles.regularFileSize(fd) }
}
