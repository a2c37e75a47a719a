// The tutorial's `PageView` on a terminal, on the LandmarkCatalog library: the featured landmark on
// the current page, a page control (●○○○), ← / → (or h / l) to move, q to quit. Two of them on one
// database follow each other; one beside a `catalog sync` follows what the sync merged. With `--server`, it
// syncs its own database with a `catalog serve` endpoint (LandmarkCatalogClient's `startSync`): two of them on
// two databases through one `serve` move each other. The token file holds a bearer token (`catalog token
// issue`); it is read again when the server refuses it (a refresh), and its `sub` is the user.
//
//     swift run Carousel --db /path/to/catalog.sqlite --user ann
//     swift run Carousel --db phone.sqlite --server http://127.0.0.1:8080 --token-file ann.jwt
import Foundation
import LandmarkCatalog
import LandmarkCatalogClient
import Observation

@main
struct CarouselApp {
    @MainActor
    static func main() async {
        var arguments = CommandLine.arguments.dropFirst()
        var path = CatalogFiles.defaultPath(environment: ProcessInfo.processInfo.environment)
        var named: String?
        var server: URL?
        var tokenFile: String?
        let usage = "usage: Carousel [--db PATH] [--user ID] [--server URL --token-file FILE]\n"
        let help = """
            \(usage)
            The tutorial's PageView on a terminal: the featured landmark on the current page and a page control.
            Keys: ← → (or h l) move, q quits (the unsent page is flushed first).

              --db PATH          the catalog (default: $CATALOG_DB, else $XDG_DATA_HOME/landmark-catalog/catalog.sqlite,
                                 else ~/.local/share/landmark-catalog/catalog.sqlite)
              --user ID          whose page (default: the token's sub with --server, else $USER)
              --server URL       sync with a catalog serve (its base URL), with:
              --token-file FILE  a file holding the bearer token, read again after a 401

            """
        func value(_ option: String) -> String {
            guard let value = arguments.popFirst(), !value.hasPrefix("--") else {
                FileHandle.standardError.write(Data("Carousel: \(option) needs a value\n\(usage)".utf8))
                exit(64)
            }
            return value
        }
        while let argument = arguments.popFirst() {
            switch argument {
            case "--help", "-h":
                FileHandle.standardOutput.write(Data(help.utf8))
                exit(0)
            case "--db": path = value("--db")
            case "--user": named = value("--user")
            case "--server":
                let text = value("--server")
                guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                    FileHandle.standardError.write(Data("Carousel: --server \(text) is not an http(s) URL\n\(usage)".utf8))
                    exit(64)
                }
                server = url
            case "--token-file": tokenFile = value("--token-file")
            default:
                FileHandle.standardError.write(Data(usage.utf8))
                exit(64)
            }
        }
        if (server == nil) != (tokenFile == nil) {
            FileHandle.standardError.write(Data(("Carousel: --server and --token-file go together\n" + usage).utf8))
            exit(64)
        }
        let catalog: Catalog
        var session: SyncSession?
        let user: String
        do {
            if let server, let tokenFile {
                // The device's own database: created if missing, the landmarks come from the server.
                catalog = try Catalog(path: path)
                let token: @Sendable () async throws -> String = {
                    try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
                }
                let started = try await catalog.startSync(server: server, user: named, token: token)
                session = started
                user = started.user
            } else {
                // A missing database is an error (66), not a new empty one: import landmarks with `catalog` first.
                catalog = try Catalog(path: path, access: FileManager.default.fileExists(atPath: path) ? .write : .read)
                user = named ?? ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "me"
            }
        } catch {
            FileHandle.standardError.write(Data("Carousel: \(error)\n".utf8))
            exit((error as? CatalogError)?.exitStatus ?? 1)
        }
        let model = CarouselModel(catalog: catalog, user: user)
        let terminal = Terminal()
        terminal.enterRawMode()
        let screen = Screen(model: model, user: user)
        screen.redrawOnChange()
        for await key in terminal.keys() {
            switch key {
            case .left: if model.currentPage > 0 { model.currentPage -= 1 }
            case .right: if model.currentPage + 1 < model.pageCount { model.currentPage += 1 }
            case .quit:
                await model.flush()
                // What the server has not acknowledged stays in the outbox for the next start.
                await session?.stop()
                terminal.restore()
                exit(model.lastError == nil ? 0 : 1)
            case .other: break
            }
        }
        await model.flush()
        await session?.stop()
        terminal.restore()
    }
}

/// Draws the model, again whenever something it read changes (`withObservationTracking`).
@MainActor
final class Screen {
    let model: CarouselModel
    let user: String
    init(model: CarouselModel, user: String) {
        self.model = model
        self.user = user
    }

    func redrawOnChange() {
        withObservationTracking {
            draw()
        } onChange: { [weak self] in
            Task { @MainActor in self?.redrawOnChange() }
        }
    }

    func draw() {
        let width = max(20, min(Terminal.columns() - 2, 100))
        var lines: [String] = []
        if !model.isLoaded {
            lines.append("Loading…")
        } else if model.pages.isEmpty {
            lines.append("No featured landmarks.")
        } else {
            let landmark = model.pages[model.currentPage]
            lines.append("\u{1B}[1m\(landmark.name)\u{1B}[0m")
            lines.append([landmark.park, landmark.state].compactMap { $0?.isEmpty == false ? $0 : nil }.joined(separator: " · "))
            lines.append("")
            lines += Self.wrap(landmark.description ?? "", width: width)
            lines.append("")
            lines.append((0..<model.pageCount).map { $0 == model.currentPage ? "●" : "○" }.joined())
            // Numbered as `catalog position get` numbers it: 0-based, like a page control's currentPage.
            lines.append("page \(model.currentPage) of \(model.pageCount) · landmark \(landmark.id)")
        }
        lines.append("")
        lines.append("\u{1B}[2m\(user) · ← → move · q quit\u{1B}[0m")
        if let error = model.lastError { lines.append("\u{1B}[31m\(error)\u{1B}[0m") }
        let text = "\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\r\n") + "\r\n"
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}

/// The terminal in raw mode (no echo, no line buffering, no signals: Ctrl-C arrives as a key) and its keys.
final class Terminal: Sendable {
    enum Key: Sendable { case left, right, quit, other }

    private let saved: termios = {
        var t = termios()
        tcgetattr(0, &t)
        return t
    }()

    func enterRawMode() {
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG)
        tcsetattr(0, TCSANOW, &raw)
        FileHandle.standardOutput.write(Data("\u{1B}[?25l".utf8))  // hide the cursor
    }

    func restore() {
        var t = saved
        tcsetattr(0, TCSANOW, &t)
        FileHandle.standardOutput.write(Data("\u{1B}[?25h\r\n".utf8))
    }

    /// Keys read from standard input on a thread of their own; ends at end of input.
    func keys() -> AsyncStream<Key> {
        AsyncStream { continuation in
            let thread = Thread {
                var pending: [UInt8] = []
                var byte: UInt8 = 0
                while read(0, &byte, 1) == 1 {
                    pending.append(byte)
                    switch pending {
                    case [0x1B], [0x1B, 0x5B]: continue  // the start of an arrow key's sequence
                    case [0x1B, 0x5B, 0x44], [0x68]: continuation.yield(.left)
                    case [0x1B, 0x5B, 0x43], [0x6C]: continuation.yield(.right)
                    case [0x71], [0x03], [0x04]: continuation.yield(.quit)  // q, Ctrl-C, Ctrl-D
                    default: continuation.yield(.other)
                    }
                    pending.removeAll()
                }
                continuation.finish()
            }
            thread.start()
        }
    }

    /// The terminal's width in columns (80 when it is not a terminal).
    static func columns() -> Int {
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }
}
