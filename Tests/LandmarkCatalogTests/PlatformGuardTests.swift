import CatalogTestSupport
import Foundation
import Testing

/// The app-side products are portable (issue 28, SPEC.md §17): in `LandmarkCatalog` and
/// `LandmarkCatalogClient` every Glibc, inotify and epoll use (and Linux's `st_mtim`) sits inside
/// `#if os(Linux)`; Package.swift declares iOS and macOS; libcrypto (CCrypto) is linked and imported on
/// Linux only (CryptoKit elsewhere), and so is libcurl (CCurl: the client's transport on Linux, `URLSession`
/// elsewhere).
@Suite("Architecture: the app-side products build on Darwin")
struct PlatformGuardTests {
    static let appSideFolders = ["Sources/LandmarkCatalog/", "Sources/LandmarkCatalogClient/"]

    /// Lines that use a Linux-only name outside an `#if os(Linux)` branch, and every `canImport(Glibc)`
    /// (it is true on other Glibc systems without a Darwin path; os(Linux) says what is meant).
    static func unguarded(_ text: String, path: String) -> [String] {
        // Simple word boundaries: the default (Unicode's) finds none inside `info.st_mtim.tv_sec`.
        let linuxOnly = /\bGlibc\b|inotify|epoll|\bst_mtim\b|\bCCrypto\b|\bCCurl\b/.wordBoundaryKind(.simple)
        // One entry per open #if: whether the branch being read is an os(Linux) branch.
        var stack: [(condition: String, linux: Bool)] = []
        var found: [String] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("//") { continue }
            if line.contains("canImport(Glibc)") { found.append("\(path):\(n + 1): \(line) (use os(Linux))") }
            if line.hasPrefix("#if ") {
                stack.append((line, line == "#if os(Linux)"))
            } else if line.hasPrefix("#elseif ") {
                if !stack.isEmpty { stack[stack.count - 1].linux = line == "#elseif os(Linux)" }
            } else if line.hasPrefix("#else") {
                if !stack.isEmpty { stack[stack.count - 1].linux = stack[stack.count - 1].condition == "#if !os(Linux)" }
            } else if line.hasPrefix("#endif") {
                _ = stack.popLast()
            } else if line.contains(linuxOnly) && !stack.contains(where: \.linux) {
                found.append("\(path):\(n + 1): \(line)")
            }
        }
        return found
    }

    @Test("no Glibc, inotify, epoll, st_mtim, CCrypto or CCurl outside #if os(Linux) in LandmarkCatalog and LandmarkCatalogClient")
    func linuxNamesAreGuarded() throws {
        let files = try TableHomeTests.sources().filter { file in Self.appSideFolders.contains { file.path.hasPrefix($0) } }
        #expect(files.count > 50)
        #expect(files.contains { $0.path.hasPrefix("Sources/LandmarkCatalogClient/") })
        let offenders = files.flatMap { Self.unguarded($0.text, path: $0.path) }
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
    }

    @Test("the checker finds a planted unguarded line and accepts the guarded forms")
    func checkerFailsOnAPlantedLine() {
        let guarded = """
            #if os(Linux)
                import Glibc
                let fd = inotify_init1(0)
            #elseif canImport(Darwin)
                import Darwin
            #endif
            // a comment may say epoll
            """
        #expect(Self.unguarded(guarded, path: "ok.swift").isEmpty)
        let planted = guarded + "\nlet t = info.st_mtim.tv_sec\n#if canImport(Darwin)\nimport Glibc\n#else\nlet e = epoll_create1(0)\n#endif"
        #expect(
            Self.unguarded(planted, path: "bad.swift") == [
                "bad.swift:8: let t = info.st_mtim.tv_sec", "bad.swift:10: import Glibc", "bad.swift:12: let e = epoll_create1(0)",
            ])
        #expect(
            Self.unguarded("#if canImport(Glibc)\n    import Glibc\n#endif", path: "c.swift") == [
                "c.swift:1: #if canImport(Glibc) (use os(Linux))", "c.swift:2: import Glibc",
            ])
    }

    /// The app-side targets whose dependencies name CCrypto or CCurl other than on Linux alone.
    static func cryptoOffLinux(_ manifest: String) -> [String] {
        ["LandmarkCatalog", "LandmarkCatalogClient"].filter { target in
            // The target's declaration, up to the next entry of `targets:` (indented 8 spaces).
            guard let start = manifest.range(of: ".target(\n            name: \"\(target)\",") else { return true }
            let rest = manifest[start.upperBound...]
            let body = rest[..<(rest.range(of: "\n        .")?.lowerBound ?? rest.endIndex)]
            guard body.contains("dependencies:") else { return true }
            let mentions = body.matches(of: /"(CCrypto|CCurl)"/).count
            let linuxOnly = body.matches(of: /\.target\(name: "(CCrypto|CCurl)", condition: \.when\(platforms: \[\.linux\]\)\)/).count
            return mentions != linuxOnly
        }
    }

    @Test("Package.swift declares iOS and macOS, and links CCrypto and CCurl into the app-side products on Linux only")
    func packageDeclaresPlatformsAndLinuxOnlyCrypto() throws {
        let manifest = try String(contentsOf: Support.root.appending(path: "Package.swift"), encoding: .utf8)
        let platforms = try #require(manifest.firstMatch(of: /platforms:\s*\[([^\]]*)\]/))
        #expect(platforms.1.contains(".iOS(.v17)") && platforms.1.contains(".macOS(.v14)"), "\(platforms.1)")
        #expect(manifest.contains(#".target(name: "CCrypto", condition: .when(platforms: [.linux]))"#))
        #expect(Self.cryptoOffLinux(manifest) == [])
        #expect(Self.cryptoOffLinux("") == ["LandmarkCatalog", "LandmarkCatalogClient"])  // not found is a failure
        #expect(manifest.contains(#".target(name: "CCurl", condition: .when(platforms: [.linux]))"#))
        // Planted: the client linking libcrypto, or libcurl, everywhere; the core without the condition.
        for planted in [#""CCrypto""#, #""CCurl""#] {
            let plantedClient = manifest.replacingOccurrences(
                of: #"name: "LandmarkCatalogClient",\#n            dependencies: ["LandmarkCatalog""#,
                with: #"name: "LandmarkCatalogClient",\#n            dependencies: ["LandmarkCatalog", \#(planted)"#)
            #expect(plantedClient != manifest)
            #expect(Self.cryptoOffLinux(plantedClient) == ["LandmarkCatalogClient"])
        }
        let plantedCore = manifest.replacingOccurrences(
            of: #".target(name: "CCrypto", condition: .when(platforms: [.linux]))"#, with: #""CCrypto""#)
        #expect(Self.cryptoOffLinux(plantedCore) == ["LandmarkCatalog"])
    }
}
