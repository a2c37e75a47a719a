import CatalogTestSupport
import Foundation
import Testing

@Suite("The test run's summary of skips (scripts/test-summary)")
struct TestSummaryTests {
    @Test("skipped tests are grouped by reason with their suites; notices from the log follow, once each")
    func summary() throws {
        let directory = Support.temporaryDirectory()
        let xml = directory.appending(path: "xunit-swift-testing.xml")
        try Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites>
              <testsuite name="TestResults" errors="0" tests="3" failures="1" skipped="3" time="1.0">
                <testcase classname="LandmarkCatalogTests.LandmarkFixturesInteropTests" name="a()"><skipped>../shared/fixtures/landmarks not found: skipped</skipped></testcase>
                <testcase classname="LandmarkCatalogTests.LandmarkFixturesInteropTests" name="b()"><skipped>../shared/fixtures/landmarks not found: skipped</skipped></testcase>
                <testcase classname="LandmarkCatalogTests.NginxInteropTests" name="c()"><skipped>nginx is not installed</skipped></testcase>
                <testcase classname="LandmarkCatalogTests.ModelTests" name="d()" time="0.1"/>
                <testcase classname="LandmarkCatalogTests.ModelTests" name="e()" time="0.1"><failure message="x"/></testcase>
                <testcase classname="LandmarkCatalogTests.ModelTests" name="f()" time="0.1"/>
              </testsuite>
            </testsuites>
            """.utf8
        ).write(to: xml)
        let log = directory.appending(path: "log")
        try Data(
            """
            ◇ Test run started.
            notice: PostgreSQL tests skipped: no /usr/lib/postgresql/*/bin/postgres (run scripts/setup)
            skipped: ../shared/fixtures/jsontestsuite not found
            notice: PostgreSQL tests skipped: no /usr/lib/postgresql/*/bin/postgres (run scripts/setup)
            ✔ Test run with 3 tests in 2 suites passed after 1.0 seconds.

            """.utf8
        ).write(to: log)
        let result = try runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", Support.root.appending(path: "scripts/test-summary").path, xml.path, log.path])
        #expect(result.status == 0)
        #expect(
            result.stdout == """

                == Test summary ========================================================
                6 tests in all
                Skipped, and why:
                     2  ../shared/fixtures/landmarks not found: skipped  [LandmarkFixturesInteropTests (2)]
                     1  nginx is not installed  [NginxInteropTests (1)]
                Notices:
                  notice: PostgreSQL tests skipped: no /usr/lib/postgresql/*/bin/postgres (run scripts/setup)
                  skipped: ../shared/fixtures/jsontestsuite not found
                tests: 2 passed, 1 failed, 3 skipped

                """)
        let missing = try runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", Support.root.appending(path: "scripts/test-summary").path,
                directory.appending(path: "none.xml").path,
            ])
        #expect(missing.status == 0)
        #expect(missing.stdout.contains("no Swift Testing results"))
    }
}

@Suite("The harness's process helpers")
struct ProcessHelperTests {
    /// The input that broke it: a server that had run longer than the stop limit (97 s under a loaded CI,
    /// limit 20 s) was SIGKILLed the moment `ServeProcess.stop()` asked it to stop, and the test saw 137.
    @Test("terminate(limit:) counts the limit from the SIGTERM, not from the process's start")
    func terminateCountsFromTheSignal() throws {
        let box = try Sandbox()
        let shell = try box.start(
            ["-c", "trap 'exit 0' TERM; echo up; while :; do sleep 0.05; done"], binary: URL(fileURLWithPath: "/bin/sh"))
        defer { shell.stop() }
        let deadline = Date().addingTimeInterval(10)
        while (try? String(contentsOf: shell.stdout, encoding: .utf8)) != "up\n", Date() < deadline { usleep(10_000) }
        usleep(1_500_000)  // Longer than the limit below.
        let run = shell.terminate(limit: 1)
        #expect(run.status == 0 && !run.killed, "\(run)")
    }
}
