/// One step of a login flow: an HTTP request or a plugin run (SPEC sections 3 and 5).
public struct Step: Sendable, Hashable {
    /// What the step does.
    public enum Action: Sendable, Hashable {
        /// One HTTP request (after its redirects, when followed).
        case request(RequestStep)
        /// An executable from `plugins_dir` (or a path), talking JSON on stdin/stdout.
        case plugin(PluginStep)
        /// A question to a person, whose answer later steps use (SPEC section 12).
        case prompt(PromptStep)
    }

    /// `name:` as written, or `step N` (1-based position) when absent. Shown in logs and errors.
    public var name: String
    /// Where the step's mapping starts in its file.
    public var mark: SourceMark
    /// The request or plugin run.
    public var action: Action
    /// `when:` — the step runs only if the previous response (the flow's last HTTP response) meets every one
    /// of these, and is skipped otherwise; nil runs it always.
    public var when: [Expectation]?

    public init(name: String, mark: SourceMark, action: Action, when: [Expectation]? = nil) {
        self.name = name
        self.mark = mark
        self.action = action
        self.when = when
    }

    /// The request, when this is an HTTP step.
    public var request: RequestStep? {
        if case .request(let request) = action { return request }
        return nil
    }

    /// The plugin call, when this is a plugin step.
    public var plugin: PluginStep? {
        if case .plugin(let plugin) = action { return plugin }
        return nil
    }

    /// The question, when this is a prompt step.
    public var prompt: PromptStep? {
        if case .prompt(let prompt) = action { return prompt }
        return nil
    }
}

/// A `prompt` step (SPEC section 12): the login waits for a person's answer (a code sent by text message, an
/// approval), which later steps use as `{{ NAME }}`. The answer is a secret: masked like a credential, never
/// logged, never in a notification.
public struct PromptStep: Sendable, Hashable {
    /// `timeout` when not set: `refresh.before_expiry`'s default, the time a site that needs a person logs in ahead.
    public static let defaultTimeout: Duration = .seconds(10 * 60)

    /// `name`: the variable the answer becomes, and what `sessionkeeper answer SITE NAME` names.
    public var name: String
    /// `message`: what the person is asked, shown in status and sent to the notifiers (one line, from the site
    /// file: never a value of the run).
    public var message: String
    /// How long the login waits for the answer before it fails as needs-attention.
    public var timeout: Duration

    public init(name: String, message: String, timeout: Duration = PromptStep.defaultTimeout) {
        self.name = name
        self.message = message
        self.timeout = timeout
    }
}

/// An HTTP step: method and URL, request parts, then what to extract and expect from the answer.
public struct RequestStep: Sendable, Hashable {
    /// Upper-case method (`GET`, `POST`, ... or any token given with `request: {method: ...}`).
    /// nil only for a `form_from` step without a method key: the form's own method applies.
    public var method: String?
    /// The URL, absolute or relative to `base_url`. nil only for a `form_from` step without a URL:
    /// the form's `action` applies.
    public var url: Template?
    /// Request headers in file order; they add to (and override by name) the site's `http.headers`.
    public var headers: [NamedTemplate]
    /// Query items appended to the URL, in file order.
    public var query: [NamedTemplate]
    /// At most one body.
    public var body: RequestBody?
    /// Follow 3xx answers, storing and sending cookies on every hop (default true).
    public var followRedirects: Bool
    /// Send and store cookies for this step (default true); false for third-party calls inside a flow.
    public var handleCookies: Bool
    /// Variables captured from the last response, in file order (later steps may use earlier ones).
    public var extract: [NamedExtraction]
    /// Checks on the last response, in file order; the first failing one stops the flow.
    public var expect: [Expectation]

    public init(
        method: String?, url: Template?, headers: [NamedTemplate] = [], query: [NamedTemplate] = [],
        body: RequestBody? = nil, followRedirects: Bool = true, handleCookies: Bool = true,
        extract: [NamedExtraction] = [], expect: [Expectation] = []
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.query = query
        self.body = body
        self.followRedirects = followRedirects
        self.handleCookies = handleCookies
        self.extract = extract
        self.expect = expect
    }

    /// Calls `body` with every variable name the request uses (URL, headers, query, body), in that order,
    /// repeats included; allocates nothing (a flow asks this of every step it runs).
    public func forEachVariable<Failure: Error>(_ body: (String) throws(Failure) -> Void) throws(Failure) {
        try url?.forEachVariable(body)
        for header in headers { try header.value.forEachVariable(body) }
        for item in query { try item.value.forEachVariable(body) }
        try self.body?.forEachVariable(body)
    }

    /// Every variable the request uses (URL, headers, query, body), in order of first appearance.
    public var variables: [String] { uniqueVariables { forEachVariable($0) } }
}

/// The body of a request step; at most one per step.
public enum RequestBody: Sendable, Hashable {
    /// `form:` — `application/x-www-form-urlencoded`, fields in file order.
    case form([NamedTemplate])
    /// `json:` — `application/json`.
    case json(JSONTemplate)
    /// `body:` with optional `content_type:` (default `text/plain; charset=utf-8`).
    case raw(Template, contentType: String?)
    /// `form_from: {xpath: ...}` — the HTML form the XPath selects in the previous response, all its
    /// fields (hidden ones included), its action and method; `form:` entries override or add fields.
    case formFrom(xpath: String, overrides: [NamedTemplate])

    /// Calls `body` with every variable name used in the body, in order, repeats included.
    public func forEachVariable<Failure: Error>(_ body: (String) throws(Failure) -> Void) throws(Failure) {
        switch self {
        case .form(let fields), .formFrom(_, let fields): for field in fields { try field.value.forEachVariable(body) }
        case .json(let value): try value.forEachVariable(body)
        case .raw(let template, _): try template.forEachVariable(body)
        }
    }

    /// Every variable used in the body.
    public var variables: [String] { uniqueVariables { forEachVariable($0) } }
}

/// A plugin step, or a whole plugin login (`login: {plugin: NAME, with: {...}}`).
public struct PluginStep: Sendable, Hashable {
    /// One variable of the plugin's environment besides PATH, HOME and LANG.
    public enum EnvironmentEntry: Sendable, Hashable {
        /// `env: [NAME]` — copied from the daemon's environment when set.
        case inherit(String)
        /// `env: {NAME: "value {{ var }}"}` — set to the rendered template.
        case set(name: String, value: Template)

        /// The variable's name.
        public var name: String {
            switch self {
            case .inherit(let name), .set(let name, _): return name
            }
        }
    }

    /// `timeout` when not set (SPEC section 5).
    public static let defaultTimeout: Duration = .seconds(60)

    /// `plugin:` as written (a name in `plugins_dir`, or a path).
    public var plugin: String
    /// The absolute path of the executable that will run.
    public var executablePath: String
    /// `with:` — an object, sent as stdin's `with` after rendering; `.object([])` when absent.
    public var with: JSONTemplate
    /// `env:` — variables added to the plugin's minimal environment.
    public var environment: [EnvironmentEntry]
    /// On expiry the plugin's whole process group is killed (default 60s).
    public var timeout: Duration
    /// Whether stdin carries the site's resolved credentials (default false).
    public var passCredentials: Bool

    public init(
        plugin: String, executablePath: String, with: JSONTemplate = .object([]),
        environment: [EnvironmentEntry] = [], timeout: Duration = PluginStep.defaultTimeout,
        passCredentials: Bool = false
    ) {
        self.plugin = plugin
        self.executablePath = executablePath
        self.with = with
        self.environment = environment
        self.timeout = timeout
        self.passCredentials = passCredentials
    }

    /// Calls `body` with every variable name used in `with:` and `env:`, in order, repeats included.
    public func forEachVariable<Failure: Error>(_ body: (String) throws(Failure) -> Void) throws(Failure) {
        try with.forEachVariable(body)
        for case .set(_, let value) in environment { try value.forEachVariable(body) }
    }

    /// Every variable used in `with:` and `env:`.
    public var variables: [String] { uniqueVariables { forEachVariable($0) } }
}
