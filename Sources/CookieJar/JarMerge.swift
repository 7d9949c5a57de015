import Foundation

/// `login --jar FILE`: how a login's cookies join a jar file that may hold other sites' cookies, as
/// `curl -b F -c F` leaves them (SPEC section 9).
public enum JarMerge {
    /// The file's cookies with the site's replaced by the login's: a file cookie goes when it shares a domain
    /// with one of the login's cookies or a request to the site's `baseURL` would carry it (its old session,
    /// which the login supersedes even where it set no cookie of that name); every other cookie stays, in its
    /// order, except those expired at `now`, which curl does not write back either.
    public static func merge(_ login: [Cookie], into file: [Cookie], site baseURL: URL, now: Date) -> [Cookie] {
        let loginDomains = Set(login.map(\.domain))
        let siteHost = CookieRules.canonicalHost(of: baseURL)
        let others = file.filter { cookie in
            if cookie.isExpired(at: now) || loginDomains.contains(cookie.domain) { return false }
            guard let siteHost else { return true }
            let carried = cookie.hostOnly ? cookie.domain == siteHost : CookieRules.domainMatches(host: siteHost, domain: cookie.domain)
            return !carried
        }
        return others + login
    }
}
