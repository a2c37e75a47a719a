import Foundation
import LandmarkCatalog

/// The one place diagnostics reach stderr (docs/operations.md §5): as text (`catalog: warning: …`) or, with
/// `--log-format json`, as one JSON object per line; at most `limit` lines of one kind per run, then
/// one line with the count of the rest and where to see them all. Counts stay complete. Text lines show
/// control characters escaped (`\u{1B}`), as tables do: a key or a name from a file cannot drive the
/// terminal (JSON lines escape them as JSON does).
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
    ///   - kind: `error`, or what sort of failure it is (`unhealthy` for `status --check`).
    ///   - source: the sync source it concerns, for `--log-format json`.
    /// - Parameter bounded: count it with its kind and show at most `limit` of them (a failing source
    ///   among many: 25 sources down are 20 lines and a count, not 25).
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
            var w = JSONWriter()
            w.raw("{")
            w.key("hint")
            w.string(hint)
            w.raw(",")
            w.key("kind")
            w.string(kind)
            w.raw(",")
            w.key("level")
            w.string("error")
            w.raw(",")
            w.key("message")
            w.string(message)
            if let source {
                w.raw(",")
                w.key("source")
                w.string(source)
            }
            w.raw("}\n")
            stderr.write(w.bytes)
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
            var w = JSONWriter()
            w.raw("{")
            w.key("kind")
            w.string("usage")
            w.raw(",")
            w.key("level")
            w.string("error")
            w.raw(",")
            w.key("message")
            w.string(message)
            w.raw(",")
            w.key("see")
            w.string(see)
            w.raw(",")
            w.key("usage")
            w.string(usage)
            w.raw("}\n")
            stderr.write(w.bytes)
        }
    }

    /// A warning of `kind` that is not about data (bounded like diagnostics).
    func warn(_ message: String, kind: String = "warning") {
        report(Diagnostic(severity: .warning, message: message, file: "", kind: kind))
    }

    /// Writes the summary lines for kinds over the limit. Call once at the end of the command.
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
            var w = JSONWriter()
            var fields: [(String, (inout JSONWriter) -> Void)] = [
                ("kind", { $0.string(kind) }), ("level", { $0.string(level) }), ("message", { $0.string(message) }),
            ]
            for (key, value) in extra {
                switch value {
                case .int(let n): fields.append((key, { $0.int(Int64(n)) }))
                case .text(let t): fields.append((key, { $0.string(t) }))
                }
            }
            if let d {
                if !d.file.isEmpty { fields.append(("source", { $0.string(d.file) })) }
                if d.position != nil { fields.append(("location", { $0.string(d.location) })) }
                if let index = d.index { fields.append(("record", { $0.int(Int64(index)) })) }
                if let id = d.id { fields.append(("id", { $0.int(id) })) }
                if let field = d.field { fields.append(("field", { $0.string(field) })) }
                for detail in d.details where !fields.contains(where: { $0.0 == detail.key }) {
                    fields.append((detail.key, { $0.string(detail.value) }))
                }
            }
            fields.sort { $0.0 < $1.0 }
            w.byte(0x7B)
            for (i, f) in fields.enumerated() {
                if i > 0 { w.byte(0x2C) }
                w.key(f.0)
                f.1(&w)
            }
            w.raw("}\n")
            stderr.write(w.bytes)
        }
    }
}
