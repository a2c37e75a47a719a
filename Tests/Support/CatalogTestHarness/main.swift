// `catalog` with the test suite's hooks: the process tests (a sync killed inside its transaction, two
// syncs at once, fast HTTP retries) run this binary. The product binary reads none of these variables.
@_spi(Testing) import CatalogCLI
import Foundation

signal(SIGPIPE, SIG_IGN)
let environment = ProcessInfo.processInfo.environment
let hooks = TestHooks(
    backoffSeconds: environment["CATALOG_TEST_BACKOFF_SECONDS"].flatMap(Double.init),
    pauseBeforeCommitMilliseconds: environment["CATALOG_TEST_PAUSE_BEFORE_COMMIT_MS"].flatMap(Int.init) ?? 0)
let status = CatalogCLI.run(
    Array(CommandLine.arguments.dropFirst()),
    context: CLIContext(
        stdout: FileDescriptorSink(fd: 1), stderr: FileDescriptorSink(fd: 2),
        stderrIsTerminal: isatty(2) == 1, testHooks: hooks))
exit(status)
