import LandmarkCatalog

extension CatalogCLI {
    static var featuredCommand: CommandSpec {
        CommandSpec(
            name: "featured",
            abstract: "List the featured landmarks: the carousel's pages, in id order.",
            discussion: "--json prints an array in the shape of landmarkData.json (Apple's Landmark decodes it; missing strings are \"\"), keys sorted, kept unknown keys included.",
            options: [
                .flag("--json", "Print JSON instead of a table."),
            ],
            run: runFeatured)
    }

    static func runFeatured(_ parsed: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let store = try openStore(parsed, context)
        if parsed.has("--json") {
            var w = JSONWriter(reservingCapacity: 1 << 16)
            w.byte(0x5B)
            var first = true
            try store.forEachFeaturedLandmark { landmark in
                if !first { w.byte(0x2C) }
                first = false
                landmark.writeJSON(to: &w)
                if w.bytes.count >= 1 << 16 {
                    context.stdout.write(w.bytes)
                    w.bytes.removeAll(keepingCapacity: true)
                }
            }
            w.raw("]\n")
            context.stdout.write(w.bytes)
            return 0
        }
        var rows: [[String]] = [["PAGE", "ID", "NAME", "CATEGORY", "PARK", "STATE"]]
        var page = 0
        try store.forEachFeaturedLandmark { l in
            rows.append([String(page), String(l.id), l.name, l.category ?? "", l.park ?? "", l.state ?? ""])
            page += 1
        }
        if rows.count == 1 {
            context.stderr.line("catalog: no featured landmarks")
            return 0
        }
        context.stdout.write(Table.render(rows))
        return 0
    }
}

/// An aligned plain-text table for people (column widths in characters).
enum Table {
    static func render(_ rows: [[String]]) -> String {
        guard let header = rows.first else { return "" }
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        var out = ""
        for row in rows {
            var line = ""
            for (i, cell) in row.enumerated() {
                line += cell
                if i < row.count - 1 { line += String(repeating: " ", count: widths[i] - cell.count + 2) }
            }
            out += line + "\n"
        }
        return out
    }
}
