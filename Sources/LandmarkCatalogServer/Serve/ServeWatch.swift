import Dispatch
import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

/// serve's background checks (docs/serve.md §2, §10, §11): the revocations in force and the erased users
/// (``ErasedAccounts``), read again from the database when `PRAGMA data_version` moved (every second) and,
/// with `--hub`, the revocations from the hub every second; and the heartbeat `catalog status --check`
/// reads, every few seconds.
///
/// Requests never wait on it: they look at ``RevokedTokens`` in memory.
final class ServeWatch: @unchecked Sendable {
    // Safe: `local`, `hub`, `hubFailure`, `stopped`, `threads` are used under `lock`; `hubCopy` is set in `start`
    // before the hub's thread starts and used by that thread alone; the rest is set in `init`.
    private let databasePath: String
    private let hubName: String?
    private let revoked: RevokedTokens
    private let erased: ErasedAccounts
    /// Told the hashes of the users newly erased (the operator page forgets them).
    private let onErased: @Sendable (Set<String>) -> Void
    private let log: @Sendable (String) -> Void
    private let heartbeat: (@Sendable () -> Void)?
    private let lock = NSLock()
    private var local: [TokenRevocation] = []
    private var hub: [TokenRevocation] = []
    private var hubFailure: String?
    private var stopped = false
    /// With a hub: the connection the hub's revocations are copied into the database through (the hub's thread only).
    private var hubCopy: CatalogStore?
    private let ended = DispatchSemaphore(value: 0)
    private var threads = 0
    /// How often the revocations are looked at.
    static let pollInterval: Duration = .seconds(1)
    /// How often the heartbeat runs.
    static let heartbeatTicks = 5

    init(
        databasePath: String, hub: String?, revoked: RevokedTokens, erased: ErasedAccounts, log: @escaping @Sendable (String) -> Void,
        heartbeat: (@Sendable () -> Void)?, onErased: @escaping @Sendable (Set<String>) -> Void = { _ in }
    ) {
        self.erased = erased
        self.onErased = onErased
        self.databasePath = databasePath
        hubName = hub
        self.revoked = revoked
        self.log = log
        self.heartbeat = heartbeat
    }

    /// Why the hub's revocations could not be read at the last try (nil: read, or no hub).
    var hubProblem: String? { lock.withLock { hubFailure } }

    /// Reads the revocations once (so a restarted serve refuses revoked tokens from its first request),
    /// then keeps reading them on threads of its own.
    /// - Throws: `CatalogError` when the database's revocations cannot be read.
    func start() throws {
        let store = try CatalogStore.open(path: databasePath, access: .read)
        let first = try TokenRevocations(store).all(hubCopy: true)
        lock.withLock { local = first }
        erased.merge(try UserErasure(store).erasureTimes(after: 0))
        var hubReader: HubRevocations?
        if let hubName {
            let reader = try HubRevocations(hub: hubName, remotes: (try? RemoteBook(store).remotes()) ?? [], timeoutSeconds: 5)
            hubCopy = try CatalogStore.open(path: databasePath)
            pollHub(reader)
            hubReader = reader
        }
        publish()
        lock.withLock { threads = hubReader == nil ? 1 : 2 }
        // Handed over: from here on only the new thread uses each.
        nonisolated(unsafe) let handed = store
        Thread.detachNewThread { [self] in
            localLoop(handed)
            ended.signal()
        }
        if let reader = hubReader {
            nonisolated(unsafe) let hubReader = reader
            Thread.detachNewThread { [self] in
                while !isStopped {
                    Thread.sleep(forTimeInterval: 1)
                    if isStopped { break }
                    pollHub(hubReader)
                }
                hubReader.close()
                ended.signal()
            }
        }
    }

    /// Stops the threads (each ends within a poll).
    func stop() {
        let count = lock.withLock {
            stopped = true
            return threads
        }
        for _ in 0..<count { _ = ended.wait(timeout: .now() + 10) }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func localLoop(_ store: CatalogStore) {
        var seen = (try? store.read { try store.dataVersion() }) ?? -1
        var tick = 0
        while !isStopped {
            Thread.sleep(forTimeInterval: 1)
            if isStopped { break }
            tick += 1
            if let version = try? store.read({ try store.dataVersion() }), version != seen {
                seen = version
                // Only the records past those read (an index range): a failure is read again at the next change.
                if let times = try? UserErasure(store).erasureTimes(after: erased.readThrough) {
                    let newlyErased = erased.merge(times)
                    if !newlyErased.isEmpty { onErased(newlyErased) }
                }
                if let rows = try? TokenRevocations(store).all(hubCopy: true) {
                    let changed = lock.withLock {
                        defer { local = rows }
                        return local != rows
                    }
                    if changed { publish() }
                }
            }
            if tick % Self.heartbeatTicks == 0 { heartbeat?() }
        }
    }

    private func pollHub(_ reader: HubRevocations) {
        do {
            let rows = try reader.all()
            let changed = lock.withLock {
                defer { (hub, hubFailure) = (rows, nil) }
                return hub != rows
            }
            if changed {
                publish()
                // Kept in the database too; a failure is retried at the next change (the set in memory holds).
                if let hubCopy, (try? TokenRevocations(hubCopy).replaceHubCopy(with: rows)) == nil {
                    log(#"{"event":"revocations","state":"failing","message":"cannot keep a copy of the hub's token revocations in the database"}"#)
                    lock.withLock { hub = [] }
                }
            }
        } catch {
            let message = (error as? CatalogError)?.message ?? "\(error)"
            let first = lock.withLock {
                defer { hubFailure = message }
                return hubFailure == nil
            }
            // The revocations read last stay in force meanwhile.
            if first {
                var w = JSONWriter(reservingCapacity: 160)
                w.raw(#"{"event":"revocations","state":"failing","message":"#)
                w.string("cannot read the hub's token revocations (those read last stay in force): \(message)")
                w.raw("}")
                log(String(decoding: w.bytes, as: UTF8.self))
            }
        }
    }

    private func publish() {
        revoked.replace(lock.withLock { local + hub })
    }
}

/// Whether serve can write its database, without writing (`GET /v1/readyz`, docs/serve.md §11).
enum DatabaseWritability {
    /// Why the database at `path` cannot be written, or nil: the file has no write permission bit (even
    /// for root, who `access(2)` would let through: an operator's `chmod a-w` means "no writes"), this
    /// user may not write it or its directory, or it is on a read-only file system.
    static func problem(path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "the database file cannot be found (\(String(cString: strerror(errno))))" }
        if info.st_mode & 0o222 == 0 {
            return "the database file is read-only (mode \(String(info.st_mode & 0o7777, radix: 8)))"
        }
        var fs = statvfs()
        if statvfs(path, &fs) == 0, fs.f_flag & UInt(ST_RDONLY) != 0 { return "the database is on a read-only file system" }
        if access(path, W_OK) != 0 { return "the database file is not writable by this user" }
        let directory = CatalogFiles.directory(of: path).isEmpty ? "." : CatalogFiles.directory(of: path)
        if access(directory, W_OK) != 0 { return "the database's directory is not writable by this user" }
        return nil
    }
}
