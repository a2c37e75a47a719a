import Foundation
import PackagePlugin

/// Build-tool plugin: compiles `Migrations/NNNN_description.sql` (at the package root) and the PostgreSQL
/// hub's `Migrations/hub/NNNN_description.sql` into a Swift source file: the first into the `LandmarkCatalog`
/// target, the second into `LandmarkCatalogSync`, so the release binary carries both lists of migrations.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let migrations = context.package.directoryURL.appending(path: "Migrations")
        let files = try sqlFiles(in: migrations)
        let hub = migrations.appending(path: "hub")
        let hubFiles = FileManager.default.fileExists(atPath: hub.path) ? try sqlFiles(in: hub) : []
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        // The core library carries the catalog's migrations; LandmarkCatalogSync the hub's.
        let hubOnly = target.name == "LandmarkCatalogSync"
        return [
            .buildCommand(
                displayName: hubOnly ? "Embedding \(hubFiles.count) hub migrations" : "Embedding \(files.count) migrations",
                executable: try context.tool(named: "EmbedMigrationsTool").url,
                arguments: [output.path] + (hubOnly ? ["--list", "embeddedHubMigrationFiles"] + hubFiles.map(\.path) : files.map(\.path)),
                inputFiles: hubOnly ? hubFiles : files,
                outputFiles: [output]
            )
        ]
    }

    /// The `.sql` files directly in `directory`, by name.
    private func sqlFiles(in directory: URL) throws -> [URL] {
        try FileManager.default
            .contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }
}
