import Foundation
import HTTPTransport
import SiteConfig

/// Judges whether a site's answer to a proxied request says the session is gone, by the site's
/// `egress.logged_out` rule (SPEC section 10): any one of its tests matching is enough. A site that wrote no rule
/// has the default SiteConfig derives (``LoggedOutRule/derived(login:check:baseURL:)``): a 401, a redirect to its
/// login page, or an answer to its check's request with a status the check does not accept.
///
/// Made once per site definition (it compiles the rule's pattern) and used for every answer; pure, so the
/// socket's route and its tests call it the same way.
public struct LoggedOutJudge: Sendable {
    /// Why an answer was judged logged out (names and numbers only: never a header value or body text).
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// The status is one of `status:`.
        case status(Int)
        /// The request's URL matches `url_matches:`.
        case url
        /// The redirect's `Location` matches `url_matches:`.
        case location
        /// The body's first bytes contain `body_contains:`.
        case body
        /// A redirect to the login flow's first page (the default rule).
        case loginRedirect
        /// The check's own request answered with a status the check does not accept (the default rule).
        case check(Int)

        public var description: String {
            switch self {
            case .status(let code): "status \(code)"
            case .url: "the URL matches url_matches"
            case .location: "the redirect's Location matches url_matches"
            case .body: "the body contains body_contains"
            case .loginRedirect: "a redirect to the login page"
            case .check(let code): "status \(code) on the check's URL, which the check does not accept"
            }
        }
    }

    /// A rule whose `url_matches` is not a valid NSRegularExpression (a site file's rule never is: loading
    /// checks it).
    public struct InvalidPattern: Error, Sendable, CustomStringConvertible {
        public var pattern: String
        public var description: String { "egress.logged_out.url_matches: invalid regular expression '\(pattern)'" }
    }

    public let rule: LoggedOutRule
    private let urlPattern: NSRegularExpression?
    private let bodyNeedle: [UInt8]?

    public init(_ rule: LoggedOutRule) throws(InvalidPattern) {
        self.rule = rule
        if let pattern = rule.urlPattern {
            do {
                urlPattern = try NSRegularExpression(pattern: pattern)
            } catch {
                throw InvalidPattern(pattern: pattern)
            }
        } else {
            urlPattern = nil
        }
        bodyNeedle = rule.bodyText.map { Array($0.utf8) }
    }

    /// Whether the body must be looked at to judge this answer: the rule has `body_contains`, the status and
    /// the URLs did not already decide, and the body can be read as the site sent it (``canInspectBody(_:)``).
    /// When false, ``judge(status:url:headers:bodyPrefix:)`` needs no body.
    public func needsBody(status: Int, url: URL, headers: HTTPHeaders, method: String) -> Bool {
        guard bodyNeedle != nil, judgeWithoutBody(status: status, url: url, headers: headers, method: method) == nil else { return false }
        return Self.hasBody(status: status, method: method) && Self.canInspectBody(headers)
    }

    /// The reason the answer is logged out, or nil when it is not.
    ///
    /// - Parameters:
    ///   - url: the URL the request went to (the transport follows no redirect, so it is the one that answered).
    ///   - bodyPrefix: the first bytes of the body as received, or nil when the body was not read; only
    ///     ``LoggedOutRule/bodyPrefixLimit`` bytes of it are looked at, and none when the body is
    ///     content-encoded (``canInspectBody(_:)``).
    ///   - method: the request's method (the check's own request is judged by the check's statuses).
    public func judge(status: Int, url: URL, headers: HTTPHeaders, bodyPrefix: Data?, method: String = "GET") -> Reason? {
        if let reason = judgeWithoutBody(status: status, url: url, headers: headers, method: method) { return reason }
        guard let needle = bodyNeedle, let bodyPrefix, Self.canInspectBody(headers) else { return nil }
        return Self.contains(bodyPrefix.prefix(LoggedOutRule.bodyPrefixLimit), needle) ? .body : nil
    }

    private func judgeWithoutBody(status: Int, url: URL, headers: HTTPHeaders, method: String) -> Reason? {
        if rule.statuses.contains(status) { return .status(status) }
        if !rule.loginPaths.isEmpty, (300...399).contains(status), let location = headers["Location"],
            let target = URL(string: location, relativeTo: url)?.absoluteURL, Self.sameOrigin(target, url),
            rule.loginPaths.contains(Self.pathAndQuery(of: target, withQuery: false))
        {
            return .loginRedirect
        }
        if let check = rule.check, method == check.method, !check.accepts(status),
            !(check.followsRedirects && (300...399).contains(status)),
            Self.pathAndQuery(of: url, withQuery: true) == check.pathAndQuery
        {
            return .check(status)
        }
        guard let urlPattern else { return nil }
        if Self.matches(urlPattern, url.absoluteString) { return .url }
        // A redirect to the login page: the Location names where the site sends a logged-out client.
        if (300...399).contains(status), let location = headers["Location"],
            let target = URL(string: location, relativeTo: url)?.absoluteURL,
            Self.matches(urlPattern, target.absoluteString)
        {
            return .location
        }
        return nil
    }

    /// Whether the body's bytes are the text the site wrote: no `Content-Encoding` but `identity`. An encoded
    /// body (gzip, br...) passes through the daemon as it is and is not decoded, so its text cannot be seen.
    public static func canInspectBody(_ headers: HTTPHeaders) -> Bool {
        headers.values(for: "Content-Encoding").allSatisfy { value in
            value.split(separator: ",").allSatisfy { $0.trimmingCharacters(in: .whitespaces).lowercased() == "identity" }
        }
    }

    /// Whether an answer to `method` with `status` carries a body at all (RFC 9110 sections 6.4.1, 9.3.2).
    public static func hasBody(status: Int, method: String) -> Bool {
        method != "HEAD" && !(100...199).contains(status) && status != 204 && status != 304
    }

    private static func sameOrigin(_ one: URL, _ other: URL) -> Bool {
        one.scheme?.lowercased() == other.scheme?.lowercased() && one.host?.lowercased() == other.host?.lowercased()
            && one.port == other.port
    }

    /// As ``LoggedOutRule/sameOriginPath(of:baseURL:withQuery:)`` writes it: percent-encoded, `/` for none.
    private static func pathAndQuery(of url: URL, withQuery: Bool) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let encoded = components?.percentEncodedPath ?? ""
        let path = encoded.isEmpty ? "/" : encoded
        guard withQuery, let query = components?.percentEncodedQuery else { return path }
        return path + "?" + query
    }

    private static func matches(_ pattern: NSRegularExpression, _ text: String) -> Bool {
        pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    private static func contains(_ haystack: Data, _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return needle.isEmpty }
        return haystack.withUnsafeBytes { bytes -> Bool in
            let first = needle[0]
            var index = 0
            let last = bytes.count - needle.count
            while index <= last {
                if bytes[index] == first, needle.indices.allSatisfy({ bytes[index + $0] == needle[$0] }) { return true }
                index += 1
            }
            return false
        }
    }
}
