import Foundation

/// The saved remotes of a catalog (`catalog remote`): add, change, list and remove them, and what a
/// source's remotes require of it (trusted keys, the write grant; docs/trust.md).
///
/// ```swift
/// try RemoteBook(store).addRemote(name: "origin", url: "https://example.com/catalog/")
/// ```
public struct RemoteBook {
    /// The store it works on.
    let store: CatalogStore

    /// Works on `store`.
    public init(_ store: CatalogStore) { self.store = store }
}

extension RemoteBook {
    /// The saved remotes, by name.
    public func remotes() throws -> [Remote] {
        try store.read { try store.remoteTable.all() }
    }

    /// What the saved remotes of a source (by its key, ``SourceLocator/description``) require of it: the
    /// union of their trusted keys, and the first grant narrower than `all`.
    ///
    /// A remote is the source's when their ``SourceLocator/identity`` is one (a directory named with or
    /// without its manifest, one that did not exist when either was first seen, a symbolic link to it).
    package func trustForSource(key: String) throws -> (keys: [MinisignPublicKey], allow: WriteGrant) {
        var keys: [MinisignPublicKey] = []
        var allow = WriteGrant.all
        let identity = SourceLocator.identity(ofKey: key)
        for remote in try remotes() where Remote.sourceKey(url: remote.url).map(SourceLocator.identity(ofKey:)) == identity {
            for line in remote.trustedKeys {
                let key = try MinisignPublicKey(text: line, source: "the trusted key of remote '\(remote.name)'")
                if !keys.contains(key) { keys.append(key) }
            }
            if allow == .all { allow = remote.allow }
        }
        return (keys, allow)
    }

    /// The saved remotes' names by the key their source has in `sync_sources`, `status`, the ledger and
    /// the metrics (an absolute path, a URL without its password), so those can name a source by its
    /// remote beside the URL (docs/operations.md).
    ///
    /// Two remotes of one source: the first name in order.
    public func remoteNames() throws -> [String: String] {
        try store.read { try remoteNamesBySourceKey() }
    }

    /// ``remoteNames()`` inside a transaction.
    func remoteNamesBySourceKey() throws -> [String: String] {
        var names: [String: String] = [:]
        for remote in try store.remoteTable.all() {
            if let key = Remote.sourceKey(url: remote.url), names[key] == nil { names[key] = remote.name }
        }
        return names
    }

    /// Saves a remote.
    /// - Parameters:
    ///   - name: 1–64 characters of `A–Z a–z 0–9 . _ -`.
    ///   - given: `http://`, `https://`, `file://`, `postgres://`, `postgresql://`, a libpq keyword string, or
    ///     a path (a relative one is made absolute against `workingDirectory`: a remote is used from
    ///     anywhere, cron included). A password in it is stored (the remote needs it) but never printed;
    ///     prefer `~/.netrc` or `~/.pgpass`.
    ///   - workingDirectory: what a relative path is relative to.
    ///   - trustedKeys: minisign public keys (base64 lines, docs/trust.md §3): the remote's snapshot log must be
    ///     signed by one of them; empty: no signature required.
    ///   - allow: the kinds of rows it may write (docs/trust.md §4).
    ///   - tokenFile: for a `catalog+https://HOST/v1` remote, the file holding its bearer token (docs/protocol.md
    ///     §9); the path is saved (made absolute), the token is read at each sync and never stored.
    /// - Throws: `CatalogError.usage` for a bad name or URL (a hub's connection string is parsed as
    ///   libpq parses it), a name already taken, or a `tokenFile` for a remote whose kind takes no bearer token.
    public func addRemote(
        name: String, url given: String, workingDirectory: String = FileManager.default.currentDirectoryPath,
        trustedKeys: [String] = [], allow: WriteGrant = .all, tokenFile: String? = nil
    ) throws {
        let url = try Self.checkedRemote(name: name, url: given, workingDirectory: workingDirectory)
        let tokenFile = tokenFile.map { CatalogFiles.absolutePath($0, in: workingDirectory) }
        if tokenFile != nil { try Self.requireBearerToken(url) }
        let keys = try trustedKeys.map { try MinisignPublicKey(text: $0, source: $0).line }
        try store.write {
            if try store.remoteTable.remote(named: name) != nil {
                throw CatalogError(.usage, "a remote named '\(name)' already exists", hint: "catalog remote remove \(name) first")
            }
            try store.remoteTable.insert(
                Remote(name: name, url: url, trustedKeys: keys, allow: allow, tokenFile: tokenFile), at: store.wallClock.nowMilliseconds())
        }
    }

    /// Checks a remote's name and URL as `addRemote(name:url:workingDirectory:trustedKeys:allow:tokenFile:)` does, without a
    /// database, so a command can refuse a bad one before it opens (or creates) anything.
    /// - Returns: the URL as it is saved (a relative path made absolute against `workingDirectory`).
    /// - Throws: `CatalogError.usage` for a bad name or URL.
    public static func checkedRemote(
        name: String, url given: String,
        workingDirectory: String = FileManager.default.currentDirectoryPath
    ) throws -> String {
        _ = try NodeID(validating: name, what: "remote name")
        var url = given
        let bare = SourceKinds.kind(claimingBare: url) != nil
        if !url.isEmpty, !url.hasPrefix("/"), SourceLocator.scheme(of: url) == nil, !bare {
            url = CatalogFiles.absolutePath(url, in: workingDirectory)
        }
        guard url.hasPrefix("/") || SourceLocator.scheme(of: url) != nil || bare, url != "/" else {
            throw CatalogError(.usage, "invalid remote URL '\(redactedURL(url))'", hint: SourceKinds.sourceForms())
        }
        // Refuses other schemes, file://host/…, a URL without a host, …
        if case .claimed(let claim) = try SourceLocator.parse(url) { try claim.kind.checkRemote(claim) }
        return url
    }

    /// Changes a saved remote in place: its URL, trusted keys, write grant or token file, keeping its cursor
    /// (docs/trust.md §5: rotating a key, or moving to another host, without reading the log again).
    ///
    /// A nil argument keeps the current value; `trustedKeys: []` stops requiring a signature. A new URL of the
    /// same kind (a log moved to another host or path, a hub or serve under another address) takes the old
    /// URL's cursor and state, which each source checks as it reads (a log's generation, a hub's identity, a
    /// serve's database id: another source is read from its start); one of another kind starts afresh. The old
    /// URL's state is kept while another saved remote names it.
    /// - Parameters:
    ///   - name: the remote's name.
    ///   - given: the new URL (as ``addRemote(name:url:workingDirectory:trustedKeys:allow:tokenFile:)`` takes
    ///     it), or nil to keep it.
    ///   - trustedKeys: minisign public keys (base64 lines), or nil to keep them.
    ///   - allow: the kinds of rows it may write, or nil to keep it.
    ///   - tokenFile: a serve remote's token file (made absolute against `workingDirectory`), or nil to keep it.
    ///   - workingDirectory: what a relative `url` or `tokenFile` is relative to.
    /// - Throws: `CatalogError.usage` for no such remote, a bad URL or key, a token file for a remote that is
    ///   of a kind that takes no bearer token, or a URL of a kind that does for a remote without a token file.
    public func updateRemote(
        name: String, url given: String? = nil, trustedKeys: [String]? = nil, allow: WriteGrant? = nil, tokenFile: String? = nil,
        workingDirectory: String = FileManager.default.currentDirectoryPath
    ) throws {
        let keys = try trustedKeys?.map { try MinisignPublicKey(text: $0, source: $0).line }
        let url = try given.map { try Self.checkedRemote(name: name, url: $0, workingDirectory: workingDirectory) }
        try store.write {
            guard var remote = try store.remoteTable.remote(named: name) else {
                throw CatalogError(.usage, "no remote named '\(name)'", hint: "catalog remote list shows the saved ones")
            }
            if let url, url != remote.url {
                try moveState(of: remote.url, to: url, leaving: name)
                remote.url = url
                let locator = try SourceLocator.parse(url)
                if locator.capabilities.contains(.bearerToken) {
                    if remote.tokenFile == nil && tokenFile == nil {
                        throw CatalogError(
                            .usage, "a \(locator.kindName) remote needs --token-file, \(SourceLocator.redacted(url))",
                            hint: "catalog remote edit \(name) --url URL --token-file FILE (a file holding one JWT)")
                    }
                } else {
                    remote.tokenFile = nil
                }
            }
            if let keys { remote.trustedKeys = keys }
            if let allow { remote.allow = allow }
            if let tokenFile {
                try Self.requireBearerToken(remote.url)
                remote.tokenFile = CatalogFiles.absolutePath(tokenFile, in: workingDirectory)
            }
            try store.remoteTable.update(remote)
        }
    }

    /// Refuses a `--token-file` for a remote whose kind takes no bearer token (``SourceCapabilities/bearerToken``).
    /// - Throws: `CatalogError.usage` naming the URL (redacted).
    private static func requireBearerToken(_ url: String) throws {
        guard try SourceLocator.parse(url).capabilities.contains(.bearerToken) else {
            let kinds = SourceKinds.all.filter { $0.capabilities.contains(.bearerToken) }
            throw CatalogError(
                .usage,
                "--token-file goes with a remote of a kind that takes a bearer token (\(kinds.flatMap(\.forms).joined(separator: ", "))), not \(SourceLocator.redacted(url))"
            )
        }
    }

    /// Gives the source at `newURL` the state (cursor, last sync) of `oldURL` when both are of one kind.
    ///
    /// Only when it has none of its own; `oldURL`'s is kept only while a remote other than `name` names it.
    /// Call inside `write`.
    private func moveState(of oldURL: String, to newURL: String, leaving name: String) throws {
        guard let old = try? SourceLocator.parse(oldURL), let new = try? SourceLocator.parse(newURL), old != new else { return }
        let sameKind = old.kindName == new.kindName
        let shared = try store.remoteTable.all().contains { $0.name != name && Remote.sourceKey(url: $0.url) == old.description }
        if sameKind { try store.sourceTable.copy(old.description, to: new.description) }
        if !shared { try store.sourceTable.delete(old.description) }
    }

    /// Removes a saved remote and, unless another saved remote names the same source, what this database
    /// kept of that source (cursor, last sync and error), so `status` and the metrics no longer show it;
    /// syncing that source again later reads it whole (merging is idempotent).
    ///
    /// Rows merged from it stay. Two remotes of one URL share one cursor: removing one keeps it for the other.
    /// - Parameter name: the remote's name.
    /// - Throws: `CatalogError.usage` when there is no such remote.
    public func removeRemote(name: String) throws {
        try store.write {
            guard let url = try store.remoteTable.remote(named: name)?.url else { throw CatalogError(.usage, "no remote named '\(name)'") }
            try store.remoteTable.delete(named: name)
            guard let key = Remote.sourceKey(url: url) else { return }
            if try !store.remoteTable.all().contains(where: { Remote.sourceKey(url: $0.url) == key }) { try store.sourceTable.delete(key) }
        }
    }
}

extension Remote {
    /// The key its source has in `sync_sources`, `status` and the ledger (an absolute path, a URL without
    /// its password), or nil for a URL this binary cannot parse.
    static func sourceKey(url: String) -> String? { try? SourceLocator.parse(url).description }
}
