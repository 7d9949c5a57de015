import JSON

/// One check on a step's last response (SPEC section 3, `expect:`).
///
/// A failing expectation stops the flow with an error naming the site, the step and what differed;
/// messages never quote a cookie value or a credential.
public struct Expectation: Sendable, Hashable {
    /// What is checked.
    public enum Kind: Sendable, Hashable {
        /// `status: 200` or `status: [302, 303]` — the status is one of these.
        case status([Int])
        /// `url_matches:` — the final URL matches this NSRegularExpression (anywhere).
        case urlMatches(String)
        /// `body_contains:` — the body contains this text.
        case bodyContains(String)
        /// `not_body_contains:` — the body does not contain this text.
        case notBodyContains(String)
        /// `cookie:` — a cookie of this name is stored, unexpired, after the response.
        case cookie(String)
        /// `header: NAME` — the header is present; `header: {name:, matches:}` — and its value matches
        /// the NSRegularExpression.
        case header(name: String, matches: String?)
        /// `json: {path: /pointer}` — the RFC 6901 pointer resolves in the body; with `equals:`, to
        /// this value.
        case json(pointer: String, equals: JSONValue?)
    }

    /// What is checked.
    public var kind: Kind
    /// Where the expectation's key is written.
    public var mark: SourceMark?

    public init(_ kind: Kind, mark: SourceMark? = nil) {
        self.kind = kind
        self.mark = mark
    }
}
