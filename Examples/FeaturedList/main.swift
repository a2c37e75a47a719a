// Prints the featured landmarks of a catalog database, one per line: the smallest program on the
// `LandmarkCatalog` library alone (no HTTP, no PostgreSQL), as an app would link it.
// Usage: catalog-featured-example DATABASE
import Foundation
import LandmarkCatalog

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: catalog-featured-example DATABASE\n".utf8))
    exit(64)
}
do {
    let store = try CatalogStore.open(path: CommandLine.arguments[1], access: .read)
    for (page, landmark) in try LandmarkReader(store).featuredLandmarks().enumerated() {
        print("\(page)\t\(landmark.id)\t\(landmark.name)")
    }
} catch let error as CatalogError {
    FileHandle.standardError.write(Data("catalog-featured-example: error: \(error.message)\n".utf8))
    exit(error.exitStatus)
}
