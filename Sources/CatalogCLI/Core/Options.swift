import Foundation
import LandmarkCatalog

/// The options commands share, declared once.
///
/// A command lists the ones it takes (with its own help text where that reads better); runs query
/// them typed, `invocation[Options.json]`.
enum Options {
    static let json = Flag("--json", "Print JSON.")
    static let quiet = Flag("--quiet", short: "q", "Print nothing on success (warnings and errors still go to stderr).")
    static let dryRun = Flag("--dry-run", short: "n", "Report what would change; change nothing.")
    static let output = Option<String>(
        "--output", short: "o", "FILE", "Write to FILE instead of standard output (- is standard output).",
        completion: .file, parse: Values.nonEmpty)
    static let user = Option<String>(
        "--user", "ID", "The user id (NFC-normalised; at most 256 bytes, no control characters).",
        parse: Values.string)
    static let limit = Option<Int>("--limit", "N", "Show at most N entries (default 20).", parse: Values.integer(1...1_000_000))
}
