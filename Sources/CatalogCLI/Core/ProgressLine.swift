import Foundation
import LandmarkCatalog

/// Whether a progress line is on the terminal, and how to draw it: for files of known size the bytes
/// done and total, the percentage, rows per second and the time left; otherwise rows and rows per second.
///
/// Shown on a terminal only — never in a pipe, under cron, or with `--quiet` / `--json`.
final class ProgressLine {
    private(set) var shown = false
    private let sink: any OutputSink
    private let enabled: Bool
    private var label: String
    private var started: Double
    private var last: Double = 0
    /// When the last report came (drawn or not): the next job's clock starts there.
    private var lastReport: Double?
    private let now: () -> Double
    /// The terminal's width: longer lines are cut so that `\r` returns to their start.
    private let columns: Int?
    /// The phase and subject last drawn: a new one restarts the clock (its rate and ETA are its own).
    private var job: (LandmarkCatalog.CatalogProgress.Phase, String?)?

    init(
        sink: any OutputSink, enabled: Bool, label: String, columns: Int? = nil,
        now: @escaping () -> Double = { ProcessInfoClock.seconds() }
    ) {
        self.sink = sink
        self.enabled = enabled
        self.label = label
        self.columns = columns
        self.now = now
        self.started = now()
    }

    /// Redraws the line (at most twice a second).
    func update(records: Int, bytes: Int64, total: Int64?) {
        guard enabled else { return }
        let t = now()
        lastReport = t
        guard t - last >= 0.5 else { return }
        last = t
        var text = Self.render(label: label, records: records, bytes: bytes, total: total, elapsed: t - started)
        if let columns, columns > 1, text.count >= columns {
            // The figures matter more than the whole subject: shorten the label first, then cut.
            let figures = Self.render(label: "", records: records, bytes: bytes, total: total, elapsed: t - started)
            let verb = label.split(separator: " ").first.map(String.init) ?? label
            // Narrower than the verb and the figures together: the verb, and the figures as far as they go.
            text = String(((Self.shortened(label, to: columns - 1 - figures.count) ?? verb) + figures).prefix(columns - 1))
        }
        sink.write("\r\u{1B}[K" + text)
        shown = true
    }

    /// Redraws the line for a job that reports its phase and subject (a sync merging one source, then
    /// writing `--publish`): the label names them, and a new phase or subject starts its own clock —
    /// the first job's when the line was made (the command's start), a later one's at the report before
    /// it (when the job before it ended), never at its own first report: a job reports after its first
    /// batch, and a rate measured from there is one batch over microseconds.
    func update(_ p: LandmarkCatalog.CatalogProgress) {
        guard enabled else { return }
        if !(job.map { $0 == (p.phase, p.subject) } ?? false) {
            if job != nil { started = lastReport ?? now() }
            job = (p.phase, p.subject)
            last = 0
            label = Self.label(p)
        }
        update(records: p.records, bytes: p.bytes, total: p.totalBytes)
    }

    /// `merging peer.json`, `writing /srv/exchange/me.json`: long subjects keep their end.
    static func label(_ p: LandmarkCatalog.CatalogProgress) -> String {
        let verb: String
        switch p.phase {
        case .importing: verb = "importing"
        case .merging: verb = "merging"
        case .writing: verb = "writing"
        case .pushing: verb = "pushing to"
        }
        guard let subject = p.subject else { return verb }
        return verb + " " + (subject.count > 40 ? "…" + subject.suffix(39) : subject)
    }

    /// `label` in at most `width` characters, keeping its verb and the end of its subject
    /// (`merging …/hub2`); nil when not even the verb and a little of the subject fit.
    static func shortened(_ label: String, to width: Int) -> String? {
        guard label.count > width else { return label }
        guard let space = label.firstIndex(of: " ") else { return nil }
        let verb = label[..<space]
        let subject = label[label.index(after: space)...].drop { $0 == "…" }
        let room = width - verb.count - 2  // " …"
        guard room >= 8 else { return nil }
        return verb + " …" + subject.suffix(room)
    }

    /// The width of the terminal on `fd`, or nil when it is not one.
    static func terminalColumns(fd: Int32 = 2) -> Int? {
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// The line's text.
    static func render(label: String, records: Int, bytes: Int64, total: Int64?, elapsed: Double) -> String {
        let rate = elapsed >= 0.01 ? Double(records) / elapsed : 0  // under 10 ms a rate means nothing
        var parts = ["\(label):"]
        if let total, total > 0 {
            let fraction = min(1, Double(bytes) / Double(total))
            parts.append(String(format: "%3.0f%%", fraction * 100))
            parts.append("\(megabytes(bytes)) of \(megabytes(total)) MB,")
            parts.append("\(grouped(records)) \(noun(records, "record")),")
            parts.append("\(grouped(Int(rate))) rows/s,")
            let left = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0
            parts.append("ETA \(clock(left))")
        } else {
            parts.append("\(grouped(records)) \(noun(records, "record")),")
            if bytes > 0 { parts.append("\(megabytes(bytes)) MB,") }
            parts.append("\(grouped(Int(rate))) rows/s")
        }
        return parts.joined(separator: " ")
    }

    /// Clears the line before anything else is written to the terminal.
    func clear() {
        guard shown else { return }
        sink.write("\r\u{1B}[K")
        shown = false
    }

    static func megabytes(_ bytes: Int64) -> String { String(format: "%.1f", Double(bytes) / 1_000_000) }
    static func grouped(_ n: Int) -> String {
        let digits = String(n)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return out
    }
    static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }
}

/// Monotonic seconds, for rates.
enum ProcessInfoClock {
    static func seconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
