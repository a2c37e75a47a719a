import CatalogTestSupport
import Foundation
import Testing

@_spi(Testing) @testable import CatalogCLI
@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// Progress lines (docs/cli.md §2, issue 13): drawn on standard error only when it is a terminal, for import,
/// sync (each source's merge, then `--publish`), publish and `export --output`; never in a pipe, with
/// `--quiet`, `--json` or `--log-format json`.
@Suite("Progress on a terminal")
struct ProgressTests {
    /// A landmarkData.json of `count` small records (ids 1…count, every tenth featured), in a new directory.
    static func landmarkFile(_ count: Int) throws -> String {
        var text = "["
        for id in 1...count {
            if id > 1 { text += ",\n" }
            text +=
                #"{"id":\#(id),"name":"Landmark \#(id)","coordinates":{"latitude":45.5,"longitude":-120.25},"isFeatured":\#(id % 10 == 0),"description":"\#(String(repeating: "d", count: 100))"}"#
        }
        text += "]\n"
        let path = Support.temporaryDirectory().appending(path: "landmarks.json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("a file of known size: percentage, MB done of the total, records, rows/s and ETA")
    func knownSize() {
        let line = ProgressLine.render(label: "importing", records: 250_000, bytes: 225_000_000, total: 900_000_000, elapsed: 2)
        #expect(line == "importing:  25% 225.0 of 900.0 MB, 250,000 records, 125,000 rows/s, ETA 0:06")
        let long = ProgressLine.render(label: "merging a.json", records: 1, bytes: 1, total: 1_000, elapsed: 10)
        #expect(long.hasSuffix("ETA 2:46:30"))
    }

    @Test("unknown size (a pipe, a file being written): records, MB and rate, no percentage or ETA")
    func unknownSize() {
        #expect(
            ProgressLine.render(label: "writing", records: 120_000, bytes: 45_200_000, total: nil, elapsed: 2)
                == "writing: 120,000 records, 45.2 MB, 60,000 rows/s")
        #expect(
            ProgressLine.render(label: "importing", records: 10_000, bytes: 0, total: nil, elapsed: 0.5)
                == "importing: 10,000 records, 20,000 rows/s")
    }

    /// Regression (a user test at 60 columns): the label kept its 48 characters and the figures were cut
    /// ("merging …tgresql://…/hub2: 110,000 r").
    @Test("on a narrow terminal the subject is shortened before the figures are cut")
    func narrow() {
        let sink = MemorySink()
        var now = 0.0
        let line = ProgressLine(sink: sink, enabled: true, label: "syncing", columns: 60, now: { now })
        now = 2
        line.update(
            CatalogProgress(
                records: 110_000, bytes: 6_600_000, totalBytes: nil, phase: .merging,
                subject: "postgresql://postgres@127.0.0.1:55432/hub2"))
        let drawn = sink.text.replacingOccurrences(of: "\r\u{1B}[K", with: "")
        #expect(drawn == "merging …55432/hub2: 110,000 records, 6.6 MB, 55,000 rows/s")  // 59 characters
        // Narrower still (45 columns): the verb alone, then the figures as far as they go; one record is "1 record".
        let narrow = MemorySink()
        let small = ProgressLine(sink: narrow, enabled: true, label: "syncing", columns: 45, now: { now })
        now = 4
        small.update(
            CatalogProgress(
                records: 143_360, bytes: 7_000_000, totalBytes: nil, phase: .pushing,
                subject: "postgresql://postgres@127.0.0.1:55432/hub2"))
        #expect(narrow.text.replacingOccurrences(of: "\r\u{1B}[K", with: "") == "pushing: 143,360 records, 7.0 MB, 71,680 row")
        #expect(ProgressLine.render(label: "x", records: 1, bytes: 0, total: nil, elapsed: 1) == "x: 1 record, 1 rows/s")
        #expect(ProgressLine.shortened("merging a.json", to: 40) == "merging a.json")
        #expect(ProgressLine.shortened("importing", to: 5) == nil)
    }

    /// Regression: a hub pull's first line said "25,000 records, 1.5 MB, 127,547,766 rows/s": the job's
    /// clock started at its own first report, which comes after its first batch.
    @Test("a job's rate counts from when it started, not from its first report")
    func rateFromStart() {
        let sink = MemorySink()
        var now = 50.0
        let line = ProgressLine(sink: sink, enabled: true, label: "syncing", now: { now })
        now = 52  // connecting and pushing took 2 s; the first batch of the pull is merged
        line.update(CatalogProgress(records: 25_000, bytes: 1_500_000, totalBytes: nil, phase: .merging, subject: "hub"))
        #expect(sink.text.hasSuffix("merging hub: 25,000 records, 1.5 MB, 12,500 rows/s"))
        now = 52.000_2  // the next job reports at once: under 10 ms, no rate worth showing
        line.update(CatalogProgress(records: 10, bytes: 100, totalBytes: nil, phase: .writing, subject: "log"))
        #expect(sink.text.hasSuffix("writing log: 10 records, 0.0 MB, 0 rows/s"))
        #expect(ProgressLine.render(label: "x", records: 25_000, bytes: 0, total: nil, elapsed: 0.000_2) == "x: 25,000 records, 0 rows/s")
    }

    @Test("redrawn at most twice a second, cut to the terminal's width, cleared before anything else")
    func throttled() {
        let sink = MemorySink()
        var now = 100.0
        let line = ProgressLine(sink: sink, enabled: true, label: "importing", columns: 30, now: { now })
        line.update(records: 10_000, bytes: 1_000, total: 10_000)
        now += 0.2
        line.update(records: 20_000, bytes: 2_000, total: 10_000)
        #expect(sink.text == "\r\u{1B}[Kimporting:  10% 0.0 of 0.0 MB")
        now += 0.4
        line.update(records: 30_000, bytes: 3_000, total: 10_000)
        #expect(sink.text.components(separatedBy: "\r\u{1B}[K").count == 3)
        line.clear()
        #expect(sink.text.hasSuffix("\r\u{1B}[K"))
        #expect(!line.shown)
    }

    @Test("a new phase or subject relabels the line and restarts its clock")
    func phases() {
        let sink = MemorySink()
        var now = 0.0
        let line = ProgressLine(sink: sink, enabled: true, label: "syncing", now: { now })
        now = 10
        line.update(CatalogProgress(records: 1_000, bytes: 500, totalBytes: 1_000, phase: .merging, subject: "peer.json"))
        // The first job's clock started with the line (the command), not at its first report.
        #expect(sink.text.hasSuffix("merging peer.json:  50% 0.0 of 0.0 MB, 1,000 records, 100 rows/s, ETA 0:10"))
        now = 12
        // A later job's clock starts at the report before it (at 10, when merging ended).
        line.update(CatalogProgress(records: 2_000, bytes: 4_000_000, totalBytes: nil, phase: .writing, subject: "/srv/exchange/me.json"))
        #expect(sink.text.hasSuffix("writing /srv/exchange/me.json: 2,000 records, 4.0 MB, 1,000 rows/s"))
        now = 13
        line.update(CatalogProgress(records: 3_000, bytes: 5_000_000, totalBytes: nil, phase: .writing, subject: "/srv/exchange/me.json"))
        #expect(sink.text.hasSuffix("writing /srv/exchange/me.json: 3,000 records, 5.0 MB, 1,000 rows/s"))
        let long = String(repeating: "d", count: 60) + "/peer.json"
        #expect(
            ProgressLine.label(CatalogProgress(records: 0, bytes: 0, totalBytes: nil, phase: .merging, subject: long))
                == "merging …" + long.suffix(39))
    }

    @Test("import on a terminal draws percentage, rate and ETA on stderr, then clears it; stdout is unchanged")
    func importOnTerminal() throws {
        let file = try Self.landmarkFile(12_000)
        let result = Waits.run(["import", file], db: Support.temporaryDatabase(), terminal: true)
        #expect(result.status == 0)
        #expect(result.stdout == "12000 records: 12000 inserted, 0 updated, 0 unchanged, 0 pruned, 0 warnings\n")
        #expect(result.stderr.hasPrefix("\r\u{1B}[Kimporting: "))
        #expect(result.stderr.contains("10,000 records,"))
        #expect(result.stderr.contains("%"))
        #expect(result.stderr.contains(" rows/s, ETA "))
        #expect(result.stderr.hasSuffix("\r\u{1B}[K"))
    }

    @Test(
        "no progress in a pipe, with --quiet, --json or --log-format json",
        arguments: [
            (false, [String]()), (true, ["--quiet"]), (true, ["-q"]), (true, ["--json"]), (true, ["--log-format", "json"]),
        ])
    func never(_ terminal: Bool, _ extra: [String]) throws {
        let file = try Self.landmarkFile(12_000)
        let result = Waits.run(["import", file] + extra, db: Support.temporaryDatabase(), terminal: terminal)
        #expect(result.status == 0)
        #expect(result.stderr == "")
    }

    @Test("sync on a terminal: 'merging SOURCE' with percentage and ETA, then 'writing' for --publish")
    func syncOnTerminal() throws {
        let source = Support.temporaryDatabase()
        #expect(runCLI(["import", try Self.landmarkFile(12_000)], db: source).status == 0)
        let directory = Support.temporaryDirectory()
        let snapshot = directory.appending(path: "peer.json").path
        #expect(runCLI(["export", "-o", snapshot], db: source).status == 0)
        let published = directory.appending(path: "me.json").path
        let result = Waits.run(["sync", snapshot, "--publish", published], db: Support.temporaryDatabase(), terminal: true)
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("1 source (1 merged, 0 not modified): 12000 of 12000 landmarks"))
        let draws = result.stderr.components(separatedBy: "\r\u{1B}[K").filter { !$0.isEmpty }
        let merging = try #require(draws.first { $0.hasPrefix("merging ") })
        #expect(merging.contains("peer.json: "))
        #expect(merging.contains("%") && merging.contains(" rows/s, ETA "))
        let writing = try #require(draws.first { $0.hasPrefix("writing ") })
        #expect(writing.contains("me.json: "))
        #expect(writing.contains(" records, ") && writing.contains(" MB, ") && writing.hasSuffix(" rows/s"))
        #expect(!writing.contains("ETA"))
        #expect(result.stderr.hasSuffix("\r\u{1B}[K"))
        #expect(Waits.run(["sync", snapshot, "--json"], db: Support.temporaryDatabase(), terminal: true).stderr == "")
    }

    @Test("publish and export --output on a terminal draw 'writing' with rows and rate")
    func publishOnTerminal() throws {
        let db = Support.temporaryDatabase()
        #expect(runCLI(["import", try Self.landmarkFile(12_000)], db: db).status == 0)
        let directory = Support.temporaryDirectory()
        let publish = Waits.run(["publish", directory.appending(path: "log").path], db: db, terminal: true)
        #expect(publish.status == 0)
        #expect(publish.stderr.contains("writing "))
        #expect(publish.stderr.contains(" records, "))
        let export = Waits.run(["export", "--output", directory.appending(path: "s.json").path], db: db, terminal: true)
        #expect(export.status == 0)
        #expect(export.stderr.contains("s.json: "))
        #expect(Waits.run(["publish", directory.appending(path: "log2").path, "--quiet"], db: db, terminal: true).stderr == "")
    }

    @Test(
        "a real terminal (script(1) gives catalog a pseudo-terminal): the import's line has percentage, rate and ETA",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "script(1) is not installed"))
    func realTerminal() throws {
        let file = try Self.landmarkFile(12_000)
        let db = Support.temporaryDatabase()
        let command = "'\(Support.catalogBinary.path)' --db '\(db)' import '\(file)'"
        let result = try runProcess(URL(fileURLWithPath: "/usr/bin/script"), ["-q", "-e", "-c", command, "/dev/null"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("\u{1B}[Kimporting: "))
        #expect(result.stdout.contains("% "))
        #expect(result.stdout.contains(" rows/s, ETA "))
        #expect(result.stdout.contains("12000 records: 12000 inserted"))
        // Through a pipe, the same import draws nothing.
        let piped = try runProcess(Support.catalogBinary, ["--db", Support.temporaryDatabase(), "import", file])
        #expect(piped.stderr == "")
    }
}
