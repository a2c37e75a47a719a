import CatalogTestSupport
import Foundation
import Testing

/// The core's folders as floors (docs/architecture.md §2): a file names only types declared on a lower
/// floor or in its own folder, so the folders form no cycle and each can be read with what lies below it.
@Suite("Architecture: the core's folders are floors")
struct FloorTests {
    static let core = "Sources/LandmarkCatalog/"

    /// The floors as docs/architecture.md §2 lists them: each line `| N | `A/`, `B/` | … |` gives the
    /// folders of floor N.
    static func floors() throws -> [String: Int] {
        let page = try String(contentsOf: Support.root.appending(path: "docs/architecture.md"), encoding: .utf8)
        var floors: [String: Int] = [:]
        let row = /^\s*\|\s*(\d+)\s*\|([^|]*)\|/
        let folder = /`([A-Za-z]+)\/`/
        for line in page.split(separator: "\n") {
            guard let match = line.firstMatch(of: row), let n = Int(match.output.1) else { continue }
            for name in match.output.2.matches(of: folder) { floors[String(name.output.1)] = n }
        }
        return floors
    }

    /// Swift text without comments and string literals (what names a type is code, not prose).
    static func code(_ text: String) -> String {
        var s = text.replacing(/"""[\s\S]*?"""/, with: "\"\"")
        s = s.replacing(/\/\/[^\n]*/, with: "")
        s = s.replacing(/\/\*[\s\S]*?\*\//, with: "")
        return s.replacing(/"(?:\\.|[^"\\\n])*"/, with: "\"\"")
    }

    /// Each reference from a file to a type declared in another folder on the same or a higher floor.
    ///
    /// Each is `path: Folder(floor) names Type of Other(floor)`. A type declared in two folders is not counted (the
    /// name is ambiguous), nor is a file outside every floor (reported by ``unplaced(_:floors:)``).
    static func upward(_ files: [(path: String, text: String)], floors: [String: Int]) -> [String] {
        // Simple word boundaries: Unicode's default joins `RowMerger.apply` into one word.
        let declaration = /\b(?:struct|class|enum|protocol|actor|typealias)\s+([A-Z]\w*)/.wordBoundaryKind(.simple)
        let word = /\b[A-Z]\w*\b/.wordBoundaryKind(.simple)
        func folder(_ path: String) -> String { String(path.dropFirst(core.count).split(separator: "/").first ?? "") }
        let code = files.map { (path: $0.path, folder: folder($0.path), text: Self.code($0.text)) }
        var owners: [String: Set<String>] = [:]
        for file in code {
            for match in file.text.matches(of: declaration) { owners[String(match.output.1), default: []].insert(file.folder) }
        }
        var found: [String] = []
        for file in code {
            guard let floor = floors[file.folder] else { continue }
            let names = Set(file.text.matches(of: word).map { String($0.output) })
            for name in names.sorted() {
                guard let owner = owners[name], owner.count == 1, let other = owner.first, other != file.folder else { continue }
                let otherFloor = floors[other] ?? Int.max
                if otherFloor >= floor { found.append("\(file.path): \(file.folder)(\(floor)) names \(name) of \(other)(\(otherFloor))") }
            }
        }
        return found
    }

    /// The core's Swift files, paths from the package root.
    static func coreFiles() throws -> [(path: String, text: String)] {
        try TableHomeTests.sources().filter { $0.path.hasPrefix(core) }
    }

    @Test("every core folder has a floor, and no file names a type of its own floor's or a higher floor's folders")
    func floorsHold() throws {
        let floors = try Self.floors()
        let files = try Self.coreFiles()
        #expect(floors.count >= 12, "docs/architecture.md §2 lists the floors: \(floors)")
        let folders = Set(files.map { String($0.path.dropFirst(Self.core.count).split(separator: "/").first ?? "") }).filter {
            !$0.hasSuffix(".swift")
        }
        let unplaced = folders.subtracting(floors.keys)
        #expect(unplaced.isEmpty, "folders without a floor in docs/architecture.md §2: \(unplaced.sorted())")
        let found = Self.upward(files, floors: floors)
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    @Test("the check fails on a planted upward reference, and not on a reference downward")
    func plantedUpwardReferenceFails() throws {
        let floors = try Self.floors()
        var files = try Self.coreFiles()
        let baseline = Self.upward(files, floors: floors).count
        // A Model file naming a type of Merge.
        files.append((Self.core + "Model/Planted.swift", "extension Landmark { func planted() { _ = RowMerger.self } }"))
        files.append((Self.core + "App/Planted.swift", "let planted: RowMerger? = nil  // App sits above Merge"))
        let found = Self.upward(files, floors: floors)
        #expect(found.count == baseline + 1, "\(found)")
        #expect(found.contains { $0.hasPrefix(Self.core + "Model/Planted.swift: Model(") && $0.contains("names RowMerger of Merge(") })
        // Names in comments and strings are not references.
        files.append((Self.core + "Model/Quoted.swift", "// RowMerger\nlet s = \"SyncRunner\""))
        #expect(Self.upward(files, floors: floors).count == baseline + 1)
    }
}
