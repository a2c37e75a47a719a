import Foundation
import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP(S) URL serving a snapshot or a snapshot log's manifest, fetched with conditional GET (the
/// validators are part of the cursor), within `--deadline` for the whole source.
final class HTTPSource: SyncSource {
    let locator: SourceLocator
    let url: String
    private(set) var nextCursor: SourceCursor?
    private(set) var note: String?
    private(set) var bytesFetched: Int64 = 0

    init(url: String) {
        // A URL ending in `/` names a snapshot log's directory: its manifest.
        self.url = url.hasSuffix("/") ? url + LogManifest.fileName : url
        self.locator = HTTPSourceKind.locator(url)
    }

    func fetch(since cursor: SourceCursor?, context: SyncContext) throws -> [any ChangeFeed]? {
        let session = HTTPSession(options: context.options, name: locator.description, diagnostics: context.diagnostics)
        let stored = HTTPValidators(etag: cursor?["etag"], lastModified: cursor?["lastModified"])
        let outcome: HTTPOutcome
        do {
            outcome = try session.get(
                url, validators: stored.etag == nil && stored.lastModified == nil ? nil : stored,
                maxBytes: context.options.maxBytes)
        } catch var error as CatalogError where (error.httpStatus == 403 || error.httpStatus == 404) && !url.hasSuffix(".json") {
            error.hint = error.hint ?? "for a snapshot log, give its manifest's URL (…/\(LogManifest.fileName)) or the directory's URL ending in /"
            throw error
        }
        guard case .fetched(let body) = outcome else {
            nextCursor = cursor
            return nil
        }
        bytesFetched += body.bytes
        var head = [UInt8](repeating: 0, count: 512)
        let n = head.withUnsafeMutableBytes { pread(body.fd, $0.baseAddress, $0.count, 0) }
        if n > 0, LogManifest.looksLikeManifest(head[0..<n]) {
            let bytes = try DirectoryLogFetcher.readAll(
                body.fd, name: locator.description,
                limit: Int(min(context.options.maxBytes, LogManifest.maxManifestBytes)))
            let fetcher = try HTTPLogFetcher(manifestURL: url, session: session, name: locator.description, maxBytes: context.options.maxBytes)
            defer { bytesFetched += fetcher.bytesFetched }
            let (feeds, next, note) = try LogReader(fetcher: fetcher, trusted: context.trustedKeys).fetch(
                since: cursor, manifestBytes: bytes, validators: body.validators)
            nextCursor = next
            self.note = note
            return feeds
        }
        try context.requireUnsigned("a single snapshot served over HTTP", source: locator.description)
        var next = SourceCursor()
        next["etag"] = body.validators.etag
        next["lastModified"] = body.validators.lastModified
        nextCursor = next
        return [SnapshotFeed(fd: body.fd, name: locator.description, owned: false, keeping: body)]
    }
}

/// The HTTP requests of one source: one deadline for all of them (`--deadline`), retries logged as
/// diagnostics.
final class HTTPSession {
    let options: SyncOptions
    let name: String
    let diagnostics: (Diagnostic) -> Void
    let deadline: Date

    init(options: SyncOptions, name: String, diagnostics: @escaping (Diagnostic) -> Void) {
        self.options = options
        self.name = name
        self.diagnostics = diagnostics
        self.deadline = Date().addingTimeInterval(options.deadlineSeconds)
    }

    /// GETs `url` with what is left of the deadline.
    func get(_ url: String, validators: HTTPValidators?, maxBytes: Int64) throws -> HTTPOutcome {
        let left = deadline.timeIntervalSinceNow
        guard left > 0 else {
            throw CatalogError(.unavailable, "source unavailable: did not finish within \(Int(options.deadlineSeconds)) s (--deadline), \(name)")
        }
        var limits = HTTPLimits()
        limits.stallTimeout = options.timeoutSeconds
        limits.deadline = left
        limits.maxBytes = maxBytes
        limits.retries = options.retries
        limits.backoff = options.backoffSeconds
        limits.cancellation = options.cancellation
        let name = self.name
        let diagnostics = self.diagnostics
        return try HTTPClient(limits: limits).get(url, validators: validators) { message in
            diagnostics(Diagnostic(severity: .warning, message: message, file: name, kind: "retry"))
        }
    }
}

/// A snapshot log served over HTTP: its files are fetched relative to the manifest's URL.
final class HTTPLogFetcher: LogFileFetcher {
    let manifestURL: String
    let session: HTTPSession
    let manifestName: String
    let maxBytes: Int64
    private(set) var bytesFetched: Int64 = 0
    /// Deltas are copied here as they arrive (one descriptor for any number of them).
    private let spool: LogSpool
    /// Files this large keep their own download (a base; copying it would double its I/O).
    static let ownSpoolFrom: Int64 = 64 << 20

    init(manifestURL: String, session: HTTPSession, name: String, maxBytes: Int64) throws {
        self.manifestURL = manifestURL
        self.session = session
        self.manifestName = name
        self.maxBytes = maxBytes
        spool = try LogSpool()
    }

    func fetchManifest(validators: HTTPValidators?) throws -> (bytes: [UInt8], validators: HTTPValidators?)? {
        let limit = min(maxBytes, LogManifest.maxManifestBytes)
        guard case .fetched(let body) = try session.get(manifestURL, validators: validators, maxBytes: limit) else { return nil }
        bytesFetched += body.bytes
        return (try DirectoryLogFetcher.readAll(body.fd, name: manifestName, limit: Int(limit)), body.validators)
    }

    func fetchSignature() throws -> [UInt8]? {
        let url = manifestURL + ".minisig"
        let outcome: HTTPOutcome
        do {
            outcome = try session.get(url, validators: nil, maxBytes: Int64(maxSignatureBytes))
        } catch let error as CatalogError where error.httpStatus == 404 || error.httpStatus == 410 {
            return nil
        } catch let error as CatalogError where error.kind == .dataInvalid {
            throw CatalogError(.untrusted, "the manifest's signature is not a minisign signature (\(error.message)), \(redactedURL(url))")
        }
        guard case .fetched(let body) = outcome else {
            throw CatalogError(.unavailable, "answered 304 to an unconditional request, \(redactedURL(url))")
        }
        bytesFetched += body.bytes
        return try DirectoryLogFetcher.readAll(body.fd, name: redactedURL(url), limit: maxSignatureBytes)
    }

    func fetchFile(_ file: LogManifest.File) throws -> any ChangeFeed {
        guard let base = URL(string: manifestURL), let url = URL(string: file.name, relativeTo: base)?.absoluteString else {
            throw CatalogError(.dataInvalid, "cannot resolve \(file.name) against \(manifestName)")
        }
        let shown = redactedURL(url)
        let outcome: HTTPOutcome
        do {
            outcome = try session.get(url, validators: nil, maxBytes: file.bytes)
        } catch let error as CatalogError where error.httpStatus == 404 || error.httpStatus == 410 {
            throw LogFileGone(name: file.name)
        } catch let error as CatalogError where error.kind == .dataInvalid {
            // The body ran past the size the manifest gives (or would not decode): it is not that file.
            throw CatalogError(
                .dataInvalid, "the log file does not match the manifest (\(file.bytes) bytes): \(error.message); nothing from it was merged")
        }
        guard case .fetched(let body) = outcome else {
            throw CatalogError(.unavailable, "answered 304 to an unconditional request, \(shown)")
        }
        bytesFetched += body.bytes
        guard body.bytes == file.bytes else {
            throw CatalogError(
                .dataInvalid, "the log file is \(body.bytes) bytes, the manifest says \(file.bytes); nothing from it was merged, \(shown)")
        }
        let sha = SHA256.hex(body.sha256)
        guard sha == file.sha256 else {
            throw CatalogError(
                .dataInvalid, "the log file's SHA-256 is \(sha), the manifest says \(file.sha256); nothing from it was merged, \(shown)")
        }
        if file.bytes >= Self.ownSpoolFrom {
            return SnapshotFeed(fd: body.fd, name: shown, owned: false, keeping: body)
        }
        let range = try spool.append(body.fd, count: body.bytes)
        return SpooledFeed(spool: spool, range: range, name: shown)
    }
}
