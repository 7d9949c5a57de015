/// An entry of `cookies.essential` or `cookies.keep_on_login` (SPEC section 3): which of a site's cookies it
/// means. A login across hosts (an identity provider and an app) stores cookies of the same name for each
/// host, so an entry names a host too: the `base_url`'s host unless `domain` says another.
public struct CookieSelector: Sendable, Hashable, CustomStringConvertible {
    /// A cookie name, or a prefix ending in `*` (DokuWiki's `DW*`).
    public var name: String
    /// The host whose cookie is meant (`{name, domain}`), lower case, without a leading dot; nil for a bare
    /// name: the cookie a request to `base_url`'s host carries.
    public var domain: String?
    /// The cookie's `Path` when it matters (two cookies of one name and host); nil: any path.
    public var path: String?

    public init(_ name: String, domain: String? = nil, path: String? = nil) {
        self.name = name
        self.domain = domain.map(Self.normalized)
        self.path = path
    }

    /// Whether `name` matches the entry's name: the same, or, for an entry ending in `*`, a name that starts
    /// with what precedes the `*`.
    public func matches(name cookieName: String) -> Bool {
        guard name.hasSuffix("*") else { return cookieName == name }
        return cookieName.hasPrefix(name.dropLast())
    }

    /// Whether a cookie (its name, `Domain` as the jar keeps it, host-only flag and path) is the one this entry
    /// means for a site whose `base_url` has the host `siteHost`: a request to the entry's host (RFC 6265 section
    /// 5.1.3 domain matching) would carry it.
    public func matches(name cookieName: String, domain cookieDomain: String, hostOnly: Bool, path cookiePath: String, siteHost: String) -> Bool {
        guard matches(name: cookieName) else { return false }
        if let path, path != cookiePath { return false }
        let host = domain ?? Self.normalized(siteHost)
        let cookieDomain = Self.normalized(cookieDomain)
        return host == cookieDomain || (!hostOnly && host.hasSuffix("." + cookieDomain))
    }

    /// As written for a bare name; `NAME (HOST)` and `NAME (HOST PATH)` for the others.
    public var description: String {
        guard let domain else { return path.map { "\(name) (\($0))" } ?? name }
        return "\(name) (\(domain)\(path.map { " " + $0 } ?? ""))"
    }

    static func normalized(_ host: String) -> String {
        var host = host.lowercased()
        while host.hasPrefix(".") { host.removeFirst() }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host
    }
}

extension CookieSelector: ExpressibleByStringLiteral {
    /// A bare name (or prefix): the `base_url` host's cookie.
    public init(stringLiteral value: String) { self.init(value) }
}
