/// Sends one request whose body may stream, and hands back the response head as soon as it arrives with the
/// body still streaming. The egress route stands on it; the flow engine needs only ``HTTPClient``.
///
/// Implementations keep the contract of ``HTTPClient`` (no redirects followed, no cookies sent or stored) and
/// more, because the caller relays what it gets as it gets it:
/// - the request goes out with its method, URL and headers as given, plus `User-Agent` when
///   ``TransportOptions/userAgent`` is set and the request has none; the body's framing (`Content-Length` or
///   chunked) follows ``RequestBody``, so `Content-Length` and `Transfer-Encoding` fields of the request are
///   ignored;
/// - nothing is added for the body's encoding: no `Accept-Encoding` unless the request carries one, and the
///   response body arrives as the server sent it, with its `Content-Encoding`, never decoded;
/// - the body arrives with backpressure: while the consumer does not ask for more, the transfer stops reading
///   from the server, so a slow consumer holds a small, fixed amount of memory whatever the body's size;
///   likewise a streamed request body is read from its sequence only as fast as the server takes it;
/// - ``TransportOptions/timeout`` bounds how long the server may stay silent (before the head and between
///   parts of the body), not the whole transfer, which may last as long as the consumer takes;
///   ``TransportOptions/maxBodySize`` does not apply (the consumer decides what to keep);
/// - cancelling the task waiting for the head, cancelling a task waiting in the body's `next()`, calling
///   ``ResponseBody/cancel()`` or dropping the ``ResponseBody`` aborts the transfer and closes its connection.
public protocol StreamingHTTPClient: Sendable {
    /// Sends `request` and returns once the response head (the final one: interim 1xx answers are skipped)
    /// has arrived; its body follows through ``StreamingResponse/body``.
    func stream(_ request: StreamingRequest, options: TransportOptions) async throws(TransportError) -> StreamingResponse
}
