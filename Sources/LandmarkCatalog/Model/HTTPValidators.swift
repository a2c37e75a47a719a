/// Conditional-request validators of a representation (RFC 9110 §8.8): sent back as `If-None-Match` and
/// `If-Modified-Since` (RFC 9110 §13.1.2, §13.1.3).
package struct HTTPValidators: Sendable, Equatable {
    /// The `ETag` as the server sent it, quotes and `W/` included (RFC 9110 §8.8.3).
    package var etag: String?
    /// The `Last-Modified` HTTP-date as the server sent it (RFC 9110 §8.8.2); only kept when strong.
    package var lastModified: String?

    package init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }
}
