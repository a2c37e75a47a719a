import Foundation

@testable import LandmarkCatalog

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A device endpoint on 127.0.0.1 for the LandmarkCatalogClient tests: Tests/Support/device_server.py, the
/// stand-in for `catalog serve`'s /v1 routes (docs/protocol.md), over a state file of its own, so it can be
/// stopped (the device goes offline) and started again on the same port and state.
final class DeviceServer: @unchecked Sendable {
    // Safe: the process fields are touched only by the test that owns the server, one call at a time.
    let state: String
    let landmarks: String
    private(set) var port: Int
    private var process: Process?
    private var input: Pipe?

    /// Starts the server; its landmarks are those of the snapshot file `landmarks`.
    init(landmarks: String) throws {
        state = Support.temporaryDirectory().appending(path: "server.sqlite").path
        self.landmarks = landmarks
        port = 0
        try start()
    }

    // A literal URL with a numeric port always parses.
    // swift-format-ignore: NeverForceUnwrap
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Starts it (again, on the same port once it had one).
    func start() throws {
        let (process, input) = (Process(), Pipe())
        port = try Support.startPythonServer(
            process, script: "device_server.py", ["--db", state, "--landmarks", landmarks, "--port", String(port)], input: input)
        (self.process, self.input) = (process, input)
    }

    /// Stops it (SIGTERM: open connections are dropped, as a server that went away drops them; SIGKILL if
    /// it has not exited 5 s later, so a server stuck in a handler never holds the test run).
    func stop() {
        guard let process else { return }
        try? input?.fileHandleForWriting.close()
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        self.process = nil
    }

    /// Requests by route ("GET /v1/positions") since it started, and every row stamp a POST wrote, ever.
    func log() throws -> (requests: [String: Int], stamps: [String]) {
        let data = try Data(contentsOf: url.appending(path: "__log"))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        return (object["requests"] as? [String: Int] ?? [:], object["stamps"] as? [String] ?? [])
    }

    /// The server's stored position row of `user`: page, landmark, stamp (ms/counter/node), deleted.
    func position(user: String) throws -> [SQLValue]? {
        try dumpRows(state, sql: "SELECT page, landmark_id, updated_ms, counter, node, deleted FROM positions WHERE user_id = '\(user)'")
            .first
    }

    deinit { stop() }

    /// A JWT for `user` that expires after `ttl` seconds.
    ///
    /// Its signature is not one (the stand-in checks `sub` and `exp` only, docs/protocol.md §2 is the
    /// real server's).
    static func token(user: String, ttl: Double = 3600) -> String {
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let exp = Int(Date().timeIntervalSince1970 + ttl)
        return part(#"{"alg":"EdDSA","typ":"JWT"}"#) + "." + part(#"{"sub":"\#(user)","exp":\#(exp)}"#) + ".c2ln"
    }
}

/// Waits until `condition` holds, checking every 20 ms, for `seconds` of wall time and as many turns as
/// that is unloaded (a starved test gets its turns: see `waitTurns`); returns whether it held.
func eventually(within seconds: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    var turns = 0
    while Date() < deadline || turns < Int(seconds * 50) {
        turns += 1
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try await condition()
}
