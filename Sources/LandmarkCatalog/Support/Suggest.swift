/// "Did you mean": suggestions for a misspelt or shortened name — the one candidate that `word` is a
/// prefix of (3 characters or more: `--out` → `--output`), else the nearest by optimal string alignment
/// distance (Damerau–Levenshtein with adjacent transpositions: `featrued` → `featured`), within a
/// third of the candidate's length and at least 1.
public enum Suggest {
    /// The suggestion for `word` among `candidates`, or nil when none is near.
    public static func nearest(to word: String, in candidates: [String]) -> String? {
        let prefixed = candidates.filter { $0.hasPrefix(word) && $0 != word }
        if prefixed.count == 1, word.count >= 3 { return prefixed[0] }
        // Within a third of the candidate's length, at least 1: "tcsh" is not a near miss of "bash".
        let scored = candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= max(1, $0.0.count / 3) }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// The optimal-string-alignment edit distance of `a` and `b`, case-insensitive, over Unicode scalars.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased().unicodeScalars)
        let b = Array(b.lowercased().unicodeScalars)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}
