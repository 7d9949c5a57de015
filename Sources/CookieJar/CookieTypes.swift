import Foundation

/// Which cookies the storage accepts from responses (the policies of NSHTTPCookieStorage).
public enum CookieAcceptPolicy: String, Sendable, CaseIterable {
    /// Every cookie the RFC rules allow.
    case always
    /// No cookie at all.
    case never
    /// Only cookies whose domain lies within the registrable domain ("eTLD+1") of the main document's URL.
    case mainDocumentDomain = "main-document-domain"
}

/// Storage limits. The defaults are what browsers enforce (Firefox and Chrome keep 180 cookies a domain,
/// Firefox 3000 in all), well above the minimums RFC 6265 section 6.1 asks every user agent to support, so
/// a jar holds what a browser would.
public struct CookieLimits: Sendable, Hashable {
    /// RFC 6265 section 6.1: at least 4096 bytes per cookie (name + value, as RFC 6265bis 5.7 step 3 counts).
    public static let rfcMaxCookieBytes = 4096
    /// RFC 6265 section 6.1: at least 50 cookies per domain.
    public static let rfcMaxCookiesPerDomain = 50
    /// RFC 6265 section 6.1: at least 3000 cookies in total.
    public static let rfcMaxCookies = 3000
    /// Browsers' per-domain limit (Firefox's `network.cookie.maxPerHost`, Chrome's `kDomainMaxCookies`).
    public static let browserMaxCookiesPerDomain = 180

    /// Largest name + value in bytes; larger cookies are refused.
    public var maxCookieBytes: Int
    /// Most cookies sharing one domain field; more evict within that domain (RFC 6265 section 5.3).
    public var maxCookiesPerDomain: Int
    /// Most cookies in all; more evict across the jar (RFC 6265 section 5.3).
    public var maxCookies: Int

    public init(maxCookieBytes: Int = rfcMaxCookieBytes, maxCookiesPerDomain: Int = browserMaxCookiesPerDomain,
                maxCookies: Int = rfcMaxCookies) {
        self.maxCookieBytes = maxCookieBytes
        self.maxCookiesPerDomain = maxCookiesPerDomain
        self.maxCookies = maxCookies
    }
}

/// Why a cookie was evicted to make room (RFC 6265 section 5.3, the last step; RFC 6265bis section 5.7).
public enum CookieEviction: Sendable, Hashable, CustomStringConvertible {
    /// The cookie's domain held more than `limit` cookies.
    case domainLimit(domain: String, limit: Int)
    /// The jar held more than `limit` cookies.
    case totalLimit(limit: Int)

    public var description: String {
        switch self {
        case let .domainLimit(domain, limit):
            "\(domain) held more than \(limit) cookies (the per-domain limit); the least recently used go first, non-Secure before Secure"
        case let .totalLimit(limit):
            "the jar held more than \(limit) cookies (the total limit); the least recently used go first, from crowded domains and non-Secure before Secure"
        }
    }
}

/// A change to the storage, delivered by ``CookieStorage/changes()``.
public enum CookieChange: Sendable, Hashable {
    /// A cookie with a new name/domain/path was stored.
    case added(Cookie)
    /// A stored cookie was replaced by one with the same name, domain and path.
    case updated(old: Cookie, new: Cookie)
    /// A cookie was deleted (by the API or a server's expired replacement).
    case removed(Cookie)
    /// A cookie was removed to make room for others, over a limit; cookies restored from a file
    /// (``CookieStorage/restore(_:)``) are never evicted.
    case evicted(Cookie, reason: CookieEviction)
    /// A cookie was dropped because its expiry time passed.
    case expired(Cookie)
}

/// What the storage did with one Set-Cookie header value.
public enum CookieDecision: Sendable, Hashable {
    /// The cookie now in the storage.
    case stored(Cookie)
    /// The header was ignored; `name` is the cookie's name when the header got that far, `reason` says why
    /// and never holds the value.
    case rejected(name: String?, reason: String)
}
