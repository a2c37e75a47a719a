// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import LandmarkCatalog

    #if canImport(Glibc)
        import Glibc
    #endif

    /// A real nginx (Debian's `nginx-light`) on 127.0.0.1 and a free port, serving `contrib/nginx/catalog-log.conf`
    /// with its log directory pointed at a temporary one — or, with `servePort`, `contrib/nginx/serve.conf` in
    /// front of a `catalog serve` on that port.
    ///
    /// One process (`master_process off`), stopped when released and by `timeout` after 5 minutes at the latest.
    /// Every request is logged as `URI STATUS BODY_BYTES CONTENT_ENCODING`.
    package final class NginxServer {
        package static let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
        package static var available: Bool { binary != nil }

        package let prefix: URL
        package let logDirectory: URL
        package let port: Int
        private let process = Process()

        package init(servePort: Int? = nil) throws {
            guard let binary = Self.binary else { throw CatalogError(.software, "nginx is not installed (apt-get install nginx-light)") }
            prefix = Support.temporaryDirectory()
            logDirectory = prefix.appending(path: "log")
            try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: prefix.appending(path: "logs"), withIntermediateDirectories: true)
            port = try PostgresServer.freePort()
            let snippet =
                try servePort.map {
                    try String(contentsOf: Support.root.appending(path: "contrib/nginx/serve.conf"), encoding: .utf8)
                        .replacingOccurrences(of: "http://127.0.0.1:8080;", with: "http://127.0.0.1:\($0);")
                }
                ?? String(contentsOf: Support.root.appending(path: "contrib/nginx/catalog-log.conf"), encoding: .utf8)
                .replacingOccurrences(of: "/srv/catalog/log", with: logDirectory.path)
            try snippet.write(to: prefix.appending(path: "catalog-log.conf"), atomically: true, encoding: .utf8)
            let conf = """
                master_process off;
                daemon off;
                worker_processes 1;
                pid \(prefix.path)/nginx.pid;
                error_log \(prefix.path)/logs/error.log warn;
                events { worker_connections 64; }
                http {
                    log_format catalog '$request_uri $status $body_bytes_sent $sent_http_content_encoding';
                    access_log \(prefix.path)/logs/access.log catalog;
                    client_body_temp_path \(prefix.path)/tmp;
                    proxy_temp_path \(prefix.path)/tmp;
                    fastcgi_temp_path \(prefix.path)/tmp;
                    uwsgi_temp_path \(prefix.path)/tmp;
                    scgi_temp_path \(prefix.path)/tmp;
                    server {
                        listen 127.0.0.1:\(port);
                        include \(prefix.path)/catalog-log.conf;
                    }
                }
                """
            try conf.write(to: prefix.appending(path: "nginx.conf"), atomically: true, encoding: .utf8)
            // Foundation's Process passes on the spawning thread's signal mask, and test threads block nearly
            // every signal: without clearing it, neither `terminate()` nor `timeout` could ever stop nginx.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
                "/usr/bin/timeout", "300", binary, "-p", prefix.path, "-c", prefix.appending(path: "nginx.conf").path,
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(
                forWritingTo: {
                    let url = prefix.appending(path: "logs/stderr.log")
                    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
                    return url
                }())
            try process.run()
            // Ready when it answers.
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if Self.canConnect(port: port) { return }
                usleep(50_000)
            }
            throw CatalogError(
                .software, "nginx did not start: \((try? String(contentsOf: prefix.appending(path: "logs/stderr.log"), encoding: .utf8)) ?? "")")
        }

        /// Whether something accepts TCP connections on 127.0.0.1:`port`.
        package static func canConnect(port: Int) -> Bool {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
        }

        /// The URL of the file `name` served: `http://127.0.0.1:PORT/catalog/NAME`.
        package func url(_ name: String) -> String { "http://127.0.0.1:\(port)/catalog/\(name)" }

        /// Every request so far: (uri, status, body bytes, content encoding or "-").
        ///
        /// nginx logs a request just after its response is sent, so this waits up to 2 s for at least
        /// `count` lines.
        package func requests(atLeast count: Int = 0) throws -> [(uri: String, status: Int, bytes: Int, encoding: String)] {
            var text = ""
            let deadline = Date().addingTimeInterval(2)
            repeat {
                text = (try? String(contentsOf: prefix.appending(path: "logs/access.log"), encoding: .utf8)) ?? ""
                if text.split(separator: "\n").count >= count { break }
                usleep(20_000)
            } while Date() < deadline
            return text.split(separator: "\n").compactMap { line in
                let f = line.split(separator: " ").map(String.init)
                guard f.count >= 4, let status = Int(f[1]), let bytes = Int(f[2]) else { return nil }
                return (f[0], status, bytes, f[3])
            }
        }

        deinit {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: prefix)
        }
    }
#endif
