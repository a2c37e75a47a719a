import Foundation
import LandmarkCatalog

/// Read-only stores, one per concurrent reader, reused.
final class ReaderPool: @unchecked Sendable {
    // Safe: `idle` is touched under `lock`; a store is used by one thread at a time (taken out of `idle`).
    private let lock = NSLock()
    private var idle: [CatalogStore] = []
    let path: String

    init(path: String) { self.path = path }

    func with<T>(_ body: (CatalogStore) throws -> T) throws -> T {
        let store = try lock.withLock { idle.popLast() } ?? CatalogStore.open(path: path, access: .read)
        defer { lock.withLock { idle.append(store) } }
        return try body(store)
    }
}
