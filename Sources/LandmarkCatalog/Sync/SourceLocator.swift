import Foundation

#if os(Linux)
    import Glibc
#endif

/// Where a SOURCE points, parsed once (docs/cli.md §7): a path, `file://`, `http(s)://`, `-`, a PostgreSQL hub
/// (`postgres://`, `postgresql://`), or the name of a saved remote (resolved to its URL first).
///
/// What a file or URL holds — a snapshot (§6) or a snapshot log's manifest (§10) — is decided by its content.
public enum SourceLocator: Sendable, Equatable, CustomStringConvertible {
    /// `-`: one snapshot on standard input.
    case standardInput
    /// A local path (absolute): a snapshot file, a log's `manifest.json`, or a log directory.
    case file(path: String)
    /// An `http://` or `https://` URL: a snapshot or a log manifest.
    case http(url: String)
    /// A PostgreSQL hub: a libpq URI or keyword/value string (`host=… dbname=…`).
    case hub(conninfo: String)
    /// A `catalog serve` (docs/protocol.md), written `catalog+https://HOST/v1` (or `catalog+http://`);
    /// `base` is the `https://HOST/v1` it stands for, without a trailing slash.
    case serve(base: String)

    /// Parses a SOURCE.
    ///
    /// - Parameters:
    ///   - text: the argument.
    ///   - remotes: saved remotes; a SOURCE naming one means its URL, whatever is in the working directory
    ///     (write `./NAME` for a local file of that name), so a cron line means the same wherever it runs.
    ///   - workingDirectory: where a relative path is resolved (so each file has one key in `status`).
    /// - Returns: the source it names.
    /// - Throws: `CatalogError.usage` (64) for an unsupported scheme (`ftp://…`), a malformed URL, a
    ///   `file://` URL naming another host, or an empty string.
    public static func parse(_ text: String, remotes: [Remote] = [], workingDirectory: String = FileManager.default.currentDirectoryPath) throws
        -> SourceLocator
    {
        if let remote = remotes.first(where: { $0.name == text }) {
            return try parse(remote.url, remotes: [], workingDirectory: workingDirectory)
        }
        guard !text.isEmpty else { throw CatalogError(.usage, "a SOURCE is empty") }
        if text == "-" { return .standardInput }
        if let scheme = Self.scheme(of: text) {
            switch scheme {
            case "http", "https":
                guard let url = URL(string: text), let host = url.host, !host.isEmpty else {
                    throw CatalogError(.usage, "not a valid URL: \(redactedURL(text))")
                }
                // A log's directory URL stands for its manifest: one source, one cursor, either way.
                return .http(url: text.hasSuffix("/") ? text + LogManifest.fileName : text)
            case "postgres", "postgresql":
                return .hub(conninfo: text)
            case "catalog+http", "catalog+https":
                var base = String(text.dropFirst("catalog+".count))
                while base.hasSuffix("/") { base.removeLast() }
                guard let url = URL(string: base), let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil,
                    url.user == nil
                else {
                    throw CatalogError(
                        .usage, "not a valid catalog serve URL: \(redactedURL(text))",
                        hint: "write catalog+https://HOST/v1 (no query, fragment or user; the token comes from --token-file)")
                }
                // A bearer token goes with every request: in clear text only to this machine.
                if scheme == "catalog+http", !["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased()) {
                    throw CatalogError(
                        .usage, "catalog+http:// sends the bearer token in clear text; it is only for this machine, not \(host)",
                        hint: "use catalog+https://\(host)/… (TLS, as nginx in front of serve gives)")
                }
                return .serve(base: base)
            case "file":
                guard let url = URL(string: text), url.isFileURL, !url.path.isEmpty else {
                    throw CatalogError(.usage, "not a valid file URL: \(text)")
                }
                if let host = url.host, !host.isEmpty, host != "localhost" {
                    throw CatalogError(.usage, "file URL names another host '\(host)': \(text)", hint: "use file:///path for a local file")
                }
                return .file(path: normalizedFilePath(resolvingLinks(url.path)))
            default:
                throw CatalogError(
                    .usage, "unsupported scheme '\(scheme)://' in SOURCE \(redactedURL(text))",
                    hint: "a SOURCE is a path, file://, http://, https://, postgres://, catalog+https://, - or a saved remote's name")
            }
        }
        if HubConnInfo.isKeywordString(text), !FileManager.default.fileExists(atPath: text) { return .hub(conninfo: text) }
        let path = text.hasPrefix("/") ? text : (workingDirectory.hasSuffix("/") ? workingDirectory : workingDirectory + "/") + text
        return .file(path: normalizedFilePath(resolvingLinks(URL(fileURLWithPath: path).standardizedFileURL.path)))
    }

    /// `path` with the symbolic links of its longest existing prefix resolved (realpath(3)) and the rest, not
    /// there yet, as written: a source is the file or log its path resolves to now (docs/log-format.md §6),
    /// so a link re-pointed to another node's log is that log, with its own cursor, and one log reached by
    /// two names is one source.
    static func resolvingLinks(_ path: String) -> String {
        var missing: [String] = []
        var head = path
        while true {
            if let resolved = realpath(head, nil) {
                defer { free(resolved) }
                let base = String(cString: resolved)
                guard !missing.isEmpty else { return base }
                return (base == "/" ? "" : base) + "/" + missing.reversed().joined(separator: "/")
            }
            guard head != "/", let slash = head.lastIndex(of: "/") else { return path }
            missing.append(String(head[head.index(after: slash)...]))
            head = slash == head.startIndex ? "/" : String(head[..<slash])
        }
    }

    /// A snapshot log's directory stands for its manifest, so `DIR` and `DIR/manifest.json` are one
    /// source with one cursor.
    static func normalizedFilePath(_ path: String) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return path }
        return (path.hasSuffix("/") ? path : path + "/") + LogManifest.fileName
    }

    /// The URL scheme of `text` (lowercased) when it starts like `scheme://`.
    public static func scheme(of text: String) -> String? { urlScheme(of: text) }

    /// The key the source's cursor and last good sync are stored under, and its name in messages,
    /// `status` and the run ledger: a path (its symbolic links resolved when parsed), a URL without its
    /// password, or `<stdin>`.
    public var description: String {
        switch self {
        case .standardInput: return "<stdin>"
        case .file(let path): return path
        case .http(let url): return redactedURL(url)
        case .hub(let conninfo): return redactedURL(conninfo)
        case .serve(let base): return "catalog+" + base
        }
    }

    /// What trust and write grants bind to (docs/trust.md §3, §4): one value for one source however and
    /// whenever it is named — `DIR`, `DIR/` and `DIR/manifest.json` alike, whether or not `DIR` exists yet,
    /// a symbolic link as the path it resolves to; a URL or hub as its ``description``.
    public var identity: String { Self.identity(ofKey: description) }

    /// The ``identity`` of the source stored under `key` (its ``description``: an absolute path, a URL
    /// without its password, `<stdin>`) — how the quarantine and the saved remotes are matched to a source.
    public static func identity(ofKey key: String) -> String {
        guard key.hasPrefix("/") else { return key }
        var path = key
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        if path.hasSuffix("/" + LogManifest.fileName) { path.removeLast(LogManifest.fileName.count + 1) }
        return resolvingLinks(path)
    }

    /// The kind recorded with the source: `stdin`, `file`, `http`, `hub`, `serve`.
    var kindName: String {
        switch self {
        case .standardInput: return "stdin"
        case .file: return "file"
        case .http: return "http"
        case .hub: return "hub"
        case .serve: return "serve"
        }
    }
}

extension SourceLocator {
    /// `text` (a URL or a libpq connection string) with any password replaced by `***`.
    public static func redacted(_ text: String) -> String { redactedURL(text) }
}
