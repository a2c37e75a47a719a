import Foundation

/// serve's Prometheus figures (docs/serve.md §6), in the text exposition format: requests by route and
/// status, open long-polls, and write-to-visible (a row's stamp to the moment a long-poll answer carries it).
///
/// No label ever holds a user or a token: routes are the fixed names of docs/protocol.md.
package final class ServeMetrics: @unchecked Sendable {
    // Safe: every stored var is touched under `lock`.
    private let lock = NSLock()
    private var requests: [RequestKey: Int] = [:]
    private struct RequestKey: Hashable, Comparable {
        let route: String
        let status: Int
        static func < (a: Self, b: Self) -> Bool { (a.route, a.status) < (b.route, b.status) }
    }
    private var openLongPolls = 0
    private static let bounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    private var buckets = [Int](repeating: 0, count: ServeMetrics.bounds.count)
    private var visibleCount = 0
    private var visibleSum = 0.0
    private var rowsApplied = 0
    /// With `--hub`: the hub's state (`starting`, `ok`, `failing`), read at each scrape.
    var hubState: (@Sendable () -> String)? {
        get { lock.withLock { hubStateSource } }
        set { lock.withLock { hubStateSource = newValue } }
    }
    private var hubStateSource: (@Sendable () -> String)?

    func request(route: String, status: Int) {
        lock.withLock { requests[RequestKey(route: route, status: status), default: 0] += 1 }
    }

    func longPoll(_ delta: Int) { lock.withLock { openLongPolls += delta } }

    func applied(_ n: Int) { lock.withLock { rowsApplied += n } }

    /// A long-poll answer delivered a row stamped `seconds` ago.
    func writeToVisible(_ seconds: Double) {
        let s = max(0, seconds)
        lock.withLock {
            visibleCount += 1
            visibleSum += s
            for (i, b) in Self.bounds.enumerated() where s <= b { buckets[i] += 1 }
        }
    }

    /// Open long-polls now.
    package var longPolls: Int { lock.withLock { openLongPolls } }

    /// The text exposition (https://prometheus.io/docs/instrumenting/exposition_formats/).
    package func text() -> String {
        let hub = hubState?()
        return lock.withLock {
            var out = "# HELP catalog_serve_requests_total Requests answered, by route and status.\n"
            out += "# TYPE catalog_serve_requests_total counter\n"
            for key in requests.keys.sorted() {
                out += "catalog_serve_requests_total{route=\"\(key.route)\",status=\"\(key.status)\"} \(requests[key] ?? 0)\n"
            }
            out += "# HELP catalog_serve_long_polls Long-polls waiting now.\n# TYPE catalog_serve_long_polls gauge\n"
            out += "catalog_serve_long_polls \(openLongPolls)\n"
            out += "# HELP catalog_serve_positions_applied_total Position rows POSTs applied.\n"
            out += "# TYPE catalog_serve_positions_applied_total counter\ncatalog_serve_positions_applied_total \(rowsApplied)\n"
            out += "# HELP catalog_serve_write_to_visible_seconds From a row's stamp to a long-poll answer carrying it.\n"
            out += "# TYPE catalog_serve_write_to_visible_seconds histogram\n"
            for (i, b) in Self.bounds.enumerated() {
                out += "catalog_serve_write_to_visible_seconds_bucket{le=\"\(b)\"} \(buckets[i])\n"
            }
            out += "catalog_serve_write_to_visible_seconds_bucket{le=\"+Inf\"} \(visibleCount)\n"
            out += "catalog_serve_write_to_visible_seconds_sum \(visibleSum)\n"
            out += "catalog_serve_write_to_visible_seconds_count \(visibleCount)\n"
            if let hub {
                out += "# HELP catalog_serve_hub_up 1 when the hub's last poll succeeded (serve --hub), else 0.\n"
                out += "# TYPE catalog_serve_hub_up gauge\ncatalog_serve_hub_up \(hub == "ok" ? 1 : 0)\n"
            }
            return out
        }
    }
}
