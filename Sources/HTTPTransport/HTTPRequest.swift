import Foundation

/// One HTTP request, as the flow engine builds it. The transport sends exactly this: it never follows
/// redirects, never adds cookies and never stores them (the cookie jar and the flow engine own both).
public struct HTTPRequest: Sendable, Hashable {
    /// The method token, upper case (`GET`, `POST`, ...). Any token is allowed.
    public var method: String
    public var url: URL
    public var headers: HTTPHeaders
    public var body: Data?

    public init(method: String = "GET", url: URL, headers: HTTPHeaders = HTTPHeaders(), body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}
