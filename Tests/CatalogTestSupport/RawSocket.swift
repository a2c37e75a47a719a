// The test support is built for debug test runs only: its `@testable` imports need modules compiled for
// testing, which a release build (`swift build -c release`) does not make.
#if DEBUG
    import Foundation

    #if canImport(Glibc)
        import Glibc
    #endif

    /// A plain TCP connection to 127.0.0.1 for the tests that must send half a request and stall (the limits,
    /// the drain): it writes bytes as given and reads with a bounded wait.
    ///
    /// Closed when released.
    package final class RawSocket {
        package let fd: Int32

        /// Connects to 127.0.0.1:`port`; nil when the connection is refused or fails.
        package init?(port: Int) {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return nil }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            let r = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard r == 0 else {
                close(fd)
                return nil
            }
        }

        deinit { close(fd) }

        /// Writes all of `text`; false when the peer has closed.
        @discardableResult
        package func send(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
        }

        /// Reads until the peer closes or `seconds` pass; (what arrived, whether the peer closed).
        package func readToClose(within seconds: Double) -> (text: String, closed: Bool) {
            var data: [UInt8] = []
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while Date() < deadline {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let left = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
                guard poll(&p, 1, left) > 0 else { continue }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return (String(decoding: data, as: UTF8.self), true) }
                data += buffer[0..<n]
            }
            return (String(decoding: data, as: UTF8.self), false)
        }

        /// Reads one response of a keep-alive connection (headers and a Content-Length body), within `seconds`.
        package func readResponse(within seconds: Double) -> String {
            var data: [UInt8] = []
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while Date() < deadline {
                let text = String(decoding: data, as: UTF8.self)
                if let end = text.range(of: "\r\n\r\n") {
                    let head = text[..<end.lowerBound].lowercased()
                    let length =
                        head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                    if text.utf8.count - text[..<end.upperBound].utf8.count >= length { return text }
                }
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                data += buffer[0..<n]
            }
            return String(decoding: data, as: UTF8.self)
        }
    }
#endif
