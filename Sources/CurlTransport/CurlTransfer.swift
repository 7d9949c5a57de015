internal import CCurl
import Foundation
import HTTPTransport

/// One request on its way through libcurl: the configured easy handle, the C buffers it points at, and the
/// response as it arrives.
///
/// `@unchecked Sendable`: the submitting task builds it, then hands it to the engine thread through the
/// engine's lock-protected queue; from then on only the engine thread touches it (libcurl's callbacks run on
/// that thread inside `curl_multi_perform`).
final class CurlTransfer: @unchecked Sendable {
    /// Resumed exactly once, by whoever removes the transfer from the engine's books (completion, cancel,
    /// shutdown, refusal) and sets `continuation` to nil; the cancellation tests hold it to that. Unchecked,
    /// since a checked continuation costs an allocation and two atomics per request.
    typealias Completion = UnsafeContinuation<Result<HTTPResponse, TransportError>, Never>

    let id: UInt64
    let request: HTTPRequest
    let easy: CurlEasyHandle
    var continuation: Completion?

    private let maxBodySize: Int
    private let proxy: String?
    private var usedProxy: Bool { !(proxy ?? "").isEmpty }
    private var body = Data()
    private var headerParser = ResponseHeaderParser()
    private var bodyCapExceeded = false

    /// Validates the request, then configures an easy handle from `makeEasyHandle` for it.
    init(
        id: UInt64, request: HTTPRequest, options: TransportOptions, makeEasyHandle: () -> CurlEasyHandle?
    ) throws(TransportError) {
        try RequestValidation.validate(request, options)
        guard let easy = makeEasyHandle() else {
            throw TransportError(kind: .other, url: request.url, message: "curl_easy_init failed (out of memory)")
        }
        self.id = id
        self.request = request
        self.easy = easy
        self.maxBodySize = options.maxBodySize
        self.proxy = options.proxy
        try configure(options)
    }

    // MARK: Configuration

    private func configure(_ options: TransportOptions) throws(TransportError) {
        let handle = easy.raw
        let me = Unmanaged.passUnretained(self).toOpaque()
        // A handle made for other options starts again from libcurl's defaults; one made for these keeps
        // its per-handle settings and only gets this request's.
        if easy.configuredOptions != options {
            if easy.configuredOptions != nil { easy.reset() }
            try configureHandle(options)
            easy.configuredOptions = options
        }
        try check(ccurl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")
        try check(ccurl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, me), "CURLOPT_HEADERDATA")
        try check(ccurl_easy_setopt_string(handle, CURLOPT_URL, request.url.absoluteString), "CURLOPT_URL")
        try configureMethodAndBody()
        try configureHeaders()
        easy.requestConfigured()
    }

    /// The settings that depend only on the options, made once per handle and options.
    private func configureHandle(_ options: TransportOptions) throws(TransportError) {
        let handle = easy.raw
        // Plumbing: callbacks, error text, threads. NOSIGNAL because libcurl must not use SIGALRM off the main thread.
        easy.errorBuffer[0] = 0
        try check(ccurl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, easy.errorBuffer), "CURLOPT_ERRORBUFFER")
        try check(ccurl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        try check(ccurl_easy_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, curlWriteCallback), "CURLOPT_WRITEFUNCTION")
        try check(ccurl_easy_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, curlHeaderCallback), "CURLOPT_HEADERFUNCTION")

        // What the transport never does: follow redirects (the flow engine does, hop by hop through the jar),
        // run libcurl's cookie engine (COOKIEFILE/COOKIEJAR/COOKIELIST are never set), read .netrc, or
        // speak anything but HTTP(S).
        try check(ccurl_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0), "CURLOPT_FOLLOWLOCATION")
        try check(ccurl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "CURLOPT_PROTOCOLS_STR")
        try check(ccurl_easy_setopt_long(handle, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1), "CURLOPT_SUPPRESS_CONNECT_HEADERS")
        if let userAgent = options.userAgent {
            try check(ccurl_easy_setopt_string(handle, CURLOPT_USERAGENT, userAgent), "CURLOPT_USERAGENT")
        }
        // "" = offer every encoding this libcurl decodes (gzip, deflate, br, zstd) and decode the body.
        try check(ccurl_easy_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, ""), "CURLOPT_ACCEPT_ENCODING")
        try configureConnection(options)
        try configureTLS(options)
    }

    private func configureMethodAndBody() throws(TransportError) {
        let handle = easy.raw
        let method = request.method
        let body = request.body
        // A reused handle may carry the last request's method: HTTPGET resets it (and NOBODY, UPLOAD), and
        // CUSTOMREQUEST is set or cleared every time.
        try check(ccurl_easy_setopt_long(handle, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
        let custom: String? = method == "GET" || method == "HEAD" || method == "POST" ? nil : method
        try check(ccurl_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, custom), "CURLOPT_CUSTOMREQUEST")
        switch method {
        case "GET" where body == nil:
            break
        case "HEAD":
            try check(ccurl_easy_setopt_long(handle, CURLOPT_NOBODY, 1), "CURLOPT_NOBODY")
        default:
            if let body {
                try setBody(body)
            } else if RequestValidation.methodsWithBodySemantics.contains(method) {
                try setBody(Data())
            }
        }
    }

    private func setBody(_ body: Data) throws(TransportError) {
        let handle = easy.raw
        // The size first: COPYPOSTFIELDS copies that many bytes (the body may hold NULs).
        try check(ccurl_easy_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
        let code = body.withUnsafeBytes { bytes -> CURLcode in
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                return ccurl_easy_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, "")
            }
            return ccurl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: base))
        }
        try check(code, "CURLOPT_COPYPOSTFIELDS")
    }

    private func configureHeaders() throws(TransportError) {
        let handle = easy.raw
        let headerList = newRequestList()
        for field in request.headers {
            // libcurl derives Content-Length from the body it sends; a second, possibly different one would
            // make the request ambiguous (RFC 9112 section 6.3).
            if field.name.caseInsensitiveEquals("Content-Length") { continue }
            // "Name:" would tell libcurl to drop the header; "Name;" sends it with an empty value.
            try append(field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)", to: headerList)
        }
        // Headers libcurl adds on its own unless told not to: none of them were asked for.
        if !request.headers.contains("Accept") { try append("Accept:", to: headerList) }
        if !request.headers.contains("Expect") { try append("Expect:", to: headerList) }
        if request.body != nil || RequestValidation.methodsWithBodySemantics.contains(request.method),
            !request.headers.contains("Content-Type")
        {
            try append("Content-Type:", to: headerList)
        }
        try check(ccurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList.raw), "CURLOPT_HTTPHEADER")
    }

    private func configureConnection(_ options: TransportOptions) throws(TransportError) {
        let handle = easy.raw
        try check(ccurl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, options.timeout.roundedUpMilliseconds), "CURLOPT_TIMEOUT_MS")
        try check(
            ccurl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeout.roundedUpMilliseconds),
            "CURLOPT_CONNECTTIMEOUT_MS")
        // An empty proxy string disables the http_proxy/https_proxy/all_proxy environment variables too.
        try check(ccurl_easy_setopt_string(handle, CURLOPT_PROXY, options.proxy ?? ""), "CURLOPT_PROXY")
        if usedProxy {
            let proxyHeaderList = newHandleList()
            // libcurl adds the legacy "Proxy-Connection: Keep-Alive" to requests it sends through an HTTP proxy
            // without a tunnel; the proxy may pass it on to the site. Nobody asked for it.
            try append("Proxy-Connection:", to: proxyHeaderList)
            try check(ccurl_easy_setopt_slist(handle, CURLOPT_PROXYHEADER, proxyHeaderList.raw), "CURLOPT_PROXYHEADER")
        }
        try configurePins(options)
        let version: Int
        switch options.httpVersion {
        case nil: version = CURL_HTTP_VERSION_NONE
        case .http1_1?: version = CURL_HTTP_VERSION_1_1
        // HTTP/2 through TLS ALPN; cleartext stays on 1.1 because the h2c upgrade would add
        // Upgrade/HTTP2-Settings headers nobody asked for.
        case .http2?: version = CURL_HTTP_VERSION_2TLS
        case .http3?: version = CURL_HTTP_VERSION_3
        }
        try check(ccurl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, version), "CURLOPT_HTTP_VERSION")
    }

    /// The options' `resolve` pins, on this handle only (see ``ConnectPins``). They stay with the handle as long
    /// as it serves these options; a handle taken for other options is reset first, which clears them.
    private func configurePins(_ options: TransportOptions) throws(TransportError) {
        guard !options.resolve.isEmpty else { return }
        let pins = ConnectPins(options.resolve)
        guard !pins.connectTo.isEmpty else { return }
        let handle = easy.raw
        let connectToList = newHandleList()
        for line in pins.connectTo { try append(line, to: connectToList) }
        try check(ccurl_easy_setopt_slist(handle, CURLOPT_CONNECT_TO, connectToList.raw), "CURLOPT_CONNECT_TO")
        if !pins.aliases.isEmpty {
            // Loaded into the shared DNS cache when this handle's next transfer starts, before it connects.
            // An alias always stands for the same addresses, so sharing it is harmless.
            let aliasList = newHandleList()
            for line in pins.aliases { try append(line, to: aliasList) }
            try check(ccurl_easy_setopt_slist(handle, CURLOPT_RESOLVE, aliasList.raw), "CURLOPT_RESOLVE")
        }
    }

    private func configureTLS(_ options: TransportOptions) throws(TransportError) {
        let handle = easy.raw
        if let caFile = options.caFile {
            try check(ccurl_easy_setopt_string(handle, CURLOPT_CAINFO, caFile), "CURLOPT_CAINFO")
        }
        if let certificate = options.clientCertificate {
            try check(ccurl_easy_setopt_string(handle, CURLOPT_SSLCERT, certificate.certificatePath), "CURLOPT_SSLCERT")
            try check(ccurl_easy_setopt_string(handle, CURLOPT_SSLCERTTYPE, "PEM"), "CURLOPT_SSLCERTTYPE")
            try check(ccurl_easy_setopt_string(handle, CURLOPT_SSLKEY, certificate.keyPath), "CURLOPT_SSLKEY")
            try check(ccurl_easy_setopt_string(handle, CURLOPT_SSLKEYTYPE, "PEM"), "CURLOPT_SSLKEYTYPE")
        }
        if options.insecure {
            try check(ccurl_easy_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0), "CURLOPT_SSL_VERIFYPEER")
            try check(ccurl_easy_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0), "CURLOPT_SSL_VERIFYHOST")
        }
    }

    /// A list for a per-handle option, kept alive until the handle is reset or cleaned up.
    private func newHandleList() -> CurlStringList {
        let list = CurlStringList()
        easy.attachToHandle(list)
        return list
    }

    /// A list for this request's options, kept alive until the next request on the handle replaces it.
    private func newRequestList() -> CurlStringList {
        let list = CurlStringList()
        easy.attachToRequest(list)
        return list
    }

    private func append(_ line: String, to list: CurlStringList) throws(TransportError) {
        guard list.append(line) else {
            throw TransportError(kind: .other, url: request.url, message: "curl_slist_append failed (out of memory)")
        }
    }

    private func check(_ code: CURLcode, _ option: String) throws(TransportError) {
        guard code != CURLE_OK else { return }
        let kind: TransportError.Kind = code == CURLE_OUT_OF_MEMORY ? .other : .invalidRequest
        throw TransportError(
            kind: kind, url: request.url,
            message: "libcurl \(CurlLibrary.version) refused \(option): \(String(cString: ccurl_easy_strerror(code)))")
    }

    // MARK: Callbacks (engine thread)

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard body.count + bytes.count <= maxBodySize else {
            bodyCapExceeded = true
            return 0  // anything but the length given aborts the transfer with CURLE_WRITE_ERROR
        }
        body.append(contentsOf: bytes)
        return bytes.count
    }

    fileprivate func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Int {
        headerParser.consume(line: bytes)
        return bytes.count
    }

    // MARK: Completion (engine thread)

    /// The outcome once libcurl reported the transfer done with `code`.
    func outcome(_ code: CURLcode) -> Result<HTTPResponse, TransportError> {
        let handle = easy.raw
        guard code == CURLE_OK else {
            var connectCode = 0
            _ = ccurl_easy_getinfo_long(handle, CURLINFO_HTTP_CONNECTCODE, &connectCode)
            var newConnections = 0
            _ = ccurl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &newConnections)
            var headerBytes = 0
            _ = ccurl_easy_getinfo_long(handle, CURLINFO_HEADER_SIZE, &headerBytes)
            var tlsDoneMicroseconds: curl_off_t = 0
            _ = ccurl_easy_getinfo_off_t(handle, CURLINFO_APPCONNECT_TIME_T, &tlsDoneMicroseconds)
            let failure = CurlFailure(
                code: code, detail: scrubbed(easy.errorText), usedProxy: usedProxy,
                proxyConnectStatus: connectCode, bodyCapExceeded: bodyCapExceeded, maxBodySize: maxBodySize,
                closedRightAfterTLSHandshake: request.url.scheme?.lowercased() == "https" && newConnections > 0
                    && headerBytes == 0 && tlsDoneMicroseconds > 0,
                headerBlockOpen: headerParser.state == .inBlock)
            return .failure(failure.transportError(url: request.url))
        }
        var status = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var versionCode = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &versionCode)
        var totalMicroseconds: curl_off_t = 0
        _ = ccurl_easy_getinfo_off_t(handle, CURLINFO_TOTAL_TIME_T, &totalMicroseconds)
        let response = HTTPResponse(
            status: status, url: request.url, headers: headerParser.headers, body: body,
            httpVersion: Self.versionName(versionCode),
            duration: .microseconds(totalMicroseconds))
        return .success(response)
    }

    /// Built only when a transfer failed: most requests never need it.
    private func scrubbed(_ text: String) -> String {
        LogScrubber(url: request.url, proxy: proxy, headerValues: request.headers.map(\.value)).scrub(text)
    }

    private static func versionName(_ code: Int) -> String {
        switch code {
        case CURL_HTTP_VERSION_1_0: "1.0"
        case CURL_HTTP_VERSION_1_1: "1.1"
        case CURL_HTTP_VERSION_2_0: "2"
        case CURL_HTTP_VERSION_3: "3"
        default: "1.1"
        }
    }
}

/// `CURLOPT_WRITEFUNCTION`: the userdata is the transfer, kept alive by the engine while libcurl runs it.
private let curlWriteCallback: ccurl_data_callback = { buffer, size, count, userdata in
    guard let userdata, let buffer else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.receiveBody(UnsafeRawBufferPointer(start: buffer, count: size * count))
}

/// `CURLOPT_HEADERFUNCTION`: one complete header line per call (status lines and the empty line included).
private let curlHeaderCallback: ccurl_data_callback = { buffer, size, count, userdata in
    guard let userdata, let buffer else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: size * count))
}
