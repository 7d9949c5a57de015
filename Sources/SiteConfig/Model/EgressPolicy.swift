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

    public init(statuses: [Int] = LoggedOutRule.defaultStatuses, urlPattern: String? = nil, bodyText: String? = nil) {
        self.statuses = statuses
        self.urlPattern = urlPattern
        self.bodyText = bodyText
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
