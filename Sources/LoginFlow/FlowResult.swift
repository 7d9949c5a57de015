import CookieJar
import Foundation

/// How long one step took and what it ended with.
public struct StepTiming: Sendable, Hashable {
    public var step: String
    public var duration: Duration
    /// Requests sent (1 + redirects followed); 0 for a plugin step.
    public var requests: Int
    /// The last response's status; nil for a plugin step.
    public var status: Int?
    /// The names of the cookies the step's responses stored, in order, each once (for `login -v`, which shows
    /// the author the names to put under `cookies.essential`); never a value.
    public var cookiesSet: [String]
    /// The step's last response met `login.done_when:`: the login ended with it, its `expect:` and
    /// `extract:` unread.
    public var endedLogin: Bool

    public init(
        step: String, duration: Duration, requests: Int, status: Int?, cookiesSet: [String] = [], endedLogin: Bool = false
    ) {
        self.step = step
        self.duration = duration
        self.requests = requests
        self.status = status
        self.cookiesSet = cookiesSet
        self.endedLogin = endedLogin
    }
}

/// The state of one `cookies.essential` entry after a run.
public struct EssentialCookie: Sendable, Hashable {
    public var name: String
    /// Present and unexpired.
    public var isSet: Bool
    /// nil for a session cookie or when not set.
    public var expires: Date?
    public var domain: String?
    /// How messages name it: the name, with its host when another essential entry has the same name
    /// (`sessionid (idp.example.com)`).
    public var label: String

    public init(name: String, isSet: Bool, expires: Date?, domain: String?, label: String? = nil) {
        self.name = name
        self.isSet = isSet
        self.expires = expires
        self.domain = domain
        self.label = label ?? name
    }
}

/// What a successful login produced.
public struct FlowResult: Sendable {
    public var site: String
    /// Every cookie in the storage after the flow (the new session).
    public var cookies: [Cookie]
    /// One entry per `cookies.essential` name, in that order; all are set on success.
    public var essentialCookies: [EssentialCookie]
    /// The earliest expiry among the essential cookies (nil when all are session cookies or none are
    /// declared): refresh is planned from it.
    public var sessionExpiry: Date? {
        essentialCookies.compactMap(\.expires).min()
    }
    public var steps: [StepTiming]
    /// The URL of the last response, redacted.
    public var finalURL: String?
    public var duration: Duration
    /// When the flow ended, by the engine's clock.
    public var finishedAt: Date
    /// The User-Agent a plugin answered with (a headless browser's), which the session was made with; nil
    /// when none did, and the site's `http.user_agent` was sent.
    public var userAgent: String?
    /// The localStorage a plugin answered with (`origins`), served with the cookies in the `playwright` format.
    public var storageOrigins: [StorageOrigin] = []
}

/// What a successful `check` or `keepalive` run saw.
public struct ProbeResult: Sendable {
    public var site: String
    public var status: Int
    /// Redacted URL of the last response.
    public var url: String
    public var duration: Duration
    /// The essential cookies after the probe (a sliding session may have renewed them).
    public var essentialCookies: [EssentialCookie]
    public var finishedAt: Date
}
