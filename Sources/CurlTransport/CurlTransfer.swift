internal import CCurl
import Foundation
import HTTPTransport

/// One request on its way through libcurl: the configured easy handle, the C buffers it points at, and the
/// response as it arrives, either collected whole (``CurlHTTPClient/send(_:options:)``) or handed on as it
/// comes (``CurlHTTPClient/stream(_:options:)``).
///
/// `@unchecked Sendable`: the submitting task builds it, then hands it to the engine thread through the
/// engine's lock-protected queue; from then on only the engine thread touches it (libcurl's callbacks run on
/// that thread inside `curl_multi_perform`). What a streamed transfer shares with other threads lives in its
/// ``CurlResponseStream`` and ``CurlUpload``, behind their own locks.
final class CurlTransfer: @unchecked Sendable {
    /// Resumed exactly once, by whoever removes the transfer from the engine's books (completion, cancel,
    /// shutdown, refusal) and sets `continuation` to nil; the cancellation tests hold it to that. Unchecked,
    /// since a checked continuation costs an allocation and two atomics per request.
    typealias Completion = UnsafeContinuation<Result<HTTPResponse, TransportError>, Never>
    /// A streamed transfer's: resumed exactly once, with the head as soon as it is complete, or with the
    /// failure that came first.
    typealias HeadCompletion = UnsafeContinuation<Result<StreamingResponse, TransportError>, Never>

    /// How a transfer the engine took off its books ended.
    enum Ending {
        /// libcurl reported it done with this code.
        case done(CURLcode)
        /// It was cancelled, shut down or could not be added.
        case failed(TransportError)
    }

    /// What the response is collected into.
    private enum Delivery {
        /// The whole body in memory, up to `maxBodySize`, decoded.
        case buffered(maxBodySize: Int)
        /// Parts handed to the reader as they come, as sent; the request body through a read callback.
        case streamed(CurlResponseStream, upload: CurlUpload?)
    }

    /// The request body as libcurl is told to send it.
    private enum OutgoingBody {
        case none
        /// Copied into libcurl (`COPYPOSTFIELDS`): a buffered request's body.
        case copied(Data)
        /// Read through the read callback: a streamed request's body.
        case uploaded(CurlUpload)
    }

    let id: UInt64
    let url: URL
    let easy: CurlEasyHandle
    var continuation: Completion?
    var headContinuation: HeadCompletion?

    private let method: String
    private let headers: HTTPHeaders
    private let outgoing: OutgoingBody
    private let delivery: Delivery
    private let proxy: String?
    private var usedProxy: Bool { !(proxy ?? "").isEmpty }
    private var body = Data()
    private var headerParser = ResponseHeaderParser()
    private var bodyCapExceeded = false
    private var headDelivered = false

    /// A buffered transfer: validates the request, then configures an easy handle from `makeEasyHandle` for it.
    init(
        id: UInt64, request: HTTPRequest, options: TransportOptions,
        makeEasyHandle: (CurlHandleProfile) -> CurlEasyHandle?
    ) throws(TransportError) {
        try RequestValidation.validate(request, options)
        let profile = CurlHandleProfile(options: options, kind: .buffered)
        guard let easy = makeEasyHandle(profile) else { throw Self.outOfMemory(request.url) }
        self.id = id
        url = request.url
        method = request.method
        headers = request.headers
        outgoing = request.body.map { .copied($0) } ?? .none
        delivery = .buffered(maxBodySize: options.maxBodySize)
        proxy = options.proxy
        self.easy = easy
        try configure(profile)
    }

    /// A streamed transfer on `engine`: validates the request, then configures an easy handle for it.
    init(
        id: UInt64, streaming request: StreamingRequest, options: TransportOptions, engine: CurlMultiEngine
    ) throws(TransportError) {
        try RequestValidation.validate(request, options)
        let profile = CurlHandleProfile(options: options, kind: .streaming)
        guard let easy = engine.makeEasyHandle(for: profile) else { throw Self.outOfMemory(request.url) }
        self.id = id
        url = request.url
        method = request.method
        headers = request.headers
        let upload: CurlUpload?
        switch request.body {
        case .empty:
            upload = nil
        case .data(let data):
            upload = MemoryUpload(data)
        case .stream(let length, let chunks):
            upload = SequenceUpload(length: length, chunks: chunks, engine: engine, transferID: id, url: request.url)
        }
        outgoing = upload.map { .uploaded($0) } ?? .none
        delivery = .streamed(CurlResponseStream(engine: engine, transferID: id, url: request.url), upload: upload)
        proxy = options.proxy
        self.easy = easy
        try configure(profile)
    }

    private static func outOfMemory(_ url: URL) -> TransportError {
        TransportError(kind: .other, url: url, message: "curl_easy_init failed (out of memory)")
    }

    /// Starts reading a streamed request body's source; call once the transfer was queued.
    func startUpload() {
        if case .streamed(_, let upload?) = delivery { upload.start() }
    }

    // MARK: Configuration

    private func configure(_ profile: CurlHandleProfile) throws(TransportError) {
        let handle = easy.raw
        let me = Unmanaged.passUnretained(self).toOpaque()
        // A handle made for another profile starts again from libcurl's defaults; one made for this one keeps
        // its per-handle settings and only gets this request's.
        if easy.configuredProfile != profile {
            if easy.configuredProfile != nil { easy.reset() }
            try configureHandle(profile)
            easy.configuredProfile = profile
        }
        try check(ccurl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")
        try check(ccurl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, me), "CURLOPT_HEADERDATA")
        try check(ccurl_easy_setopt_string(handle, CURLOPT_URL, url.absoluteString), "CURLOPT_URL")
        try configureMethodAndBody()
        try configureHeaders()
        easy.requestConfigured()
    }

    /// The settings that depend only on the profile, made once per handle and profile.
    private func configureHandle(_ profile: CurlHandleProfile) throws(TransportError) {
        let handle = easy.raw
        let options = profile.options
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
        switch profile.kind {
        case .buffered:
            // "" = offer every encoding this libcurl decodes (gzip, deflate, br, zstd) and decode the body.
            try check(ccurl_easy_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, ""), "CURLOPT_ACCEPT_ENCODING")
            try check(ccurl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, options.timeout.roundedUpMilliseconds), "CURLOPT_TIMEOUT_MS")
        case .streaming:
            // The bytes pass as the server sent them: no Accept-Encoding of libcurl's, nothing decoded even when
            // the request asked for an encoding.
            try check(ccurl_easy_setopt_long(handle, CURLOPT_HTTP_CONTENT_DECODING, 0), "CURLOPT_HTTP_CONTENT_DECODING")
            // A stream lasts as long as its reader takes, so the timeout bounds silence instead of the whole
            // transfer: less than a byte a second for `timeout` aborts it, as nginx's proxy_read_timeout does.
            // libcurl leaves a transfer paused for its reader out of that count.
            try check(ccurl_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1), "CURLOPT_LOW_SPEED_LIMIT")
            try check(
                ccurl_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, (options.timeout.roundedUpMilliseconds + 999) / 1000)),
                "CURLOPT_LOW_SPEED_TIME")
            try check(ccurl_easy_setopt_data_callback(handle, CURLOPT_READFUNCTION, curlReadCallback), "CURLOPT_READFUNCTION")
            try check(ccurl_easy_setopt_seek_callback(handle, curlSeekCallback), "CURLOPT_SEEKFUNCTION")
        }
        try configureConnection(options)
        try configureTLS(options)
    }

    private func configureMethodAndBody() throws(TransportError) {
        let handle = easy.raw
        // A reused handle may carry the last request's method: HTTPGET resets it (and NOBODY, UPLOAD), and
        // CUSTOMREQUEST is set or cleared every time.
        try check(ccurl_easy_setopt_long(handle, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
        var custom: String? = method
        switch (method, outgoing) {
        case ("GET", .none):
            custom = nil
        case ("HEAD", _):
            custom = nil
            try check(ccurl_easy_setopt_long(handle, CURLOPT_NOBODY, 1), "CURLOPT_NOBODY")
        case (_, .uploaded(let upload)):
            // UPLOAD makes a PUT unless CUSTOMREQUEST names the method, which it always does here.
            let me = Unmanaged.passUnretained(self).toOpaque()
            try check(ccurl_easy_setopt_long(handle, CURLOPT_UPLOAD, 1), "CURLOPT_UPLOAD")
            try check(ccurl_easy_setopt_off_t(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(upload.length ?? -1)), "CURLOPT_INFILESIZE_LARGE")
            try check(ccurl_easy_setopt_pointer(handle, CURLOPT_READDATA, me), "CURLOPT_READDATA")
            try check(ccurl_easy_setopt_pointer(handle, CURLOPT_SEEKDATA, me), "CURLOPT_SEEKDATA")
        case (_, .copied(let body)):
            if method == "POST" { custom = nil }
            try setBody(body)
        case (_, .none):
            if method == "POST" { custom = nil }
            if RequestValidation.methodsWithBodySemantics.contains(method) { try setBody(Data()) }
        }
        try check(ccurl_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, custom), "CURLOPT_CUSTOMREQUEST")
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
        for field in headers {
            // libcurl frames the body it sends (Content-Length, or chunked for a body of unknown length); a
            // second, possibly different framing would make the request ambiguous (RFC 9112 section 6.3).
            if field.name.caseInsensitiveEquals("Content-Length") || field.name.caseInsensitiveEquals("Transfer-Encoding") {
                continue
            }
            // "Name:" would tell libcurl to drop the header; "Name;" sends it with an empty value.
            try append(field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)", to: headerList)
        }
        // Headers libcurl adds on its own unless told not to: none of them were asked for.
        if !headers.contains("Accept") { try append("Accept:", to: headerList) }
        if !headers.contains("Expect") { try append("Expect:", to: headerList) }
        // A POSTFIELDS body (configureMethodAndBody) gets a form Content-Type from libcurl; an upload gets none.
        let postsFields: Bool
        switch outgoing {
        case .copied: postsFields = true
        case .none: postsFields = RequestValidation.methodsWithBodySemantics.contains(method)
        case .uploaded: postsFields = false
        }
        if postsFields, !headers.contains("Content-Type") { try append("Content-Type:", to: headerList) }
        try check(ccurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList.raw), "CURLOPT_HTTPHEADER")
    }

    private func configureConnection(_ options: TransportOptions) throws(TransportError) {
        let handle = easy.raw
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
            throw TransportError(kind: .other, url: url, message: "curl_slist_append failed (out of memory)")
        }
    }

    private func check(_ code: CURLcode, _ option: String) throws(TransportError) {
        guard code != CURLE_OK else { return }
        let kind: TransportError.Kind = code == CURLE_OUT_OF_MEMORY ? .other : .invalidRequest
        throw TransportError(
            kind: kind, url: url,
            message: "libcurl \(CurlLibrary.version) refused \(option): \(String(cString: ccurl_easy_strerror(code)))")
    }

    // MARK: Callbacks (engine thread)

    /// A part of the body; anything but its length (0 past the cap, `CURL_WRITEFUNC_PAUSE` when the stream
    /// is full) stops or pauses the transfer.
    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch delivery {
        case .buffered(let maxBodySize):
            guard body.count + bytes.count <= maxBodySize else {
                bodyCapExceeded = true
                return 0  // anything but the length given aborts the transfer with CURLE_WRITE_ERROR
            }
            body.append(contentsOf: bytes)
            return bytes.count
        case .streamed(let stream, _):
            // A body always follows a complete head; this only guards a server libcurl accepts without one.
            if !headDelivered { deliverHead(stream) }
            return stream.offer(bytes) ? bytes.count : Int(CURL_WRITEFUNC_PAUSE)
        }
    }

    fileprivate func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Int {
        headerParser.consume(line: bytes)
        if case .streamed(let stream, _) = delivery, !headDelivered, headerParser.headComplete {
            deliverHead(stream)
        }
        return bytes.count
    }

    fileprivate func sendBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard case .uploaded(let upload) = outgoing else { return 0 }
        switch upload.read(into: buffer) {
        case .bytes(let count): return count
        case .end: return 0
        case .pause: return Int(CURL_READFUNC_PAUSE)
        case .abort: return Int(CURL_READFUNC_ABORT)
        }
    }

    /// Back to the body's start, when libcurl sends it again on a new connection (a reused one was closed).
    fileprivate func seekBody(to offset: curl_off_t, origin: Int32) -> Int32 {
        guard case .uploaded(let upload) = outgoing, offset == 0, origin == SEEK_SET, upload.rewind() else {
            return CURL_SEEKFUNC_CANTSEEK
        }
        return CURL_SEEKFUNC_OK
    }

    /// Hands the head to the task waiting in `stream`, the body to follow through `stream`.
    private func deliverHead(_ stream: CurlResponseStream) {
        headDelivered = true
        var versionCode = 0
        _ = ccurl_easy_getinfo_long(easy.raw, CURLINFO_HTTP_VERSION, &versionCode)
        var status = headerParser.status ?? 0
        if status == 0 { _ = ccurl_easy_getinfo_long(easy.raw, CURLINFO_RESPONSE_CODE, &status) }
        let response = StreamingResponse(
            status: status, url: url, headers: headerParser.headers, httpVersion: Self.versionName(versionCode),
            body: ResponseBody(source: stream))
        headContinuation?.resume(returning: .success(response))
        headContinuation = nil
    }

    // MARK: Completion (engine thread)

    /// What the transfer came to, while its handle is still in the multi handle (CURLINFO is read here). A
    /// streamed transfer's head and body waiters are told at once; a buffered transfer's result is returned,
    /// for ``deliver(_:)`` once the handle was recycled.
    func conclude(_ ending: Ending) -> Result<HTTPResponse, TransportError>? {
        switch delivery {
        case .buffered:
            switch ending {
            case .done(let code): return outcome(code)
            case .failed(let error): return .failure(error)
            }
        case .streamed(let stream, let upload):
            upload?.close()
            let end: Result<HTTPHeaders, TransportError>
            switch ending {
            case .done(let code) where code == CURLE_OK:
                if !headDelivered { deliverHead(stream) }
                end = .success(headerParser.trailers)
            case .done(let code):
                end = .failure(streamFailure(code, upload: upload))
            case .failed(let error):
                end = .failure(error)
            }
            if case .failure(let error) = end, let headContinuation {
                headContinuation.resume(returning: .failure(error))
                self.headContinuation = nil
            }
            stream.finish(end)
            return nil
        }
    }

    /// Resumes the buffered transfer's caller.
    func deliver(_ result: Result<HTTPResponse, TransportError>) {
        continuation?.resume(returning: result)
        continuation = nil
    }

    /// A transfer the engine never ran (refused, cancelled while queued, shut down, not added): its waiters
    /// get `error`.
    func abandon(_ error: TransportError) {
        if let result = conclude(.failed(error)) { deliver(result) }
    }

    /// The error of a streamed transfer libcurl ended with `code`: the body's own failure when the read
    /// callback aborted, a cut-off answer when the connection failed after the head.
    private func streamFailure(_ code: CURLcode, upload: CurlUpload?) -> TransportError {
        if code == CURLE_ABORTED_BY_CALLBACK, let failure = upload?.failure { return failure }
        var error = failure(code).transportError(url: url)
        if headDelivered, [.connect, .protocolError].contains(error.kind) {
            error.kind = .interrupted
        }
        return error
    }

    private func failure(_ code: CURLcode) -> CurlFailure {
        let handle = easy.raw
        var connectCode = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_HTTP_CONNECTCODE, &connectCode)
        var newConnections = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &newConnections)
        var headerBytes = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_HEADER_SIZE, &headerBytes)
        var tlsDoneMicroseconds: curl_off_t = 0
        _ = ccurl_easy_getinfo_off_t(handle, CURLINFO_APPCONNECT_TIME_T, &tlsDoneMicroseconds)
        let maxBodySize: Int
        if case .buffered(let cap) = delivery { maxBodySize = cap } else { maxBodySize = 0 }
        return CurlFailure(
            code: code, detail: scrubbed(easy.errorText), usedProxy: usedProxy,
            proxyConnectStatus: connectCode, bodyCapExceeded: bodyCapExceeded, maxBodySize: maxBodySize,
            closedRightAfterTLSHandshake: url.scheme?.lowercased() == "https" && newConnections > 0
                && headerBytes == 0 && tlsDoneMicroseconds > 0,
            headerBlockOpen: headerParser.state == .inBlock)
    }

    /// The outcome of a buffered transfer libcurl reported done with `code`.
    private func outcome(_ code: CURLcode) -> Result<HTTPResponse, TransportError> {
        guard code == CURLE_OK else { return .failure(failure(code).transportError(url: url)) }
        let handle = easy.raw
        var status = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var versionCode = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &versionCode)
        var totalMicroseconds: curl_off_t = 0
        _ = ccurl_easy_getinfo_off_t(handle, CURLINFO_TOTAL_TIME_T, &totalMicroseconds)
        let response = HTTPResponse(
            status: status, url: url, headers: headerParser.headers, body: body,
            httpVersion: Self.versionName(versionCode),
            duration: .microseconds(totalMicroseconds))
        return .success(response)
    }

    /// Built only when a transfer failed: most requests never need it.
    private func scrubbed(_ text: String) -> String {
        LogScrubber(url: url, proxy: proxy, headerValues: headers.map(\.value)).scrub(text)
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

/// `CURLOPT_READFUNCTION`: fills libcurl's buffer with the next bytes of a streamed request body.
private let curlReadCallback: ccurl_data_callback = { buffer, size, count, userdata in
    guard let userdata, let buffer else { return Int(CURL_READFUNC_ABORT) }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.sendBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

/// `CURLOPT_SEEKFUNCTION`: libcurl asks to send a streamed request body again from its start.
private let curlSeekCallback: ccurl_seek_callback = { userdata, offset, origin in
    guard let userdata else { return CURL_SEEKFUNC_CANTSEEK }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.seekBody(to: offset, origin: origin)
}
