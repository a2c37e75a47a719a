import Foundation
import LandmarkCatalog
import LandmarkCatalogSync

/// What `catalog serve` was asked to do (docs/serve.md).
package struct ServeOptions: Sendable {
    /// The database served.
    package var databasePath: String
    /// IPv4 address and port to listen on (port 0: any free one).
    package var host = "127.0.0.1"
    package var port = 8080
    /// The keys tokens are verified with (two during a rotation, docs/serve.md §5).
    package var keys: [TokenKey]
    /// `GET /v1/landmarks` without a token.
    package var publicLandmarks = false
    /// Rows stamped further ahead of this server's clock than this are quarantined (ms).
    package var maxDriftMilliseconds: Int64 = 300_000
    /// More rows than this in one POST: 413 too_many_rows.
    package var maxRows = 1000
    /// The most rows one answer holds (docs/protocol.md §4).
    package var pageLimit = 5000
    /// The longest `wait` honoured, in seconds.
    package var maxWaitSeconds = 60
    /// How often another process's commits are looked for (`PRAGMA data_version`), in ms.
    package var probeMilliseconds = 50
    /// How often serve collects tombstones and erasure records, in ms (daily).
    ///
    /// With the default horizon (docs/erasure.md §4). Not with `hub`: the replica's follower collects.
    package var collectionMilliseconds = 86_400_000
    /// Where Prometheus metrics are served (`GET /metrics`), or nil.
    package var metricsHost: String?
    package var metricsPort = 0
    /// Where the operator's page is served (docs/serve.md §12), or nil; a loopback address unless the
    /// command line said `--admin-any-address`.
    package var adminHost: String?
    /// The operator's page's port (0: any free one).
    package var adminPort = 0
    /// HTTP limits.
    package var limits = HTTPLimits()
    /// One user's requests in hand at most, long-polls included (`--max-connections-per-user`).
    ///
    /// One more is refused with 429 `too_many_requests` (docs/serve.md §3). Edge tokens are not counted.
    package var maxRequestsPerUser = 64
    /// One user's POSTs go through a token bucket (`--post-rate`, `--post-burst`).
    ///
    /// It is refilled at `postRate` a second up to `postBurst`; an empty bucket is 429 `rate_limited`
    /// (docs/serve.md §3). Edge tokens are not limited.
    package var postRate = 5.0
    package var postBurst = 20
    /// `--hub`: a PostgreSQL hub's URL or a saved remote's name this database is kept in step with
    /// (docs/serve.md §8), or nil to serve this database alone.
    package var hub: String?
    /// The node name put in answers (`node` of the snapshot envelope).
    package var node = ""
    /// Called every few seconds while serve runs, with why it is not ready (nil: ready, docs/serve.md §11):
    /// `catalog serve` records it for `catalog status --check` (docs/operations.md §3).
    package var heartbeat: (@Sendable (_ notReady: String?) -> Void)?
    /// Tests only: called after a POST's rows are committed, before the answer is sent.
    package var afterPostCommit: (@Sendable () -> Void)?
    /// Tests only: with `hub`, the follower's ``FollowOptions/pushStartHook`` (a SIGTERM while a push is in flight).
    package var hubPushStart: (@Sendable (FollowControl) -> Void)?
    /// Access log and diagnostics go here (stderr).
    package var log: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        bytes.append(0x0A)
        writeStandardError(bytes)
    }
    /// The access log's lines, newline included, go here (stderr): bytes as built, one `write(2)` each.
    package var logBytes: @Sendable ([UInt8]) -> Void = { writeStandardError($0) }

    package init(databasePath: String, keys: [TokenKey]) {
        self.databasePath = databasePath
        self.keys = keys
    }
}

/// Writes all of `bytes` to standard error (``Spool/writeAll(_:_:)``: short writes and `EINTR` retried); a
/// failure (a closed stderr) drops the line, as a log must not stop the server.
package func writeStandardError(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { Spool.writeAll(2, $0) }
}
