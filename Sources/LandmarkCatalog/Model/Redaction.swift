/// `s` with every password in it replaced by `***`, for messages and logs.
///
/// Handles:
/// - URLs with user information (RFC 3986 §3.2.1): `scheme://user:pass@host/…` → `scheme://user:***@host/…`
///   (the user is kept). The password runs to the last `@`, so one containing `@ / ? #` is still hidden.
/// - Query parameters whose name contains `password` (`?password=pw`, `&sslpassword=pw`), as in
///   PostgreSQL connection URIs (libpq "Connection URIs").
/// - libpq keyword/value strings (`host=x password=pw`, `password = 'p w\'x'`): the value of every
///   keyword containing `password` becomes `***` (libpq "Keyword/Value Connection Strings").
///
/// Anything else is returned unchanged. Redaction is textual: it never fails and never decodes.
package func redactedURL(_ s: String) -> String {
    if let schemeEnd = s.range(of: "://") {
        return redactedQuery(redactedUserInfo(s, after: schemeEnd.upperBound))
    }
    if s.contains("=") { return redactedKeywords(s) }
    return s
}

/// The password part of `scheme://user:pass@host…`, if `s` has one (for scrubbing messages that might
/// quote it in another form, e.g., from a library's error text).
package func urlPassword(_ s: String) -> String? {
    guard let schemeEnd = s.range(of: "://"), let (colon, at) = userInfoBounds(s, after: schemeEnd.upperBound) else {
        return nil
    }
    let password = String(s[s.index(after: colon)..<at])
    return password.isEmpty ? nil : password
}

/// Where the password of the user information after `start` lies: the `:` ending the user name and the
/// `@` ending the password.
///
/// The user name is what precedes the first `:` when no `/ ? # @ [` comes first; the password runs to the
/// last `@` of the URL, so a password containing `@ / ? #` (invalid unescaped, but written by hand) is
/// still covered. An `@` later in the path makes it cover more than the password: that is the safe side.
private func userInfoBounds(_ s: String, after start: String.Index) -> (colon: String.Index, at: String.Index)? {
    let rest = s[start...]
    guard let colon = rest.firstIndex(where: { ":/?#@[".contains($0) }), rest[colon] == ":",
        let at = rest[colon...].lastIndex(of: "@")
    else { return nil }
    return (colon, at)
}

/// `s` with the password of its user information (after `start`, the end of `://`) replaced by `***`.
private func redactedUserInfo(_ s: String, after start: String.Index) -> String {
    guard let (colon, at) = userInfoBounds(s, after: start) else { return s }
    return String(s[...colon]) + "***" + String(s[at...])
}

/// Replaces the values of query parameters named like a password.
private func redactedQuery(_ s: String) -> String {
    guard let question = s.firstIndex(of: "?") else { return s }
    let fragmentStart = s[question...].firstIndex(of: "#") ?? s.endIndex
    let query = s[s.index(after: question)..<fragmentStart]
    let parameters = query.split(separator: "&", omittingEmptySubsequences: false).map { parameter -> String in
        guard let equals = parameter.firstIndex(of: "="), isPasswordKeyword(parameter[..<equals]) else {
            return String(parameter)
        }
        return String(parameter[...equals]) + "***"
    }
    return String(s[...question]) + parameters.joined(separator: "&") + String(s[fragmentStart...])
}

/// Replaces the values of password keywords in a libpq `keyword = value …` string, keeping the rest of the
/// text (spacing, quoting of other values) as it was.
///
/// A value is single-quoted (with `\'` and `\\` escapes) or runs to the next whitespace; an unterminated
/// quote runs to the end.
private func redactedKeywords(_ s: String) -> String {
    let chars = Array(s)
    var out = ""
    var i = 0
    func skipSpace() {
        while i < chars.count, chars[i].isWhitespace {
            out.append(chars[i])
            i += 1
        }
    }
    while i < chars.count {
        skipSpace()
        let keywordStart = i
        while i < chars.count, chars[i] != "=", !chars[i].isWhitespace { i += 1 }
        let keyword = String(chars[keywordStart..<i])
        out += keyword
        skipSpace()
        guard i < chars.count, chars[i] == "=" else { continue }
        out.append("=")
        i += 1
        skipSpace()
        let valueStart = i
        if i < chars.count, chars[i] == "'" {
            i += 1
            while i < chars.count, chars[i] != "'" {
                i += chars[i] == "\\" ? 2 : 1
            }
            i = min(i + 1, chars.count)
        } else {
            while i < chars.count, !chars[i].isWhitespace { i += 1 }
        }
        out += isPasswordKeyword(keyword[...]) ? "***" : String(chars[valueStart..<i])
    }
    return out
}

/// Whether a query parameter or libpq keyword names a password (`password`, `sslpassword`, any case).
private func isPasswordKeyword(_ keyword: Substring) -> Bool {
    keyword.lowercased().contains("password")
}

/// The URL scheme of `text` (lowercased) when it starts like `scheme://` (RFC 3986 §3.1: a letter, then
/// letters, digits, `+`, `-` or `.`).
package func urlScheme(of text: String) -> String? {
    guard let range = text.range(of: "://") else { return nil }
    let scheme = text[..<range.lowerBound]
    guard let first = scheme.first, first.isASCII, first.isLetter,
        scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") })
    else { return nil }
    return scheme.lowercased()
}
