import Foundation

extension CatalogStore {
    /// The saved remotes, by name.
    public func remotes() throws -> [Remote] {
        try read {
            var result: [Remote] = []
            try connection.forEachRow(sql: "SELECT name, url FROM sync_remotes ORDER BY name") { s in
                result.append(Remote(name: s.text(0) ?? "", url: s.text(1) ?? ""))
            }
            return result
        }
    }

    /// Saves a remote.
    /// - Parameters:
    ///   - name: 1–64 characters of `A–Z a–z 0–9 . _ -`.
    ///   - url: `http://`, `https://`, `file://`, `postgres://`, `postgresql://`, a libpq keyword string, or
    ///     a path (a relative one is made absolute against `workingDirectory`: a remote is used from
    ///     anywhere, cron included). A password in it is stored (the remote needs it) but never printed;
    ///     prefer `~/.netrc` or `~/.pgpass`.
    ///   - workingDirectory: what a relative path is relative to.
    /// - Throws: `CatalogError.usage` for a bad name or URL (a hub's connection string is parsed as
    ///   libpq parses it), or a name already taken.
    public func addRemote(name: String, url given: String, workingDirectory: String = FileManager.default.currentDirectoryPath) throws {
        guard Self.isValidNodeID(name) else {
            throw CatalogError(.usage, "invalid remote name '\(name)': use 1–64 characters of A–Z a–z 0–9 . _ -")
        }
        var url = given
        if !url.isEmpty, !url.hasPrefix("/"), SourceLocator.scheme(of: url) == nil, !HubConnInfo.isKeywordString(url) {
            url = URL(fileURLWithPath: url, relativeTo: URL(fileURLWithPath: workingDirectory, isDirectory: true)).standardizedFileURL.path
        }
        guard url.hasPrefix("/") || SourceLocator.scheme(of: url) != nil || HubConnInfo.isKeywordString(url), url != "/" else {
            throw CatalogError(.usage, "invalid remote URL '\(redactedURL(url))': use http://, https://, file://, postgres://, a keyword string or a path")
        }
        // Refuses other schemes, file://host/…, a URL without a host, …
        let locator = try SourceLocator.parse(url)
        for kind in SourceKinds.all { try kind.checkRemote(locator) }
        try write {
            if try connection.scalarInt(sql: "SELECT count(*) FROM sync_remotes WHERE name = ?", [.text(name)]) != 0 {
                throw CatalogError(.usage, "a remote named '\(name)' already exists", hint: "catalog remote remove \(name) first")
            }
            try connection.execute(sql: "INSERT INTO sync_remotes (name, url, added_at) VALUES (?, ?, ?)",
                                   [.text(name), .text(url), .text(Timestamp.format(milliseconds: wallClock.nowMilliseconds()))])
        }
    }

    /// Removes a saved remote and what this database kept of its source (cursor, last sync and error), so
    /// `status` and the metrics no longer show it; syncing that source again later reads it whole
    /// (merging is idempotent). Rows merged from it stay.
    /// - Throws: `CatalogError.usage` when there is no such remote.
    public func removeRemote(name: String) throws {
        try write {
            let url = try connection.firstRow(sql: "SELECT url FROM sync_remotes WHERE name = ?", [.text(name)]) { $0.text(0) } ?? nil
            guard let url else { throw CatalogError(.usage, "no remote named '\(name)'") }
            try connection.execute(sql: "DELETE FROM sync_remotes WHERE name = ?", [.text(name)])
            if let key = Remote.sourceKey(url: url) {
                try connection.execute(sql: "DELETE FROM sync_sources WHERE source = ?", [.text(key)])
            }
        }
    }
}
