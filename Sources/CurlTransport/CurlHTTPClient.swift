import Foundation
import HTTPTransport

/// The libcurl implementation of ``HTTPClient``.
///
/// One libcurl multi handle, driven by one dedicated thread, carries every request of the client: requests
/// are queued to that thread, run concurrently, and their continuations resume as transfers finish. There is
/// no thread per request. The thread is also a task executor (``preferredTaskExecutor``), so callers can keep
/// their request-heavy tasks on it. Connections stay open in the multi handle's cache and are reused for later requests
/// to the same host (and the same pinned address); the DNS cache is shared the same way.
///
/// The client sends exactly the request it is given plus `User-Agent` (when ``TransportOptions/userAgent`` is
/// set) and `Accept-Encoding` (bodies are decoded transparently; the response keeps the server's
/// `Content-Encoding` header). It never follows redirects, never sends or stores cookies (libcurl's cookie
/// engine is off) and ignores proxy environment variables.
///
/// ``TransportOptions/resolve`` pins apply to the requests sent with those options only: one client serves
/// sites that pin the same name to different addresses (or not at all), and a connection made for one pin is
/// never reused for a request with another.
///
/// Call ``shutdown()`` to stop the thread; dropping the last reference does the same.
public final class CurlHTTPClient: HTTPClient, StreamingHTTPClient, Sendable {
    /// Limits of the shared connection pool.
    public struct Configuration: Sendable, Hashable {
        /// Simultaneous connections to one host; further transfers wait in libcurl's queue. 0 = no limit.
        public var maxConnectionsPerHost: Int
        /// Simultaneous connections overall. 0 = no limit.
        public var maxTotalConnections: Int
        /// Idle connections kept open for reuse.
        public var idleConnectionCacheSize: Int

        public init(maxConnectionsPerHost: Int = 0, maxTotalConnections: Int = 0, idleConnectionCacheSize: Int = 64) {
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.maxTotalConnections = maxTotalConnections
            self.idleConnectionCacheSize = idleConnectionCacheSize
        }
    }

    private let engine: CurlMultiEngine

    /// Creates the multi handle and starts its thread.
    /// - Throws: ``TransportError`` of kind `.other` when libcurl cannot initialise or the thread cannot start.
    public init(configuration: Configuration = Configuration()) throws(TransportError) {
        engine = try CurlMultiEngine(configuration: configuration)
        try engine.start()
    }

    deinit { engine.shutdown() }

    /// Sends `request` and returns the complete response (final header block, body decoded and capped).
    ///
    /// A request `Content-Length` header is ignored: libcurl derives it from the body. Cancelling the calling
    /// task aborts the transfer and throws an error of kind `.other`.
    public func send(_ request: HTTPRequest, options: TransportOptions) async throws(TransportError) -> HTTPResponse {
        let transfer = try CurlTransfer(
            id: engine.makeID(), request: request, options: options, makeEasyHandle: { self.engine.makeEasyHandle(for: $0) })
        let engine = self.engine
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: CurlTransfer.Completion) in
                transfer.continuation = continuation
                switch engine.submit(transfer) {
                case nil:
                    break
                case .cancelled?:
                    transfer.continuation = nil
                    continuation.resume(returning: .failure(CurlMultiEngine.cancelledError(request.url)))
                case .shutDown?:
                    transfer.continuation = nil
                    continuation.resume(returning: .failure(CurlMultiEngine.shutDownError(request.url)))
                }
            }
        } onCancel: {
            engine.cancel(id: transfer.id)
        }
        return try result.get()
    }

    /// Sends `request` and returns as soon as the final response head arrived; the body follows through
    /// ``StreamingResponse/body`` as the server sends it (``StreamingHTTPClient`` has the contract).
    ///
    /// The transfer runs on the same thread and connection pool as ``send(_:options:)``, with the same
    /// options applied, except that nothing is decoded (no `Accept-Encoding` of libcurl's,
    /// `CURLOPT_HTTP_CONTENT_DECODING` off), ``TransportOptions/timeout`` bounds silence instead of the whole
    /// transfer (`CURLOPT_LOW_SPEED_LIMIT` 1 byte a second for that long; libcurl leaves a transfer paused for its
    /// reader out of it), and ``TransportOptions/maxBodySize`` does not apply. Backpressure: at most 8 parts
    /// (of up to 16 KiB) wait for the reader before the transfer pauses (`CURL_WRITEFUNC_PAUSE`), and a
    /// streamed request body is read at most 2 chunks ahead of libcurl, which pauses its upload
    /// (`CURL_READFUNC_PAUSE`) while none is ready.
    public func stream(_ request: StreamingRequest, options: TransportOptions) async throws(TransportError) -> StreamingResponse {
        let engine = self.engine
        let transfer = try CurlTransfer(id: engine.makeID(), streaming: request, options: options, engine: engine)
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: CurlTransfer.HeadCompletion) in
                transfer.headContinuation = continuation
                switch engine.submit(transfer) {
                case nil:
                    transfer.startUpload()
                case .cancelled?:
                    transfer.abandon(CurlMultiEngine.cancelledError(request.url))
                case .shutDown?:
                    transfer.abandon(CurlMultiEngine.shutDownError(request.url))
                }
            }
        } onCancel: {
            engine.cancel(id: transfer.id)
        }
        return try result.get()
    }

    /// The transport thread, as a task executor (SE-0417). A task that prefers it runs its nonisolated async
    /// code there: it sends a request, the transfer's completion resumes it on the same thread, and the work
    /// up to its next request (parsing the page, the cookie jar) follows without a hand-off to Swift's global
    /// pool and back. ``FlowEngine`` runs flows on it; a caller that starts many flows saves the two hops per
    /// flow by creating their tasks with this preference (`addTask(executorPreference:)`).
    ///
    /// Work that blocks must not run on it, as on any event loop: it would stall every transfer. Jobs
    /// enqueued after ``shutdown()`` run on the global concurrent executor instead.
    public var preferredTaskExecutor: (any TaskExecutor)? { engine }

    /// Wakeups the transport thread got for queued work (tests).
    var queueWakeups: Int { engine.queueWakeups.load(ordering: .relaxed) }

    /// Stops the transport thread. Requests queued or running fail with an error of kind `.other`; later
    /// `send` calls fail at once. Returns after the thread exited. Idempotent.
    public func shutdown() { engine.shutdown() }

    /// The linked libcurl's version, such as "7.88.1".
    public static var libcurlVersion: String { CurlLibrary.version }

    /// The TLS library libcurl uses, such as "OpenSSL/3.0.19".
    public static var tlsLibraryVersion: String? { CurlLibrary.sslVersion }

    /// The values of ``TransportOptions/httpVersion`` this libcurl can honour.
    public static var supportedHTTPVersions: Set<TransportOptions.HTTPVersion> {
        var versions: Set<TransportOptions.HTTPVersion> = [.http1_1]
        if CurlLibrary.supportsHTTP2 { versions.insert(.http2) }
        if CurlLibrary.supportsHTTP3 { versions.insert(.http3) }
        return versions
    }
}
