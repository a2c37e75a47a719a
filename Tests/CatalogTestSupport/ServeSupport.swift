// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation
    import Testing

    @testable import LandmarkCatalog
    import LandmarkCatalogServer

    #if canImport(Glibc)
        import Glibc
    #endif

    /// A `catalog serve` of the built binary on 127.0.0.1 and a port it picks (`--listen 127.0.0.1:0`; the port
    /// is read from its `listening` log line).
    ///
    /// Stopped by pid: SIGTERM by ``stop()``, SIGKILL by ``kill()``, and SIGKILL when released.
    package final class ServeProcess {
        package let sandbox: Sandbox
        package let db: String
        package let started: StartedProcess
        package let port: Int
        package let metricsPort: Int?
        /// The operator's page's port (`--admin-listen`), when asked for.
        package let adminPort: Int?
        private var stopped = false

        package init(
            _ sandbox: Sandbox, db: String, keys: [String], extra: [String] = [], metrics: Bool = false, admin: Bool = false,
            listen: String = "127.0.0.1:0", binary: URL = Support.catalogBinary, environment: [String: String] = [:]
        ) throws {
            self.sandbox = sandbox
            self.db = db
            var arguments = ["serve", "--listen", listen] + keys.flatMap { ["--auth-key", $0] } + extra
            if metrics { arguments += ["--metrics-listen", "127.0.0.1:0"] }
            if admin { arguments += ["--admin-listen", "127.0.0.1:0"] }
            started = try sandbox.start(arguments, db: db, binary: binary, environment: environment)
            let deadline = Date().addingTimeInterval(20)
            var found: (Int, Int?, Int?)?
            while found == nil, Date() < deadline, started.process.isRunning {
                let log = String(decoding: (try? Data(contentsOf: started.stderr)) ?? Data(), as: UTF8.self)
                if let line = log.split(separator: "\n").first(where: { $0.contains(#""event":"listening""#) }),
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let listen = object["listen"] as? String, let port = Int(listen.split(separator: ":").last ?? "")
                {
                    let m = (object["metrics"] as? String).flatMap { Int($0.split(separator: ":").last ?? "") }
                    let a = (object["admin"] as? String).flatMap { Int($0.split(separator: ":").last ?? "") }
                    found = (port, m, a)
                } else {
                    usleep(20_000)
                }
            }
            guard let found else {
                started.stop()
                throw CatalogError(.software, "serve did not start: \(started.finish(limit: 1))")
            }
            port = found.0
            metricsPort = found.1
            adminPort = found.2
        }

        deinit { if !stopped { started.stop() } }

        package var base: String { "http://127.0.0.1:\(port)" }
        package var pid: Int32 { started.pid }

        /// The access log and events so far.
        package var log: String { String(decoding: (try? Data(contentsOf: started.stderr)) ?? Data(), as: UTF8.self) }

        /// SIGTERM, then waits for the exit.
        package func stop(limit: Double = 20) -> BinaryRun {
            stopped = true
            return started.terminate(limit: limit)
        }

        /// SIGKILL, then reaps it.
        package func kill9() {
            stopped = true
            kill(started.pid, SIGKILL)
            started.process.waitUntilExit()
        }

        /// A serve on `port`, the port of one just stopped (a server restarted where its clients know it),
        /// trying the bind again for up to `seconds` while the port is still held (the old socket in TIME_WAIT).
        package static func again(
            on port: Int, _ sandbox: Sandbox, db: String, keys: [String], extra: [String] = [], within seconds: Double = 10
        ) throws -> ServeProcess {
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            while true {
                do {
                    return try ServeProcess(sandbox, db: db, keys: keys, extra: extra, listen: "127.0.0.1:\(port)")
                } catch let error as CatalogError where error.message.contains("cannot listen") && ContinuousClock.now < deadline {
                    usleep(50_000)
                }
            }
        }

        /// The access log's lines for `method route` (query left out), in order: each line's JSON object.
        package func accessLog(_ method: String, _ route: String) -> [[String: Any]] {
            Self.accessLog(log, method, route)
        }

        /// The access log lines of `log` for `method route`.
        package static func accessLog(_ log: String, _ method: String, _ route: String) -> [[String: Any]] {
            log.split(separator: "\n").compactMap { line -> [String: Any]? in
                guard line.hasPrefix("{\"time\""),
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["method"] as? String == method, object["route"] as? String == route
                else { return nil }
                return object
            }
        }
    }

    /// A real `catalog serve` for the app's sync sessions (LandmarkCatalogClient): a seeded database (the seed
    /// landmarks, ann on page 1, bob on page 2), a key, and tokens from `catalog token issue`.
    ///
    /// It can be stopped (the devices go offline) and started again on the same database and port, and its
    /// database replaced or restored from a backup while it is stopped. Every write the server makes to a
    /// position row is listed, in the write's own transaction, in the table `test_writes` (a trigger): a row
    /// stored twice is listed twice. Stopped by pid (``ServeProcess``) when released.
    package final class DeviceServe: @unchecked Sendable {
        // Safe: `serve` and `logs` are touched only by the test that owns the server, one call at a time; the
        // token closures read only `tokens`, set before the first session starts.
        package let box: Sandbox
        package let db: String
        package let key: (privateKey: String, publicKey: String)
        package let port: Int
        package private(set) var serve: ServeProcess?
        /// The access logs and events of the runs before the current one.
        private var earlier = ""
        private var tokens: [String: String] = [:]

        package init() throws {
            box = try Sandbox()
            db = try box.seededDatabase("server.sqlite")
            let bob = try box.run(["position", "set", "--user", "bob", "--page", "2"], db: db)
            try #require(bob.status == 0, "\(bob)")
            try Self.recordWrites(db)
            key = try ServeKeys.make(box, "k")
            let serve = try ServeProcess(box, db: db, keys: [key.publicKey])
            port = serve.port
            self.serve = serve
        }

        /// Lists every write to `positions` in `test_writes`.
        package static func recordWrites(_ db: String) throws {
            try Connection(path: db).executeScript(
                sql: """
                    CREATE TABLE IF NOT EXISTS test_writes (user_id TEXT, page INTEGER, stamp TEXT);
                    CREATE TRIGGER IF NOT EXISTS test_insert AFTER INSERT ON positions BEGIN
                      INSERT INTO test_writes VALUES (NEW.user_id, NEW.page, NEW.updated_ms || '/' || NEW.counter || '/' || NEW.node); END;
                    CREATE TRIGGER IF NOT EXISTS test_update AFTER UPDATE ON positions BEGIN
                      INSERT INTO test_writes VALUES (NEW.user_id, NEW.page, NEW.updated_ms || '/' || NEW.counter || '/' || NEW.node); END;
                    """)
        }

        // A literal URL with a numeric port always parses.
        // swift-format-ignore: NeverForceUnwrap
        package var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

        /// `user`'s token (`catalog token issue`, an hour), the same one each time.
        package func token(_ user: String) throws -> String {
            if let token = tokens[user] { return token }
            let token = try ServeKeys.issue(box, key: key.privateKey, user: user)
            tokens[user] = token
            return token
        }

        /// A new token of `user` issued a few seconds ahead (`iat` and `nbf`), kept as the one ``token(_:)``
        /// gives from now on: the user signed in again after an erasure, in a later second than it (a token
        /// issued in the erasure's second is refused, docs/serve.md §2).
        package func tokenAfterErasure(_ user: String) throws -> String {
            let token = try ServeKeys.issue(key: key.privateKey, user: user, issuedIn: 2)
            tokens[user] = token
            return token
        }

        /// A token of `user` signed by another key: refused with 401.
        package func forgedToken(_ user: String) throws -> String {
            let other = try ServeKeys.make(box, "other-\(UUID().uuidString.prefix(8))")
            return try ServeKeys.issue(box, key: other.privateKey, user: user)
        }

        /// Stops the serve (SIGTERM: it drains and exits 0).
        @discardableResult
        package func stop() -> BinaryRun? {
            guard let serve else { return nil }
            let run = serve.stop()
            earlier += serve.log
            self.serve = nil
            return run
        }

        /// Starts a new serve on the same database and port.
        package func start() throws {
            precondition(serve == nil, "start() of a running server")
            serve = try ServeProcess.again(on: port, box, db: db, keys: [key.publicKey])
        }

        /// Stops the serve, puts the database file at `path` in the place of its database (the `.serve-cursor`
        /// beside it left as it is: a restore copies the database file alone, docs/protocol.md §3; the WAL
        /// checkpointed first and found empty), and starts it again on the same port.
        package func replaceDatabase(with path: String) throws {
            let stopped = stop()
            try #require(stopped?.status == 0, "\(String(describing: stopped))")
            // The WAL may still hold serve's last writes after it exits. Folded into the file here (as
            // the next open would), so no frame of the old database is left beside the new one.
            try Connection(path: db).executeScript(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            let wal = (try? FileManager.default.attributesOfItem(atPath: db + "-wal")[.size]) as? NSNumber
            try #require(wal == nil || wal?.intValue == 0, "\(db)-wal holds \(String(describing: wal)) bytes")
            try #require(rename(path, db) == 0, "rename \(path) to \(db): \(String(cString: strerror(errno)))")
            try start()
        }

        /// Stops the serve, copies `backup` over its database file alone (not the `.serve-cursor` beside it,
        /// docs/protocol.md §3), and starts it again on the same port; the backup stays.
        package func restore(from backup: String) throws {
            let copy = box.path("restoring-\(UUID().uuidString.prefix(8)).sqlite")
            try FileManager.default.copyItem(atPath: backup, toPath: copy)
            try replaceDatabase(with: copy)
        }

        /// A consistent copy of the database now (`VACUUM INTO`, as `sqlite3 DB ".backup FILE"`), while it serves.
        package func backup(_ name: String = "backup.sqlite") throws -> String {
            let path = box.path(name)
            try Connection(path: db).executeScript(sql: "VACUUM INTO '\(path)'")
            return path
        }

        /// The access logs and events of every run so far.
        package var log: String { earlier + (serve?.log ?? "") }

        /// The access log lines of every run for `method route`.
        package func accessLog(_ method: String, _ route: String) -> [[String: Any]] { ServeProcess.accessLog(log, method, route) }

        /// The server's row of `user`: page, landmark, stamp, deleted (nil when it holds none).
        package func row(_ user: String) throws -> (page: Int64, landmark: Int64?, stamp: StoredPositions.Stamp, deleted: Int64)? {
            try StoredPositions.row(db, user)
        }

        /// The stamps of the writes the server made to `user`'s row since it was made, in order.
        package func writes(_ user: String) throws -> [String] {
            try dumpRows(db, sql: "SELECT stamp FROM test_writes WHERE user_id = '\(user)' ORDER BY rowid").compactMap {
                if case .text(let stamp) = $0.first { stamp } else { nil }
            }
        }
    }

    /// What curl got.
    package struct CurlResult: CustomStringConvertible {
        package var status: Int
        /// Header names lower-cased.
        package var headers: [String: String]
        package var body: String
        package var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }
        package var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
        package var errorField: String? { (json?["error"] as? [String: Any])?["field"] as? String }
        package var description: String { "HTTP \(status) \(headers) \(body)" }
    }

    package enum ServeCurl {
        /// Runs curl with `arguments` (plus `-s`, headers and body captured) against the server, at most `limit` seconds.
        package static func run(_ arguments: [String], limit: Int = 30) throws -> CurlResult {
            let dir = Support.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let headers = dir.appending(path: "h").path
            let body = dir.appending(path: "b").path
            let r = try runProcess(
                URL(fileURLWithPath: "/usr/bin/curl"),
                ["-s", "--max-time", String(limit), "-D", headers, "-o", body, "-w", "%{http_code}"] + arguments)
            var parsed: [String: String] = [:]
            for line in ((try? String(contentsOfFile: headers, encoding: .utf8)) ?? "").split(separator: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                parsed[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return CurlResult(
                status: Int(r.stdout) ?? 0, headers: parsed, body: (try? String(contentsOfFile: body, encoding: .utf8)) ?? "")
        }

        package static func get(_ url: String, token: String? = nil, headers: [String] = [], limit: Int = 30) throws -> CurlResult {
            try run((token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + headers.flatMap { ["-H", $0] } + [url], limit: limit)
        }

        package static func post(_ url: String, token: String?, body: String, contentType: String = "application/json") throws -> CurlResult {
            try run(
                (token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + ["-H", "Content-Type: \(contentType)", "--data-binary", body, url])
        }
    }

    /// Keys and tokens for the serve tests: keys made by `openssl genpkey`, tokens by `catalog token issue` and by
    /// PyJWT (Tests/Support/jwt_tokens.py).
    package enum ServeKeys {
        /// Writes a private key `name.pem` and its public key `name.pub`; returns both paths.
        package static func make(_ sandbox: Sandbox, _ name: String, kind: String = "ed25519") throws -> (privateKey: String, publicKey: String) {
            let privateKey = sandbox.path("\(name).pem")
            let publicKey = sandbox.path("\(name).pub")
            let algorithm: [String] =
                switch kind {
                case "ec": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
                case "rsa": ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
                default: ["-algorithm", "ed25519"]
                }
            let openssl = URL(fileURLWithPath: "/usr/bin/openssl")
            let made = try runProcess(openssl, ["genpkey"] + algorithm + ["-out", privateKey])
            try #require(made.status == 0, "\(made.stderr)")
            let pub = try runProcess(openssl, ["pkey", "-in", privateKey, "-pubout", "-out", publicKey])
            try #require(pub.status == 0, "\(pub.stderr)")
            return (privateKey, publicKey)
        }

        /// `catalog token issue`.
        package static func issue(_ sandbox: Sandbox, key: String, user: String, extra: [String] = []) throws -> String {
            let r = try sandbox.run(["token", "issue", "--key", key, "--user", user] + extra)
            try #require(r.status == 0, "\(r)")
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// A token of `user` signed with the PEM private key at `key`, its `iat` and `nbf` `seconds` from now
        /// (negative: in the past), living `ttl` s from then.
        package static func issue(key: String, user: String, issuedIn seconds: Int64, ttl: Int64 = 3600) throws -> String {
            try TokenIssuer.issue(
                key: try TokenKey.loadPrivate(path: key), user: user, ttl: ttl, scope: nil, now: Int64(Date().timeIntervalSince1970) + seconds)
        }

        package static var pyjwtAvailable: Bool {
            (try? runProcess(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", "import jwt, cryptography"]).status) == 0
        }

        /// PyJWT's tokens, by case name (see jwt_tokens.py).
        package static func pyjwt(privateKey: String, publicKey: String, otherKey: String, alg: String, user: String) throws -> [String: String] {
            let r = try runProcess(
                URL(fileURLWithPath: "/usr/bin/python3"),
                [Support.root.appending(path: "Tests/Support/jwt_tokens.py").path, privateKey, publicKey, otherKey, alg, user])
            try #require(r.status == 0, "\(r.stderr)")
            var out: [String: String] = [:]
            for line in r.stdout.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1)
                if parts.count == 2 { out[String(parts[0])] = String(parts[1]) }
            }
            return out
        }
    }

    package enum ServeRows {
        /// A POST body of one position row, stamped `wall` ms (now by default).
        package static func body(user: String, page: Int, landmark: Int? = 1006, wall: Int64? = nil, counter: Int = 0, node: String = "phone-1")
            -> String
        {
            let at = Timestamp.format(milliseconds: wall ?? Int64(Date().timeIntervalSince1970 * 1000))
            // Serialising one string cannot fail.
            // swift-format-ignore: NeverUseForceTry
            let userJSON = String(decoding: try! JSONSerialization.data(withJSONObject: [user], options: [.fragmentsAllowed]), as: UTF8.self)
                .dropFirst().dropLast()
            return
                #"{"positions":[{"user":\#(userJSON),"page":\#(page),"landmarkId":\#(landmark.map(String.init) ?? "null"),"updatedAt":"\#(at)","counter":\#(counter),"node":"\#(node)","deleted":false}]}"#
        }

        /// The position rows in an answer.
        package static func positions(_ r: CurlResult) -> [[String: Any]] { (r.json?["positions"] as? [[String: Any]]) ?? [] }
    }
#endif
