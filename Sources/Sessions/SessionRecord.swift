import CookieJar
import Foundation

/// A site's session as a store keeps it: the cookies a login produced, when that login finished, when
/// the session ends, and the User-Agent it was made with (sites that bind a session to the User-Agent
/// need every client to send the same one).
///
/// Its serialised form is one JSON object, versioned so that an older binary never misreads a newer
/// record:
/// `{"format":"sessionkeeper-site-session","version":2,"last_login":RFC3339,"expires_at":RFC3339|null,
/// "user_agent":String|null,"cookies":[the jar's json format],"origins":[...]}`. Version 1 (without
/// `user_agent`) is read too; a newer version is refused with a clear error. `origins` (the localStorage
/// of a browser login, as Playwright's storageState holds it) is written only when there are some and
/// read as none when absent, so records without it, older and newer, read the same: an older binary
/// that does not know the key still serves the cookies. `one_time_codes` (credential name to the last TOTP
/// period whose code a login sent) is written and read the same way, so the next login, in this process or
/// another, never sends a code twice. `learned` (the site's ``LearnedLifetimes``, SPEC section 7) is written and
/// read the same way: an older binary serves the session and leaves what was learned out of what it rewrites.
public struct SessionRecord: Sendable, Hashable {
    /// The `format` marker: tells a session record from any other bytes stored under the site's name.
    public static let formatName = "sessionkeeper-site-session"
    /// The layout this code writes. Version 1 had no `user_agent`.
    public static let currentVersion = 2

    /// Every cookie of the session (session cookies included unless the site keeps none).
    public var cookies: [Cookie]
    /// When the login that produced these cookies finished.
    public var lastLogin: Date
    /// When the first essential cookie expires (nil: none expires, or the site declares none).
    public var expiresAt: Date?
    /// The User-Agent the login sent; nil only in records written before version 2.
    public var userAgent: String?
    /// The localStorage a browser login returned, per origin; served with the cookies in the `playwright`
    /// format. Its values are as secret as cookie values.
    public var origins: [StorageOrigin]
    /// The last TOTP period (RFC 6238's T) whose code a login sent, per credential name.
    public var oneTimeCodes: [String: Int64]
    /// What the daemon learned of the site's idle timeout and lifetime; nil when nothing was.
    public var learned: LearnedLifetimes?

    /// Times are kept to the microsecond, the precision of the stored form, so a record read back from a
    /// store equals the one that was saved.
    public init(cookies: [Cookie], lastLogin: Date, expiresAt: Date?, userAgent: String?, origins: [StorageOrigin] = [],
        oneTimeCodes: [String: Int64] = [:], learned: LearnedLifetimes? = nil
    ) {
        self.cookies = cookies.map { cookie in
            var copy = cookie
            copy.created = Self.stored(cookie.created)
            copy.lastAccess = Self.stored(cookie.lastAccess)
            copy.expires = cookie.expires.map(Self.stored)
            return copy
        }
        self.lastLogin = Self.stored(lastLogin)
        self.expiresAt = expiresAt.map(Self.stored)
        self.userAgent = userAgent
        self.origins = origins
        self.oneTimeCodes = oneTimeCodes
        self.learned = learned
    }

    /// `date` at the precision a record stores (RFC 3339 with microseconds).
    static func stored(_ date: Date) -> Date {
        Timestamp.decodeText(Timestamp(date).text) ?? date
    }

    /// The cookies worth keeping: never expired ones, session-only ones only when `keepSessionCookies`
    /// (`cookies.persist_session_cookies`).
    public static func persistable(_ cookies: [Cookie], keepSessionCookies: Bool, now: Date) -> [Cookie] {
        cookies.filter { !$0.isExpired(at: now) && (keepSessionCookies || !$0.isSessionOnly) }
    }

    /// The cookies still unexpired at `now`.
    public func liveCookies(at now: Date) -> [Cookie] {
        cookies.filter { !$0.isExpired(at: now) }
    }
}

/// Why stored bytes are not a usable session record. Never holds a cookie value.
public struct SessionRecordError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}

extension SessionRecord {
    /// The record as UTF-8 JSON (keys sorted, so equal records give equal bytes).
    public func encoded() throws(SessionRecordError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(Wire(self)))
        } catch {
            throw SessionRecordError(reason: "the session could not be encoded")
        }
    }

    /// Reads bytes written by ``encoded()`` (or by version 1 of the format).
    public static func decode(_ bytes: [UInt8]) throws(SessionRecordError) -> SessionRecord {
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(bytes))
        } catch {
            throw SessionRecordError(reason: "the stored session is not a \(formatName) record")
        }
        guard header.format == formatName else {
            throw SessionRecordError(reason: "the stored session is not a \(formatName) record")
        }
        guard header.version >= 1 else {
            throw SessionRecordError(reason: "the stored session has an invalid format version (\(header.version))")
        }
        guard header.version <= currentVersion else {
            throw SessionRecordError(
                reason: "the stored session has format version \(header.version), newer than this SessionKeeper "
                    + "understands (\(currentVersion)); upgrade SessionKeeper or log in again with --fresh")
        }
        do {
            return try JSONDecoder().decode(Wire.self, from: Data(bytes)).record
        } catch let error as SessionRecordError {
            throw error
        } catch let DecodingError.keyNotFound(key, context) {
            throw SessionRecordError(reason: "the stored session lacks '\(Self.path(context.codingPath + [key]))'")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw SessionRecordError(reason: "the stored session has an invalid '\(Self.path(context.codingPath))'")
        } catch let DecodingError.dataCorrupted(context) {
            throw SessionRecordError(reason: "the stored session has an invalid '\(Self.path(context.codingPath))'")
        } catch {
            throw SessionRecordError(reason: "the stored session could not be read")
        }
    }

    /// `cookies[3].expires`: where in the record a decoding problem sits (names, never values).
    private static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "record" : text
    }

    /// Only the two fields that say whether the rest can be read.
    private struct Header: Decodable {
        var format: String
        var version: Int
    }

    /// The serialised layout.
    private struct Wire: Codable {
        var format: String
        var version: Int
        var lastLogin: Timestamp
        var expiresAt: Timestamp?
        var userAgent: String?
        /// Through `Cookie`'s Codable form: the jar's `json` format object, defined once in CookieJar.
        var cookies: [Cookie]
        var origins: [StorageOrigin]?
        var oneTimeCodes: [String: Int64]?
        var learned: LearnedLifetimes?

        enum CodingKeys: String, CodingKey {
            case format, version, cookies, origins, learned
            case oneTimeCodes = "one_time_codes"
            case lastLogin = "last_login"
            case expiresAt = "expires_at"
            case userAgent = "user_agent"
        }

        init(_ record: SessionRecord) {
            format = SessionRecord.formatName
            version = SessionRecord.currentVersion
            lastLogin = Timestamp(record.lastLogin)
            expiresAt = record.expiresAt.map(Timestamp.init)
            userAgent = record.userAgent
            cookies = record.cookies
            origins = record.origins.isEmpty ? nil : record.origins
            oneTimeCodes = record.oneTimeCodes.isEmpty ? nil : record.oneTimeCodes
            learned = record.learned
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(format, forKey: .format)
            try container.encode(version, forKey: .version)
            try container.encode(lastLogin, forKey: .lastLogin)
            // Written as null rather than left out, as version 1 did: readers can tell "none" from "missing".
            try container.encode(expiresAt, forKey: .expiresAt)
            try container.encode(userAgent, forKey: .userAgent)
            try container.encode(cookies, forKey: .cookies)
            try container.encodeIfPresent(origins, forKey: .origins)
            try container.encodeIfPresent(oneTimeCodes, forKey: .oneTimeCodes)
            try container.encodeIfPresent(learned, forKey: .learned)
        }

        var record: SessionRecord {
            SessionRecord(
                cookies: cookies, lastLogin: lastLogin.date, expiresAt: expiresAt?.date,
                userAgent: userAgent, origins: origins ?? [], oneTimeCodes: oneTimeCodes ?? [:], learned: learned)
        }
    }
}

/// An RFC 3339 instant on the wire (fractional seconds when the time has them).
struct Timestamp: Codable, Hashable {
    var date: Date

    init(_ date: Date) { self.date = date }

    /// The text this instant is stored as.
    var text: String {
        let whole = date.timeIntervalSince1970.rounded(.down) == date.timeIntervalSince1970
        return CookieTime.rfc3339(date, fractional: !whole)
    }

    static func decodeText(_ text: String) -> Date? { CookieTime.parseRFC3339(text) }

    init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let date = Self.decodeText(text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not an RFC 3339 time"))
        }
        self.date = date
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
