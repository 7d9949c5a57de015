import CookieJar
import Foundation
import SiteConfig

extension CookieSelector {
    /// Whether `cookie` is the one this `cookies.essential` or `keep_on_login` entry means for a site whose
    /// `base_url` is `baseURL` (a bare name: the cookie a request to that host carries).
    public func matches(_ cookie: Cookie, baseURL: URL) -> Bool {
        matches(name: cookie.name, domain: cookie.domain, hostOnly: cookie.hostOnly, path: cookie.path, siteHost: baseURL.host ?? "")
    }
}
