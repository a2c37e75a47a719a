internal import CCurl
import Foundation
import LandmarkCatalog

/// One libcurl easy handle (https://curl.se/libcurl/c/libcurl-easy.html) with the memory it points at:
/// the request header list and the error buffer.
///
/// Used by one thread at a time; not `Sendable`.
final class CurlEasy {
    /// `curl_global_init(CURL_GLOBAL_DEFAULT)`, run once per process (a `static let` is initialised
    /// exactly once, thread-safely).
    ///
    /// libcurl requires it before any other call from a threaded program.
    private static let globalInit: UInt32 = ccurl_global_init().rawValue

    /// The `CURL *` handle (freed by `deinit` with `curl_easy_cleanup`).
    let handle: UnsafeMutableRawPointer
    /// The CURLOPT_HTTPHEADER list, which libcurl does not copy: freed after the handle.
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// CURLOPT_ERRORBUFFER: libcurl's detailed message for the last failure (CURL_ERROR_SIZE bytes).
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// What ends the transfer early (kept alive as long as the handle: libcurl's progress callback reads it).
    private var cancellation: TransferCancellation?

    /// - Throws: `CatalogError(.software)` (70) when libcurl cannot be initialised or a handle allocated.
    init() throws {
        guard Self.globalInit == CURLE_OK.rawValue else {
            throw CatalogError(.software, "libcurl could not be initialised (curl error \(Self.globalInit))")
        }
        guard let handle = curl_easy_init() else {
            throw CatalogError(.software, "libcurl could not allocate a handle (out of memory)")
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: ccurl_error_size())
        errorBuffer.initialize(repeating: 0, count: ccurl_error_size())
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer), "CURLOPT_ERRORBUFFER")
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    /// Sets a `long` option.

    /// - Throws: `CatalogError(.software)` (70) if this libcurl refuses it (too old).
    func set(_ option: CURLoption, _ value: Int, _ name: String) throws {
        try check(ccurl_setopt_long(handle, option, value), name)
    }

    /// Sets a string option (libcurl copies the string).

    /// - Throws: as `set(_:_:_:)`.
    func set(_ option: CURLoption, _ value: String, _ name: String) throws {
        try check(ccurl_setopt_string(handle, option, value), name)
    }

    /// Sets a pointer option.

    /// - Throws: as `set(_:_:_:)`.
    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?, _ name: String) throws {
        try check(ccurl_setopt_pointer(handle, option, pointer), name)
    }

    /// Sets a data callback (CURLOPT_WRITEFUNCTION, CURLOPT_HEADERFUNCTION).

    /// - Throws: as `set(_:_:_:)`.
    func set(_ option: CURLoption, callback: ccurl_data_callback, _ name: String) throws {
        try check(ccurl_setopt_data_callback(handle, option, callback), name)
    }

    /// Makes `cancellation` end the transfer: libcurl's progress callback (CURLOPT_XFERINFOFUNCTION, called
    /// at least once a second even when no byte moves) aborts it with CURLE_ABORTED_BY_CALLBACK.
    ///
    /// - Parameter cancellation: what ends it; nil leaves the transfer to its time limits.
    /// - Throws: as `set(_:_:_:)`.
    func install(cancellation: TransferCancellation?) throws {
        guard let cancellation else { return }
        self.cancellation = cancellation
        try set(CURLOPT_NOPROGRESS, 0, "CURLOPT_NOPROGRESS")
        try set(CURLOPT_XFERINFODATA, pointer: Unmanaged.passUnretained(cancellation).toOpaque(), "CURLOPT_XFERINFODATA")
        try check(
            ccurl_setopt_xferinfo_callback(
                handle, CURLOPT_XFERINFOFUNCTION,
                { clientp, _, _, _, _ in
                    guard let clientp else { return 0 }
                    return Unmanaged<TransferCancellation>.fromOpaque(clientp).takeUnretainedValue().isCancelled ? 1 : 0
                }), "CURLOPT_XFERINFOFUNCTION")
    }

    /// Replaces the request headers (CURLOPT_HTTPHEADER); each line is `Name: value`.
    /// - Throws: as `set(_:_:_:)`; `CatalogError(.software)` (70) when the list cannot be allocated.
    func setHeaders(_ lines: [String]) throws {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let longer = curl_slist_append(list, line) else {
                curl_slist_free_all(list)
                throw CatalogError(.software, "libcurl could not allocate the header list (out of memory)")
            }
            list = longer
        }
        try check(ccurl_setopt_slist(handle, CURLOPT_HTTPHEADER, list), "CURLOPT_HTTPHEADER")
        curl_slist_free_all(headerList)
        headerList = list
    }

    /// Runs the transfer (`curl_easy_perform`) and returns libcurl's result code.
    ///
    /// SIGPIPE is blocked on this thread meanwhile, and one raised by the transfer is consumed: with
    /// CURLOPT_NOSIGNAL set (needed in threaded programs) libcurl no longer ignores SIGPIPE itself, and
    /// its documentation warns that a write to a closed socket may still raise one in corner cases,
    /// which would kill a process that has not ignored it. Blocking it per thread changes nothing
    /// for the rest of the process.
    func perform() -> CURLcode {
        errorBuffer[0] = 0
        var pipe = sigset_t()
        var previous = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipe, &previous)
        defer {
            if sigismember(&previous, SIGPIPE) == 0 {
                var pending = sigset_t()
                if sigpending(&pending) == 0, sigismember(&pending, SIGPIPE) == 1 {
                    var now = timespec(tv_sec: 0, tv_nsec: 0)
                    _ = sigtimedwait(&pipe, nil, &now)
                }
                pthread_sigmask(SIG_SETMASK, &previous, nil)
            }
        }
        return curl_easy_perform(handle)
    }

    /// A `long` from `curl_easy_getinfo` (0 when unavailable).
    func info(_ info: CURLINFO) -> Int {
        var value = 0
        return ccurl_getinfo_long(handle, info, &value) == CURLE_OK ? value : 0
    }

    /// A `curl_off_t` from `curl_easy_getinfo` (0 when unavailable).
    func info(offset info: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        return ccurl_getinfo_off_t(handle, info, &value) == CURLE_OK ? Int64(value) : 0
    }

    /// What went wrong, for a message: libcurl's detailed error text when it wrote one, else the generic
    /// `curl_easy_strerror`, followed by the code (`… (curl error 56)`).
    func describe(_ code: CURLcode) -> String {
        let detail = String(cString: errorBuffer).trimmingHTTPWhitespace
        let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        return "\(text) (curl error \(code.rawValue))"
    }

    /// Turns a refused option into an error naming it and this libcurl's version.
    /// - Throws: `CatalogError(.software)` (70) unless `code` is CURLE_OK.
    private func check(_ code: CURLcode, _ name: String) throws {
        guard code == CURLE_OK else {
            let version = String(cString: curl_version())
            throw CatalogError(
                .software, "libcurl refused \(name): \(String(cString: curl_easy_strerror(code))) (\(version))",
                hint: "the HTTP client needs libcurl 7.85 or later")
        }
    }
}

@available(*, unavailable, message: "a libcurl easy handle is used by one thread at a time")
extension CurlEasy: Sendable {}
