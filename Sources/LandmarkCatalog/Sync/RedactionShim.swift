// Temporary: replaced by HTTP/Redaction.swift when the HTTP client lands.
func redactedURL(_ s: String) -> String {
    guard let scheme = s.range(of: "://"), let at = s[scheme.upperBound...].firstIndex(of: "@") else { return s }
    let userinfo = s[scheme.upperBound..<at]
    guard let colon = userinfo.firstIndex(of: ":") else { return s }
    return String(s[..<colon]) + ":***" + String(s[at...])
}
