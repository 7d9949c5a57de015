import Foundation

/// How clients' requests through the daemon are handled for this site (`egress:`, SPEC section 10).
public struct EgressPolicy: Sendable, Hashable {
    /// What the daemon does with a request that met a logged-out answer, once the one login it starts has
    /// ended (`retry:`; the raw values are the YAML spellings).
    public enum Retry: String, Sendable, Hashable, CaseIterable {
        /// Replay the request once if its method is idempotent: GET, HEAD, OPTIONS, PUT, DELETE.
        case idempotent
        /// Never replay: the client gets the logged-out answer, marked `SessionKeeper-Session: renewed`.
        case never
        /// Replay any request once, POST and PATCH included.
        case always

        /// The methods `idempotent` replays (RFC 9110 section 9.2.2, as SPEC section 10 lists them).
        public static let idempotentMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]

        /// Whether a request with `method` (a token, compared as written: methods are case-sensitive, RFC 9110
        /// section 9.1) is sent again after the login.
        public func allowsReplay(of method: String) -> Bool {
            switch self {
            case .idempotent: Self.idempotentMethods.contains(method)
            case .never: false
            case .always: true
            }
        }
    }

    /// What a logged-out answer looks like.
    public var loggedOut: LoggedOutRule
    /// Whether a request that met one is replayed after the login.
    public var retry: Retry
    /// The loopback address of the site's plain-HTTP listener; nil when it has none.
    public var listen: LoopbackListenAddress?

    public init(loggedOut: LoggedOutRule = LoggedOutRule(), retry: Retry = .idempotent, listen: LoopbackListenAddress? = nil) {
        self.loggedOut = loggedOut
        self.retry = retry
        self.listen = listen
    }
}

/// `egress.logged_out`: an answer is logged out when any one of its tests matches.
public struct LoggedOutRule: Sendable, Hashable {
    /// `status:` when the site leaves it out.
    public static let defaultStatuses = [401]
    /// How much of a body `body_contains` looks at: the daemon holds at most this much of an answer back
    /// while it decides, so the text must appear within it.
    public static let bodyPrefixLimit = 64 * 1024

    /// The answer's status is one of these (`status:`; default 401; an empty list tests no status).
    public var statuses: [Int]
    /// The request's URL, or the `Location` of a redirect (resolved against it), matches this
    /// NSRegularExpression anywhere (`url_matches:`).
    public var urlPattern: String?
    /// The first ``bodyPrefixLimit`` bytes of the body contain this text, as UTF-8 bytes (`body_contains:`).
    public var bodyText: String?
    /// Without `egress.logged_out` (SPEC section 10's default): a redirect whose `Location` is one of these paths on
    /// `base_url`'s origin (the login flow's first request, which is where a site sends a logged-out visitor).
    /// Only a redirect's target counts, never the request's own URL. Empty when the site wrote the rule.
    public var loginPaths: [String]
    /// Without `egress.logged_out`: the site's `check`, so that an answer to the check's own request that the check
    /// would judge dead is logged out. Nil when the site wrote the rule or has no check.
    public var check: CheckShape?

    public init(
        statuses: [Int] = LoggedOutRule.defaultStatuses, urlPattern: String? = nil, bodyText: String? = nil,
        loginPaths: [String] = [], check: CheckShape? = nil
    ) {
        self.statuses = statuses
        self.urlPattern = urlPattern
        self.bodyText = bodyText
        self.loginPaths = loginPaths
        self.check = check
    }

    /// What of a site's `check:` tells a dead session on the check's own request without running the check: its
    /// method, its URL's path and query on `base_url`'s origin, and the statuses it accepts. The check's other
    /// expectations (a body, a header, JSON) are left to the check itself.
    public struct CheckShape: Sendable, Hashable {
        public var method: String
        /// The path and query (`/api/me`, `/index.php?do=profile`).
        public var pathAndQuery: String
        /// The final statuses the check accepts; another is a dead session. Empty: any below 400 (a check whose
        /// expectations name no status fails on 400 or more, SPEC section 3).
        public var statuses: [Int]

        /// Whether the check would accept `status`.
        public func accepts(_ status: Int) -> Bool { statuses.isEmpty ? status < 400 : statuses.contains(status) }
        /// Whether the check follows redirects: then a redirect answer is not judged by ``statuses`` (the check
        /// would have looked at where it leads).
        public var followsRedirects: Bool

        public init(method: String, pathAndQuery: String, statuses: [Int], followsRedirects: Bool) {
            self.method = method
            self.pathAndQuery = pathAndQuery
            self.statuses = statuses
            self.followsRedirects = followsRedirects
        }
    }

    /// SPEC section 10's rule for a site that wrote no `egress.logged_out`: a 401; a redirect to the path of the
    /// login flow's first request (unless that is `/`: a redirect to the home page says nothing); or an answer to
    /// the check's own request with a status the check does not accept.
    public static func derived(login: Login, check: Probe?, baseURL: URL) -> LoggedOutRule {
        var rule = LoggedOutRule()
        if case .steps(let steps) = login,
            let first = steps.lazy.compactMap({ step -> RequestStep? in
                if case .request(let request) = step.action { return request }
                return nil
            }).first,
            let path = sameOriginPath(of: first.url, baseURL: baseURL, withQuery: false), path != "/"
        {
            rule.loginPaths = [path]
        }
        if let check, let pathAndQuery = sameOriginPath(of: check.request.url, baseURL: baseURL, withQuery: true) {
            var statuses: [Int] = []
            for expectation in check.request.expect {
                if case .status(let accepted) = expectation.kind { statuses = accepted }
            }
            rule.check = CheckShape(
                method: check.request.method ?? "GET", pathAndQuery: pathAndQuery, statuses: statuses,
                followsRedirects: check.request.followRedirects)
        }
        return rule
    }

    /// The path (and query) of a step's URL when it is written without placeholders and lies on `baseURL`'s origin.
    static func sameOriginPath(of template: Template?, baseURL: URL, withQuery: Bool) -> String? {
        guard let template, template.isLiteral,
            let url = URL(string: template.source, relativeTo: baseURL)?.absoluteURL,
            url.scheme?.lowercased() == baseURL.scheme?.lowercased(), url.host?.lowercased() == baseURL.host?.lowercased(),
            url.port == baseURL.port
        else { return nil }
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components?.percentEncodedPath.isEmpty == false ? components!.percentEncodedPath : "/"
        guard withQuery, let query = components?.percentEncodedQuery else { return path }
        return path + "?" + query
    }
}

/// `egress.listen`: a loopback address and port. Only loopback addresses are accepted, so every client of
/// the listener is a process on this machine whose user the kernel can name.
public struct LoopbackListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address as written, without brackets: an IPv4 address in 127.0.0.0/8, or `::1`.
    public var host: String
    public var port: UInt16
    /// Where the value is written.
    public var mark: SourceMark?

    public init(host: String, port: UInt16, mark: SourceMark? = nil) {
        self.host = host
        self.port = port
        self.mark = mark
    }

    /// True for `::1`.
    public var isIPv6: Bool { host.contains(":") }

    /// `127.0.0.1:8481` or `[::1]:8481`.
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Two listeners on the same socket address (compared as the kernel would bind them).
    public func clashes(with other: LoopbackListenAddress) -> Bool { host == other.host && port == other.port }
}
