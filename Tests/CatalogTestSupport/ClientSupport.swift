// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation

    /// A JWT for `user` that expires after `ttl` seconds, whose signature is not one.
    ///
    /// For what reads the token without verifying it (`TokenSource.subject(of:)`) and for servers that do not
    /// check it (the misbehaving ones). A real serve refuses it (docs/protocol.md §2); its tokens come from
    /// ``DeviceServe/token(_:)``.
    package func unsignedToken(user: String, ttl: Double = 3600) -> String {
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let exp = Int(Date().timeIntervalSince1970 + ttl)
        return part(#"{"alg":"EdDSA","typ":"JWT"}"#) + "." + part(#"{"sub":"\#(user)","exp":\#(exp)}"#) + ".c2ln"
    }

    /// Waits until `condition` holds, checking every 20 ms, for `seconds` of wall time and as many turns as
    /// that is unloaded (a starved test gets its turns: see `waitTurns`); returns whether it held.
    package func eventually(within seconds: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var turns = 0
        while Date() < deadline || turns < Int(seconds * 50) {
            turns += 1
            if try await condition() { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return try await condition()
    }
#endif
