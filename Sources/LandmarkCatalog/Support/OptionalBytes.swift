import Foundation

/// Equality of optional byte strings without copying them: the text columns the import and the
/// merge compare in place.
enum OptionalBytes {
    /// Whether two optional byte strings are equal (nil is SQL NULL).
    @inline(__always)
    static func equal(_ a: UnsafeBufferPointer<UInt8>?, _ b: UnsafeBufferPointer<UInt8>?) -> Bool {
        guard let a else { return b == nil }
        guard let b, a.count == b.count else { return false }
        // Non-empty buffers (the only ones compared) have base addresses.
        // swift-format-ignore: NeverForceUnwrap
        return a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }
}
