import Foundation
import HTTPTransport
import SiteConfig

/// Which header fields the egress route passes on, each way (SPEC section 10).
///
/// A request keeps the client's fields except those that belong to one connection or to the daemon; the site
/// sees the session's Cookie and User-Agent instead of the client's. An answer keeps the site's fields except
/// those of one connection and its `Set-Cookie`, which the daemon absorbs: no cookie reaches the client.
public enum ProxyHeaders {
    /// Fields that describe one connection, never the message, so no proxy forwards them (RFC 9110 section
    /// 7.6.1, RFC 9112 section 9.6), with `Proxy-Connection`, which old clients still send. Lower case.
    public static let connectionFields: [String] = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
    ]

    /// Fields of a client's request that the daemon replaces or answers itself, lower case:
    /// - `host`: the site's, from `base_url`;
    /// - `cookie`: the session's, by the jar's rules for the URL;
    /// - `user-agent`: the session's (the transport sends it), as sites that bind a session to it expect;
    /// - `content-length`: the transport frames the body;
    /// - `expect`: `100-continue` is a matter between the client and the daemon;
    /// - `proxy-authorization`: credentials for a proxy, which the site is not.
    public static let replacedRequestFields: [String] = [
        "host", "cookie", "user-agent", "content-length", "expect", "proxy-authorization",
    ]

    /// Fields of an answer that never reach the client, lower case: the cookies it sets are the session's.
    public static let absorbedResponseFields: [String] = ["set-cookie", "set-cookie2"]

    /// The fields a client's request carries to the site.
    ///
    /// - Parameters:
    ///   - client: the fields as the client sent them.
    ///   - siteHeaders: the site's `http.headers`, added where the client sent no field of that name (a step's
    ///     own headers override them the same way in a login).
    ///   - inspectsBody: the site's rule looks into bodies (`body_contains`): `Accept-Encoding` is dropped so
    ///     that the site answers in plain bytes the rule can read (the daemon decodes nothing).
    public static func request(_ client: HTTPHeaders, siteHeaders: [HTTPSettings.Header], inspectsBody: Bool) -> HTTPHeaders {
        let dropped = Dropped(fixed: inspectsBody ? droppedFromRequestInspected : droppedFromRequest, listedIn: client)
        var headers = HTTPHeaders()
        headers.reserveCapacity(client.count + siteHeaders.count)
        for field in client where !dropped.contains(field.name) { headers.add(field) }
        for header in siteHeaders where !dropped.contains(header.name) && !headers.contains(header.name) {
            headers.add(name: header.name, value: header.value)
        }
        return headers
    }

    /// The fields of the site's answer that go to the client, before `Location` is rewritten: without the
    /// connection's fields and without `Set-Cookie`.
    public static func response(_ upstream: HTTPHeaders) -> HTTPHeaders {
        let dropped = Dropped(fixed: droppedFromResponse, listedIn: upstream)
        var headers = HTTPHeaders()
        headers.reserveCapacity(upstream.count)
        for field in upstream where !dropped.contains(field.name) { headers.add(field) }
        return headers
    }

    static let droppedFromRequest = connectionFields + replacedRequestFields
    static let droppedFromRequestInspected = droppedFromRequest + ["accept-encoding"]
    static let droppedFromResponse = connectionFields + absorbedResponseFields

    /// The names not forwarded from one message: `fixed` (the connection's fields and those of the direction)
    /// and the names its `Connection` fields list (RFC 9110 section 7.6.1: "a proxy ... MUST remove ... each
    /// connection option"). Every proxied exchange asks this of each field both ways, so names are compared
    /// in place, ASCII case-insensitively (as field names compare), never lowercased into new strings.
    struct Dropped {
        let fixed: [String]
        let options: [String]

        init(fixed: [String], listedIn headers: HTTPHeaders) {
            self.fixed = fixed
            var options: [String] = []
            for value in headers.values(for: "Connection") {
                options.append(contentsOf: ConnectionOptions(value).map(String.init))
            }
            self.options = options
        }

        func contains(_ name: String) -> Bool {
            fixed.contains { $0.caseInsensitiveEquals(name) } || options.contains { $0.caseInsensitiveEquals(name) }
        }
    }
}
