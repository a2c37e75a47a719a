import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The result of fetching one HTTP source.
enum FetchResult {
    /// 304 Not Modified: the validators still match, nothing to merge.
    case notModified
    /// 200: the body is in a temporary file (deleted by the caller), with the new validators.
    case fetched(path: String, bytes: Int64, etag: String?, lastModified: String?)
}

/// HTTP(S) GET with conditional-request validators (RFC 9110 §13.1: `If-None-Match`, `If-Modified-Since`),
/// a timeout, bounded retries with exponential backoff on 429 and 5xx (honouring `Retry-After` in
/// seconds, capped), and a size limit. TLS is verified by URLSession's defaults. No HTTP cache is used:
/// the catalog keeps its own validators per source.
struct HTTPFetcher {
    /// Seconds to wait for the server to send anything (per attempt).
    var timeout: TimeInterval = 30
    /// Retries after the first attempt, on 429 and 5xx only.
    var retries: Int = 3
    /// Largest body accepted, in bytes.
    var maxBytes: Int64 = 1 << 30
    /// First backoff delay in seconds; doubles each retry.
    var backoff: TimeInterval = 0.5

    final class Box: @unchecked Sendable {
        let lock = NSLock()
        var response: HTTPURLResponse?
        var error: (any Error)?
        var path: String?
    }

    /// - Throws: `CatalogError.unavailable` (69) for network errors, timeouts, 4xx, and 5xx/429 after the
    ///   retries; `CatalogError.dataInvalid` (65) for a body over `maxBytes`.
    func fetch(_ url: URL, etag: String?, lastModified: String?, log: (String) -> Void) throws -> FetchResult {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = max(timeout * 10, 60)
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }

        var attempt = 0
        while true {
            var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
            request.setValue("catalog/\(CatalogVersion.string)", forHTTPHeaderField: "User-Agent")
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            if let etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
            if let lastModified { request.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since") }

            let box = Box()
            let done = DispatchSemaphore(value: 0)
            let temporary = FileManager.default.temporaryDirectory.appending(path: "catalog-fetch-\(UUID().uuidString)").path
            let task = session.downloadTask(with: request) { location, response, error in
                box.lock.withLock {
                    box.response = response as? HTTPURLResponse
                    box.error = error
                    if let location, error == nil {
                        do {
                            try FileManager.default.moveItem(atPath: location.path, toPath: temporary)
                            box.path = temporary
                        } catch {
                            box.error = error
                        }
                    }
                }
                done.signal()
            }
            task.resume()
            done.wait()
            let (response, error, path) = box.lock.withLock { (box.response, box.error, box.path) }

            if let error {
                if let path { unlink(path) }
                let nsError = error as NSError
                let reason = nsError.code == NSURLErrorTimedOut ? "timed out after \(Int(timeout)) s" : nsError.localizedDescription
                throw CatalogError(.unavailable, "source unavailable: \(reason), \(url.absoluteString)")
            }
            guard let response else {
                if let path { unlink(path) }
                throw CatalogError(.unavailable, "source unavailable: no HTTP response, \(url.absoluteString)")
            }
            let status = response.statusCode
            if status == 304 {
                if let path { unlink(path) }
                return .notModified
            }
            if status == 429 || (500...599).contains(status) {
                if let path { unlink(path) }
                guard attempt < retries else {
                    throw CatalogError(.unavailable, "source unavailable: HTTP \(status) after \(attempt + 1) attempts, \(url.absoluteString)")
                }
                var delay = backoff * pow(2, Double(attempt))
                if let retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap(Double.init) {
                    delay = min(max(delay, retryAfter), 60)
                }
                log("HTTP \(status) from \(url.absoluteString); retry \(attempt + 1) of \(retries) in \(delay) s")
                Thread.sleep(forTimeInterval: delay)
                attempt += 1
                continue
            }
            guard (200...299).contains(status), let path else {
                if let path { unlink(path) }
                throw CatalogError(.unavailable, "source unavailable: HTTP \(status) \(HTTPURLResponse.localizedString(forStatusCode: status)), \(url.absoluteString)")
            }
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
            guard size <= maxBytes else {
                unlink(path)
                throw CatalogError(.dataInvalid, "snapshot is \(size) bytes, over the limit of \(maxBytes) bytes, \(url.absoluteString)",
                                   hint: "raise it with --max-bytes")
            }
            return .fetched(path: path, bytes: size, etag: response.value(forHTTPHeaderField: "ETag"),
                            lastModified: response.value(forHTTPHeaderField: "Last-Modified"))
        }
    }
}

