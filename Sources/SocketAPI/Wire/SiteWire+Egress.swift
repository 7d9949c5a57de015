import JSON
import SiteConfig

/// A site's `egress` rule as `GET /v1/sites/NAME` hands it out, so that every client (the egress route, the
/// Python client, a script) judges a logged-out answer the same way (SPEC sections 10 and 13).
extension SiteWire {
    /// `{"logged_out": {"status": [...], "url_matches": ..., "body_contains": ..., "login_paths": [...], "check": ...},
    /// "retry": ..., "listen": ..., "listen_error": ...}`; a test the site leaves out is `null`, and `status` is `[401]`
    /// when the site says nothing. Without `egress.logged_out`, `login_paths` lists the login page's path (a redirect
    /// there is logged out) and `check` is `{"method", "path", "status": [...], "follows_redirects"}` (an answer to
    /// that request with another status is logged out); both are `[]` and `null` when the site wrote the rule. `listen` is the loopback listener's address (`null` without one), `listen_error` why it could not
    /// be opened (`null` while it serves).
    static func egress(_ policy: EgressPolicy, listenError: String? = nil) -> JSONValue {
        let rule = policy.loggedOut
        return .object([
            ("logged_out", .object([
                ("status", .array(rule.statuses.map { .number(String($0)) })),
                ("url_matches", rule.urlPattern.map(JSONValue.string) ?? .null),
                ("body_contains", rule.bodyText.map(JSONValue.string) ?? .null),
                ("login_paths", .array(rule.loginPaths.map(JSONValue.string))),
                ("check", rule.check.map { check in
                    .object([
                        ("method", .string(check.method)), ("path", .string(check.pathAndQuery)),
                        ("status", .array(check.statuses.map { .number(String($0)) })),
                        ("follows_redirects", .bool(check.followsRedirects)),
                    ])
                } ?? .null),
            ])),
            ("retry", .string(policy.retry.rawValue)),
            ("listen", policy.listen.map { .string($0.description) } ?? .null),
            ("listen_error", listenError.map(JSONValue.string) ?? .null),
        ])
    }
}
