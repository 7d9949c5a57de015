/// Sends one request and returns its response. The flow engine depends on this protocol only; the libcurl
/// client (`CurlTransport`) and the tests' fakes implement it.
///
/// Implementations must not follow redirects, send or store cookies, or add headers beyond what
/// ``TransportOptions`` asks for (`User-Agent`) and what transparent decompression needs (`Accept-Encoding`).
public protocol HTTPClient: Sendable {
    func send(_ request: HTTPRequest, options: TransportOptions) async throws(TransportError) -> HTTPResponse

    /// The executor callers should run request-heavy tasks on, when the client has one: the thread that
    /// performs transfers, where a finished request resumes its caller without a thread hop. nil (the
    /// default) when the client has no such thread.
    var preferredTaskExecutor: (any TaskExecutor)? { get }
}

extension HTTPClient {
    public var preferredTaskExecutor: (any TaskExecutor)? { nil }
}
