import Foundation
import LandmarkCatalog

extension CatalogCLI {
    enum PublishOptionsTable {
        static let grace = Option<Double>(
            "--grace", "DURATION",
            "Remove files the manifest no longer names this long after (default 1h; 90s, 15m, 2h, 1d or seconds).", parse: Values.duration())
        static let maxDeltas = Option<Int>(
            "--max-deltas", "N", "Merge the deltas into one when there would be more than N (default 32).",
            parse: Values.integer(1...10_000))
        static let rotateKey = Flag(
            "--rotate-key",
            "With --sign: take over a log signed by another key (a new generation signed by this one); without it such a publish exits 73."
        )
    }

    /// `publish`'s argument, declared once: the table lists it, the run reads it typed.
    enum PublishArguments {
        static let directory = Argument<String>("dir", "The log directory (created if needed).", completion: .directory)
    }

    static var publishCommand: CommandSpec {
        CommandSpec(
            name: "publish",
            abstract: "Publish this catalog as a snapshot log in DIR: a manifest, an immutable base and immutable deltas.",
            discussion: """
                Any static web server can serve DIR. Each publish writes only the rows changed since the last one
                (one new delta) and then replaces manifest.json atomically; with nothing changed it writes nothing,
                so conditional GETs get 304. A new generation with a fresh base starts when the deltas outgrow the
                base. Peers sync from DIR, DIR/manifest.json or its URL. With --sign, a log signed by another key is
                refused (73: two signers on one directory) unless --rotate-key says the key changes on purpose.
                """,
            arguments: [PublishArguments.directory.spec],
            options: [
                PublishOptionsTable.grace.spec, PublishOptionsTable.maxDeltas.spec, TrustOptionsTable.sign.spec,
                PublishOptionsTable.rotateKey.spec, Options.json.with(help: "Print what was written as JSON.").spec, Options.quiet.spec,
            ],
            run: runPublish)
    }

    static func publishOptions(_ i: Invocation) -> PublishOptions {
        var options = PublishOptions()
        if let grace = i[PublishOptionsTable.grace] { options.graceSeconds = grace }
        if let n = i[PublishOptionsTable.maxDeltas] { options.maxDeltas = n }
        return options
    }

    static func runPublish(_ i: Invocation) throws -> Int32 {
        var options = publishOptions(i)
        options.signingKey = try signingKey(i)
        options.rotateKey = i[PublishOptionsTable.rotateKey]
        if options.rotateKey && options.signingKey == nil {
            throw UsageError(message: "--rotate-key goes with --sign", path: i.parsed.path)
        }
        if let refusal = SourceKinds.publishRefusal(i[PublishArguments.directory]) { throw refusal }
        let store = try i.openStore(i.databaseExists ? .write : .read)
        let progress = i.makeProgressLine(label: "writing")
        let report = try LogPublisher(store).publishLog(to: i[PublishArguments.directory], options: options) { progress.update($0) }
        progress.clear()
        if i[Options.json] {
            i.stdout.write(publishJSON(report).bytes + [0x0A])
        } else if !i[Options.quiet] {
            i.stdout.line(describe(report))
        }
        return 0
    }

    static func describe(_ r: PublishReport) -> String {
        let signed = r.signedBy.map { "; signed by key \($0)" } ?? ""
        guard r.changed else {
            return "\(r.directory): nothing changed since change \(r.manifest.through); nothing written"
                + (r.removed.isEmpty ? "" : ", \(plural(r.removed.count, "old file")) removed")
        }
        var what =
            r.newGeneration
            ? "new generation \(r.manifest.generation) (base of \(r.manifest.base.bytes) bytes)" : plural(r.manifest.deltas.count, "delta")
        if r.newGeneration, let bridge = r.manifest.bridge {
            what += ", with a bridge of \(plural(Int(bridge.file.bytes), "byte")) from generation \(bridge.generation) for its readers"
        }
        if !r.missing.isEmpty {
            what +=
                ", because the previous manifest named \(plural(r.missing.count, "file")) that \(r.missing.count == 1 ? "is" : "are") gone (\(r.missing.prefix(3).joined(separator: ", "))\(r.missing.count > 3 ? ", …" : ""))"
        }
        return
            "\(r.directory): through change \(r.manifest.through), \(what); wrote \(plural(r.written.count, "file")), \(plural(Int(r.bytesWritten), "byte"))"
            + (r.removed.isEmpty ? "" : ", removed \(plural(r.removed.count, "old file"))") + signed
    }

    /// `publish --json`'s object, also the `publish` member of `sync --json`.
    static func publishJSON(_ r: PublishReport) -> JSONObject {
        var o = JSONObject()
        var bridge: JSONObject?
        if r.newGeneration, let b = r.manifest.bridge {
            bridge = JSONObject()
            bridge?.set("bytes", b.file.bytes)
            bridge?.set("from", b.generation)
            bridge?.set("name", b.file.name)
        }
        o.set("bridge", bridge)
        o.set("bytesWritten", r.bytesWritten)
        o.set("changed", r.changed)
        o.set("deltas", r.manifest.deltas.count)
        o.set("directory", r.directory)
        o.set("generation", r.manifest.generation)
        o.set("missing", strings: r.missing)
        o.set("newGeneration", r.newGeneration)
        o.set("removed", strings: r.removed)
        o.set("through", r.manifest.through)
        o.set("written", strings: r.written)
        return o
    }
}
