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
