/// An aligned plain-text table for people, padded by terminal display width (wide CJK and emoji count
/// two columns, combining marks none), so Korean or Japanese names line up.
///
/// Control characters in cells are shown escaped (`\u{1B}`), so data can never move the cursor or
/// change colours on a terminal.
enum Table {
    static func render(_ rows: [[String]]) -> String {
        let rows = rows.map { $0.map(escaped) }
        guard let header = rows.first else { return "" }
        var widths = header.map(displayWidth)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], displayWidth(cell)) } }
        var out = ""
        for row in rows {
            var line = ""
            for (i, cell) in row.enumerated() {
                line += cell
                if i < row.count - 1 { line += String(repeating: " ", count: widths[i] - displayWidth(cell) + 2) }
            }
            out += line + "\n"
        }
        return out
    }

    /// `text` with C0 and C1 control characters and DEL written as `\u{XX}`.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func isControl(_ s: Unicode.Scalar) -> Bool { s.value < 0x20 || (0x7F...0x9F).contains(s.value) }

    /// Columns a terminal gives `text`: East Asian Wide/Fullwidth ranges (UAX #11) and emoji count 2,
    /// combining marks, variation selectors and zero-width joiners count 0, everything else 1.
    static func displayWidth(_ text: String) -> Int {
        var width = 0
        for scalar in text.unicodeScalars {
            let v = scalar.value
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .format: continue
            default: break
            }
            if (0xFE00...0xFE0F).contains(v) { continue }
            let wide =
                (0x1100...0x115F).contains(v) || (0x2E80...0x303E).contains(v) || (0x3041...0x33FF).contains(v)
                || (0x3400...0x4DBF).contains(v) || (0x4E00...0x9FFF).contains(v) || (0xA000...0xA4CF).contains(v)
                || (0xAC00...0xD7A3).contains(v) || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v)
                || (0xFF00...0xFF60).contains(v) || (0xFFE0...0xFFE6).contains(v) || (0x1F300...0x1F64F).contains(v)
                || (0x1F900...0x1F9FF).contains(v) || (0x20000...0x3FFFD).contains(v)
            width += wide ? 2 : 1
        }
        return width
    }
}
