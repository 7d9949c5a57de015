import Foundation

/// A Set-Cookie header value split per RFC 6265 section 5.2, before any storage rule applies.
public struct ParsedSetCookie: Sendable, Hashable {
    public var name: String
    public var value: String
    /// The last valid `Expires` attribute (section 5.2.1).
    public var expires: Date?
    /// The last valid `Max-Age` attribute in seconds (section 5.2.2); it wins over `Expires`.
    public var maxAge: Int64?
    /// The last non-empty `Domain` attribute, leading dot removed, lower case (section 5.2.3).
    public var domain: String?
    /// The last `Path` attribute that starts with `/` (section 5.2.4); nil means the default-path.
    public var path: String?
    public var secure = false
    public var httpOnly = false
    public var sameSite: SameSite?
    public var version: Int?
    public var comment: String?
    public var commentURL: String?
    public var portList: [Int]?
}

/// Why a Set-Cookie string was ignored. The descriptions name attributes and hosts, never the value.
public enum SetCookieParseFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// RFC 6265bis section 5.6 step 1: a control character other than HTAB anywhere in the header.
    case controlCharacter
    /// RFC 6265 section 5.2 step 2: no `=` in the name-value pair.
    case missingEquals
    /// RFC 6265 section 5.2 step 5: the name is empty.
    case emptyName
    /// A tab inside the name or the value (see ``SetCookieParser``).
    case tabInNameOrValue
    /// Bytes that are not UTF-8: the jar keeps names and values as text and refuses such a cookie rather
    /// than rewrite its bytes (RFC 6265bis section 5.6 treats them as octets; these never round-trip).
    case notUTF8

    public var description: String {
        switch self {
        case .controlCharacter: "the header holds a control character"
        case .missingEquals: "no '=' in the name-value pair"
        case .emptyName: "the cookie name is empty"
        case .tabInNameOrValue: "a tab inside the cookie name or value"
        case .notUTF8: "bytes that are not UTF-8 (the jar refuses them rather than rewrite them)"
        }
    }
}

/// RFC 6265 section 5.2: the Set-Cookie parsing algorithm, as lenient as browsers are.
public enum SetCookieParser {
    /// RFC 6265bis section 5.6: attribute values longer than this are ignored, to bound what one header
    /// can make the jar store.
    public static let maxAttributeValueBytes = 1024

    /// Parses one Set-Cookie header value (without the `Set-Cookie:` field name).
    public static func parse(_ header: String) -> Result<ParsedSetCookie, SetCookieParseFailure> {
        // The header's own UTF-8 storage (made contiguous first only if it is not native): no copy per header.
        var header = header
        return header.withUTF8 { parse(bytes: $0[...]) }
    }

    /// Parses one Set-Cookie header value given as the octets received: a value that is not UTF-8 is
    /// refused (``SetCookieParseFailure/notUTF8``), never decoded into other bytes.
    public static func parse(octets: some Collection<UInt8>) -> Result<ParsedSetCookie, SetCookieParseFailure> {
        guard let header = String(validating: octets, as: UTF8.self) else { return .failure(.notUTF8) }
        return parse(header)
    }

    private static func parse(bytes: CookieBytes) -> Result<ParsedSetCookie, SetCookieParseFailure> {
        // RFC 6265bis 5.6 step 1: CTLs other than HTAB make the whole header invalid. The same pass notes
        // whether there is any tab, so the name and value are searched for one only when there is.
        let controls = scanControls(bytes)
        if controls.other { return .failure(.controlCharacter) }
        let sawTab = controls.tab
        // Steps 1-5: the name-value pair runs up to the first ';'.
        let semicolon = firstIndex(of: 0x3B, in: bytes) ?? bytes.endIndex
        let pair = bytes[..<semicolon]
        guard let equals = pair.firstIndex(of: 0x3D) else { return .failure(.missingEquals) }
        let name = trimWhitespace(pair[..<equals])
        let value = trimWhitespace(pair[(equals + 1)...])
        guard !name.isEmpty else { return .failure(.emptyName) }
        // RFC 6265bis allows HTAB inside a name or value; the jar refuses it because cookies.txt separates its
        // fields with tabs and no Cookie header a server expects holds one.
        if sawTab, name.contains(0x09) || value.contains(0x09) { return .failure(.tabInNameOrValue) }
        var cookie = ParsedSetCookie(name: string(name), value: string(value))

        // Section 5.2 steps for the unparsed-attributes, one cookie-av at a time.
        var index = semicolon
        while index < bytes.endIndex {
            index += 1  // the ';'
            let end = firstIndex(of: 0x3B, in: bytes[index...]) ?? bytes.endIndex
            let av = bytes[index..<end]
            index = end
            let attributeName: CookieBytes
            let attributeValue: CookieBytes
            if let eq = av.firstIndex(of: 0x3D) {
                attributeName = trimWhitespace(av[..<eq])
                attributeValue = trimWhitespace(av[(eq + 1)...])
            } else {
                attributeName = trimWhitespace(av)
                attributeValue = av[av.endIndex...]
            }
            guard attributeValue.count <= maxAttributeValueBytes else { continue }
            guard let kind = Attribute(attributeName) else { continue }  // 5.2 step 6: unknown attributes are ignored.
            apply(kind, value: attributeValue, to: &cookie)
        }
        return .success(cookie)
    }

    /// Whether `bytes` holds a control character other than HTAB (`other`) and whether it holds a tab. Eight
    /// bytes at a time: a word with no byte below 0x20 and none equal to 0x7F (the usual case) is passed in
    /// a few operations; only a word that may hold one is looked at byte by byte.
    static func scanControls(_ bytes: CookieBytes) -> (other: Bool, tab: Bool) {
        guard let base = bytes.base.baseAddress else { return (false, false) }
        var tab = false
        var index = bytes.startIndex
        let end = bytes.endIndex
        let ones: UInt64 = 0x0101_0101_0101_0101, highBits: UInt64 = 0x8080_8080_8080_8080
        while end - index >= 8 {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            // Exact "has a byte < 0x20" and "has a byte == 0x7F" tests (no false negatives, and no false
            // positives for the word as a whole).
            let below20 = (word &- 0x20 &* ones) & ~word & highBits
            let del = word ^ (0x7F &* ones)
            let equal7F = (del &- ones) & ~del & highBits
            if below20 | equal7F == 0 {
                index += 8
                continue
            }
            // The word may hold one: its bytes are read one by one.
            let wordEnd = index + 8
            while index < wordEnd {
                let byte = base[index]
                if byte == 0x09 { tab = true } else if byte < 0x20 || byte == 0x7F { return (true, tab) }
                index += 1
            }
        }
        while index < end {
            let byte = base[index]
            if byte == 0x09 { tab = true } else if byte < 0x20 || byte == 0x7F { return (true, tab) }
            index += 1
        }
        return (false, tab)
    }

    /// The position of the first `byte` in `slice` (memchr, which compares many bytes per step).
    static func firstIndex(of byte: UInt8, in slice: CookieBytes) -> Int? {
        guard !slice.isEmpty, let base = slice.base.baseAddress else { return nil }
        guard let found = memchr(base + slice.startIndex, Int32(byte), slice.count) else { return nil }
        return UnsafeRawPointer(found) - UnsafeRawPointer(base)
    }

    /// The attributes the jar understands, matched case-insensitively without allocating.
    enum Attribute: String, CaseIterable {
        case expires, maxAge = "max-age", domain, path, secure, httpOnly = "httponly", sameSite = "samesite"
        case version, comment, commentURL = "commenturl", port

        /// The lower-case spelling, as bytes without a String in between.
        var spelling: StaticString {
            switch self {
            case .expires: "expires"
            case .maxAge: "max-age"
            case .domain: "domain"
            case .path: "path"
            case .secure: "secure"
            case .httpOnly: "httponly"
            case .sameSite: "samesite"
            case .version: "version"
            case .comment: "comment"
            case .commentURL: "commenturl"
            case .port: "port"
            }
        }

        init?(_ name: CookieBytes) {
            // The length and first letter pick the one candidate (path/port also by the second letter); the
            // whole name is then compared with it, so any other name is still refused.
            guard name.count >= 4, name.count <= 10 else { return nil }
            let first = name[name.startIndex] | 0x20
            let candidate: Attribute
            switch (name.count, first) {
            case (7, 0x65): candidate = .expires   // e
            case (7, 0x6D): candidate = .maxAge    // m
            case (6, 0x64): candidate = .domain    // d
            case (4, 0x70): candidate = name[name.startIndex + 1] | 0x20 == 0x61 ? .path : .port  // p, a/o
            case (6, 0x73): candidate = .secure    // s
            case (8, 0x68): candidate = .httpOnly  // h
            case (8, 0x73): candidate = .sameSite  // s
            case (7, 0x76): candidate = .version   // v
            case (7, 0x63): candidate = .comment   // c
            case (10, 0x63): candidate = .commentURL
            default: return nil
            }
            // Index by index (the lengths are equal): a zip over the two collections costs several times more.
            let matches = candidate.spelling.withUTF8Buffer { spelling -> Bool in
                var offset = name.startIndex
                for expected in spelling {
                    let byte = name[offset]
                    if expected != ((byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte) { return false }
                    offset += 1
                }
                return true
            }
            guard matches else { return nil }
            self = candidate
        }
    }

    private static func apply(_ attribute: Attribute, value: CookieBytes, to cookie: inout ParsedSetCookie) {
        switch attribute {
        case .expires:
            // 5.2.1: an unparsable date is ignored.
            if let date = CookieDateParser.parse(value) { cookie.expires = date }
        case .maxAge:
            if let seconds = parseMaxAge(value) { cookie.maxAge = seconds }
        case .domain:
            // 5.2.3: an empty value is ignored; a leading dot is dropped; the domain is lower-cased.
            guard !value.isEmpty else { return }
            var domain = value
            if domain.first == 0x2E { domain = domain.dropFirst() }
            guard !domain.contains(0x09) else { return }
            cookie.domain = lowercased(domain)
        case .path:
            // 5.2.4: an empty or relative path means the default-path (so does one holding a tab, which
            // could not be written to cookies.txt).
            cookie.path = value.first == 0x2F && !value.contains(0x09) ? string(value) : nil
        case .secure:
            cookie.secure = true
        case .httpOnly:
            cookie.httpOnly = true
        case .sameSite:
            // RFC 6265bis 5.6.7: an unknown value leaves the attribute unset. Compared as bytes, ignoring ASCII
            // case (no String, no string switch).
            cookie.sameSite = sameSite(value)
        case .version:
            if let number = Int(string(unquoted(value))) { cookie.version = number }
        case .comment:
            cookie.comment = string(value)
        case .commentURL:
            cookie.commentURL = string(unquoted(value))
        case .port:
            let ports = string(unquoted(value)).split(separator: ",").compactMap {
                Int($0.trimmingCharacters(in: .whitespaces))
            }.filter { (1...65535).contains($0) }
            cookie.portList = ports
        }
    }

    /// The SameSite value `value` names, ignoring ASCII case; nil for any other value.
    static func sameSite(_ value: CookieBytes) -> SameSite? {
        func equals(_ lowercase: StaticString) -> Bool {
            value.count == lowercase.utf8CodeUnitCount && lowercase.withUTF8Buffer { expected in
                zip(expected, value).allSatisfy { $0 == (($1 >= 0x41 && $1 <= 0x5A) ? $1 | 0x20 : $1) }
            }
        }
        if equals("lax") { return .lax }
        if equals("strict") { return .strict }
        if equals("none") { return SameSite.none }
        return nil
    }

    /// 5.2.2: a leading DIGIT or "-", then only DIGITs; otherwise the attribute is ignored. Huge values saturate.
    static func parseMaxAge(_ value: CookieBytes) -> Int64? {
        guard let first = value.first, first == 0x2D || CookieDateParser.isDigit(first) else { return nil }
        let digits = first == 0x2D ? value.dropFirst() : value
        guard !digits.isEmpty, digits.allSatisfy(CookieDateParser.isDigit) else { return nil }
        var number: Int64 = 0
        for digit in digits {
            let (times10, overflow1) = number.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(digit - 0x30))
            if overflow1 || overflow2 { number = Int64.max; break }
            number = sum
        }
        return first == 0x2D ? -number : number
    }

    /// WSP (SP and HTAB) removed at both ends, as section 5.2 says; other whitespace stays.
    static func trimWhitespace(_ slice: CookieBytes) -> CookieBytes {
        var start = slice.startIndex
        var end = slice.endIndex
        while start < end, slice[start] == 0x20 || slice[start] == 0x09 { start += 1 }
        while end > start, slice[end - 1] == 0x20 || slice[end - 1] == 0x09 { end -= 1 }
        return slice[start..<end]
    }

    static func unquoted(_ slice: CookieBytes) -> CookieBytes {
        if slice.count >= 2, slice.first == 0x22, slice.last == 0x22 { return slice.dropFirst().dropLast() }
        return slice
    }

    static func string(_ slice: CookieBytes) -> String {
        // From the buffer: String's fast validating path, not the generic collection one.
        String(decoding: UnsafeBufferPointer(rebasing: slice), as: UTF8.self)
    }

    /// ASCII lower-casing (attribute names and domains are compared case-insensitively only for ASCII).
    static func lowercased(_ slice: CookieBytes) -> String {
        // Most domains and SameSite values arrive in lower case already: no intermediate array for them.
        guard slice.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return string(slice) }
        return String(decoding: slice.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
