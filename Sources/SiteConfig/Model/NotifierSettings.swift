import Foundation

/// What a person is told about (SPEC section 12): the events of `notify[].events`.
public enum NotificationEvent: String, Sendable, Hashable, CaseIterable {
    /// A login waits for a person's answer (a `prompt` step).
    case waitingForPerson = "waiting-for-person"
    /// The daemon stopped trying: credentials refused, the daily cap of failures reached, a manual site's
    /// session died.
    case needsAttention = "needs-attention"
    /// The site is logged in again after one of the above.
    case recovered
}

/// One entry of `notify:` in config.yaml: where notifications go and which ones.
public struct NotifierSettings: Sendable, Hashable {
    /// A webhook or a command.
    public enum Target: Sendable, Hashable {
        /// `webhook: URL`: a POST with a JSON body in `format`.
        case webhook(WebhookSettings)
        /// `command: [argv...]`: run as plugins are, the JSON event on standard input.
        case command([String])
    }

    public var target: Target
    /// The events this notifier is told of, as written (default: all three).
    public var events: [NotificationEvent]
    /// How long one delivery may take: the HTTP exchange, or the command's run (default 10s).
    public var timeout: Duration
    /// Where the entry is written.
    public var mark: SourceMark?

    /// The default of `timeout`.
    public static let defaultTimeout: Duration = .seconds(10)

    public init(target: Target, events: [NotificationEvent] = NotificationEvent.allCases, timeout: Duration = defaultTimeout, mark: SourceMark? = nil) {
        self.target = target
        self.events = events
        self.timeout = timeout
        self.mark = mark
    }
}

/// `notify[].webhook` and the keys that go with it.
public struct WebhookSettings: Sendable, Hashable {
    /// The body's shape (`format:`).
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// The event as SessionKeeper writes it (the same JSON a command gets on standard input).
        case json
        /// Alertmanager's API v2 (`POST /api/v2/alerts`): the URL is the Alertmanager's alerts endpoint.
        case alertmanager
        /// ntfy's publish-as-JSON: the URL is the server and topic (`https://ntfy.sh/mytopic`).
        case ntfy
    }

    /// Absolute http(s) URL.
    public var url: URL
    public var format: Format
    /// Extra request headers, in file order.
    public var headers: [NotifierHeader]
    /// `answer_url`: a page where a person answers a prompt, with `{{ site }}` and `{{ prompt }}` in it;
    /// ntfy's notification opens it from a button.
    public var answerURL: Template?

    public init(url: URL, format: Format = .json, headers: [NotifierHeader] = [], answerURL: Template? = nil) {
        self.url = url
        self.format = format
        self.headers = headers
        self.answerURL = answerURL
    }
}

/// One header of `notify[].headers`.
public struct NotifierHeader: Sendable, Hashable {
    /// Where the value comes from.
    public enum Value: Sendable, Hashable {
        /// Written in config.yaml.
        case literal(String)
        /// `{env: NAME}`: the daemon's environment variable, read when the daemon starts.
        case environment(String)
    }

    public var name: String
    public var value: Value

    public init(name: String, value: Value) {
        self.name = name
        self.value = value
    }
}
