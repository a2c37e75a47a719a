import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// The stamps of the rows one source's merge applied (the first 10,000: enough for the histogram).
final class StampBuffer {
    var stamps: [Int64] = []
    func add(_ stamp: Int64) { if stamps.count < 10_000 { stamps.append(stamp) } }
}

/// Milliseconds of the monotonic clock (for scheduling; the ledger uses the wall clock).
func monotonicMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// One followed source and its schedule.
struct Followed {
    var locator: SourceLocator
    /// When it is next due (monotonic ms).
    var nextDue: Int64 = 0
    /// Failures in a row (its backoff).
    var failures = 0
    /// The last attempt's failure, nil when it succeeded (or was not tried yet).
    var lastError: CatalogError?
    /// Whether it was ever tried.
    var tried = false
    /// Under `--repair`: whether a repair check ran (or was found impossible) since following began.
    var repairChecked = false
    var lastNote: String?
    var polls: Int64 = 0
    var failedPolls: Int64 = 0
    var lag = FollowerStatus.Source(source: "", polls: 0, failures: 0)
    /// inotify: the directory and file name whose change makes it due (a local source).
    var watchDirectory: String?
    var watchName: String?
    /// An inotify event arrived for it.
    var dirty = false
    /// The kinds of warning about a lasting state (``Follower/stateKinds``) it showed and still is in.
    var states = Set<String>()

    /// A fetch on a worker thread (an HTTP source), until its result is merged.
    var inFlight: DetachedFetch?
    /// When the fetch in flight started (monotonic ms).
    var inFlightSince: Int64 = 0
    /// Due again while its fetch was in flight (this database changed, a long-poll woke): polled again
    /// as soon as that fetch is merged.
    var dueAgain = false
    /// A source that pushes: the follower's change count (``Follower/changes``) when it last had something
    /// to push (this database changed, or another source merged rows).
    ///
    /// A push cut by SIGTERM (or not started because of it) leaves this ahead of ``pushedThrough``, so
    /// the last pass still pushes (docs/live-sync.md §5).
    var pushWanted: Int64 = 0
    /// The change count at the start of its last poll that succeeded (its push covered those changes).
    var pushedThrough: Int64 = 0
    /// The change count when the fetch in flight was planned (its rows to push read).
    var inFlightChanges: Int64 = 0

    /// A source fetched on a worker thread, so that a hung or slow server holds up no other source: its
    /// kind fetches without the store (``SourceCapabilities/fetchesDetached``: HTTP, a serve).
    var detached: Bool { locator.capabilities.contains(.fetchesDetached) }
    /// A source that can tell the follower it changed (``SourceKind/makeListener(_:options:)``): a hub's
    /// LISTEN, a serve's long-poll.
    var listens: Bool { locator.capabilities.contains(.notifies) }
    /// A source this database's changes are pushed to (a hub, a `catalog serve`): polled at once when this
    /// database changed, and after another source merged rows.
    var pushes: Bool { locator.capabilities.contains(.pushes) }
    /// It pushes, and has something to push that no successful poll has sent yet.
    var pushPending: Bool { pushes && pushedThrough < pushWanted }

    init(_ locator: SourceLocator) {
        self.locator = locator
        _ = updateWatch()
    }

    static func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// Where inotify looks for it: a log directory's manifest, else the path's name in its parent (a
    /// snapshot file, a manifest given by path, or a directory not there yet).
    /// - Returns: whether that changed (a directory appeared, or was replaced by a file).
    mutating func updateWatch() -> Bool {
        guard case .file(let path) = locator else { return false }
        var target: (String, String)
        if Self.isDirectory(path) {
            target = (path, LogManifest.fileName)
        } else {
            target = (CatalogFiles.directory(of: path), String(path.split(separator: "/").last ?? ""))
        }
        // A directory not there (yet, or any more): watched for by its name in the nearest parent that is
        // there, so its return is seen at once.
        while !Self.isDirectory(target.0), target.0 != "/", !target.0.isEmpty {
            target = (CatalogFiles.directory(of: target.0), String(target.0.split(separator: "/").last ?? ""))
        }
        guard watchDirectory != target.0 || watchName != target.1 else { return false }
        (watchDirectory, watchName) = target
        return true
    }
}
