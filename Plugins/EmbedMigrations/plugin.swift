import Foundation
import PackagePlugin

/// Build-tool plugin: compiles `Migrations/NNNN_description.sql` (at the package root) and the PostgreSQL
/// hub's `Migrations/hub/NNNN_description.sql` into a Swift source file of the `LandmarkCatalog` target,
/// so the release binary carries both lists of migrations.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let migrations = context.package.directoryURL.appending(path: "Migrations")
        let files = try sqlFiles(in: migrations)
        let hub = migrations.appending(path: "hub")
        let hubFiles = FileManager.default.fileExists(atPath: hub.path) ? try sqlFiles(in: hub) : []
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) migrations and \(hubFiles.count) hub migrations",
                executable: try context.tool(named: "EmbedMigrationsTool").url,
                arguments: [output.path] + files.map(\.path) + ["--list", "embeddedHubMigrationFiles"] + hubFiles.map(\.path),
                inputFiles: files + hubFiles,
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
