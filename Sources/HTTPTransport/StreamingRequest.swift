import Foundation

/// A request for ``StreamingHTTPClient``: like ``HTTPRequest``, with a body that may arrive piece by piece.
public struct StreamingRequest: Sendable {
    /// The method token, upper case (`GET`, `POST`, ...). Any token is allowed.
    public var method: String
    public var url: URL
    public var headers: HTTPHeaders
    public var body: RequestBody

    public init(method: String = "GET", url: URL, headers: HTTPHeaders = HTTPHeaders(), body: RequestBody = .empty) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// A request body and how it is framed on the wire.
public enum RequestBody: Sendable {
    /// No body. `POST`, `PUT` and `PATCH` still announce an empty one (`Content-Length: 0`, RFC 9110
    /// section 8.6); other methods send no `Content-Length`.
    case empty
    /// A body held in memory, sent with its `Content-Length`.
    case data(Data)
    /// A body read from `chunks` as the server takes it, at most a couple of chunks ahead. With `length`,
    /// sent with that `Content-Length`, and the chunks must add up to exactly that many bytes (fewer or more
    /// fail the transfer with ``TransportError/Kind/requestBody``); without, sent chunked (HTTP/1.1) or as
    /// DATA frames until the end (HTTP/2). A sequence that throws fails the transfer the same way. Empty chunks
    /// are skipped. The sequence is iterated once, by one task the transport starts, which is cancelled when
    /// the transfer ends.
    ///
    /// A streamed body cannot be sent twice, so when a reused connection turns out to be closed after part of
    /// the body went out, the transfer fails (kind ``TransportError/Kind/connect``) instead of being retried on a
    /// new one: a caller that can send the body again may retry.
    case stream(length: Int64?, chunks: any AsyncSequence<Data, any Error> & Sendable)
}
