import Foundation

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
    /// Writes cookies in `format`, in the order given.
    public static func encode(_ cookies: [Cookie], as format: CookieFormat) -> String {
        switch format {
        case .header: cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
        case .setCookie: cookies.map { "Set-Cookie: " + setCookieLine($0) + "\n" }.joined()
        case .netscape: NetscapeFormat.encode(cookies)
        case .json: JSONCookieFormat.encode(cookies)
        case .playwright: PlaywrightFormat.encode(cookies)
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

/// The lossless `json` format of SPEC section 4, one cookie object per line.
enum JSONCookieFormat {
    static func encode(_ cookies: [Cookie]) -> String {
        guard !cookies.isEmpty else { return "[]\n" }
        let objects = cookies.map { cookie -> String in
            var members: [(String, String)] = [
                ("name", JSONWriter.string(cookie.name)),
                ("value", JSONWriter.string(cookie.value)),
                ("domain", JSONWriter.string(cookie.domain)),
                ("host_only", String(cookie.hostOnly)),
                ("path", JSONWriter.string(cookie.path)),
                ("expires", cookie.expires.map { JSONWriter.string(CookieTime.rfc3339($0, fractional: CookieTime.hasFraction($0))) } ?? "null"),
                ("secure", String(cookie.secure)),
                ("http_only", String(cookie.httpOnly)),
                ("same_site", cookie.sameSite.map { JSONWriter.string($0.rawValue) } ?? "null"),
                ("created", JSONWriter.string(CookieTime.rfc3339(cookie.created, fractional: true))),
                ("last_access", JSONWriter.string(CookieTime.rfc3339(cookie.lastAccess, fractional: true))),
            ]
            if let version = cookie.version { members.append(("version", String(version))) }
            if let comment = cookie.comment { members.append(("comment", JSONWriter.string(comment))) }
            if let commentURL = cookie.commentURL { members.append(("comment_url", JSONWriter.string(commentURL))) }
            if let ports = cookie.portList { members.append(("port_list", "[" + ports.map(String.init).joined(separator: ", ") + "]")) }
            return "  {" + members.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"
        }
        return "[\n" + objects.joined(separator: ",\n") + "\n]\n"
    }

    static func decode(_ text: String, now: Date) throws(CookieFormatError) -> [Cookie] {
        let root = try parseDocument(text, format: .json)
        guard case .array(let elements) = root.value else {
            throw CookieFormatError(format: .json, line: root.line, message: "expected a list of cookie objects, found \(root.typeName)")
        }
        var cookies: [Cookie] = []
        for element in elements {
            let fields = FieldReader(node: element, format: .json)
            try fields.requireObject()
            let created = try fields.time("created") ?? now
            cookies.append(Cookie(
                name: try fields.nonEmptyString("name"),
                value: try fields.string("value"),
                domain: try fields.nonEmptyString("domain"),
                hostOnly: try fields.bool("host_only") ?? false,
                path: try fields.optionalString("path") ?? "/",
                expires: try fields.time("expires"),
                secure: try fields.bool("secure") ?? false,
                httpOnly: try fields.bool("http_only") ?? false,
                sameSite: try fields.sameSite("same_site", lowerCase: true),
                created: created,
                lastAccess: try fields.time("last_access") ?? created,
                version: try fields.integer("version"),
                comment: try fields.optionalString("comment"),
                commentURL: try fields.optionalString("comment_url"),
                portList: try fields.integerList("port_list")
            ))
        }
        return cookies
    }
}

/// Playwright's storageState (`browserContext.storageState()`), cookies only; `origins` is written empty.
enum PlaywrightFormat {
    static func encode(_ cookies: [Cookie]) -> String {
        let objects = cookies.map { cookie -> String in
            let members: [(String, String)] = [
                ("name", JSONWriter.string(cookie.name)),
                ("value", JSONWriter.string(cookie.value)),
                ("domain", JSONWriter.string((cookie.hostOnly ? "" : ".") + cookie.domain)),
                ("path", JSONWriter.string(cookie.path)),
                ("expires", cookie.expires.map { JSONWriter.number($0.timeIntervalSince1970) } ?? "-1"),
                ("httpOnly", String(cookie.httpOnly)),
                ("secure", String(cookie.secure)),
                // Playwright always writes sameSite; an unset attribute is what browsers treat as Lax (6265bis 5.6.7).
                ("sameSite", JSONWriter.string((cookie.sameSite ?? .lax).rawValue.capitalized)),
            ]
            return "    {" + members.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"
        }
        let list = objects.isEmpty ? "[]" : "[\n" + objects.joined(separator: ",\n") + "\n  ]"
        return "{\n  \"cookies\": \(list),\n  \"origins\": []\n}\n"
    }

    static func decode(_ text: String, now: Date) throws(CookieFormatError) -> [Cookie] {
        let root = try parseDocument(text, format: .playwright)
        guard case .object = root.value, let list = root["cookies"], case .array(let elements) = list.value else {
            throw CookieFormatError(format: .playwright, line: root.line, message: "expected an object with a \"cookies\" list")
        }
        var cookies: [Cookie] = []
        for element in elements {
            let fields = FieldReader(node: element, format: .playwright)
            try fields.requireObject()
            let rawDomain = try fields.nonEmptyString("domain")
            var expires: Date?
            if let seconds = try fields.number("expires"), seconds >= 0 { expires = Date(timeIntervalSince1970: seconds) }
            cookies.append(Cookie(
                name: try fields.nonEmptyString("name"),
                value: try fields.string("value"),
                domain: rawDomain,
                hostOnly: !rawDomain.hasPrefix("."),
                path: try fields.optionalString("path") ?? "/",
                expires: expires,
                secure: try fields.bool("secure") ?? false,
                httpOnly: try fields.bool("httpOnly") ?? false,
                sameSite: try fields.sameSite("sameSite", lowerCase: false),
                created: now
            ))
        }
        return cookies
    }
}

private func parseDocument(_ text: String, format: CookieFormat) throws(CookieFormatError) -> JSONNode {
    do {
        return try JSONReader.parse(text)
    } catch {
        throw CookieFormatError(format: format, line: error.line, message: "invalid JSON: \(error.message)")
    }
}

/// Typed access to one cookie object's keys, with errors that name the key and line (never the value).
private struct FieldReader {
    var node: JSONNode
    var format: CookieFormat

    func fail(_ key: String, _ message: String) -> CookieFormatError {
        CookieFormatError(format: format, line: node[key]?.line ?? node.line, message: "\"\(key)\" \(message)")
    }

    func requireObject() throws(CookieFormatError) {
        guard case .object = node.value else {
            throw CookieFormatError(format: format, line: node.line, message: "expected a cookie object, found \(node.typeName)")
        }
    }

    func optionalString(_ key: String) throws(CookieFormatError) -> String? {
        guard let field = node[key] else { return nil }
        switch field.value {
        case .null: return nil
        case .string(let text): return text
        default: throw fail(key, "must be a string, found \(field.typeName)")
        }
    }

    func string(_ key: String) throws(CookieFormatError) -> String {
        guard let text = try optionalString(key) else { throw fail(key, "is missing") }
        return text
    }

    func nonEmptyString(_ key: String) throws(CookieFormatError) -> String {
        let text = try string(key)
        guard !text.isEmpty else { throw fail(key, "is empty") }
        return text
    }

    func bool(_ key: String) throws(CookieFormatError) -> Bool? {
        guard let field = node[key] else { return nil }
        switch field.value {
        case .null: return nil
        case .bool(let flag): return flag
        default: throw fail(key, "must be true or false, found \(field.typeName)")
        }
    }

    func number(_ key: String) throws(CookieFormatError) -> Double? {
        guard let field = node[key] else { return nil }
        switch field.value {
        case .null: return nil
        case .number(let value): return value
        default: throw fail(key, "must be a number, found \(field.typeName)")
        }
    }

    func integer(_ key: String) throws(CookieFormatError) -> Int? {
        guard let value = try number(key) else { return nil }
        guard let integer = Int(exactly: value) else { throw fail(key, "must be a whole number") }
        return integer
    }

    func integerList(_ key: String) throws(CookieFormatError) -> [Int]? {
        guard let field = node[key] else { return nil }
        switch field.value {
        case .null: return nil
        case .array(let elements):
            var result: [Int] = []
            for element in elements {
                guard case .number(let value) = element.value, let integer = Int(exactly: value) else {
                    throw fail(key, "must be a list of whole numbers")
                }
                result.append(integer)
            }
            return result
        default: throw fail(key, "must be a list of whole numbers, found \(field.typeName)")
        }
    }

    func time(_ key: String) throws(CookieFormatError) -> Date? {
        guard let text = try optionalString(key) else { return nil }
        guard let date = CookieTime.parseRFC3339(text) else { throw fail(key, "is not an RFC 3339 time") }
        return date
    }

    func sameSite(_ key: String, lowerCase: Bool) throws(CookieFormatError) -> SameSite? {
        guard let text = try optionalString(key) else { return nil }
        guard let value = SameSite(rawValue: text.lowercased()) else {
            throw fail(key, lowerCase ? "must be strict, lax, none or null" : "must be Strict, Lax or None")
        }
        return value
    }
}
