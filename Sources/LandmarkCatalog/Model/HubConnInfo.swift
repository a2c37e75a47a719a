/// Recognising a PostgreSQL hub given as a libpq keyword/value connection string (`host=db.example
/// dbname=catalog_hub user=edge sslmode=verify-full`) rather than a URI, so it can be a SOURCE or a
/// saved remote like `postgres://…`.
///
/// libpq "Connection Strings", Keyword/Value Connection Strings
/// (https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNSTRING-KEYWORD-VALUE).
package enum HubConnInfo {
    /// The keywords a hub's connection string starts with in practice (libpq "Parameter Key Words").
    static let leadingKeywords: Set<String> = [
        "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service", "connect_timeout", "sslmode",
        "sslrootcert", "sslcert", "sslkey", "application_name", "options", "target_session_attrs", "channel_binding",
        "gssencmode", "krbsrvname", "requirepeer", "keepalives",
    ]

    /// Whether `text` reads as a keyword/value connection string: its first word is `keyword=` (or
    /// `keyword =`) with one of ``leadingKeywords``.
    ///
    /// A path never starts like that by accident often enough to matter; an existing file of that
    /// name still wins (see `SourceLocator.parse`).
    package static func isKeywordString(_ text: String) -> Bool {
        let trimmed = text.drop { $0 == " " || $0 == "\t" }
        let keyword = trimmed.prefix { $0.isASCII && ($0.isLetter || $0 == "_") }
        guard !keyword.isEmpty, leadingKeywords.contains(keyword.lowercased()) else { return false }
        return trimmed.dropFirst(keyword.count).drop { $0 == " " || $0 == "\t" }.first == "="
    }
}
