import LandmarkCatalog

extension CatalogCLI {
    static var featuredCommand: CommandSpec {
        CommandSpec(
            name: "featured",
            abstract: "List the featured landmarks: the carousel's pages, in id order.",
            discussion: "--json prints an array in the shape of landmarkData.json (Apple's Landmark decodes it; missing strings are \"\"), keys sorted, kept unknown keys included.",
            options: [
                .flag("--json", "Print JSON instead of a table."),
                { var o = userOption.with(help: "Also show this user's current page: with --json, {user, currentPage, pageCount, landmarks}."); o.required = false; return o }(),
            ],
            run: runFeatured)
    }

    static func runFeatured(_ parsed: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let store = try openStore(parsed, context, existing: true)
        var current: Int?
        if let user = parsed.value("--user") {
            current = try store.position(user: user)?.currentPage
        }
        if parsed.has("--json") {
            var w = JSONWriter(reservingCapacity: 1 << 16)
            if parsed.value("--user") != nil {
                w.raw("{"); w.key("currentPage"); w.int(current.map(Int64.init))
                w.raw(","); w.key("landmarks")
            }
            w.byte(0x5B)
            let count = try store.writeFeaturedJSON(to: &w) { w in
                context.stdout.write(w.bytes)
                w.bytes.removeAll(keepingCapacity: true)
            }
            w.byte(0x5D)
            if let user = parsed.value("--user") {
                w.raw(","); w.key("pageCount"); w.int(Int64(count))
                w.raw(","); w.key("user"); w.string(try UserID.normalize(user)); w.raw("}")
            }
            w.byte(0x0A)
            context.stdout.write(w.bytes)
            return 0
        }
        var rows: [[String]] = [["PAGE", "ID", "NAME", "CATEGORY", "PARK", "STATE"]]
        var page = 0
        try store.forEachFeaturedLandmark { l in
            let marker = page == current ? "> " : (parsed.value("--user") != nil ? "  " : "")
            rows.append([marker + String(page), String(l.id), l.name, l.category ?? "", l.park ?? "", l.state ?? ""])
            page += 1
        }
        if rows.count == 1 { return 0 }  // nothing featured: nothing to print
        context.stdout.write(Table.render(rows))
        return 0
    }
}

/// An aligned plain-text table for people, padded by terminal display width (wide CJK and emoji count
/// two columns, combining marks none), so Korean or Japanese names line up.
enum Table {
    static func render(_ rows: [[String]]) -> String {
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
            let wide = (0x1100...0x115F).contains(v) || (0x2E80...0x303E).contains(v) || (0x3041...0x33FF).contains(v)
                || (0x3400...0x4DBF).contains(v) || (0x4E00...0x9FFF).contains(v) || (0xA000...0xA4CF).contains(v)
                || (0xAC00...0xD7A3).contains(v) || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v)
                || (0xFF00...0xFF60).contains(v) || (0xFFE0...0xFFE6).contains(v) || (0x1F300...0x1F64F).contains(v)
                || (0x1F900...0x1F9FF).contains(v) || (0x20000...0x3FFFD).contains(v)
            width += wide ? 2 : 1
        }
        return width
    }
}
