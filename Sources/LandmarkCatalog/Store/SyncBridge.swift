import Foundation

/// The store's old spellings of what moved to the feature types, kept only for the sync code
/// (`Sync/`, LandmarkCatalogSync), which another change moves off the store: each forwards to its new home.
///
/// Delete this file when that code calls the feature types itself (the store's func count then drops by
/// these five, `StoreSizeTests`).
extension CatalogStore {
    /// ``SnapshotExporter/exportSnapshot(toFile:progress:)``.
    @discardableResult
    package func exportSnapshot(toFile path: String, progress: (CatalogProgress) -> Void = { _ in }) throws -> ExportSummary {
        try SnapshotExporter(self).exportSnapshot(toFile: path, progress: progress)
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
