/// Sends one request and returns its response. The flow engine depends on this protocol only; the libcurl
/// client (`CurlTransport`) and the tests' fakes implement it.
///
/// Implementations must not follow redirects, send or store cookies, or add headers beyond what
/// ``TransportOptions`` asks for (`User-Agent`) and what transparent decompression needs (`Accept-Encoding`).
public protocol HTTPClient: Sendable {
    func send(_ request: HTTPRequest, options: TransportOptions) async throws(TransportError) -> HTTPResponse
}
