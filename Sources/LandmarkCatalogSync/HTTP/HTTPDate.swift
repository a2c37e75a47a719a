import LandmarkCatalog

/// Parsing of HTTP-date values (RFC 9110 §5.6.7) and `Retry-After` (RFC 9110 §10.2.3).
enum HTTPDate {
    /// Month names as HTTP-dates spell them, lowercased, January first.
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970-01-01T00:00:00Z of an HTTP-date, or nil if `text` is not one.
    ///
    /// Accepts the three forms a recipient must (RFC 9110 §5.6.7): IMF-fixdate
    /// `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete RFC 850 form `Sunday, 06-Nov-94 08:49:37 GMT`
    /// (two-digit years read as 1970–2069) and asctime `Sun Nov  6 08:49:37 1994`. The weekday is not checked.
    static func parse(_ text: String) -> Int64? {
        let words = text.split { $0 == " " || $0 == "," }.map { $0.lowercased() }
        var day: Int?
        var month: Int?
        var year: Int?
        var time: (Int, Int, Int)?
        switch words.count {
        case 4 where words[3] == "gmt" && words[1].contains("-"):  // RFC 850: weekday, DD-Mon-YY HH:MM:SS GMT
            let parts = words[1].split(separator: "-")
            guard parts.count == 3 else { return nil }
            day = Int(parts[0])
            month = months.firstIndex(of: String(parts[1])).map { $0 + 1 }
            year = Int(parts[2]).map { $0 < 70 ? 2000 + $0 : ($0 < 100 ? 1900 + $0 : $0) }
            time = clock(words[2])
        case 6 where words[5] == "gmt":  // IMF-fixdate: weekday, DD Mon YYYY HH:MM:SS GMT
            day = Int(words[1])
            month = months.firstIndex(of: words[2]).map { $0 + 1 }
            year = Int(words[3])
            time = clock(words[4])
        case 5:  // asctime: weekday Mon D HH:MM:SS YYYY
            month = months.firstIndex(of: words[1]).map { $0 + 1 }
            day = Int(words[2])
            time = clock(words[3])
            year = Int(words[4])
        default:
            return nil
        }
        guard let day, let month, let year, let (hour, minute, second) = time, (1...31).contains(day),
            (1...9999).contains(year), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// How long (seconds, ≥ 0) a `Retry-After` value asks to wait, or nil if it is neither form.
    ///
    /// - Parameters:
    ///   - value: delta-seconds (`120`) or an HTTP-date.
    ///   - serverDate: the response's `Date` (seconds since 1970), when it has one: a date is measured
    ///     against the server's own clock, so a skewed local clock does not matter.
    ///   - now: this machine's clock (seconds since 1970), used when there is no `Date`.
    /// - Returns: the wait in seconds, or nil.
    static func retryAfterDelay(_ value: String, serverDate: Int64?, now: Double) -> Double? {
        let trimmed = value.trimmingHTTPWhitespace
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return Double(trimmed.prefix(12)).map { min($0, 1e11) }  // absurdly long values clamp, not overflow
        }
        guard let date = parse(trimmed) else { return nil }
        let base = serverDate.map(Double.init) ?? now
        return max(0, Double(date) - base)
    }

    /// `HH:MM:SS` as hours, minutes and seconds (two digits each; ranges are checked by the caller).
    private static func clock(_ text: String) -> (Int, Int, Int)? {
        let parts = text.split(separator: ":")
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 }),
            let h = Int(parts[0]), let m = Int(parts[1]), let s = Int(parts[2])
        else { return nil }
        return (h, m, s)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant, "chrono-Compatible Low-Level
    /// Date Algorithms", `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

extension String {
    /// Without leading and trailing whitespace (HTTP's optional whitespace and the CRLF, RFC 9110 §5.6.3).
    var trimmingHTTPWhitespace: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else {
            return ""
        }
        return String(self[first...last])
    }
}
