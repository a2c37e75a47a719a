import Foundation
import LandmarkCatalog

extension Invocation {
    /// Whether a progress line may be drawn: standard error is a terminal (never a pipe, a file or cron's
    /// mail), and the command was not asked for `--quiet`, `--json` or `--log-format json`.
    var showsProgress: Bool {
        context.stderrIsTerminal && !self[Options.quiet] && !self[Options.json] && parsed[GlobalOptions.logFormat] != "json"
    }

    /// A progress line on standard error that clears itself before any diagnostic is written.
    /// - Parameter label: what the line starts with until a job names its phase (`importing`).
    /// - Returns: the line, drawn only when ``showsProgress`` allows it.
    func makeProgressLine(label: String) -> ProgressLine {
        let enabled = showsProgress
        let line = ProgressLine(
            sink: context.stderr, enabled: enabled, label: label,
            columns: enabled ? ProgressLine.terminalColumns() : nil)
        reporter.beforeLine = { line.clear() }
        return line
    }
}
