#if os(Linux)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fixed set of object keys matched by their UTF-8 bytes (see `JSONPullReader/nextKey(in:)`).
public struct JSONKeyTable: Sendable {
    private let keys: [[UInt8]]

    /// - Parameter keys: the keys; a key's index in this array is what ``index(of:)`` returns.
    public init(_ keys: [String]) {
        self.keys = keys.map { Array($0.utf8) }
    }

    /// The index of the key spelled by `bytes`, or −1.
    @inline(__always)
    public func index(of bytes: UnsafeBufferPointer<UInt8>) -> Int {
        for i in keys.indices {
            let k = keys[i]
            guard k.count == bytes.count, k.first == bytes.first else { continue }
            // Equal counts and first bytes: a key of 0 or 1 byte matches, a longer one is compared whole.
            guard k.count > 1, let base = bytes.baseAddress else { return i }
            if memcmp(k, base, k.count) == 0 { return i }
        }
        return -1
    }
}
