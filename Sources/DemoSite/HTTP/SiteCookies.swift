/// The cookies the demo site sets, with the exact attributes of CONTRACTS.md section 3.
enum SiteCookie {
    static let session = "demo_session"
    static let csrf = "demo_csrf"
    static let pending = "demo_pending"
    static let ssoID = "sso_id"

    /// Host-only (no Domain attribute), so it never reaches the SSO host.
    static func session(_ id: String, maxAge: Int) -> String {
        "\(session)=\(id); Path=/; HttpOnly; SameSite=Lax; Max-Age=\(maxAge)"
    }

    /// SameSite=Strict: the token is only ever needed by a same-site form post.
    static func csrf(_ token: String) -> String {
        "\(csrf)=\(token); Path=/; HttpOnly; SameSite=Strict"
    }

    /// A session cookie (no Max-Age): a half-finished login does not outlive the browser.
    static func pending(_ id: String) -> String {
        "\(pending)=\(id); Path=/; HttpOnly"
    }

    /// Set by the SSO host on its own name only.
    static func ssoID(_ id: String) -> String {
        "\(ssoID)=\(id); Path=/; HttpOnly; SameSite=Lax"
    }

    /// RFC 6265 3.1: a cookie is removed by setting it again with an expiry in the past; Max-Age=0 and
    /// an Expires at the epoch cover clients that know only one of them.
    static func expired(_ name: String, sameSite: String?) -> String {
        "\(name)=; Path=/; HttpOnly" + (sameSite.map { "; SameSite=\($0)" } ?? "")
            + "; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT"
    }
}
