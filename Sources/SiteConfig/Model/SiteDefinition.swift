import Foundation

/// One site file (`sites/NAME.yaml`, SPEC section 3), validated, with defaults applied and the
/// config's `defaults:` merged under it.
public struct SiteDefinition: Sendable, Hashable {
    // One site is held in several tables at once (the catalog, the Keeper's entries, each run): a shared,
    // immutable box keeps each of those slots one pointer wide instead of the whole definition (about 850
    // bytes), which is most of the daemon's memory per site when it keeps thousands. A change copies the box.
    private struct Fields: Sendable, Hashable {
        var name: String
        var file: String
        var description: String?
        var baseURL: URL
        var http: HTTPSettings
        var credentials: [CredentialEntry]
        var login: Login
        var doneWhen: [Expectation]
        var check: Probe?
        var keepalive: Probe?
        var refresh: RefreshPolicy
        var cookies: CookiePolicy
        var outputs: [OutputFile]
        var access: AccessPolicy
        var enabled: Bool
        var allowEnv: [String]
        var egress: EgressPolicy
        var learn: Bool
        var warnings: [ConfigDiagnostic] = []
    }

    private final class Box: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    private mutating func update(_ change: (inout Fields) -> Void) {
        var fields = box.fields
        change(&fields)
        box = Box(fields)
    }

    /// The site's name: `name:` or the file stem; matches `[a-z0-9][a-z0-9._-]{0,62}`.
    public var name: String {
        get { box.fields.name }
        set { update { $0.name = newValue } }
    }
    /// Absolute path of the file it was loaded from.
    public var file: String {
        get { box.fields.file }
        set { update { $0.file = newValue } }
    }
    /// One line, shown by `status`.
    public var description: String? {
        get { box.fields.description }
        set { update { $0.description = newValue } }
    }
    /// Relative URLs in steps resolve against it; `main-document-domain` uses its registrable domain.
    public var baseURL: URL {
        get { box.fields.baseURL }
        set { update { $0.baseURL = newValue } }
    }
    /// Transport settings, config defaults merged under.
    public var http: HTTPSettings {
        get { box.fields.http }
        set { update { $0.http = newValue } }
    }
    /// Named credentials in file order.
    public var credentials: [CredentialEntry] {
        get { box.fields.credentials }
        set { update { $0.credentials = newValue } }
    }
    /// How the site logs in.
    public var login: Login {
        get { box.fields.login }
        set { update { $0.login = newValue } }
    }
    /// `login.done_when:` — a step's last response that meets every one of these ends the login successfully
    /// (the app's page reached before the last step); empty: the login runs every step that is not skipped.
    public var doneWhen: [Expectation] {
        get { box.fields.doneWhen }
        set { update { $0.doneWhen = newValue } }
    }
    /// Does the session still live? Run every `check.every`.
    public var check: Probe? {
        get { box.fields.check }
        set { update { $0.check = newValue } }
    }
    /// Touches the site to extend a sliding session.
    public var keepalive: Probe? {
        get { box.fields.keepalive }
        set { update { $0.keepalive = newValue } }
    }
    /// When to log in again, config defaults merged under.
    public var refresh: RefreshPolicy {
        get { box.fields.refresh }
        set { update { $0.refresh = newValue } }
    }
    /// Essential cookies, accept policy, limits.
    public var cookies: CookiePolicy {
        get { box.fields.cookies }
        set { update { $0.cookies = newValue } }
    }
    /// Files rewritten whenever the cookies change.
    public var outputs: [OutputFile] {
        get { box.fields.outputs }
        set { update { $0.outputs = newValue } }
    }
    /// Who else may read the site over the socket.
    public var access: AccessPolicy {
        get { box.fields.access }
        set { update { $0.access = newValue } }
    }
    /// A disabled site is loaded and validated but never logged in.
    public var enabled: Bool {
        get { box.fields.enabled }
        set { update { $0.enabled = newValue } }
    }
    /// Environment variable names that templates may read as `{{ env.NAME }}`.
    public var allowEnv: [String] {
        get { box.fields.allowEnv }
        set { update { $0.allowEnv = newValue } }
    }
    /// How clients' requests through the daemon are handled (SPEC section 10).
    public var egress: EgressPolicy {
        get { box.fields.egress }
        set { update { $0.egress = newValue } }
    }
    /// `learn:` — whether the daemon learns the session's idle timeout and lifetime and acts on them (SPEC
    /// section 7); false: only what the file says decides.
    public var learn: Bool {
        get { box.fields.learn }
        set { update { $0.learn = newValue } }
    }
    /// What loading found worth saying without refusing the file (an `outputs:` mode others may read), as
    /// `check` prints it and the daemon logs it.
    public var warnings: [ConfigDiagnostic] {
        get { box.fields.warnings }
        set { update { $0.warnings = newValue } }
    }

    public init(
        name: String, file: String, description: String? = nil, baseURL: URL, http: HTTPSettings = HTTPSettings(),
        credentials: [CredentialEntry] = [], login: Login, doneWhen: [Expectation] = [], check: Probe? = nil, keepalive: Probe? = nil,
        refresh: RefreshPolicy = RefreshPolicy(), cookies: CookiePolicy = CookiePolicy(), outputs: [OutputFile] = [],
        access: AccessPolicy = AccessPolicy(), enabled: Bool = true, allowEnv: [String] = [],
        egress: EgressPolicy = EgressPolicy(), learn: Bool = true
    ) {
        box = Box(Fields(
            name: name,
            file: file,
            description: description,
            baseURL: baseURL,
            http: http,
            credentials: credentials,
            login: login,
            doneWhen: doneWhen,
            check: check,
            keepalive: keepalive,
            refresh: refresh,
            cookies: cookies,
            outputs: outputs,
            access: access,
            enabled: enabled,
            allowEnv: allowEnv,
            egress: egress,
            learn: learn
        ))
    }

    public static func == (lhs: SiteDefinition, rhs: SiteDefinition) -> Bool {
        lhs.box === rhs.box || lhs.box.fields == rhs.box.fields
    }

    public func hash(into hasher: inout Hasher) { box.fields.hash(into: &hasher) }

    /// The credential source of `name`, if declared.
    public func credential(named name: String) -> CredentialSource? {
        credentials.first { $0.name == name }?.source
    }
}

/// How a site logs in (`login:`).
public enum Login: Sendable, Hashable {
    /// A scripted flow, steps in order.
    case steps([Step])
    /// `login: manual` — the session comes from `sessionkeeper import`; it is kept alive and
    /// checked, and marked needs-attention when it dies.
    case manual
    /// `login: {plugin: NAME, with: {...}}` — one plugin does the whole login and returns cookies.
    case plugin(PluginStep)
}

/// A periodic request: `check:` (does the session live?) or `keepalive:` (extend a sliding session).
public struct Probe: Sendable, Hashable {
    /// `check.every` when not set.
    public static let defaultCheckInterval: Duration = .seconds(15 * 60)
    /// `keepalive.every` when not set.
    public static let defaultKeepaliveInterval: Duration = .seconds(5 * 60)

    /// The request and its expectations (a check without `expect:` expects a 2xx status).
    public var request: RequestStep
    /// `every:` — period between runs.
    public var every: Duration
    /// Where the `check:` / `keepalive:` mapping starts.
    public var mark: SourceMark

    public init(request: RequestStep, every: Duration, mark: SourceMark) {
        self.request = request
        self.every = every
        self.mark = mark
    }
}

/// When to log in again (`refresh:`).
public struct RefreshPolicy: Sendable, Hashable {
    /// Exponential backoff with jitter after a failed login.
    public struct Retry: Sendable, Hashable {
        /// First delay after a failure (default 30s).
        public var initial: Duration
        /// Largest delay (default 30m).
        public var max: Duration
        /// After this many failed logins in 24 hours the site waits for a person (needs-attention).
        public var maxFailuresPerDay: Int

        /// `max_failures_per_day` when the site sets none: enough to ride out an outage, few enough never
        /// to lock an account out (sites commonly lock after 5-50 failures an hour).
        public static let defaultMaxFailuresPerDay = 20
        /// The largest `max_failures_per_day` accepted: more would no longer protect the account.
        public static let maximumMaxFailuresPerDay = 1000

        public init(
            initial: Duration = .seconds(30), max: Duration = .seconds(30 * 60),
            maxFailuresPerDay: Int = Retry.defaultMaxFailuresPerDay
        ) {
            self.initial = initial
            self.max = max
            self.maxFailuresPerDay = maxFailuresPerDay
        }
    }

    /// Log in again this long before the first essential cookie expires (default 10m).
    public var beforeExpiry: Duration
    /// And at least this often; nil = no upper bound.
    public var maxAge: Duration?
    /// Backoff after a failed login.
    public var retry: Retry
    /// The shortest time between two logins that readers start (a reader's `refresh` or `cookies?min_valid=`,
    /// SPEC section 8; default 1m): readers share one budget, however many ask.
    public var minInterval: Duration

    public init(
        beforeExpiry: Duration = .seconds(10 * 60), maxAge: Duration? = nil, retry: Retry = Retry(), minInterval: Duration = .seconds(60)
    ) {
        self.beforeExpiry = beforeExpiry
        self.maxAge = maxAge
        self.retry = retry
        self.minInterval = minInterval
    }
}

/// A site's cookie rules (`cookies:`).
public struct CookiePolicy: Sendable, Hashable {
    /// Which cookies the jar accepts (SPEC section 4); the raw values are the YAML spellings.
    public enum Accept: String, Sendable, Hashable, CaseIterable {
        case always
        case never
        case mainDocumentDomain = "main-document-domain"
    }

    /// Storage limits (`cookies.limits:`); nil fields keep the RFC 6265 section 6.1 minimums.
    public struct Limits: Sendable, Hashable {
        /// Name plus value, in bytes (RFC minimum 4096).
        public var maxCookieBytes: Int?
        /// Per domain (RFC minimum 50).
        public var maxCookiesPerDomain: Int?
        /// In all (RFC minimum 3000).
        public var maxCookies: Int?

        public init(maxCookieBytes: Int? = nil, maxCookiesPerDomain: Int? = nil, maxCookies: Int? = nil) {
            self.maxCookieBytes = maxCookieBytes
            self.maxCookiesPerDomain = maxCookiesPerDomain
            self.maxCookies = maxCookies
        }
    }

    /// The cookies whose absence or expiry means logged out; their expiry drives refresh. Each is a name (the
    /// `base_url` host's cookie), a prefix ending in `*` (DokuWiki's `DW*`), or a name of another host.
    public var essential: [CookieSelector]
    /// Which Set-Cookie headers the jar accepts (default always).
    public var accept: Accept
    /// Keep cookies without Expires/Max-Age across daemon restarts (default true).
    public var persistSessionCookies: Bool
    /// Storage limits.
    public var limits: Limits
    /// What a new login starts from (default: the stored cookies minus the essential ones).
    public var keepOnLogin: KeepOnLogin

    public init(
        essential: [CookieSelector] = [], accept: Accept = .always, persistSessionCookies: Bool = true,
        limits: Limits = Limits(), keepOnLogin: KeepOnLogin = .allButEssential
    ) {
        self.essential = essential
        self.accept = accept
        self.persistSessionCookies = persistSessionCookies
        self.limits = limits
        self.keepOnLogin = keepOnLogin
    }
}

/// Which of a site's stored cookies a new login starts with (`cookies.keep_on_login`, SPEC section 3).
///
/// A login that starts from the stored jar keeps what a browser keeps (a remembered-device cookie), and
/// dropping the essential cookies makes a login page that redirects logged-in users show its form.
public enum KeepOnLogin: Sendable, Hashable {
    /// `all-but-essential` (the default): every stored cookie except those named in `cookies.essential`.
    case allButEssential
    /// `none`: an empty jar.
    case none
    /// A list of entries as in `cookies.essential` (names of the `base_url` host, prefixes, another host's
    /// `{name, domain}`): only the stored cookies they mean (an identity provider's session, kept so that the
    /// next login skips its form).
    case names([CookieSelector])
}

/// A file rewritten atomically whenever the site's cookies change (`outputs:`).
public struct OutputFile: Sendable, Hashable {
    /// Cookie formats of SPEC section 4; raw values are the YAML spellings.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        case header
        case setCookie = "set-cookie"
        case netscape
        case json
        case playwright
    }

    /// Absolute path (`~` expanded, relative paths resolved against the site file's folder).
    public var path: String
    /// The file's cookie format.
    public var format: Format
    /// Permission bits (default 0o600).
    public var mode: UInt16
    /// Where the entry is written.
    public var mark: SourceMark?

    public init(path: String, format: Format, mode: UInt16 = 0o600, mark: SourceMark? = nil) {
        self.path = path
        self.format = format
        self.mode = mode
        self.mark = mark
    }
}

/// Who besides the daemon's owner, root and `socket.allow_uids` may read this site over the socket.
public struct AccessPolicy: Sendable, Hashable {
    /// User ids allowed to read the site.
    public var uids: [UInt32]
    /// Group names, resolved when a client connects.
    public var groups: [String]

    public init(uids: [UInt32] = [], groups: [String] = []) {
        self.uids = uids
        self.groups = groups
    }
}
