import CookieJar
import Foundation

/// A site's session as kept in the vault (item kind `.siteState`, named after the site): its cookies in
/// the jar's lossless json format, when the last login finished and when the session ends.
///
/// On disk (inside the encrypted item) it is one JSON object:
/// `{"format":"sessionkeeper-site-session","version":1,"last_login":"RFC3339","expires_at":"RFC3339"|null,"cookies":[...]}`.
/// A newer `version` is refused with a clear error, so an older binary never misreads a newer record.
struct SiteSessionRecord {
    /// The `format` marker: tells this record from any other bytes stored under the site's name.
    static let formatName = "sessionkeeper-site-session"
    /// The record layout this code writes and reads.
    static let currentVersion = 1

    /// Every cookie of the session (session cookies included unless the site said otherwise).
    var cookies: [Cookie]
    /// When the login that produced these cookies finished.
    var lastLogin: Date
    /// When the first essential cookie expires (nil: none expires, or the site has no essential cookies).
    var expiresAt: Date?

    /// Why a stored record could not be read. Never holds a cookie value.
    struct DecodingError: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// The cookies to keep for a site: expired ones never, session-only ones only when `keepSessionCookies`.
    static func persistable(_ cookies: [Cookie], keepSessionCookies: Bool, now: Date) -> [Cookie] {
        cookies.filter { !$0.isExpired(at: now) && (keepSessionCookies || !$0.isSessionOnly) }
    }

    /// The record as UTF-8 JSON bytes.
    func encoded() throws -> [UInt8] {
        let cookieText = CookieCodec.encode(cookies, as: .json)
        let cookieValue = try JSONSerialization.jsonObject(with: Data(cookieText.utf8), options: [.fragmentsAllowed])
        let object: [String: Any] = [
            "format": Self.formatName,
            "version": Self.currentVersion,
            "last_login": CookieTime.rfc3339(lastLogin),
            "expires_at": expiresAt.map { CookieTime.rfc3339($0) as Any } ?? NSNull(),
            "cookies": cookieValue,
        ]
        return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// Reads a record written by ``encoded()``; cookies already expired at `now` are left out.
    static func decode(_ bytes: [UInt8], now: Date) throws(DecodingError) -> SiteSessionRecord {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(bytes))
        } catch {
            throw DecodingError(reason: "the stored session is not JSON")
        }
        guard let object = parsed as? [String: Any], object["format"] as? String == formatName else {
            throw DecodingError(reason: "the stored session is not a \(formatName) record")
        }
        guard let version = object["version"] as? Int else {
            throw DecodingError(reason: "the stored session has no version")
        }
        guard version <= currentVersion else {
            throw DecodingError(reason: "the stored session has format version \(version), newer than this SessionKeeper understands (\(currentVersion))")
        }
        guard let lastLoginText = object["last_login"] as? String, let lastLogin = CookieTime.parseRFC3339(lastLoginText) else {
            throw DecodingError(reason: "the stored session has no valid last_login time")
        }
        var expiresAt: Date?
        if let text = object["expires_at"] as? String {
            guard let date = CookieTime.parseRFC3339(text) else {
                throw DecodingError(reason: "the stored session's expires_at is not an RFC 3339 time")
            }
            expiresAt = date
        }
        guard let cookieValue = object["cookies"], cookieValue is [Any] else {
            throw DecodingError(reason: "the stored session has no cookie list")
        }
        let cookies: [Cookie]
        do {
            let cookieData = try JSONSerialization.data(withJSONObject: cookieValue)
            cookies = try CookieCodec.decode(String(decoding: cookieData, as: UTF8.self), as: .json, url: nil, now: now)
        } catch let error as CookieFormatError {
            // The codec's messages name lines and fields, never values.
            throw DecodingError(reason: "the stored session's cookies are invalid: \(error)")
        } catch {
            throw DecodingError(reason: "the stored session's cookies could not be read")
        }
        return SiteSessionRecord(cookies: cookies.filter { !$0.isExpired(at: now) }, lastLogin: lastLogin, expiresAt: expiresAt)
    }
}
