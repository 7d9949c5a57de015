import Foundation

/// A response head, delivered while its body still streams (``StreamingHTTPClient``).
public struct StreamingResponse: Sendable {
    public var status: Int
    /// The URL that answered: the request's URL, since the transport never follows redirects.
    public var url: URL
    /// The fields of the final header block, in order and with repeats.
    public var headers: HTTPHeaders
    /// The protocol version the server answered with, such as "1.1" or "2".
    public var httpVersion: String
    /// The body, as the server sends it. A `HEAD` request and 1xx, 204 and 304 answers have an empty one.
    public var body: ResponseBody

    public init(status: Int, url: URL, headers: HTTPHeaders, httpVersion: String, body: ResponseBody) {
        self.status = status
        self.url = url
        self.headers = headers
        self.httpVersion = httpVersion
        self.body = body
    }
}

/// What a ``ResponseBody`` reads from: the transport's side of one transfer's body.
///
/// An implementation hands out the body's bytes in order, then nil once, then nil again; it asks the server for
/// more only while its consumer keeps asking. It must be safe to call `cancel()` from any thread at any time,
/// also after the end.
public protocol ResponseBodySource: Sendable {
    /// The next part of the body, nil at its end. Throws when the transfer failed or was cancelled (also when
    /// the calling task is cancelled while it waits, which aborts the transfer).
    func next() async throws(TransportError) -> Data?
    /// The trailer fields (RFC 9110 section 6.5) that followed a chunked body; empty until the end was read,
    /// and when there were none.
    var trailers: HTTPHeaders { get }
    /// Aborts the transfer unless it already ended; a later `next()` throws an error of kind `.cancelled`.
    func cancel()
}

/// A response body arriving in parts: an async sequence of `Data`, iterated once.
///
/// Dropping the body (and every iterator made from it) before its end aborts the transfer, so a caller that
/// stops reading never leaves a connection held open.
public final class ResponseBody: AsyncSequence, Sendable {
    public typealias Element = Data
    public typealias Failure = TransportError

    private let source: any ResponseBodySource

    public init(source: any ResponseBodySource) {
        self.source = source
    }

    deinit { source.cancel() }

    public func makeAsyncIterator() -> Iterator { Iterator(body: self) }

    /// The trailer fields of a chunked body; empty until the whole body was read.
    public var trailers: HTTPHeaders { source.trailers }

    /// Aborts the transfer (a no-op after its end); later reads throw an error of kind `.cancelled`.
    public func cancel() { source.cancel() }

    /// Reads the rest of the body into memory.
    /// - Throws: the transfer's error, or one of kind `.bodyTooLarge` (and the transfer is aborted) once more
    ///   than `limit` bytes arrived.
    public func collect(upTo limit: Int) async throws(TransportError) -> Data {
        var collected = Data()
        while let part = try await source.next() {
            guard collected.count + part.count <= limit else {
                source.cancel()
                throw TransportError(kind: .bodyTooLarge, url: nil, message: "the body is larger than \(limit) bytes")
            }
            collected.append(part)
        }
        return collected
    }

    /// Reads the body's parts in order; holds the body, so the transfer lives as long as its iterator.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = Data
        public typealias Failure = TransportError

        let body: ResponseBody

        public mutating func next() async throws(TransportError) -> Data? {
            try await body.source.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(TransportError) -> Data? {
            try await body.source.next()
        }
    }
}
