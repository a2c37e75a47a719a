// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import Testing

    @_spi(Testing) @testable import CatalogCLI
    @testable import LandmarkCatalog
    @testable import LandmarkCatalogSync

    /// The files in contrib/ (systemd units, cron), read as the operator's tools would.
    package enum Contrib {
        package static let binary = "/usr/local/bin/catalog"

        /// Every `catalog` command line of the examples, as argument vectors (up to a redirection or pipe).
        ///
        /// Exec lines without systemd's special prefixes (`-` ignores the exit status, and `@ + ! :`;
        /// systemd.service(5), "Command lines").
        package static func execLines(_ service: [(section: String, key: String, value: String)], _ key: String) -> [String] {
            value(service, "Service", key).map { String($0.drop { "-@+!:".contains($0) }) }
        }

        package static var systemdAnalyze: String? {
            ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) }
        }

        /// `[Section] Key=Value` pairs of a unit file, in order (comments and blank lines skipped).
        package static func unit(_ url: URL) throws -> [(section: String, key: String, value: String)] {
            var section = ""
            var out: [(String, String, String)] = []
            for raw in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
                if line.hasPrefix("[") && line.hasSuffix("]") {
                    section = String(line.dropFirst().dropLast())
                    continue
                }
                let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                try #require(parts.count == 2, "not Key=Value: \(line)")
                out.append((section, String(parts[0]), String(parts[1])))
            }
            return out
        }

        package static func value(_ unit: [(section: String, key: String, value: String)], _ section: String, _ key: String) -> [String] {
            unit.filter { $0.section == section && $0.key == key }.map(\.value)
        }
    }
#endif
