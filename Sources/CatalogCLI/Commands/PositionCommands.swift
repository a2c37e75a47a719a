import LandmarkCatalog

extension CatalogCLI {
    enum PositionOptions {
        static let page = Option<Int64>("--page", "N", "The 0-based page.", parse: Values.anyInteger)
        static let landmark = Option<Int64>("--landmark", "ID", "A featured landmark's id (its page is stored).", parse: Values.anyInteger)
        static let user = Options.user.mandatory
    }

    static var positionCommand: CommandSpec {
        CommandSpec(
            name: "position",
            abstract: "Set, get or clear one user's page in the featured carousel.",
            subcommands: [
                CommandSpec(
                    name: "set",
                    abstract: "Store the user's page (or the featured landmark they are on), stamped with the hybrid logical clock.",
                    discussion: "A page outside 0..<pageCount or a landmark that is not featured is a usage error (64); nothing is stored.",
                    options: [
                        PositionOptions.user.spec, PositionOptions.page.spec, PositionOptions.landmark.spec,
                        Options.json.with(help: "Print the stored position as JSON.").spec,
                    ],
                    oneOf: [PositionOptions.page.spec.name, PositionOptions.landmark.spec.name],
                    validate: { p in
                        guard p.given(PositionOptions.page) != p.given(PositionOptions.landmark) else {
                            throw UsageError(message: "give exactly one of --page N and --landmark ID", path: p.path)
                        }
                    },
                    run: runPositionSet),
                CommandSpec(
                    name: "get",
                    abstract: "Show the user's current page, resolved against today's featured landmarks.",
                    options: [PositionOptions.user.spec, Options.json.spec],
                    run: runPositionGet),
                CommandSpec(
                    name: "clear",
                    abstract: "Forget the user's page (writes a tombstone, so the deletion syncs).",
                    options: [PositionOptions.user.spec],
                    run: runPositionClear),
            ])
    }

    static var positionsCommand: CommandSpec {
        CommandSpec(
            name: "positions",
            abstract: "List every user's current page.",
            options: [Options.json.spec],
            run: runPositions)
    }

    static func runPositionSet(_ i: Invocation) throws -> Int32 {
        let target: PositionTarget
        if let page = i[PositionOptions.page] {
            target = .page(Int(clamping: page))
        } else if let landmark = i[PositionOptions.landmark] {
            target = .landmark(landmark)
        } else {
            preconditionFailure("position set's validate lets no command line through without --page or --landmark")
        }
        // No catalog, no featured page to be on: a missing database is refused (66) like a reading command.
        let store = try i.openStore(i.databaseExists ? .write : .read)
        let position = try Positions(store).setPosition(user: i[PositionOptions.user], to: target)
        if i[Options.json] { i.stdout.write(positionJSON(position).bytes + [0x0A]) }
        return 0
    }

    static func runPositionGet(_ i: Invocation) throws -> Int32 {
        let store = try i.openStore(.read)
        let user = i[PositionOptions.user]
        let position = try Positions(store).position(user: user)
        if i[Options.json] {
            let o =
                try position.map(positionJSON) ?? noPositionJSON(user: UserID.normalize(user), pageCount: LandmarkReader(store).featuredIDs().count)
            i.stdout.write(o.bytes + [0x0A])
        } else if let position {
            i.stdout.line(describe(position))
        } else {
            i.stdout.line("\(try UserID.normalize(user)): no position")
        }
        return 0
    }

    static func runPositionClear(_ i: Invocation) throws -> Int32 {
        // As `position set`: a missing database is refused (66), not created to hold one tombstone.
        try Positions(i.openStore(i.databaseExists ? .write : .read)).clearPosition(user: i[PositionOptions.user])
        return 0
    }

    static func runPositions(_ i: Invocation) throws -> Int32 {
        let all = try Positions(i.openStore(.read)).positions()
        if i[Options.json] {
            i.stdout.write(JSONObject.array(all.map(positionJSON)) + [0x0A])
        } else if all.isEmpty {
            i.stdout.line("no positions")
        } else {
            var rows = [["USER", "PAGE", "OF", "LANDMARK", "UPDATED (UTC)", "NODE"]]
            for position in all {
                rows.append([
                    position.user, position.currentPage.map(String.init) ?? "-", String(position.pageCount),
                    position.landmarkID.map(String.init) ?? "-",
                    Timestamp.format(milliseconds: position.stamp.wallMilliseconds), position.stamp.node,
                ])
            }
            i.stdout.write(Table.render(rows))
        }
        return 0
    }

    static func describe(_ position: CarouselPosition) -> String {
        guard let page = position.currentPage, let landmark = position.landmarkID else {
            return "\(position.user): no featured landmarks, so no current page"
        }
        return "\(position.user): page \(page) of \(position.pageCount) (landmark \(landmark))"
    }

    /// `{"currentPage":null,"landmarkId":null,"pageCount":…,"user":…}`: a user with no position.
    static func noPositionJSON(user: String, pageCount: Int) -> JSONObject {
        var o = JSONObject()
        o.setNull("currentPage")
        o.setNull("landmarkId")
        o.set("pageCount", pageCount)
        o.set("user", user)
        return o
    }

    /// The position as a JSON object: `{"counter":…,"currentPage":…,"landmarkId":…,"node":…,"pageCount":…,"updatedAt":…,"user":…}`.
    static func positionJSON(_ position: CarouselPosition) -> JSONObject {
        var o = JSONObject()
        o.set("counter", position.stamp.counter)
        o.set("currentPage", position.currentPage)
        o.set("landmarkId", position.landmarkID)
        o.set("node", position.stamp.node)
        o.set("pageCount", position.pageCount)
        o.set("updatedAt", Timestamp.format(milliseconds: position.stamp.wallMilliseconds))
        o.set("user", position.user)
        return o
    }
}
