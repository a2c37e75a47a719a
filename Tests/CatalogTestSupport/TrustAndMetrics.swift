// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import Synchronization
    import Testing

    @_spi(Testing) @testable import CatalogCLI
    @testable import LandmarkCatalog
    @_spi(Testing) @testable import LandmarkCatalogSync
    @testable import LandmarkCatalogSync

    /// Helpers of the trust suites (docs/trust.md).
    package enum Trust {
        /// Debian's `minisign`, when installed (`apt-get install minisign`; scripts/setup installs it).
        package static let minisign: URL? = ["/usr/bin/minisign", "/usr/local/bin/minisign"].map(URL.init(fileURLWithPath:))
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }

        /// `catalog key generate --output DIR/NAME.key`: the secret key's path and the public key's line.
        package static func generate(_ dir: URL, _ name: String) throws -> (secret: String, line: String) {
            let path = dir.appending(path: "\(name).key").path
            let r = runCLI(["key", "generate", "--output", path])
            #expect(r.status == 0, "\(r.stderr)")
            let line = try #require(r.stdout.split(separator: "\n").last.map(String.init))
            return (path, line)
        }

        /// A store with the five landmarks of Tests/Fixtures/valid.json and `ann` on page 1.
        package static func publisher(_ dir: URL, _ name: String) throws -> CatalogStore {
            let store = try LogFixtures.store(dir, name)
            _ = try Importer(store).importLandmarks(from: .file(Support.fixture("valid.json")))
            _ = try Positions(store).setPosition(user: "ann-\(name)", to: .page(1))
            return store
        }

        /// Publishes `store` into `dir`, signed by the secret key `key` when given; `rotate`: `--rotate-key`.
        package static func publish(_ store: CatalogStore, _ dir: URL, key: String? = nil, rotate: Bool = false) throws -> PublishReport {
            var options = PublishOptions()
            options.signingKey = try key.map { try MinisignSecretKey.load(path: $0) }
            options.rotateKey = rotate
            return try LogPublisher(store).publishLog(to: dir.path, options: options)
        }

        /// What a failed source must leave alone: every row, and the source's cursor.
        package static func state(_ db: String, source: String) throws -> [[SQLValue]] {
            guard FileManager.default.fileExists(atPath: db) else { return [] }
            return try dumpLandmarks(db) + dumpPositions(db) + cursor(db, source: source)
        }

        /// The source's stored cursor (no row: never synced), without its count of tries found behind it
        /// (`behind`, kept for `status --check`): where it stands.
        package static func cursor(_ db: String, source: String) throws -> [[SQLValue]] {
            try dumpRows(db, sql: "SELECT cursor FROM sync_sources WHERE source = '\(source.replacingOccurrences(of: "'", with: "''"))'").map { row in
                guard case .text(let t)? = row.first, var cursor = SourceCursor(text: t) else { return row }
                cursor["behind"] = nil
                return [.text(cursor.text)]
            }
        }

        package static func sync(_ arguments: [String], db: String) -> CLIResult {
            runCLI(["sync"] + arguments, db: db, clock: ManualClock(testNow))
        }

        /// Replaces one base64 character of line `line` of a signature file (a different signature, still base64).
        package static func flipSignature(_ path: String, line: Int) throws {
            var lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
            var chars = Array(lines[line])
            chars[20] = chars[20] == "A" ? "B" : "A"
            lines[line] = String(chars)
            try lines.joined(separator: "\n").write(toFile: path, atomically: false, encoding: .utf8)
        }
    }

    /// This process's resident set size (`VmRSS` in /proc/self/status), in bytes; 0 when unknown.
    package func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// The test's Python helper around prometheus_client's text parser.
    package enum PrometheusParser {
        package static let script = Support.root.appending(path: "Tests/Support/prometheus_text.py").path

        package static let available: Bool = {
            (try? runProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, "--probe"]).status) == 0
        }()

        package struct Sample: Equatable {
            package var name: String
            package var labels: [String: String]
            package var value: Double

            /// A sample of `name` with `labels` and `value`.
            package init(name: String, labels: [String: String], value: Double) {
                self.name = name
                self.labels = labels
                self.value = value
            }
        }

        /// The families in `file` as prometheus_client reads them: name → (type, help, samples).
        package static func parse(file: String) throws -> [String: (type: String, help: String, samples: [Sample])] {
            let result = try runProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, file])
            try #require(result.status == 0, "prometheus_client refused the text: \(result.stderr)")
            let families = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
            var out: [String: (type: String, help: String, samples: [Sample])] = [:]
            for f in families {
                let samples = (f["samples"] as? [[String: Any]] ?? []).map {
                    Sample(
                        name: $0["name"] as? String ?? "", labels: $0["labels"] as? [String: String] ?? [:],
                        value: ($0["value"] as? NSNumber)?.doubleValue ?? .nan)
                }
                out[f["name"] as? String ?? ""] = (f["type"] as? String ?? "", f["help"] as? String ?? "", samples)
            }
            return out
        }
    }
#endif
