internal import CCurl
import HTTPTransport

/// libcurl, loaded and initialised exactly once per process before the first handle exists: nil when it is
/// ready, else why not, in words a user can act on.
///
/// The CCurl shim binds libcurl with dlopen on first use instead of linking it, so commands that never send
/// an HTTP request start without loading it and its dependencies. `curl_global_init` is not thread-safe in
/// libcurl 7.88, so a Swift global (lazily and atomically initialised) serialises it.
let curlUnavailableReason: String? = {
    if let failure = ccurl_load_error() { return String(cString: failure) }
    let initialised = ccurl_global_init_default()
    guard initialised == CURLE_OK else { return "curl_global_init failed with \(initialised.rawValue)" }
    return nil
}()

/// Owns one easy handle (one transfer's settings and state); `curl_easy_cleanup` in deinit.
///
/// `@unchecked Sendable`: libcurl allows an easy handle on any thread as long as one thread uses it at a
/// time; it moves between the submitting task and the engine thread only through the engine's lock.
final class CurlEasyHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer
    /// `CURLOPT_ERRORBUFFER`'s memory, owned by the handle so it outlives every use libcurl makes of it.
    let errorBuffer: UnsafeMutablePointer<CChar>
    /// What the handle's per-handle settings (callbacks, protocols, timeouts, decoding, proxy, TLS, HTTP
    /// version) were made for; nil while it has libcurl's defaults. A transfer with an equal profile sets only
    /// its own request's settings.
    var configuredProfile: CurlHandleProfile?
    /// C memory the handle's per-handle options point at (the proxy header list, the connect-to pins): kept
    /// until the reset.
    private var handleAttachments: [CurlStringList] = []
    /// C memory the last request's options point at (the header list): kept until the next
    /// request replaces them, so the handle never points at freed memory.
    private var requestAttachments: [CurlStringList] = []
    private var nextRequestAttachments: [CurlStringList] = []

    init?() {
        guard let raw = ccurl_easy_init() else { return nil }
        self.raw = raw
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    /// Keeps `list` alive as long as a per-handle option may point at it.
    func attachToHandle(_ list: CurlStringList) { handleAttachments.append(list) }

    /// Keeps `list` alive as long as an option of the request being configured may point at it.
    func attachToRequest(_ list: CurlStringList) { nextRequestAttachments.append(list) }

    /// Called once the request's options are all set: the previous request's lists are no longer pointed at.
    func requestConfigured() {
        requestAttachments = nextRequestAttachments
        nextRequestAttachments.removeAll()
    }

    /// `curl_easy_reset`: every option back to its default (no pointer into a finished transfer remains);
    /// connections and caches belong to the multi handle and stay.
    func reset() {
        ccurl_easy_reset(raw)
        handleAttachments.removeAll()
        requestAttachments.removeAll()
        nextRequestAttachments.removeAll()
        configuredProfile = nil
        errorBuffer[0] = 0
    }

    /// After a transfer, when the handle is kept for another with the same options: drops what must not
    /// outlive the request in libcurl's copy (the request body, which may hold a password, and the URL) and
    /// the pointers into the finished transfer object. The next request sets every request option again.
    func finishRequest() {
        _ = ccurl_easy_setopt_pointer(raw, CURLOPT_POSTFIELDS, nil)  // frees libcurl's COPYPOSTFIELDS copy
        _ = ccurl_easy_setopt_long(raw, CURLOPT_HTTPGET, 1)
        _ = ccurl_easy_setopt_string(raw, CURLOPT_URL, nil)
        _ = ccurl_easy_setopt_pointer(raw, CURLOPT_WRITEDATA, nil)
        _ = ccurl_easy_setopt_pointer(raw, CURLOPT_HEADERDATA, nil)
        if configuredProfile?.kind == .streaming {
            _ = ccurl_easy_setopt_pointer(raw, CURLOPT_READDATA, nil)
            _ = ccurl_easy_setopt_pointer(raw, CURLOPT_SEEKDATA, nil)
        }
        errorBuffer[0] = 0
    }

    var errorText: String { String(cString: errorBuffer) }

    deinit {
        ccurl_easy_cleanup(raw)
        errorBuffer.deallocate()
    }
}

/// What an easy handle's per-handle settings are made for: the site's options, and whether its transfers
/// are buffered (``CurlHTTPClient/send(_:options:)``: bodies decoded, the whole transfer timed) or streamed
/// (``CurlHTTPClient/stream(_:options:)``: bytes as sent, silence timed, read and seek callbacks).
struct CurlHandleProfile: Hashable {
    enum Kind: Hashable { case buffered, streaming }

    var options: TransportOptions
    var kind: Kind
}

/// Owns one multi handle, which holds the connection cache and the DNS cache shared by every transfer;
/// `curl_multi_cleanup` in deinit (after every easy handle was removed from it).
///
/// `@unchecked Sendable`: only the engine thread drives the handle; other threads call nothing but
/// `curl_multi_wakeup`, which libcurl documents as callable from any thread.
final class CurlMultiHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer

    init?() {
        guard let raw = ccurl_multi_init() else { return nil }
        self.raw = raw
    }

    /// Interrupts a `curl_multi_poll` in progress, or makes the next one return at once.
    func wakeUp() { _ = ccurl_multi_wakeup(raw) }

    deinit { ccurl_multi_cleanup(raw) }
}

/// Owns a `curl_slist` (request headers, `CURLOPT_CONNECT_TO` entries); `curl_slist_free_all` in deinit.
/// libcurl reads the list during the transfer without copying it, so it lives as long as the transfer.
final class CurlStringList {
    private(set) var raw: UnsafeMutablePointer<curl_slist>?

    init() {}

    /// Appends a copy of `string`; returns false when libcurl could not allocate.
    func append(_ string: String) -> Bool {
        guard let appended = ccurl_slist_append(raw, string) else { return false }
        raw = appended
        return true
    }

    var isEmpty: Bool { raw == nil }

    deinit { ccurl_slist_free_all(raw) }
}

/// What the loaded libcurl is and can do ("unavailable" and nothing when it cannot be loaded).
enum CurlLibrary {
    /// libcurl's own description of itself; nil when it could not be loaded.
    private static var info: curl_version_info_data? {
        curlUnavailableReason == nil ? ccurl_version_info()?.pointee : nil
    }

    static var version: String {
        guard curlUnavailableReason == nil else { return "unavailable" }
        return info?.version.map { String(cString: $0) } ?? "unknown"
    }

    static var supportsHTTP2: Bool { curlUnavailableReason == nil && ccurl_version_has_http2() != 0 }
    static var supportsHTTP3: Bool { curlUnavailableReason == nil && ccurl_version_has_http3() != 0 }

    static var sslVersion: String? { info?.ssl_version.map { String(cString: $0) } }
}
