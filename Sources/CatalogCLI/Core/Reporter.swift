import Foundation
import LandmarkCatalog

/// The one place diagnostics reach stderr (docs/operations.md §5): as text (`catalog: warning: …`) or, with
/// `--log-format json`, as one JSON object per line; at most `limit` lines of one kind per run, then
/// one line with the count of the rest and where to see them all.
///
/// Counts stay complete. Text lines show control characters escaped (`\u{1B}`), as tables do: a key or a
/// name from a file cannot drive the terminal (JSON lines escape them as JSON does).
final class Reporter {
    enum Format { case text, json }
    let stderr: any OutputSink
    let format: Format
    /// Lines of one kind shown per run; 0 = no limit.
    let limit: Int
    private(set) var counts: [String: Int] = [:]
    private var order: [String] = []
    /// Called before a line is written (a progress line clears itself).
    var beforeLine: () -> Void = {}

    init(stderr: any OutputSink, format: Format, limit: Int = 20) {
        self.stderr = stderr
        self.format = format
        self.limit = limit
    }

    /// Where every diagnostic of `kind` can be listed, for the summary line.
    static func listing(for kind: String) -> String {
        switch kind {
        case "quarantined": return "see them all with 'catalog quarantine list'"
        case "tie": return "see them all with 'catalog conflicts'"
        case "source-failed": return "see them all with 'catalog log' or 'catalog status'"
        default: return "rerun with --max-diagnostics 0 to see them all"
        }
    }

    /// Reports one diagnostic (counted; shown while its kind is under the limit).
    func report(_ d: Diagnostic) {
        let n = (counts[d.kind] ?? 0) + 1
        counts[d.kind] = n
        if n == 1 { order.append(d.kind) }
        guard limit == 0 || n <= limit else { return }
        write(level: d.severity.rawValue, kind: d.kind, message: d.message, text: d.description, diagnostic: d)
    }

    /// An error that ends the command, or a source (never bounded).
    /// - Parameters:
    ///   - message: what went wrong.
    ///   - hint: what to do about it, shown after the message.
    ///   - kind: `error`, or what sort of failure it is (`unhealthy` for `status --check`).
    ///   - source: the sync source it concerns, for `--log-format json`.
    ///   - bounded: count it with its kind and show at most `limit` of them (a failing source among
    ///     many: 25 sources down are 20 lines and a count, not 25).
    func error(_ message: String, hint: String? = nil, kind: String = "error", source: String? = nil, bounded: Bool = false) {
        if bounded {
            let n = (counts[kind] ?? 0) + 1
            counts[kind] = n
            if n == 1 { order.append(kind) }
            guard limit == 0 || n <= limit else { return }
        }
        beforeLine()
        switch format {
        case .text:
            stderr.line("catalog: error: \(Table.escaped(message))")
            if let hint { stderr.line("hint: \(Table.escaped(hint))") }
        case .json:
            var o = JSONObject()
            o.set("hint", hint)
            o.set("kind", kind)
            o.set("level", "error")
            o.set("message", message)
            if let source { o.set("source", source) }
            stderr.write(o.bytes + [0x0A])
        }
    }

    /// A usage error: the message, the usage line and where to read more (exit 64).
    func usageError(_ message: String, usage: String, see: String) {
        beforeLine()
        switch format {
        case .text:
            stderr.line("catalog: error: \(Table.escaped(message))")
            stderr.line("Usage: \(usage)")
            stderr.line("  See '\(see)'.")
        case .json:
            var o = JSONObject()
            o.set("kind", "usage")
            o.set("level", "error")
            o.set("message", message)
            o.set("see", see)
            o.set("usage", usage)
            stderr.write(o.bytes + [0x0A])
        }
    }

    /// A warning of `kind` that is not about data (bounded like diagnostics).
    func warn(_ message: String, kind: String = "warning") {
        report(Diagnostic(severity: .warning, message: message, file: "", kind: kind))
    }

    /// Writes the summary lines for kinds over the limit.
    ///
    /// Call once at the end of the command.
    func finish() {
        guard limit > 0 else { return }
        for kind in order {
            guard let n = counts[kind], n > limit else { continue }
            let message = "\(n - limit) more \(kind) \(noun(n - limit, "diagnostic")) not shown (\(n) in all); \(Self.listing(for: kind))"
            write(
                level: "info", kind: "suppressed", message: message, text: message, diagnostic: nil,
                extra: [("count", .int(n - limit)), ("of", .text(kind)), ("total", .int(n))])
        }
        order.removeAll()
    }

    /// Ends a window of a long-running command (`sync --follow`): the summary lines of ``finish()``, then
    /// every kind may show `limit` lines again, so a follower's warnings are bounded per window, not
    /// silenced for the rest of its life after the first `limit`.
    func closeWindow() {
        finish()
        counts.removeAll()
    }

    /// A structured field's value in a JSON line.
    private enum Field {
        case int(Int)
        case text(String)
    }

    private func write(level: String, kind: String, message: String, text: String, diagnostic d: Diagnostic?, extra: [(String, Field)] = []) {
        beforeLine()
        switch format {
        case .text:
            stderr.line("catalog: \(level): \(Table.escaped(text))")
        case .json:
            var o = JSONObject()
            o.set("kind", kind)
            o.set("level", level)
            o.set("message", message)
            for (key, value) in extra {
                switch value {
                case .int(let n): o.set(key, n)
                case .text(let t): o.set(key, t)
                }
            }
            if let d {
                if !d.file.isEmpty { o.set("source", d.file) }
                if d.position != nil { o.set("location", d.location) }
                if let index = d.index { o.set("record", index) }
                if let id = d.id { o.set("id", id) }
                if let field = d.field { o.set("field", field) }
                // A detail never replaces a field above, nor an earlier detail of the same key.
                for detail in d.details where !o.contains(detail.key) { o.set(detail.key, detail.value) }
            }
            stderr.write(o.bytes + [0x0A])
        }
    }
}
