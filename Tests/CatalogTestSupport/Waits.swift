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

    /// Bounded waits and small runs shared by the suites.
    package enum Waits {
        /// The page `user` is on in `db`, or nil.
        package static func page(_ db: String, _ user: String) -> Int64? {
            guard let rows = try? dumpRows(db, sql: "SELECT page FROM positions WHERE user_id = '\(user)' AND deleted = 0"),
                case .integer(let n)? = rows.first?.first
            else { return nil }
            return n
        }

        /// Waits up to `limit` seconds for `condition`; returns the seconds it took, or nil when it never held.
        package static func waitFor(_ limit: Double, every step: UInt32 = 10_000, _ condition: () throws -> Bool) rethrows -> Double? {
            let start = ContinuousClock.now
            while ContinuousClock.now - start < .milliseconds(Int(limit * 1000)) {
                if try condition() { return seconds(since: start) }
                usleep(step)
            }
            return try condition() ? seconds(since: start) : nil
        }

        /// Runs the CLI in-process with standard error said to be a terminal (or not).
        package static func run(_ arguments: [String], db: String, terminal: Bool) -> CLIResult {
            let out = MemorySink()
            let err = MemorySink()
            let context = CLIContext(stdout: out, stderr: err, environment: [:], stderrIsTerminal: terminal)
            let status = CatalogCLI.run(["--db", db] + arguments, context: context)
            return CLIResult(status: status, stdout: out.text, stderr: err.text)
        }

        package static func seconds(since start: ContinuousClock.Instant) -> Double {
            let d = ContinuousClock.now - start
            return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
        }
    }
#endif
