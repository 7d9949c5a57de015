import Foundation

/// The `SameSite` attribute (RFC 6265bis section 4.1.2.7): whether a cookie travels with cross-site requests.
public enum SameSite: String, Sendable, Codable, CaseIterable {
    case strict, lax, none
}

/// One cookie as the jar stores it: the fields of RFC 6265 section 5.3 plus 6265bis's SameSite, and the
/// legacy RFC 2965 attributes NSHTTPCookie exposes (kept when a server or a file supplies them).
public struct Cookie: Sendable, Hashable {
    /// The cookie's name; never empty for a cookie the parser accepted (RFC 6265 section 5.2 step 5).
    public var name: String
    /// The cookie's value, exactly as received (quotes included).
    public var value: String
    /// Lower case, no leading dot.
    public var domain: String
    /// True when the cookie goes only to `domain` itself, not its subdomains (no `Domain` attribute).
    public var hostOnly: Bool
    /// The path the cookie is scoped to; starts with `/`.
    public var path: String
    /// When the cookie expires; nil for a session cookie.
    public var expires: Date?
    /// Sent only over secure channels.
    public var secure: Bool
    /// Not exposed to scripts.
    public var httpOnly: Bool
    /// The `SameSite` attribute, nil when the server gave none (or none the jar recognises).
    public var sameSite: SameSite?
    /// When the cookie was first stored; a replacement keeps it (RFC 6265 section 5.3 step 11.3).
    public var created: Date
    /// When the cookie was last sent or stored.
    public var lastAccess: Date
    /// Legacy `Version` attribute (RFC 2965), kept when present.
    public var version: Int?
    /// Legacy `Comment` attribute (RFC 2965), kept when present.
    public var comment: String?
    /// Legacy `CommentURL` attribute (RFC 2965), kept when present.
    public var commentURL: String?
    /// Legacy `Port` attribute (RFC 2965), kept when present.
    public var portList: [Int]?

    /// Creates a cookie; `created` and `lastAccess` default to `now`.
    public init(
        name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/",
        expires: Date? = nil, secure: Bool = false, httpOnly: Bool = false, sameSite: SameSite? = nil,
        created: Date = Date(), lastAccess: Date? = nil, version: Int? = nil, comment: String? = nil,
        commentURL: String? = nil, portList: [Int]? = nil
    ) {
        self.name = name
        self.value = value
        self.domain = CookieRules.canonicalDomain(domain)
        self.hostOnly = hostOnly
        self.path = path
        self.expires = expires
        self.secure = secure
        self.httpOnly = httpOnly
        self.sameSite = sameSite
        self.created = created
        self.lastAccess = lastAccess ?? created
        self.version = version
        self.comment = comment
        self.commentURL = commentURL
        self.portList = portList
    }

    /// True for a session cookie (no `Expires` nor `Max-Age`): it lives until the session ends.
    public var isSessionOnly: Bool { expires == nil }

    /// True once the expiry time has passed (RFC 6265 section 5.3: "expired" means expiry-time <= now).
    public func isExpired(at date: Date) -> Bool {
        guard let expires else { return false }
        return expires <= date
    }

    /// Why a cookie read from a file could not have come from a Set-Cookie header and would break the line
    /// formats (a line break in a value ends a cookies.txt line): a control character in its name, value,
    /// domain or path (a tab only in the value, which cookies.txt's reader allows), an empty name, a domain
    /// that is not a host name (``CookieRules/isStorableDomain(_:)``), or a path that does not start with `/`.
    /// Nil when it is sound. Names the field, never its content.
    public var fileProblem: String? {
        if name.isEmpty { return "the name is empty" }
        if Self.hasControl(name) { return "the name holds a control character" }
        if Self.hasControl(value, allowingTab: true) { return "the value of cookie \(name) holds a control character" }
        if Self.hasControl(domain) { return "the domain of cookie \(name) holds a control character" }
        if !CookieRules.isStorableDomain(domain) { return "the domain of cookie \(name) is not a host name (a space, or a leading #)" }
        if Self.hasControl(path) { return "the path of cookie \(name) holds a control character" }
        if !path.hasPrefix("/") { return "the path of cookie \(name) does not start with /" }
        return nil
    }

    /// Whether `text` holds a control character (below 0x20, or DEL), a tab excepted when `allowingTab`.
    static func hasControl(_ text: String, allowingTab: Bool = false) -> Bool {
        text.utf8.contains { ($0 < 0x20 && !(allowingTab && $0 == 0x09)) || $0 == 0x7F }
    }

    /// The identity RFC 6265 section 5.3 step 11 uses for replacement: name, domain and path.
    var key: CookieKey { CookieKey(name: name, domain: domain, path: path) }

    /// Bytes of name plus value, which RFC 6265bis section 5.7 step 3 limits.
    var nameValueByteCount: Int { name.utf8.count + value.utf8.count }
}

/// Identity of a stored cookie (RFC 6265 section 5.3 step 11: same name, domain and path).
struct CookieKey: Hashable, Sendable {
    var name: String
    var domain: String
    var path: String
}

extension Cookie: CustomStringConvertible {
    /// A description without the value, so a cookie can be logged safely.
    public var description: String {
        "Cookie(\(name) for \(hostOnly ? "" : ".")\(domain)\(path)\(secure ? ", secure" : "")\(httpOnly ? ", httpOnly" : "")"
            + "\(expires.map { ", expires \(CookieTime.rfc3339($0))" } ?? ", session"))"
    }
}
