import Foundation
import JSON

/// The cookie file and wire formats of SPEC section 4.
public enum CookieFormat: String, Sendable, CaseIterable {
    /// The `Cookie` request header's value: `a=1; b=2`.
    case header
    /// One `Set-Cookie:` line per cookie.
    case setCookie = "set-cookie"
    /// cookies.txt as curl, wget and yt-dlp read and write it.
    case netscape
    /// The lossless JSON list of SPEC section 4.
    case json
    /// Playwright's storageState: `{"cookies": [...], "origins": []}`.
    case playwright

    /// The format a text is most likely in, or nil when it looks like none (for example when empty).
    public static func guess(from content: String) -> CookieFormat? {
        let trimmed = content.drop { $0.isWhitespace }
        guard let first = trimmed.first else { return nil }
        if first == "{" { return trimmed.contains("\"cookies\"") ? .playwright : nil }
        if first == "[" { return .json }
        let lines = trimmed.split(whereSeparator: \.isNewline)
        guard let firstLine = lines.first else { return nil }
        if firstLine.hasPrefix("#") || lines.contains(where: { $0.split(separator: "\t", omittingEmptySubsequences: false).count >= 7 }) {
            return .netscape
        }
        if firstLine.lowercased().hasPrefix("set-cookie:") { return .setCookie }
        let attributeMarkers = ["; path=", "; domain=", "; expires=", "; max-age=", "; secure", "; httponly", "; samesite="]
        let lowered = trimmed.lowercased()
        if attributeMarkers.contains(where: lowered.contains) { return .setCookie }
        return firstLine.contains("=") ? .header : nil
    }
}

/// A cookie text that could not be read. The message names the format, the line and what is wrong, never
/// a cookie value.
public struct CookieFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    public var format: CookieFormat
    /// 1-based line, when the error has one.
    public var line: Int?
    public var message: String

    public init(format: CookieFormat, line: Int?, message: String) {
        self.format = format
        self.line = line
        self.message = message
    }

    public var description: String {
        if let line { return "\(format.rawValue) line \(line): \(message)" }
        return "\(format.rawValue): \(message)"
    }
}

/// Reading and writing cookies in each ``CookieFormat``. Every round trip keeps what the format can hold:
/// `json` everything; `netscape` all but SameSite, the times and legacy attributes (expiry to the second);
/// `playwright` all but the times and legacy attributes (an unset SameSite is written as Lax); `set-cookie`
/// all but the times; `header` names and values.
public enum CookieCodec {
    /// Writes cookies in `format`, in the order given. `origins` (the localStorage a browser login returned)
    /// go into `playwright`'s `origins`; the other formats have no place for them.
    public static func encode(_ cookies: [Cookie], as format: CookieFormat, origins: [StorageOrigin] = []) -> String {
        switch format {
        case .header: cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
        case .setCookie: cookies.map { "Set-Cookie: " + setCookieLine($0) + "\n" }.joined()
        case .netscape: NetscapeFormat.encode(cookies)
        case .json: JSONCookieFormat.encode(cookies)
        case .playwright: PlaywrightFormat.encode(cookies, origins: origins)
        }
    }

    /// Reads cookies in `format`.
    /// - Parameters:
    ///   - url: where the cookies come from: required for `header` (which names no domain); for `set-cookie`
    ///     it supplies the host and default path and applies the RFC 6265 rules; ignored by the file formats.
    ///   - now: creation and last-access time of cookies whose format holds none, and the base for `Max-Age`.
    public static func decode(_ text: String, as format: CookieFormat, url: URL?, now: Date) throws(CookieFormatError) -> [Cookie] {
        switch format {
        case .header: try decodeHeader(text, url: url, now: now)
        case .setCookie: try decodeSetCookie(text, url: url, now: now)
        case .netscape: try NetscapeFormat.decode(text, now: now)
        case .json: try JSONCookieFormat.decode(text, now: now)
        case .playwright: try PlaywrightFormat.decode(text, now: now)
        }
    }

    /// A Set-Cookie header value that recreates `cookie` (host-only cookies carry no Domain attribute).
    public static func setCookieLine(_ cookie: Cookie) -> String {
        var line = "\(cookie.name)=\(cookie.value)"
        if !cookie.hostOnly { line += "; Domain=\(cookie.domain)" }
        line += "; Path=\(cookie.path)"
        if let expires = cookie.expires { line += "; Expires=\(CookieTime.httpDate(expires))" }
        if cookie.secure { line += "; Secure" }
        if cookie.httpOnly { line += "; HttpOnly" }
        if let sameSite = cookie.sameSite { line += "; SameSite=\(sameSite.rawValue.capitalized)" }
        if let version = cookie.version { line += "; Version=\(version)" }
        if let comment = cookie.comment { line += "; Comment=\(comment)" }
        if let commentURL = cookie.commentURL { line += "; CommentURL=\"\(commentURL)\"" }
        if let ports = cookie.portList { line += "; Port=\"\(ports.map(String.init).joined(separator: ","))\"" }
        return line
    }

    private static func contentLines(_ text: String) -> [(number: Int, text: Substring)] {
        text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { offset, raw in
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            return line.allSatisfy({ $0 == " " || $0 == "\t" }) ? nil : (offset + 1, line)
        }
    }

    private static func decodeHeader(_ text: String, url: URL?, now: Date) throws(CookieFormatError) -> [Cookie] {
        guard let url, let host = CookieRules.canonicalHost(of: url) else {
            throw CookieFormatError(format: .header, line: nil, message: "a Cookie header names no domain: give the URL it was sent to")
        }
        var cookies: [Cookie] = []
        for (number, line) in contentLines(text) {
            var body = line
            if body.lowercased().hasPrefix("cookie:") { body = body.dropFirst("cookie:".count) }
            for (position, pair) in body.split(separator: ";").enumerated() {
                let trimmed = pair.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                if trimmed.isEmpty { continue }
                guard let equals = trimmed.firstIndex(of: "=") else {
                    throw CookieFormatError(format: .header, line: number, message: "pair \(position + 1) has no '='")
                }
                let name = String(trimmed[..<equals])
                guard !name.isEmpty else { throw CookieFormatError(format: .header, line: number, message: "pair \(position + 1) has an empty name") }
                cookies.append(Cookie(name: name, value: String(trimmed[trimmed.index(after: equals)...]), domain: host,
                                      hostOnly: true, path: "/", created: now))
            }
        }
        return cookies
    }

    private static func decodeSetCookie(_ text: String, url: URL?, now: Date) throws(CookieFormatError) -> [Cookie] {
        var cookies: [Cookie] = []
        for (number, line) in contentLines(text) {
            var header = line
            if header.lowercased().hasPrefix("set-cookie:") { header = header.dropFirst("set-cookie:".count) }
            let parsed: ParsedSetCookie
            switch SetCookieParser.parse(String(header)) {
            case .success(let value): parsed = value
            case .failure(let failure): throw CookieFormatError(format: .setCookie, line: number, message: failure.description)
            }
            if let url {
                switch CookieRules.makeCookie(from: parsed, receivedFrom: url, now: now) {
                case .success(let cookie): cookies.append(cookie)
                case .failure(let rejection):
                    throw CookieFormatError(format: .setCookie, line: number, message: "cookie \(parsed.name): \(rejection)")
                }
            } else {
                guard let domain = parsed.domain, !domain.isEmpty else {
                    throw CookieFormatError(format: .setCookie, line: number,
                                            message: "cookie \(parsed.name) has no Domain attribute and no URL gives its host")
                }
                var expires = parsed.expires
                if let maxAge = parsed.maxAge { expires = maxAge <= 0 ? Date.distantPast : now.addingTimeInterval(TimeInterval(maxAge)) }
                cookies.append(Cookie(
                    name: parsed.name, value: parsed.value, domain: domain, hostOnly: false, path: parsed.path ?? "/",
                    expires: expires, secure: parsed.secure, httpOnly: parsed.httpOnly, sameSite: parsed.sameSite,
                    created: now, version: parsed.version, comment: parsed.comment, commentURL: parsed.commentURL,
                    portList: parsed.portList))
            }
        }
        return cookies
    }
}

/// cookies.txt: `domain <TAB> include-subdomains <TAB> path <TAB> secure <TAB> expiry <TAB> name <TAB> value`,
/// with curl's `#HttpOnly_` domain prefix and 0 as the expiry of a session cookie.
enum NetscapeFormat {
    static let httpOnlyPrefix = "#HttpOnly_"

    static func encode(_ cookies: [Cookie]) -> String {
        var text = "# Netscape HTTP Cookie File\n# https://curl.se/docs/http-cookies.html\n# Written by SessionKeeper.\n\n"
        for cookie in cookies {
            let domain = (cookie.httpOnly ? httpOnlyPrefix : "") + (cookie.hostOnly ? "" : ".") + cookie.domain
            var expiry: Int64 = 0
            if let expires = cookie.expires {
                // 0 means "session" in this format, so an already-past expiry is written as 1.
                expiry = max(1, Int64(exactly: expires.timeIntervalSince1970.rounded(.down)) ?? 1)
            }
            text += [domain, cookie.hostOnly ? "FALSE" : "TRUE", cookie.path, cookie.secure ? "TRUE" : "FALSE",
                     String(expiry), cookie.name, cookie.value].joined(separator: "\t") + "\n"
        }
        return text
    }

    static func decode(_ text: String, now: Date) throws(CookieFormatError) -> [Cookie] {
        var cookies: [Cookie] = []
        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = offset + 1
            var line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            var httpOnly = false
            if line.hasPrefix(httpOnlyPrefix) {
                httpOnly = true
                line = line.dropFirst(httpOnlyPrefix.count)
            } else if line.hasPrefix("#") || line.allSatisfy({ $0 == " " || $0 == "\t" }) {
                continue
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count >= 6 else {
                throw CookieFormatError(format: .netscape, line: number, message: "expected 7 tab-separated fields, found \(fields.count)")
            }
            func flag(_ field: Substring, _ what: String) throws(CookieFormatError) -> Bool {
                switch field.uppercased() {
                case "TRUE": return true
                case "FALSE": return false
                default: throw CookieFormatError(format: .netscape, line: number, message: "\(what) must be TRUE or FALSE")
                }
            }
            let domainField = fields[0]
            let includeSubdomains = try flag(fields[1], "field 2 (include subdomains)")
            let secure = try flag(fields[3], "field 4 (secure)")
            guard let expiry = Int64(fields[4]) else {
                throw CookieFormatError(format: .netscape, line: number, message: "field 5 (expiry) is not a whole number of seconds")
            }
            let domain = CookieRules.canonicalDomain(String(domainField))
            guard !domain.isEmpty else { throw CookieFormatError(format: .netscape, line: number, message: "field 1 (domain) is empty") }
            let path = String(fields[2])
            guard path.hasPrefix("/") else { throw CookieFormatError(format: .netscape, line: number, message: "field 3 (path) does not start with '/'") }
            let name = String(fields[5])
            guard !name.isEmpty else { throw CookieFormatError(format: .netscape, line: number, message: "field 6 (name) is empty") }
            // A value may itself hold tabs (HTAB is legal in cookie values): everything after the name is the value.
            let value = fields.count >= 7 ? fields[6...].joined(separator: "\t") : ""
            cookies.append(Cookie(name: name, value: value, domain: domain, hostOnly: !includeSubdomains, path: path,
                                  expires: expiry == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(expiry)),
                                  secure: secure, httpOnly: httpOnly, created: now))
        }
        return cookies
    }
}

/// The lossless `json` format of SPEC section 4, one cookie object per line (``Cookie/jsonObject``).
enum JSONCookieFormat {
    static func encode(_ cookies: [Cookie]) -> String {
        guard !cookies.isEmpty else { return "[]\n" }
        let lines = cookies.map { "  " + JSONWriter.write($0.jsonObject, layout: .spaced) }
        return "[\n" + lines.joined(separator: ",\n") + "\n]\n"
    }

    static func decode(_ text: String, now: Date) throws(CookieFormatError) -> [Cookie] {
        do {
            return try JSONValueDecoder(userInfo: [.cookieDefaultCreationTime: now]).decode([Cookie].self, from: text)
        } catch {
            throw CookieFormatError(error, format: .json, cookiesAt: [], container: "a list of cookie objects")
        }
    }
}

/// Playwright's storageState (`browserContext.storageState()`): cookies with `domain` carrying a leading
/// dot for domain cookies, `expires` in seconds since 1970 (-1 for a session cookie), `sameSite` always
/// set. Reading ignores `origins` (the localStorage Playwright saves beside the cookies); writing fills
/// it with the origins given (a browser login's localStorage), else leaves it empty.
enum PlaywrightFormat {
    static func encode(_ cookies: [Cookie], origins: [StorageOrigin] = []) -> String {
        let objects = cookies.map { cookie -> String in
            let object = JSONValue.object([
                ("name", .string(cookie.name)),
                ("value", .string(cookie.value)),
                ("domain", .string((cookie.hostOnly ? "" : ".") + cookie.domain)),
                ("path", .string(cookie.path)),
                ("expires", .number(cookie.expires.map { JSONWriter.number($0.timeIntervalSince1970) } ?? "-1")),
                ("httpOnly", .bool(cookie.httpOnly)),
                ("secure", .bool(cookie.secure)),
                // Playwright always writes sameSite; an unset attribute is what browsers treat as Lax (6265bis 5.6.7).
                ("sameSite", .string((cookie.sameSite ?? .lax).rawValue.capitalized)),
            ])
            return "    " + JSONWriter.write(object, layout: .spaced)
        }
        let list = objects.isEmpty ? "[]" : "[\n" + objects.joined(separator: ",\n") + "\n  ]"
        let originObjects = origins.map { "    " + JSONWriter.write($0.jsonValue, layout: .spaced) }
        let originList = originObjects.isEmpty ? "[]" : "[\n" + originObjects.joined(separator: ",\n") + "\n  ]"
        return "{\n  \"cookies\": \(list),\n  \"origins\": \(originList)\n}\n"
    }

    static func decode(_ text: String, now: Date) throws(CookieFormatError) -> [Cookie] {
        do {
            return try JSONValueDecoder(userInfo: [.cookieDefaultCreationTime: now]).decode(StorageState.self, from: text).cookies
        } catch {
            throw CookieFormatError(error, format: .playwright, cookiesAt: [.key("cookies")], container: "an object with a \"cookies\" list")
        }
    }

    private struct StorageState: Decodable {
        var cookies: [Cookie]

        enum CodingKeys: String, CodingKey { case cookies }

        init(from decoder: any Decoder) throws {
            var list = try decoder.container(keyedBy: CodingKeys.self).nestedUnkeyedContainer(forKey: .cookies)
            var cookies: [Cookie] = []
            while !list.isAtEnd { cookies.append(try list.decode(PlaywrightCookie.self).cookie) }
            self.cookies = cookies
        }
    }

    private struct PlaywrightCookie: Decodable {
        var cookie: Cookie

        enum CodingKeys: String, CodingKey { case name, value, domain, path, expires, httpOnly, secure, sameSite }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let domain = try container.cookieDomain(.domain)
            var expires: Date?
            if let seconds = try container.decodeIfPresent(Double.self, forKey: .expires), seconds >= 0 {
                expires = Date(timeIntervalSince1970: seconds)
            }
            var sameSite: SameSite?
            if let text = try container.decodeIfPresent(String.self, forKey: .sameSite) {
                guard let value = SameSite(rawValue: text.lowercased()) else {
                    throw DecodingError.dataCorruptedError(forKey: .sameSite, in: container, debugDescription: "must be Strict, Lax or None")
                }
                sameSite = value
            }
            cookie = Cookie(
                name: try container.nonEmptyString(.name),
                value: try container.decode(String.self, forKey: .value),
                domain: domain,
                hostOnly: !domain.hasPrefix("."),
                path: try container.cookiePath(.path),
                expires: expires,
                secure: try container.decodeIfPresent(Bool.self, forKey: .secure) ?? false,
                httpOnly: try container.decodeIfPresent(Bool.self, forKey: .httpOnly) ?? false,
                sameSite: sameSite,
                created: decoder.userInfo[.cookieDefaultCreationTime] as? Date ?? Date()
            )
        }
    }
}

extension CookieFormatError {
    /// A decoding error of a JSON cookie format, in the words of the format: the line, the cookie's
    /// position and the key, never a value.
    /// - Parameters:
    ///   - cookiesAt: where the list of cookie objects is in the document.
    ///   - container: what the document must be, for errors above the cookies ("a list of cookie objects").
    init(_ error: JSONDecodingError, format: CookieFormat, cookiesAt listPath: [JSONPathComponent], container: String) {
        let message: String
        if error.kind == .syntax {
            message = "invalid JSON: \(error.reason)"
        } else if error.path.count <= listPath.count || !error.path.starts(with: listPath) {
            let place = error.path.isEmpty ? "the document" : JSONPointer.pointer(for: error.path)
            message = "expected \(container): \(place) \(error.reason)"
        } else {
            var position = ""
            if case .index(let index) = error.path[listPath.count] { position = "cookie \(index + 1)" }
            let inside = error.path.dropFirst(listPath.count + 1).map { component in
                switch component {
                case .key(let name): "\"\(name)\""
                case .index(let index): "item \(index + 1)"
                }
            }
            message = inside.isEmpty ? "\(position) \(error.reason)" : "\(position): \(inside.joined(separator: " ")) \(error.reason)"
        }
        self.init(format: format, line: error.line, message: message)
    }
}
