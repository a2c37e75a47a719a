// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation

    @testable import LandmarkCatalog
    @testable import LandmarkCatalogSync

    #if canImport(Glibc)
        import Glibc
    #endif

    /// A throwaway PostgreSQL server for the tests, started once per test process on first use.
    ///
    /// - A temporary directory (`/tmp/catalog-pg-PID-…`, owned by `postgres` when we run as root, since initdb
    ///   refuses root) holds the cluster (`data/`), the Unix socket (`sock/`) and the server log (`server.log`).
    /// - `initdb -U postgres --auth=trust`, then `pg_hba.conf`: trust on the Unix socket and for `postgres` on
    ///   127.0.0.1; `scram-sha-256` for every other role on 127.0.0.1, so the role `passwordRole` must log in
    ///   with `password` (the password tests).
    /// - `postgres -p PORT -k SOCKDIR -c listen_addresses=127.0.0.1 -c fsync=off …` on a free port, as the
    ///   child of a small bash wrapper reading our stdin pipe: when the pipe closes (at exit, or because this
    ///   process died, even by SIGKILL), when the wrapper gets SIGTERM / SIGINT / SIGHUP, or after 20 minutes
    ///   at most, the wrapper stops the server with SIGINT (a fast shutdown; SIGQUIT, an immediate one, if
    ///   it is still there after 10 s), waits for it and removes the directory. `atexit` closes the pipe and
    ///   waits up to 15 s.
    /// - Ready when a libpq connection on the socket succeeds (within 30 s).
    package final class PostgresServer: @unchecked Sendable {
        /// The role that logs in with a password over TCP (scram-sha-256).
        package static let passwordRole = "catalog_pw"
        /// Its password: never to be seen in any message.
        package static let password = "Hub-S3cret-7f3a9c"
        /// The longest the server can outlive the test process (the wrapper's watchdog), in seconds.
        package static let watchdogSeconds = 1200

        /// The newest `/usr/lib/postgresql/*/bin` holding `postgres` and `initdb`, or nil.
        package static let binDirectory: String? = {
            let base = "/usr/lib/postgresql"
            let versions = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
            return versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "\(base)/\($0)/bin" }.first { bin in
                FileManager.default.isExecutableFile(atPath: "\(bin)/postgres")
                    && FileManager.default.isExecutableFile(atPath: "\(bin)/initdb")
            }
        }()

        /// Whether the server binaries exist; prints a notice once when they do not (the suites are skipped).
        package static let isAvailable: Bool = {
            if binDirectory == nil {
                FileHandle.standardError.write(
                    Data(
                        "notice: PostgreSQL tests skipped: no /usr/lib/postgresql/*/bin/postgres (run scripts/setup)\n".utf8))
            }
            return binDirectory != nil
        }()

        /// The process-wide server, started on first use.
        package static let shared: Result<PostgresServer, any Error> = Result { try PostgresServer() }

        /// The running server.
        /// - Throws: why it could not start (with the end of its log).
        package static func running() throws -> PostgresServer { try shared.get() }

        /// A server of its own that a test may stop (``stop()``: a hub that goes down); stopped at exit too.
        package static func throwaway() throws -> PostgresServer { try PostgresServer() }

        package let port: Int
        package let directory: URL
        package let socketDirectory: String
        private var control: (process: Process, stdin: FileHandle)?

        private init() throws {
            guard let bin = Self.binDirectory else { throw CatalogError(.software, "no PostgreSQL server binaries") }
            let started = ContinuousClock.now
            Self.removeStaleDirectories()
            directory = URL(fileURLWithPath: "/tmp/\(Self.directoryPrefix)\(getpid())-\(UUID().uuidString.prefix(8).lowercased())")
            let data = directory.appending(path: "data").path
            socketDirectory = directory.appending(path: "sock").path
            let log = directory.appending(path: "server.log").path
            try FileManager.default.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            try Self.giveToPostgres([directory.path, socketDirectory, log])

            let initdb = try Self.runAsPostgres([
                "\(bin)/initdb", "-D", data, "-U", "postgres", "--auth=trust",
                "-N", "-E", "UTF8", "--locale=C",
            ])
            guard initdb.status == 0 else { throw CatalogError(.software, "initdb failed: \(initdb.stderr)\(initdb.stdout)") }
            let hba = """
                local all all trust
                host all postgres 127.0.0.1/32 trust
                host all all 127.0.0.1/32 scram-sha-256

                """
            try hba.write(toFile: "\(data)/pg_hba.conf", atomically: false, encoding: .utf8)
            try Self.giveToPostgres(["\(data)/pg_hba.conf"])

            port = try Self.freePort()
            // $1 bin, $2 data, $3 port, $4 socket dir, $5 log, $6 directory to remove, $7 watchdog seconds.
            let wrapper = """
                "$1/postgres" -D "$2" -p "$3" -k "$4" -c listen_addresses=127.0.0.1 -c fsync=off \
                  -c synchronous_commit=off -c full_page_writes=off -c max_connections=100 >>"$5" 2>&1 &
                pg=$! dir=$6
                stop() {
                  kill -INT "$pg" 2>/dev/null  # fast shutdown
                  for _ in $(seq 100); do kill -0 "$pg" 2>/dev/null || break; sleep 0.1; done
                  kill -QUIT "$pg" 2>/dev/null  # still there after 10 s (a stopped backend): immediate shutdown,
                  wait "$pg"                    # where the server SIGKILLs what has not exited after 5 s
                  rm -rf "$dir"
                  exit 0
                }
                trap stop TERM INT HUP
                read -r -t "$7" _ || true
                stop
                """
            let process = Process()
            let stdin = Pipe()
            let arguments = [
                "/bin/bash", "-c", wrapper, "pg-wrapper", bin, data, String(port), socketDirectory, log,
                directory.path, String(Self.watchdogSeconds),
            ]
            if geteuid() == 0 {
                process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
                process.arguments = ["-u", "postgres", "--"] + arguments
            } else {
                process.executableURL = URL(fileURLWithPath: "/bin/bash")
                process.arguments = Array(arguments.dropFirst())
            }
            process.standardInput = stdin
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            control = (process, stdin.fileHandleForWriting)
            serversLock.withLock {
                if serversToStop.isEmpty { atexit { stopServerAtExit() } }
                serversToStop.append((process, stdin.fileHandleForWriting, directory))
            }

            let admin = "host=\(socketDirectory) port=\(port) user=postgres dbname=postgres"
            var lastError: (any Error)?
            while ContinuousClock.now - started < .seconds(30) {
                do {
                    let connection = try PGConnection(conninfo: admin, connectTimeoutSeconds: 2)
                    try connection.executeScript(sql: "CREATE ROLE \(Self.passwordRole) LOGIN PASSWORD '\(Self.password)'")
                    lastError = nil
                    break
                } catch {
                    lastError = error
                    usleep(100_000)
                }
            }
            if let lastError {
                let tail = (try? String(contentsOfFile: log, encoding: .utf8)).map { String($0.suffix(2000)) } ?? ""
                throw CatalogError(.software, "PostgreSQL did not start in 30 s: \(lastError)\n\(tail)")
            }
        }

        /// A URI for `database` on 127.0.0.1 (TCP), as `user`, with `password` in it when given.
        package func uri(database: String, user: String = "postgres", password: String? = nil) -> String {
            "postgresql://\(user)\(password.map { ":\($0)" } ?? "")@127.0.0.1:\(port)/\(database)"
        }

        /// A keyword/value string for `database` on 127.0.0.1.
        package func keywords(database: String, user: String = "postgres") -> String {
            "host=127.0.0.1 port=\(port) dbname=\(database) user=\(user)"
        }

        /// Stops the server (a fast shutdown through its wrapper) and waits for it, at most 20 s.
        package func stop() {
            guard let wrapper = control else { return }
            control = nil
            try? wrapper.stdin.close()
            let deadline = ContinuousClock.now + .seconds(20)
            while wrapper.process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
        }

        /// Creates an empty database with a fresh name and returns its name.
        package func createDatabaseName() throws -> String {
            let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20).lowercased()
            let admin = try PGConnection(conninfo: "host=\(socketDirectory) port=\(port) user=postgres dbname=postgres")
            try admin.executeScript(sql: "CREATE DATABASE \(name)")
            return name
        }

        /// Creates an empty database with a fresh name and returns its URI (TCP, user `postgres`, trust).
        package func createDatabase() throws -> String { uri(database: try createDatabaseName()) }

        /// Temporary directories are named `catalog-pg-PID-RANDOM`, PID being the test process's.
        package static let directoryPrefix = "catalog-pg-"

        /// Removes what a test process killed before its wrapper started (during initdb) left behind: the
        /// directories of processes that no longer exist and whose server is not running.
        private static func removeStaleDirectories() {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
            for name in names where name.hasPrefix(directoryPrefix) {
                guard let pid = Int32(name.dropFirst(directoryPrefix.count).prefix { $0 != "-" }),
                    kill(pid, 0) != 0 && errno == ESRCH,
                    !FileManager.default.fileExists(atPath: "/tmp/\(name)/data/postmaster.pid")
                else { continue }
                try? FileManager.default.removeItem(atPath: "/tmp/\(name)")
            }
        }

        /// Gives `paths` to the `postgres` user when we run as root (initdb and the server refuse root).
        private static func giveToPostgres(_ paths: [String]) throws {
            guard geteuid() == 0 else { return }
            guard let user = getpwnam("postgres") else { throw CatalogError(.software, "no postgres user") }
            for path in paths where chown(path, user.pointee.pw_uid, user.pointee.pw_gid) != 0 {
                throw CatalogError(.software, "chown \(path): \(String(cString: strerror(errno)))")
            }
        }

        /// Runs a command as `postgres` (through `runuser` when root) and captures its output.
        private static func runAsPostgres(_ command: [String]) throws -> CLIResult {
            if geteuid() == 0 {
                return try runProcess(URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "postgres", "--"] + command)
            }
            return try runProcess(URL(fileURLWithPath: command[0]), Array(command.dropFirst()))
        }

        /// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, released).
        package static func freePort() throws -> Int {
            let listener = try TCPListener()
            return listener.port
        }
    }

    /// The servers the `atexit` handler stops: each wrapper, its stdin and the directory (under `serversLock`).
    nonisolated(unsafe) private var serversToStop: [(process: Process, stdin: FileHandle, directory: URL)] = []
    private let serversLock = NSLock()

    /// Closes each wrapper's stdin (it stops the server and removes the directory), waits up to 15 s, and
    /// removes the directory if it is still there.
    private func stopServerAtExit() {
        let servers = serversLock.withLock {
            defer { serversToStop = [] }
            return serversToStop
        }
        for server in servers { try? server.stdin.close() }
        let deadline = ContinuousClock.now + .seconds(15)
        for server in servers {
            while server.process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
            try? FileManager.default.removeItem(at: server.directory)
        }
    }

    /// A TCP socket listening on 127.0.0.1 on a kernel-chosen port, which never accepts: the kernel completes
    /// up to 16 handshakes by itself, so a client connects and then hears nothing — a hung hub.
    package final class TCPListener {
        package let fd: Int32
        package let port: Int

        package init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw CatalogError(.software, "socket: \(String(cString: strerror(errno)))") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                    bind(fd, raw, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, raw, &length) == 0
                }
            }
            guard bound else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw CatalogError(.software, "bind/listen: \(reason)")
            }
            self.fd = fd
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(fd) }
    }
#endif
