import Foundation

/// How the egress route's paths map to a site's URLs and back (SPEC section 10).
///
/// A client names a path of the site after a prefix of the route's own: `/v1/sites/NAME/proxy` on the socket,
/// nothing on the site's loopback listener. What follows the prefix, `/PATH?QUERY`, goes to `base_url` +
/// `/PATH?QUERY` with its bytes as the client sent them (percent-encoding is kept, never decoded and encoded
/// again). A `Location` the site answers that points within `base_url` comes back under the prefix, so a client
/// that follows it stays on the route; one that points elsewhere is left as it is.
public struct ProxyAddress: Sendable, Hashable {
    /// Why a client's path cannot be sent to the site.
    public enum PathError: Error, Sendable, Hashable, CustomStringConvertible {
        /// A `.` or `..` segment: the path would leave the folder `base_url` names, or mean another path than the
        /// one the cookies are chosen for.
        case dotSegment
        /// The path does not start with `/`, or holds what no URL may (a space, a fragment).
        case invalid

        public var description: String {
            switch self {
            case .dotSegment: "the path has a '.' or '..' segment"
            case .invalid: "the path is not a valid URL path"
            }
        }
    }

    /// The site's `base_url`.
    public let base: URL
    /// The client's side: `/v1/sites/NAME/proxy`, or "" on a listener.
    public let prefix: String
    /// `scheme://authority` and the base's path without its trailing `/`.
    private let baseText: String
    /// The base's percent-encoded path without its trailing `/` ("" for the root).
    private let basePath: String
    private let scheme: String
    private let host: String
    private let port: Int?

    public init(base: URL, prefix: String) {
        self.base = base
        self.prefix = prefix
        let components = URLComponents(url: base, resolvingAgainstBaseURL: false)
        var path = components?.percentEncodedPath ?? ""
        while path.hasSuffix("/") { path.removeLast() }
        basePath = path
        scheme = (base.scheme ?? "").lowercased()
        host = (base.host ?? "").lowercased()
        port = base.port ?? Self.defaultPort(of: scheme)
        var authority = components ?? URLComponents()
        authority.percentEncodedPath = ""
        authority.percentEncodedQuery = nil
        authority.percentEncodedFragment = nil
        baseText = (authority.string ?? base.absoluteString) + path
    }

    /// The site's URL for what a client wrote after the prefix: "" or `/PATH` with an optional `?QUERY`, or
    /// `?QUERY` alone (both meaning the root of `base_url`).
    public func upstreamURL(_ rest: Substring) throws(PathError) -> URL {
        var path = rest
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            path = rest[..<mark]
            query = rest[rest.index(after: mark)...]
        }
        if path.isEmpty { path = "/" }
        guard path.first == "/", !rest.contains("#") else { throw .invalid }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) where Self.isDotSegment(segment) {
            throw .dotSegment
        }
        var text = baseText
        text += path
        if let query {
            text += "?"
            text += query
        }
        guard let url = URL(string: text) else { throw .invalid }
        return url
    }

    /// The client's `Location` for the site's `location` (resolved against `requestURL`, the URL that answered),
    /// when it points within `base_url`: the prefix, the rest of the path, the query and the fragment. Nil when
    /// it points elsewhere (another origin, or outside `base_url`'s path) or cannot be read: it then goes to the
    /// client as the site wrote it.
    public func clientLocation(_ location: String, requestURL: URL) -> String? {
        guard let target = URL(string: location, relativeTo: requestURL)?.absoluteURL,
            let parts = URLComponents(url: target, resolvingAgainstBaseURL: false),
            (target.scheme ?? "").lowercased() == scheme, (target.host ?? "").lowercased() == host,
            (target.port ?? Self.defaultPort(of: scheme)) == port
        else { return nil }
        let path = parts.percentEncodedPath
        guard basePath.isEmpty || path == basePath || path.hasPrefix(basePath + "/") else { return nil }
        var rest = String(path.dropFirst(basePath.count))
        if rest.isEmpty { rest = "/" }
        var text = prefix + rest
        if let query = parts.percentEncodedQuery { text += "?" + query }
        if let fragment = parts.percentEncodedFragment { text += "#" + fragment }
        return text
    }

    /// `.` and `..`, also percent-encoded (`%2e`), which URL parsers and servers resolve (RFC 3986 section 5.2.4).
    static func isDotSegment(_ segment: Substring) -> Bool {
        let decoded = segment.lowercased().replacingOccurrences(of: "%2e", with: ".")
        return decoded == "." || decoded == ".."
    }

    static func defaultPort(of scheme: String) -> Int? {
        switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
    }
}
