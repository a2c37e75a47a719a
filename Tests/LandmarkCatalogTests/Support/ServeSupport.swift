import Foundation
import Testing

@testable import LandmarkCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// A `catalog serve` of the built binary on 127.0.0.1 and a port it picks (`--listen 127.0.0.1:0`; the port
/// is read from its `listening` log line).
///
/// Stopped by pid: SIGTERM by ``stop()``, SIGKILL by ``kill()``, and SIGKILL when released.
final class ServeProcess {
    let sandbox: Sandbox
    let db: String
    let started: StartedProcess
    let port: Int
    let metricsPort: Int?
    private var stopped = false

    init(
        _ sandbox: Sandbox, db: String, keys: [String], extra: [String] = [], metrics: Bool = false, listen: String = "127.0.0.1:0",
        binary: URL = Support.catalogBinary, environment: [String: String] = [:]
    ) throws {
        self.sandbox = sandbox
        self.db = db
        var arguments = ["serve", "--listen", listen] + keys.flatMap { ["--auth-key", $0] } + extra
        if metrics { arguments += ["--metrics-listen", "127.0.0.1:0"] }
        started = try sandbox.start(arguments, db: db, binary: binary, environment: environment)
        let deadline = Date().addingTimeInterval(20)
        var found: (Int, Int?)?
        while found == nil, Date() < deadline, started.process.isRunning {
            let log = String(decoding: (try? Data(contentsOf: started.stderr)) ?? Data(), as: UTF8.self)
            if let line = log.split(separator: "\n").first(where: { $0.contains(#""event":"listening""#) }),
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let listen = object["listen"] as? String, let port = Int(listen.split(separator: ":").last ?? "")
            {
                let m = (object["metrics"] as? String).flatMap { Int($0.split(separator: ":").last ?? "") }
                found = (port, m)
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
    }

    deinit { if !stopped { started.stop() } }

    var base: String { "http://127.0.0.1:\(port)" }
    var pid: Int32 { started.pid }

    /// The access log and events so far.
    var log: String { String(decoding: (try? Data(contentsOf: started.stderr)) ?? Data(), as: UTF8.self) }

    /// SIGTERM, then waits for the exit.
    func stop(limit: Double = 20) -> BinaryRun {
        stopped = true
        return started.terminate(limit: limit)
    }

    /// SIGKILL, then reaps it.
    func kill9() {
        stopped = true
        kill(started.pid, SIGKILL)
        started.process.waitUntilExit()
    }
}

/// What curl got.
struct CurlResult: CustomStringConvertible {
    var status: Int
    /// Header names lower-cased.
    var headers: [String: String]
    var body: String
    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }
    var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
    var errorField: String? { (json?["error"] as? [String: Any])?["field"] as? String }
    var description: String { "HTTP \(status) \(headers) \(body)" }
}

enum ServeCurl {
    /// Runs curl with `arguments` (plus `-s`, headers and body captured) against the server, at most `limit` seconds.
    static func run(_ arguments: [String], limit: Int = 30) throws -> CurlResult {
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

    static func get(_ url: String, token: String? = nil, headers: [String] = [], limit: Int = 30) throws -> CurlResult {
        try run((token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + headers.flatMap { ["-H", $0] } + [url], limit: limit)
    }

    static func post(_ url: String, token: String?, body: String, contentType: String = "application/json") throws -> CurlResult {
        try run(
            (token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + ["-H", "Content-Type: \(contentType)", "--data-binary", body, url])
    }
}

/// Keys and tokens for the serve tests: keys made by `openssl genpkey`, tokens by `catalog token issue` and by
/// PyJWT (Tests/Support/jwt_tokens.py).
enum ServeKeys {
    /// Writes a private key `name.pem` and its public key `name.pub`; returns both paths.
    static func make(_ sandbox: Sandbox, _ name: String, kind: String = "ed25519") throws -> (privateKey: String, publicKey: String) {
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
    static func issue(_ sandbox: Sandbox, key: String, user: String, extra: [String] = []) throws -> String {
        let r = try sandbox.run(["token", "issue", "--key", key, "--user", user] + extra)
        try #require(r.status == 0, "\(r)")
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static var pyjwtAvailable: Bool {
        (try? runProcess(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", "import jwt, cryptography"]).status) == 0
    }

    /// PyJWT's tokens, by case name (see jwt_tokens.py).
    static func pyjwt(privateKey: String, publicKey: String, otherKey: String, alg: String, user: String) throws -> [String: String] {
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

enum ServeRows {
    /// A POST body of one position row, stamped `wall` ms (now by default).
    static func body(user: String, page: Int, landmark: Int? = 1006, wall: Int64? = nil, counter: Int = 0, node: String = "phone-1") -> String {
        let at = Timestamp.format(milliseconds: wall ?? Int64(Date().timeIntervalSince1970 * 1000))
        // Serialising one string cannot fail.
        // swift-format-ignore: NeverUseForceTry
        let userJSON = String(decoding: try! JSONSerialization.data(withJSONObject: [user], options: [.fragmentsAllowed]), as: UTF8.self)
            .dropFirst().dropLast()
        return
            #"{"positions":[{"user":\#(userJSON),"page":\#(page),"landmarkId":\#(landmark.map(String.init) ?? "null"),"updatedAt":"\#(at)","counter":\#(counter),"node":"\#(node)","deleted":false}]}"#
    }

    /// The position rows in an answer.
    static func positions(_ r: CurlResult) -> [[String: Any]] { (r.json?["positions"] as? [[String: Any]]) ?? [] }
}
