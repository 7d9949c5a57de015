import Foundation

/// A complete response: status, headers of the final header block, and the body (capped by
/// ``TransportOptions/maxBodySize``).
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    /// The URL that answered: the request's URL, since the transport never follows redirects.
    public var url: URL
    public var headers: HTTPHeaders
    public var body: Data
    /// The protocol version the server answered with, such as "1.1" or "2".
    public var httpVersion: String
    /// Wall time from the start of the transfer to its last byte.
    public var duration: Duration

    public init(
        status: Int, url: URL, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(), httpVersion: String = "1.1",
        duration: Duration = .zero
    ) {
        self.status = status
        self.url = url
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
        self.duration = duration
    }

    /// True for 301, 302, 303, 307 and 308 with a Location header.
    public var isRedirect: Bool { [301, 302, 303, 307, 308].contains(status) && headers["Location"] != nil }

    /// The body decoded as UTF-8, invalid sequences replaced.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}
