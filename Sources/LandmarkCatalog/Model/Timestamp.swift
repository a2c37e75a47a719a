import Foundation

/// RFC 3339 timestamps (https://www.rfc-editor.org/rfc/rfc3339), as instants in milliseconds since
/// 1970-01-01T00:00:00Z.
public enum Timestamp {
    /// The instants an RFC 3339 `date-time` can name (years 0000–9999, four digits), in ms since the
    /// epoch: what ``parse(_:)`` returns and what a stamp from anywhere else (a hub's column) must be in.
    public static let representable: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// Formats ms since the epoch as `2026-11-30T01:02:03.456Z` (UTC, always 3 fraction digits).
    public static func format(milliseconds: Int64) -> String {
        let f = fields(milliseconds)
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(v)
            return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
        }
        return "\(pad(f.year, 4))-\(pad(f.month, 2))-\(pad(f.day, 2))T\(pad(f.secondOfDay / 3600, 2)):"
            + "\(pad(f.secondOfDay / 60 % 60, 2)):\(pad(f.secondOfDay % 60, 2)).\(pad(f.ms, 3))Z"
    }

    /// Writes `format(milliseconds:)` as a JSON string, digit by digit (no intermediate `String`).
    package static func write(milliseconds: Int64, to w: inout JSONWriter) {
        let f = fields(milliseconds)
        guard (0...9999).contains(f.year) else {
            w.string(format(milliseconds: milliseconds))
            return
        }
        func digits(_ v: Int64, _ n: Int) {
            var divisor: Int64 = 1
            for _ in 1..<n { divisor *= 10 }
            while divisor > 0 {
                w.byte(UInt8(48 + (v / divisor) % 10))
                divisor /= 10
            }
        }
        w.byte(0x22)
        digits(f.year, 4)
        w.byte(0x2D)
        digits(f.month, 2)
        w.byte(0x2D)
        digits(f.day, 2)
        w.byte(0x54)
        digits(f.secondOfDay / 3600, 2)
        w.byte(0x3A)
        digits(f.secondOfDay / 60 % 60, 2)
        w.byte(0x3A)
        digits(f.secondOfDay % 60, 2)
        w.byte(0x2E)
        digits(f.ms, 3)
        w.byte(0x5A)
        w.byte(0x22)
    }

    /// The UTC calendar fields of ms since the epoch in the proleptic Gregorian calendar, both divisions
    /// floored (an instant before 1970 is in the day and second that contain it). Civil-from-days,
    /// Howard Hinnant: https://howardhinnant.github.io/date_algorithms.html
    @inline(__always)
    private static func fields(_ milliseconds: Int64) -> (year: Int64, month: Int64, day: Int64, secondOfDay: Int64, ms: Int64) {
        // Floored without overflow for any Int64 (`milliseconds - 999`, or `seconds * 1000` after
        // flooring, would trap at Int64.min).
        let msRest = milliseconds % 1000
        let secondRest = (milliseconds / 1000 - (msRest < 0 ? 1 : 0)) % 86400
        let seconds = milliseconds / 1000 - (msRest < 0 ? 1 : 0)
        let ms = msRest < 0 ? msRest + 1000 : msRest
        var days = seconds / 86400 - (secondRest < 0 ? 1 : 0)
        let secondOfDay = secondRest < 0 ? secondRest + 86400 : secondRest
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let doe = days - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        var year = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        if month <= 2 { year += 1 }
        return (year, month, day, secondOfDay, ms)
    }

    /// Parses an RFC 3339 `date-time` (`2026-11-30T01:02:03.456Z`, `2026-11-30T02:02:03+01:00`, `t`/`z`
    /// lowercase allowed) into ms since the epoch; fractions beyond ms are truncated.
    ///
    /// Offsets other than `Z` name the same instant: they are applied, never compared as text.
    /// - Returns: nil when the text is not an RFC 3339 date-time.
    public static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    static func parse(utf8 b: UnsafeBufferPointer<UInt8>) -> Int64? {
        func digits(_ at: Int, _ n: Int) -> Int64? {
            guard at + n <= b.count else { return nil }
            var v: Int64 = 0
            for i in at..<(at + n) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, let year = digits(0, 4), b[4] == 45, let month = digits(5, 2), b[7] == 45,
            let day = digits(8, 2), b[10] == 84 || b[10] == 116, let hour = digits(11, 2), b[13] == 58,
            let minute = digits(14, 2), b[16] == 58, let second = digits(17, 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour <= 23, minute <= 59,
            second <= 60
        else { return nil }
        var i = 19
        var ms: Int64 = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var n = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if n < 3 { ms = ms * 10 + Int64(b[i] - 48) }
                n += 1
                i += 1
            }
            guard n > 0 else { return nil }
            for _ in n..<max(n, 3) { ms *= 10 }
        }
        guard i < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45 {
            guard let oh = digits(i + 1, 2), i + 3 < b.count, b[i + 3] == 58, let om = digits(i + 4, 2), oh <= 23, om <= 59
            else { return nil }
            offsetMinutes = (oh * 60 + om) * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86400 + hour * 3600 + minute * 60 + min(second, 59) - offsetMinutes * 60
        return seconds * 1000 + ms
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
