import CookieJar
import Foundation
import SiteConfig

extension CookieSelector {
    /// Whether `cookie` is the one this `cookies.essential` or `keep_on_login` entry means for a site whose
    /// `base_url` is `baseURL` (a bare name: the cookie a request to that host carries).
    public func matches(_ cookie: Cookie, baseURL: URL) -> Bool {
        // The name first: the socket asks this of every stored cookie for each request it serves, and reading
        // the URL's host costs more than comparing names.
        guard matches(name: cookie.name) else { return false }
        return matches(name: cookie.name, domain: cookie.domain, hostOnly: cookie.hostOnly, path: cookie.path, siteHost: baseURL.host ?? "")
    }
}
