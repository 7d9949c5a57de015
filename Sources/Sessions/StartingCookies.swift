import CookieJar
import Foundation
import LoginFlow
import SiteConfig

/// Which stored cookies a new login starts from (SPEC section 3, `cookies.keep_on_login`).
///
/// Keeping the non-essential cookies is what a browser does: a "remember this device" cookie survives, so
/// the site does not ask for a second factor again, while dropping the essential (session) cookies makes
/// a login page that redirects logged-in visitors away (Django, Trac and most apps do) show its form.
public enum StartingCookies {
    /// The cookies of `stored` to put in the jar before the login, unexpired at `now`. Entries name the cookies
    /// of `baseURL`'s host unless they give a `domain` (an identity provider's session is another host's).
    public static func select(
        from stored: [Cookie], policy: KeepOnLogin, essential: [CookieSelector], baseURL: URL, now: Date
    ) -> [Cookie] {
        let live = stored.filter { !$0.isExpired(at: now) }
        switch policy {
        case .allButEssential:
            return live.filter { cookie in !essential.contains { $0.matches(cookie, baseURL: baseURL) } }
        case .none:
            return []
        case .names(let entries):
            return live.filter { cookie in entries.contains { $0.matches(cookie, baseURL: baseURL) } }
        }
    }
}
