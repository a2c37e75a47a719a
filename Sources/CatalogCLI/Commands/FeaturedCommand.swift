import LandmarkCatalog

extension CatalogCLI {
    static var featuredCommand: CommandSpec {
        CommandSpec(
            name: "featured",
            abstract: "List the featured landmarks: the carousel's pages, in id order.",
            discussion:
                "--json prints an array in the shape of landmarkData.json (Apple's Landmark decodes it; missing strings are \"\"), keys sorted, kept unknown keys included.",
            options: [
                Options.json.with(help: "Print JSON instead of a table.").spec,
                Options.user.with(help: "Also show this user's current page: with --json, {user, currentPage, pageCount, landmarks}.").spec,
            ],
            run: runFeatured)
    }

    static func runFeatured(_ i: Invocation) throws -> Int32 {
        let store = try i.openStore(.read)
        let user = try i[Options.user].map(UserID.normalize)
        let current = try user.flatMap { try Positions(store).position(user: $0)?.currentPage }
        if i[Options.json] {
            // The landmarks are streamed as the core library writes them (the app's file shape); with --user
            // they are the `landmarks` member of an object whose other fields JSONObject writes around them.
            var envelope = JSONObject()
            var w = JSONWriter(reservingCapacity: 1 << 16)
            if let user {
                envelope.set("currentPage", current)
                envelope.set("user", user)
                w.bytes += envelope.opening(before: "landmarks")
            }
            w.byte(0x5B)
            let count = try LandmarkReader(store).writeFeaturedJSON(to: &w) { w in
                i.stdout.write(w.bytes)
                w.bytes.removeAll(keepingCapacity: true)
            }
            w.byte(0x5D)
            if user != nil {
                envelope.set("pageCount", count)
                w.bytes += envelope.closing(after: "landmarks")
            }
            w.byte(0x0A)
            i.stdout.write(w.bytes)
            return 0
        }
        var rows: [[String]] = [["PAGE", "ID", "NAME", "CATEGORY", "PARK", "STATE"]]
        var page = 0
        try LandmarkReader(store).forEachFeaturedLandmark { l in
            let marker = page == current ? "> " : (user != nil ? "  " : "")
            rows.append([marker + String(page), String(l.id), l.name, l.category ?? "", l.park ?? "", l.state ?? ""])
            page += 1
        }
        if rows.count == 1 {
            i.stdout.line("no featured landmarks")
            return 0
        }
        i.stdout.write(Table.render(rows))
        return 0
    }
}
