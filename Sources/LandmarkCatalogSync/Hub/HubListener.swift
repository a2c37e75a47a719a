internal import CLibPQ
import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// A follower's `LISTEN` on a hub (docs/live-sync.md §3): a connection of its own, idle but for the
/// notifications a push's transaction sends at `COMMIT` (`NOTIFY catalog_hub`).
///
/// Its socket goes in the follower's `poll()`; when readable, `PQconsumeInput` and `PQnotifies` read
/// what arrived.
///
/// pgbouncer in transaction pooling mode cannot carry `LISTEN` (the session that listens is handed to
/// other clients between transactions). The listener therefore checks itself when it starts: a
/// connection whose backend pid (`pg_backend_pid()`) is not the one the handshake gave (`PQbackendPID`,
/// which a pooler makes up) goes through a pooler; and it sends a notification with a payload of its own
/// and waits for it, 2 s at most. Either way it is no listener (``HubListener/Unsupported``) and the
/// follower polls the hub at the interval.
final class HubListener: ChangeListener {
    /// The channel pushes notify.
    static let channel = "catalog_hub"
    /// The payload prefix of a listener's self-test, which other listeners ignore.
    static let probePrefix = "probe-"

    /// The hub cannot deliver notifications to this connection.
    struct Unsupported: Error {}

    private let pg: PGConnection
    private(set) var descriptor: Int32

    init(conninfo: String, timeoutSeconds: Int) throws {
        pg = try PGConnection(conninfo: conninfo, connectTimeoutSeconds: timeoutSeconds, commandTimeout: .seconds(Int64(timeoutSeconds)))
        // A pooler (pgbouncer) hands the client its own process key, not the server backend's: then the
        // session that would LISTEN is not this client's for longer than a transaction.
        let backend = try pg.execute(sql: "SELECT pg_backend_pid()").text(0, 0).flatMap { Int32($0) }
        guard backend == pg.backendPID else { throw Unsupported() }
        try pg.execute(sql: "LISTEN \(Self.channel)")
        guard let handle = pg.handle else { throw PGError(kind: .lostConnection, message: "the connection closed", target: pg.target) }
        descriptor = PQsocket(handle)
        let probe = Self.probePrefix + UUID().uuidString
        try pg.execute(sql: "SELECT pg_notify($1, $2)", [.text(Self.channel), .text(probe)])
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline {
            if drain().probes.contains(probe) { return }
            var fd = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&fd, 1, 100)
        }
        throw Unsupported()
    }

    /// Reads what arrived: whether a push (not a self-test) notified, the self-tests seen, and whether the
    /// connection broke.
    private func drain() -> (notified: Bool, probes: [String], broken: Bool) {
        guard let handle = pg.handle, PQconsumeInput(handle) == 1 else { return (true, [], true) }
        var notified = false
        var probes: [String] = []
        while let notice = PQnotifies(handle) {
            let payload = notice.pointee.extra.map { String(cString: $0) } ?? ""
            if payload.hasPrefix(Self.probePrefix) { probes.append(payload) } else { notified = true }
            PQfreemem(notice)
        }
        return (notified, probes, false)
    }

    func consume() -> Bool {
        guard descriptor >= 0 else { return false }
        let (notified, _, broken) = drain()
        if broken {
            pg.close()
            descriptor = -1
        }
        return notified
    }
}
