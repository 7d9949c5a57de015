/// A site file as written (SPEC section 3); ``SiteBuilder`` checks it and builds the model.
struct SiteFile: Decodable {
    var name: Marked<String>?
    var description: Marked<String>?
    var baseURL: Marked<String>?
    var http: HTTPFile?
    var credentials: Marked<OrderedMap<CredentialFile>>?
    var login: Marked<LoginFile>?
    var check: Marked<StepFile>?
    var keepalive: Marked<StepFile>?
    var refresh: RefreshFile?
    var cookies: CookiesFile?
    var outputs: [Marked<OutputFile>]?
    var access: AccessFile?
    var enabled: Marked<Bool>?
    var learn: Marked<Bool>?
    var allowEnv: [Marked<String>]?
    var egress: EgressFile?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, description, baseURL = "base_url", http, credentials, login, check, keepalive, refresh, cookies
        case outputs, access, enabled, learn, allowEnv = "allow_env", egress
    }

    struct EgressFile: Decodable {
        var loggedOut: Marked<LoggedOutFile>?
        var retry: Marked<String>?
        var listen: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case loggedOut = "logged_out", retry, listen }
    }

    struct LoggedOutFile: Decodable {
        var status: OneOrMany<Marked<Int>>?
        var urlMatches: Marked<String>?
        var bodyContains: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case status, urlMatches = "url_matches", bodyContains = "body_contains"
        }
    }

    struct HTTPFile: Decodable {
        var timeout: Marked<String>?
        var connectTimeout: Marked<String>?
        var userAgent: Marked<String>?
        var headers: OrderedMap<Marked<String>>?
        var proxy: Marked<String>?
        var resolve: OneOrMany<Marked<String>>?
        var caFile: Marked<String>?
        var clientCert: Marked<ClientCertFile>?
        var insecure: Marked<Bool>?
        var httpVersion: Marked<String>?
        var maxRedirects: Marked<Int>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case timeout, connectTimeout = "connect_timeout", userAgent = "user_agent", headers, proxy, resolve
            case caFile = "ca_file", clientCert = "client_cert", insecure, httpVersion = "http_version"
            case maxRedirects = "max_redirects"
        }
    }

    struct ClientCertFile: Decodable {
        var cert: Marked<String>?
        var key: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case cert, key }
    }

    /// `name: value` (a literal) or `name: {secret|env|file|command|totp: ...}`.
    enum CredentialFile: Decodable {
        case literal(Marked<String>)
        case source(Marked<CredentialSourceFile>)

        init(from decoder: any Decoder) throws {
            let decoder = decoder as! NodeDecoder
            if decoder.node.scalarText != nil {
                self = .literal(try decoder.decode(Marked<String>.self))
            } else {
                self = .source(try decoder.decode(Marked<CredentialSourceFile>.self))
            }
        }
    }

    struct CredentialSourceFile: Decodable {
        var secret: Marked<String>?
        var env: Marked<String>?
        var file: Marked<String>?
        var command: Marked<[String]>?
        var totp: Marked<TOTPFile>?

        enum CodingKeys: String, CodingKey, CaseIterable { case secret, env, file, command, totp }
    }

    struct TOTPFile: Decodable {
        var secret: Marked<String>?
        var digits: Marked<Int>?
        var period: Marked<String>?
        var algorithm: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case secret, digits, period, algorithm }
    }

    /// `login: manual` or `login: {steps: [...]}` or `login: {plugin: NAME, ...}`.
    enum LoginFile: Decodable {
        case word(Marked<String>)
        /// The mapping and its node (to tell a missing key from one whose value failed to decode).
        case mapping(LoginMappingFile, YAMLNode)

        init(from decoder: any Decoder) throws {
            let decoder = decoder as! NodeDecoder
            if decoder.node.scalarText != nil, !decoder.node.isNull {
                self = .word(try decoder.decode(Marked<String>.self))
            } else if decoder.node.items != nil {
                throw decoder.error("login takes 'manual' or a mapping with 'steps:' or 'plugin:'; indent the list under 'steps:'")
            } else {
                self = .mapping(try decoder.decode(LoginMappingFile.self), decoder.node)
            }
        }
    }

    struct LoginMappingFile: Decodable {
        var steps: Marked<[Marked<StepFile>]>?
        var plugin: Marked<String>?
        var with: RawNode?
        var env: RawNode?
        var timeout: Marked<String>?
        var passCredentials: Marked<Bool>?
        /// `done_when:` — the keys of `expect:`; a step's last response that matches ends the login.
        var doneWhen: Marked<StepFile.ExpectFile>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case steps, plugin, with, env, timeout, passCredentials = "pass_credentials", doneWhen = "done_when"
        }
    }

    struct RefreshFile: Decodable {
        var beforeExpiry: Marked<String>?
        var maxAge: Marked<String>?
        var minInterval: Marked<String>?
        var retry: RetryFile?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case beforeExpiry = "before_expiry", maxAge = "max_age", minInterval = "min_interval", retry
        }
    }

    struct RetryFile: Decodable {
        var initial: Marked<String>?
        var max: Marked<String>?
        var maxFailuresPerDay: Marked<Int>?

        enum CodingKeys: String, CodingKey, CaseIterable { case initial, max, maxFailuresPerDay = "max_failures_per_day" }
    }

    struct CookiesFile: Decodable {
        var essential: OneOrMany<Marked<CookieEntryFile>>?
        var accept: Marked<String>?
        var persistSessionCookies: Marked<Bool>?
        var limits: LimitsFile?
        var keepOnLogin: Marked<KeepOnLoginFile>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case essential, accept, persistSessionCookies = "persist_session_cookies", limits
            case keepOnLogin = "keep_on_login"
        }
    }

    /// An entry of `essential` or `keep_on_login`: `NAME` (or `PREFIX*`), or `{name, domain, path}`.
    enum CookieEntryFile: Decodable {
        case name(String)
        case scoped(ScopedCookieFile)

        init(from decoder: any Decoder) throws {
            guard let decoder = decoder as? NodeDecoder else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
            }
            if decoder.node.pairs != nil {
                self = .scoped(try decoder.decode(ScopedCookieFile.self))
            } else if decoder.node.scalarText != nil, !decoder.node.isNull {
                self = .name(try decoder.decode(String.self))
            } else {
                throw decoder.error("expected a cookie name or {name: NAME, domain: HOST}, found \(decoder.node.kindDescription)")
            }
        }
    }

    /// `{name: sessionid, domain: idp.example.com, path: /}`.
    struct ScopedCookieFile: Decodable {
        var name: Marked<String>?
        var domain: Marked<String>?
        var path: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case name, domain, path }
    }

    /// `keep_on_login: all-but-essential | none` (a word) or `keep_on_login: [ENTRY, ...]` (a list).
    enum KeepOnLoginFile: Decodable {
        case word(Marked<String>)
        case names([Marked<CookieEntryFile>])

        init(from decoder: any Decoder) throws {
            guard let decoder = decoder as? NodeDecoder else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
            }
            if decoder.node.items != nil {
                self = .names(try decoder.decode([Marked<CookieEntryFile>].self))
            } else if decoder.node.scalarText != nil {
                self = .word(try decoder.decode(Marked<String>.self))
            } else {
                throw decoder.error("expected all-but-essential, none or a list of cookie names, found \(decoder.node.kindDescription)")
            }
        }
    }

    struct LimitsFile: Decodable {
        var maxCookieBytes: Marked<Int>?
        var maxCookiesPerDomain: Marked<Int>?
        var maxCookies: Marked<Int>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case maxCookieBytes = "max_cookie_bytes", maxCookiesPerDomain = "max_cookies_per_domain"
            case maxCookies = "max_cookies"
        }
    }

    struct OutputFile: Decodable {
        var path: Marked<String>?
        var format: Marked<String>?
        var mode: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case path, format, mode }
    }

    struct AccessFile: Decodable {
        var uids: [Marked<UInt32>]?
        var groups: [Marked<String>]?

        enum CodingKeys: String, CodingKey, CaseIterable { case uids, groups }
    }
}

/// A step, `check:` or `keepalive:` as written. One type for all three so every misplaced key
/// gets a precise message ("'every' applies only to check and keepalive") instead of "unknown key".
struct StepFile: Decodable {
    var name: Marked<String>?
    var get: Marked<String>?
    var post: Marked<String>?
    var put: Marked<String>?
    var patch: Marked<String>?
    var delete: Marked<String>?
    var request: Marked<RequestFile>?
    var headers: OrderedMap<Marked<String>>?
    var query: OrderedMap<Marked<String>>?
    var form: Marked<OrderedMap<Marked<String>>>?
    var json: RawNode?
    var body: Marked<String>?
    var contentType: Marked<String>?
    var formFrom: Marked<FormFromFile>?
    var followRedirects: Marked<Bool>?
    var handleCookies: Marked<Bool>?
    var extract: OrderedMap<ExtractionFile>?
    var expect: Marked<ExpectFile>?
    var plugin: Marked<String>?
    var with: RawNode?
    var env: RawNode?
    var timeout: Marked<String>?
    var passCredentials: Marked<Bool>?
    var provides: [Marked<String>]?
    var every: Marked<String>?
    var prompt: Marked<PromptFile>?
    /// `when:` — the keys of `expect:`, judged on the previous response; the step runs only if it matches.
    var when: Marked<ExpectFile>?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, get, post, put, patch, delete, request, headers, query, form, json, body
        case contentType = "content_type", formFrom = "form_from", followRedirects = "follow_redirects"
        case handleCookies = "handle_cookies", extract, expect, plugin, with, env, timeout
        case passCredentials = "pass_credentials", provides, every, prompt, when
    }

    /// `prompt: {name, message, timeout}` (SPEC section 12).
    struct PromptFile: Decodable {
        var name: Marked<String>?
        var message: Marked<String>?
        var timeout: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case name, message, timeout }
    }

    struct RequestFile: Decodable {
        var method: Marked<String>?
        var url: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case method, url }
    }

    struct FormFromFile: Decodable {
        var xpath: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case xpath }
    }

    /// `{regex|xpath|json|header|cookie: TEXT}`, `{status: true}`, `{url: true}` or `{url: {query: NAME}}`.
    struct ExtractionFile: Decodable {
        var regex: Marked<String>?
        var xpath: Marked<String>?
        var json: Marked<String>?
        var header: Marked<String>?
        var cookie: Marked<String>?
        var status: RawNode?
        var url: URLExtractionFile?

        enum CodingKeys: String, CodingKey, CaseIterable { case regex, xpath, json, header, cookie, status, url }
    }

    /// `url: true` (the final URL), `url: {query: NAME}` (one of its query parameters), or anything else,
    /// which the builder rejects with the step's name. The mapping goes through the decoder, so a
    /// misspelled key gets its "did you mean".
    struct URLExtractionFile: Decodable, DecodesNull {
        var node: YAMLNode
        /// The mapping form, when the node is a mapping.
        var mapping: QueryFile?

        init(from decoder: any Decoder) throws {
            guard let decoder = decoder as? NodeDecoder else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
            }
            node = decoder.node
            mapping = decoder.node.pairs == nil ? nil : try decoder.decode(QueryFile.self)
        }
    }

    struct QueryFile: Decodable {
        var query: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case query }
    }

    struct ExpectFile: Decodable {
        var status: OneOrMany<Marked<Int>>?
        var urlMatches: Marked<String>?
        var bodyContains: OneOrMany<Marked<String>>?
        var notBodyContains: OneOrMany<Marked<String>>?
        var cookie: OneOrMany<Marked<String>>?
        var header: OneOrMany<HeaderExpectationFile>?
        var json: OneOrMany<Marked<JSONExpectFile>>?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case status, urlMatches = "url_matches", bodyContains = "body_contains"
            case notBodyContains = "not_body_contains", cookie, header, json
        }
    }

    struct JSONExpectFile: Decodable {
        var path: Marked<String>?
        var equals: RawNode?

        enum CodingKeys: String, CodingKey, CaseIterable { case path, equals }
    }

    /// `header: NAME`, `header: {name: NAME, matches: REGEX}` (decoded by the decoder, so a misspelled key
    /// gets its "did you mean"), or anything else, which the builder rejects with the step's name.
    enum HeaderExpectationFile: Decodable, DecodesNull {
        case name(Marked<String>)
        case pattern(Marked<HeaderPatternFile>)
        case other(SourceMark)

        init(from decoder: any Decoder) throws {
            guard let decoder = decoder as? NodeDecoder else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YAML decoder"))
            }
            if decoder.node.scalarText != nil, !decoder.node.isNull {
                self = .name(try decoder.decode(Marked<String>.self))
            } else if decoder.node.pairs != nil {
                self = .pattern(try decoder.decode(Marked<HeaderPatternFile>.self))
            } else {
                self = .other(decoder.node.mark)
            }
        }
    }

    struct HeaderPatternFile: Decodable {
        var name: Marked<String>?
        var matches: Marked<String>?

        enum CodingKeys: String, CodingKey, CaseIterable { case name, matches }
    }
}
