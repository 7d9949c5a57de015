import Foundation
import HTTPTransport
import SiteConfig

/// Why a login, check or keepalive run failed. Every text in it has been through the run's
/// ``SecretMasker``: it never holds a credential, a cookie value or an extracted token.
public struct FlowError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// An `expect:` entry did not hold.
        case expectationFailed
        /// An `extract:` entry found nothing (or the body was not of the needed type).
        case extractionFailed
        /// A `{{ placeholder }}` could not be filled (unknown variable, credential or environment name).
        case template
        /// The request could not be built (invalid URL, no form for `form_from`...).
        case invalidRequest
        /// The transport got no response (``TransportError/Kind`` says why).
        case transport(TransportError.Kind)
        /// More redirects than `max_redirects`, or a Location that is not a usable URL.
        case redirect
        /// A plugin failed: non-zero exit, invalid JSON, an `"error"`, a timeout.
        case plugin
        /// A credential could not be resolved.
        case credential
        /// The flow finished but an essential cookie is missing or expired.
        case essentialCookieMissing
        /// A `prompt` step got no answer: nobody answered in time, or nobody can answer here.
        case prompt
        /// The run was cancelled.
        case cancelled
    }

    /// What the failing step saw last, for the message.
    public struct ResponseSummary: Sendable, Hashable {
        public var status: Int
        /// Redacted: no query, user info or fragment.
        public var url: String
        /// At most ``FlowError/excerptLength`` characters of the body, whitespace collapsed, secrets masked.
        public var bodyExcerpt: String
        /// The response's `Retry-After` field as sent (RFC 9110 section 10.2.3: seconds or an HTTP-date),
        /// for the daemon's rate-limit and site-down handling.
        public var retryAfter: String?
        /// The app's own message on the page (an element marked as an error, a JSON body's `error`), or only the
        /// page's title when nothing is marked: at most ``FlowError/excerptLength`` characters, masked. The
        /// message a person reads, where ``bodyExcerpt`` is the start of the page (its head, on most sites).
        public var appMessage: String?
        /// True when ``appMessage`` is only the page's `<title>`.
        public var appMessageIsTitle: Bool

        public init(
            status: Int, url: String, bodyExcerpt: String = "", retryAfter: String? = nil, appMessage: String? = nil,
            appMessageIsTitle: Bool = false
        ) {
            self.status = status
            self.url = url
            self.bodyExcerpt = bodyExcerpt
            self.retryAfter = retryAfter
            self.appMessage = appMessage
            self.appMessageIsTitle = appMessageIsTitle
        }

        /// `200 https://site/login, the site says: "…"`: the status, the URL and what the page says (its message,
        /// else its title, else the start of its body).
        public var text: String {
            var text = "\(status) \(url)"
            if let appMessage {
                text += appMessageIsTitle ? ", page title: \"\(appMessage)\"" : ", the site says: \"\(appMessage)\""
            } else if !bodyExcerpt.isEmpty {
                text += ", body: \"\(bodyExcerpt)\""
            }
            return text
        }
    }

    public static let excerptLength = 200

    public var kind: Kind
    public var site: String
    /// The step's name; "check", "keepalive" or "login" for probes and plugin logins.
    public var step: String?
    /// Where the step (or the failing entry) is written.
    public var mark: SourceMark?
    /// What was wanted ("status in [302, 303]").
    public var expected: String?
    /// What was there instead ("status 200").
    public var found: String?
    /// Any further detail (a transport or plugin message).
    public var detail: String?
    public var response: ResponseSummary?

    public init(
        kind: Kind, site: String, step: String? = nil, mark: SourceMark? = nil, expected: String? = nil,
        found: String? = nil, detail: String? = nil, response: ResponseSummary? = nil
    ) {
        self.kind = kind
        self.site = site
        self.step = step
        self.mark = mark
        self.expected = expected
        self.found = found
        self.detail = detail
        self.response = response
    }

    /// True when the site could not be reached (DNS, connect, TLS, timeout, proxy): "site down",
    /// as opposed to "logged out".
    public var isUnreachable: Bool {
        if case .transport(let kind) = kind {
            return TransportError(kind: kind, url: nil, message: "").isUnreachable
        }
        return false
    }

    /// The whole failure for the person who runs the site: where, the app's own message in place of the generic
    /// headline when the page has one (`the site says "Wrong password."`), what was expected and found, and the last
    /// response (status, URL, and the page's title or the start of its body when it has no message).
    public var description: String {
        var text: String
        if let response, let message = response.appMessage, !response.appMessageIsTitle {
            text = sentence(headline: "the site says \"\(message)\"")
            text += " [last response: \(response.status) \(response.url)]"
        } else {
            text = summary
            if let response { text += " [last response: \(response.text)]" }
        }
        return text
    }

    /// The failure without the last response's status, URL, page excerpt or message: what a notification may carry to
    /// a third party's service (the page the site answered stays in the daemon's log).
    public var summary: String { sentence(headline: headline) }

    private func sentence(headline: String) -> String {
        var text = "site '\(site)'"
        if let step { text += ", step '\(step)'" }
        if let mark { text += " (\(mark))" }
        // A credential's detail is already a sentence naming it ("credential 'password' is not available: ...").
        text += ": " + (kind == .credential && detail != nil ? "" : headline)
        if let expected { text += "; expected \(expected)" }
        if let found { text += ", found \(found)" }
        if let detail { text += kind == .credential ? detail : "; \(detail)" }
        return text
    }

    /// What happened, in the user's words.
    private var headline: String {
        switch kind {
        case .expectationFailed: "the response is not what the step expects"
        case .extractionFailed: "a value to extract was not found in the response"
        case .template: "a placeholder cannot be filled"
        case .invalidRequest: "the request cannot be built"
        case .transport(let kind): kind.summary
        case .redirect: "the redirects cannot be followed"
        case .plugin: "the plugin failed"
        case .credential: "a credential is not available"
        case .essentialCookieMissing: "an essential cookie is missing after the login"
        case .prompt: "the prompt got no answer"
        case .cancelled: "cancelled"
        }
    }
}

extension FlowError.ResponseSummary {
    /// Summarises a response for an error, masking secrets in the excerpt.
    init(_ response: HTTPResponse, masker: SecretMasker) {
        status = response.status
        url = response.url.redactedForLog
        retryAfter = response.headers["Retry-After"]
        // Mask before collapsing whitespace (a secret may hold spaces) and again after (it may have been split
        // across lines), and always before cutting, so a secret straddling the cut cannot leak its first half.
        let collapsed = masker.redact(response.bodyText).split(whereSeparator: \.isWhitespace).joined(separator: " ")
        let masked = masker.redact(collapsed)
        bodyExcerpt = Self.cut(masked)
        if let found = AppMessage.find(in: response) {
            appMessage = Self.cut(masker.redact(AppMessage.collapse(masker.redact(found.text))))
            appMessageIsTitle = found.source == .title
        } else {
            appMessage = nil
            appMessageIsTitle = false
        }
    }

    private static func cut(_ text: String) -> String {
        text.count > FlowError.excerptLength ? String(text.prefix(FlowError.excerptLength)) + "…" : text
    }
}
