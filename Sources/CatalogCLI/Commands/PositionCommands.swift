import LandmarkCatalog

extension CatalogCLI {
    static let userOption: OptionSpec = {
        var option = OptionSpec.value("--user", "ID", "The user id (NFC-normalised; at most 256 bytes, no control characters).")
        option.required = true
        return option
    }()

    static var positionCommand: CommandSpec {
        CommandSpec(
            name: "position",
            abstract: "Set, show or clear one user's page in the featured carousel.",
            subcommands: [
                CommandSpec(
                    name: "set",
                    abstract: "Store the user's page (or the featured landmark they are on), stamped with the hybrid logical clock.",
                    discussion: "A page outside 0..<pageCount or a landmark that is not featured is a usage error (64); nothing is stored.",
                    options: [
                        userOption,
                        .value("--page", "N", "The 0-based page."),
                        .value("--landmark", "ID", "A featured landmark's id (its page is stored)."),
                        .flag("--json", "Print the stored position as JSON."),
                    ],
                    validate: { p in
                        try requireUser(p)
                        guard (p.value("--page") == nil) != (p.value("--landmark") == nil) else {
                            throw UsageError(message: "give exactly one of --page N and --landmark ID", path: p.path)
                        }
                    },
                    run: runPositionSet),
                CommandSpec(
                    name: "get",
                    abstract: "Show the user's current page, resolved against today's featured landmarks.",
                    options: [userOption, .flag("--json", "Print JSON.")],
                    validate: requireUser,
                    run: runPositionGet),
                CommandSpec(
                    name: "clear",
                    abstract: "Forget the user's page (writes a tombstone, so the deletion syncs).",
                    options: [userOption],
                    validate: requireUser,
                    run: runPositionClear),
            ])
    }

    static var positionsCommand: CommandSpec {
        CommandSpec(
            name: "positions",
            abstract: "List every user's current page.",
            options: [.flag("--json", "Print JSON.")],
            run: runPositions)
    }

    static func requireUser(_ p: ParsedArguments) throws {
        guard p.value("--user") != nil else { throw UsageError(message: "missing --user ID", path: p.path) }
    }

    static func integer(_ p: ParsedArguments, _ name: String) throws -> Int64? {
        guard let text = p.value(name) else { return nil }
        guard let value = Int64(text) else {
            throw UsageError(message: "\(name) needs an integer, got '\(text)'", path: p.path)
        }
        return value
    }

    static func runPositionSet(_ p: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let target: PositionTarget
        if let page = try integer(p, "--page") {
            target = .page(Int(clamping: page))
        } else {
            target = .landmark(try integer(p, "--landmark")!)
        }
        let store = try openStore(p, context, existing: true)  // no catalog, no featured page to be on
        let position = try store.setPosition(user: p.value("--user")!, to: target)
        if p.has("--json") {
            var w = JSONWriter()
            writePosition(position, to: &w)
            w.byte(0x0A)
            context.stdout.write(w.bytes)
        }
        return 0
    }

    static func runPositionGet(_ p: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let store = try openStore(p, context, existing: true)
        let user = p.value("--user")!
        let position = try store.position(user: user)
        if p.has("--json") {
            var w = JSONWriter()
            if let position {
                writePosition(position, to: &w)
            } else {
                w.raw("{"); w.key("currentPage"); w.raw("null")
                w.raw(","); w.key("landmarkId"); w.raw("null")
                w.raw(","); w.key("pageCount"); w.int(Int64(try store.featuredIDs().count))
                w.raw(","); w.key("user"); w.string(try UserID.normalize(user)); w.raw("}")
            }
            w.byte(0x0A)
            context.stdout.write(w.bytes)
        } else if let position {
            context.stdout.line(describe(position))
        } else {
            context.stdout.line("\(try UserID.normalize(user)): no position")
        }
        return 0
    }

    static func runPositionClear(_ p: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        try openStore(p, context).clearPosition(user: p.value("--user")!)
        return 0
    }

    static func runPositions(_ p: ParsedArguments, _ context: CLIContext) throws -> Int32 {
        let all = try openStore(p, context, existing: true).positions()
        if p.has("--json") {
            var w = JSONWriter()
            w.byte(0x5B)
            for (i, position) in all.enumerated() {
                if i > 0 { w.byte(0x2C) }
                writePosition(position, to: &w)
            }
            w.raw("]\n")
            context.stdout.write(w.bytes)
        } else if !all.isEmpty {
            var rows = [["USER", "PAGE", "OF", "LANDMARK", "UPDATED (UTC)", "NODE"]]
            for position in all {
                rows.append([position.user, position.currentPage.map(String.init) ?? "-", String(position.pageCount),
                             position.landmarkID.map(String.init) ?? "-",
                             Timestamp.format(milliseconds: position.stamp.wallMilliseconds), position.stamp.node])
            }
            context.stdout.write(Table.render(rows))
        }
        return 0
    }

    static func describe(_ position: CarouselPosition) -> String {
        guard let page = position.currentPage, let landmark = position.landmarkID else {
            return "\(position.user): no featured landmarks, so no current page"
        }
        return "\(position.user): page \(page) of \(position.pageCount) (landmark \(landmark))"
    }

    /// `{"counter":…,"currentPage":…,"landmarkId":…,"node":…,"pageCount":…,"updatedAt":…,"user":…}`
    static func writePosition(_ position: CarouselPosition, to w: inout JSONWriter) {
        w.raw("{"); w.key("counter"); w.int(position.stamp.counter)
        w.raw(","); w.key("currentPage"); w.int(position.currentPage.map(Int64.init))
        w.raw(","); w.key("landmarkId"); w.int(position.landmarkID)
        w.raw(","); w.key("node"); w.string(position.stamp.node)
        w.raw(","); w.key("pageCount"); w.int(Int64(position.pageCount))
        w.raw(","); w.key("updatedAt"); w.string(Timestamp.format(milliseconds: position.stamp.wallMilliseconds))
        w.raw(","); w.key("user"); w.string(position.user)
        w.raw("}")
    }
}
