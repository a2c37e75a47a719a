/// A count and its noun, `1 row`, `2 rows`, `0 ties`: the one place every message and listing counts
/// things, so none says "1 rows".
/// - Parameters:
///   - count: how many.
///   - noun: the singular (`row`, `tie`).
///   - plural: the plural when it is not the singular plus `s` (`entries`).
/// - Returns: the count and the noun that agrees with it.
package func plural(_ count: Int, _ noun: String, _ plural: String? = nil) -> String {
    count == 1 ? "1 \(noun)" : "\(count) \(plural ?? noun + "s")"
}

/// The noun alone, agreeing with `count`: `source` or `sources`.
package func noun(_ count: Int, _ noun: String, _ plural: String? = nil) -> String {
    count == 1 ? noun : plural ?? noun + "s"
}
