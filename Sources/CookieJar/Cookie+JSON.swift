import Foundation
import JSON

extension CodingUserInfoKey {
    /// A `Date`: the creation time a decoded cookie gets when its object has no `created` key (a file
    /// written by hand or by another program). Without it, `created` is required.
    public static let cookieDefaultCreationTime = CodingUserInfoKey(rawValue: "sessionkeeper.cookie.default-creation-time")!
}

/// A cookie as one object of SPEC section 4's `json` format: the single definition of that object, used by
/// the `json` file format, the plugin protocol and every record that embeds cookies.
extension Cookie: Codable {
    /// The keys of SPEC section 4's `json` format; the legacy attributes follow as extra keys.
    enum CodingKeys: String, CodingKey {
        case name, value, domain, hostOnly = "host_only", path, expires, secure, httpOnly = "http_only"
        case sameSite = "same_site", created, lastAccess = "last_access"
        case version, comment, commentURL = "comment_url", portList = "port_list"
    }

    /// Reads the `json` format's object. `name`, `value` and `domain` are required, everything else may be
    /// missing or null: `host_only`, `secure` and `http_only` then read as false, `path` as "/", `expires`
    /// as a session cookie, `last_access` as `created`. Times are RFC 3339 text; `same_site` is `strict`,
    /// `lax`, `none` (any case) or null.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let created: Date
        if let written = try container.time(.created) {
            created = written
        } else if let fallback = decoder.userInfo[.cookieDefaultCreationTime] as? Date {
            created = fallback
        } else {
            throw DecodingError.keyNotFound(CodingKeys.created, .init(codingPath: decoder.codingPath, debugDescription: "is missing"))
        }
        var sameSite: SameSite?
        if let text = try container.decodeIfPresent(String.self, forKey: .sameSite) {
            guard let value = SameSite(rawValue: text.lowercased()) else {
                throw DecodingError.dataCorruptedError(forKey: .sameSite, in: container, debugDescription: "must be strict, lax, none or null")
            }
            sameSite = value
        }
        let path = try container.cookiePath(.path)
        let domain = try container.cookieDomain(.domain)
        self.init(
            name: try container.nonEmptyString(.name),
            value: try container.decode(String.self, forKey: .value),
            domain: domain,
            hostOnly: try container.decodeIfPresent(Bool.self, forKey: .hostOnly) ?? false,
            path: path,
            expires: try container.time(.expires),
            secure: try container.decodeIfPresent(Bool.self, forKey: .secure) ?? false,
            httpOnly: try container.decodeIfPresent(Bool.self, forKey: .httpOnly) ?? false,
            sameSite: sameSite,
            created: created,
            lastAccess: try container.time(.lastAccess) ?? created,
            version: try container.decodeIfPresent(Int.self, forKey: .version),
            comment: try container.decodeIfPresent(String.self, forKey: .comment),
            commentURL: try container.decodeIfPresent(String.self, forKey: .commentURL),
            portList: try container.decodeIfPresent([Int].self, forKey: .portList)
        )
    }

    /// Writes ``jsonObject`` through any encoder.
    public func encode(to encoder: any Encoder) throws {
        try jsonObject.encode(to: encoder)
    }

    /// The `json` format's object: the keys of SPEC section 4 in its order (`expires` and `same_site` null
    /// when unset; `expires` with fractional seconds only when it has them, the other times always with
    /// them), then the legacy attributes the cookie has.
    public var jsonObject: JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("name", .string(name)),
            ("value", .string(value)),
            ("domain", .string(domain)),
            ("host_only", .bool(hostOnly)),
            ("path", .string(path)),
            ("expires", expires.map { .string(CookieTime.rfc3339($0, fractional: CookieTime.hasFraction($0))) } ?? .null),
            ("secure", .bool(secure)),
            ("http_only", .bool(httpOnly)),
            ("same_site", sameSite.map { .string($0.rawValue) } ?? .null),
            ("created", .string(CookieTime.rfc3339(created, fractional: true))),
            ("last_access", .string(CookieTime.rfc3339(lastAccess, fractional: true))),
        ]
        if let version { members.append(("version", .number(String(version)))) }
        if let comment { members.append(("comment", .string(comment))) }
        if let commentURL { members.append(("comment_url", .string(commentURL))) }
        if let portList { members.append(("port_list", .array(portList.map { .number(String($0)) }))) }
        return .object(members)
    }
}

extension KeyedDecodingContainer {
    /// A required string that must not be empty.
    /// A cookie's path as a cookie file may hold it (missing: "/"). What no cookie the jar stores can have, and
    /// what other formats cannot carry, is refused: a path is absolute (RFC 6265 section 5.2.4 gives a relative
    /// one the default path) and holds no control character (a tab or a line break ends a cookies.txt field or
    /// line).
    func cookiePath(_ key: Key) throws -> String {
        let path = try decodeIfPresent(String.self, forKey: key) ?? "/"
        guard path.hasPrefix("/"), !Cookie.hasControl(path) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "must start with / and hold no control character")
        }
        return path
    }

    /// A cookie's domain as a cookie file may hold it: a host name (``CookieRules/isStorableDomain(_:)``; a
    /// cookies.txt line that starts with `#` is a comment).
    func cookieDomain(_ key: Key) throws -> String {
        let domain = try nonEmptyString(key)
        guard CookieRules.isStorableDomain(domain) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: "must be a host name (no leading #, no space or control character)")
        }
        return domain
    }

    func nonEmptyString(_ key: Key) throws -> String {
        let text = try decode(String.self, forKey: key)
        guard !text.isEmpty else { throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "is empty") }
        return text
    }

    /// An optional RFC 3339 time.
    func time(_ key: Key) throws -> Date? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let date = CookieTime.parseRFC3339(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "is not an RFC 3339 time")
        }
        return date
    }
}
