import Foundation

/// The matching rules of RFC 6265 section 5.1 and the origin rules of RFC 6265bis.
public enum CookieRules {
    /// RFC 6265bis section 5.6.1: user agents cap expiry at 400 days after the cookie was set, so a stolen
    /// cookie cannot live for decades.
    public static let maxExpiryInterval: TimeInterval = 400 * 86_400

    /// RFC 6265 section 5.1.2 canonical host: lower case, IPv6 brackets removed. Nil for a URL without a host,
    /// and for a host that is empty or still starts with a dot once one leading dot is dropped ("..example.com"):
    /// an empty label names no host, and a cookie's domain would lose that dot too and name another host
    /// (found by fuzzing).
    public static func canonicalHost(of url: URL) -> String? {
        // The encoded form is cheaper to get; hosts rarely hold a percent escape, decoded only then.
        guard let host = url.host(percentEncoded: true), !host.isEmpty else { return nil }
        // Almost every host is ASCII without a '%': one pass over its bytes says what to change, and a host
        // already in canonical form (the usual case) is returned without building a new String.
        let scan = ASCIIHostScan(host)
        guard scan.isPlainASCII else { return canonicalHost(decoding: host, of: url) }
        guard scan.hasBrackets || scan.hasLeadingDot || scan.hasUpperCase else { return host }
        var bytes = Array(host.utf8)
        if scan.hasBrackets { bytes = Array(bytes.dropFirst().dropLast()) }
        if bytes.first == 0x2E { bytes.removeFirst() }
        guard let first = bytes.first, first != 0x2E else { return nil }
        return String(decoding: bytes.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// The general form of ``canonicalHost(of:)`` for a host holding a percent escape or a non-ASCII byte,
    /// where dropping brackets or a dot works on characters and lower-casing on Unicode (as it always has).
    private static func canonicalHost(decoding encoded: String, of url: URL) -> String? {
        var host = encoded
        if host.utf8.contains(0x25), let decoded = url.host(percentEncoded: false) { host = decoded }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let canonical = canonicalDomain(host)
        guard let first = canonical.utf8.first, first != 0x2E, isStorableDomain(canonical) else { return nil }
        return canonical
    }

    /// Whether a cookie's domain can be stored and written to every cookie format: no control character and no
    /// space (a tab or a line break would end a cookies.txt field or line), and no leading `#` (a cookies.txt
    /// line starting with it is a comment). A URL's host holds none of these until its percent escapes are
    /// decoded (`http://a%01b/`), so only that path needs the test; the file readers apply it to what they read.
    public static func isStorableDomain(_ domain: String) -> Bool {
        !domain.hasPrefix("#") && !domain.utf8.contains(0x20) && !Cookie.hasControl(domain)
    }

    /// What ``canonicalHost(of:)`` needs to know about a host, read in one pass over its UTF-8 bytes.
    private struct ASCIIHostScan {
        /// Only ASCII bytes and no '%': bytes and characters coincide, nothing to percent-decode.
        var isPlainASCII = true
        var hasUpperCase = false
        /// `[...]`, an IPv6 literal.
        var hasBrackets = false
        /// A leading '.' once any brackets are gone.
        var hasLeadingDot = false

        init(_ host: String) {
            var isPlainASCII = true, hasUpperCase = false
            let bytes = host.utf8
            let scanned: Void? = bytes.withContiguousStorageIfAvailable { buffer in
                for byte in buffer {
                    if byte >= 0x80 || byte == 0x25 { isPlainASCII = false }
                    if byte >= 0x41 && byte <= 0x5A { hasUpperCase = true }
                }
            }
            if scanned == nil {
                for byte in bytes {
                    if byte >= 0x80 || byte == 0x25 { isPlainASCII = false }
                    if byte >= 0x41 && byte <= 0x5A { hasUpperCase = true }
                }
            }
            self.isPlainASCII = isPlainASCII
            self.hasUpperCase = hasUpperCase
            hasBrackets = bytes.count >= 2 && bytes.first == 0x5B && bytes.last == 0x5D
            hasLeadingDot = hasBrackets ? bytes.dropFirst().first == 0x2E && bytes.count > 2 : bytes.first == 0x2E
        }
    }

    /// Lower case (ASCII) with one leading dot removed: the form the jar stores domains in.
    static func canonicalDomain(_ domain: String) -> String {
        // Usually already canonical (every domain the rules hand over is): one look at its bytes, no copy.
        let isCanonical = domain.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.first != 0x2E && !bytes.contains { $0 >= 0x41 && $0 <= 0x5A }
        }
        if isCanonical == true { return domain }
        var text = domain
        if text.utf8.first == 0x2E { text.removeFirst() }
        if hasASCIIUpperCase(text) { text = text.lowercased() }
        return text
    }

    /// True when `text` holds an ASCII capital letter; over the contiguous bytes of a native string, not
    /// through the generic collection path.
    static func hasASCIIUpperCase(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { buffer in buffer.contains { $0 >= 0x41 && $0 <= 0x5A } }
            ?? text.utf8.contains { $0 >= 0x41 && $0 <= 0x5A }
    }

    /// True for an IPv4 or IPv6 literal (which only ever get host-only cookies).
    public static func isIPAddress(_ host: String) -> Bool {
        // One look at the contiguous bytes of a native string; a bridged one is copied first.
        host.utf8.withContiguousStorageIfAvailable(isIPAddress(bytes:)) ?? Array(host.utf8).withUnsafeBufferPointer(isIPAddress(bytes:))
    }

    private static func isIPAddress(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if bytes.contains(0x3A) { return true }
        // A host name ends in a letter (top-level labels are never all digits): no IPv4 parse for it.
        if let last = bytes.last, !(last >= 0x30 && last <= 0x39) { return false }
        return isIPv4Literal(bytes)
    }

    /// `inet_pton(AF_INET, text)` == 1, without the C string and the call: the algorithm glibc and the BSDs
    /// share (ISC's inet_pton4), step for step. Exactly four dotted decimal parts of 0-255, no leading zero,
    /// nothing else; the C function reads up to the first NUL, so this does too.
    static func isIPv4Literal(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        var sawDigit = false
        var octets = 0
        var current: UInt32 = 0
        for byte in text {
            if byte == 0 { break }
            if byte >= 0x30 && byte <= 0x39 {
                let next = current * 10 + UInt32(byte - 0x30)
                if sawDigit && current == 0 { return false }
                if next > 255 { return false }
                current = next
                if !sawDigit {
                    octets += 1
                    if octets > 4 { return false }
                    sawDigit = true
                }
            } else if byte == 0x2E && sawDigit {
                if octets == 4 { return false }
                current = 0
                sawDigit = false
            } else {
                return false
            }
        }
        return octets >= 4
    }

    /// The registrable domain ("eTLD+1") of a canonical host, by the Public Suffix List: `www.example.co.uk` →
    /// `example.co.uk`. An IP address, or a host that is itself a public suffix, is its own. The
    /// `main-document-domain` accept policy admits the cookies within this domain.
    public static func registrableDomain(of host: String) -> String {
        PublicSuffixList.shared.registrableDomain(of: host)
    }

    /// RFC 6265 section 5.1.3 domain-match: identical, or `domain` is a dot-separated suffix of a host
    /// name (never of an IP address).
    public static func domainMatches(host: String, domain: String) -> Bool {
        if host == domain { return true }
        let hostBytes = host.utf8, domainBytes = domain.utf8
        guard hostBytes.count > domainBytes.count else { return false }
        // Native strings are contiguous UTF-8: compare the suffix with memcmp, not element by element.
        if let matches = hostBytes.withContiguousStorageIfAvailable({ hostBuffer -> Bool? in
            domainBytes.withContiguousStorageIfAvailable { domainBuffer -> Bool in
                let suffixStart = hostBuffer.count - domainBuffer.count
                guard hostBuffer[suffixStart - 1] == 0x2E else { return false }
                guard domainBuffer.count > 0 else { return true }
                return memcmp(hostBuffer.baseAddress! + suffixStart, domainBuffer.baseAddress!, domainBuffer.count) == 0
            }
        }), let matches {
            return matches && !isIPAddress(host)
        }
        let suffixStart = hostBytes.index(hostBytes.endIndex, offsetBy: -domainBytes.count)
        guard hostBytes[suffixStart...].elementsEqual(domainBytes) else { return false }
        return hostBytes[hostBytes.index(before: suffixStart)] == 0x2E && !isIPAddress(host)
    }

    /// RFC 6265 section 5.1.4 path-match.
    public static func pathMatches(requestPath: String, cookiePath: String) -> Bool {
        if requestPath == cookiePath { return true }
        // Native strings are contiguous UTF-8: a memcmp and two byte reads, not the generic collection path.
        let contiguous = requestPath.utf8.withContiguousStorageIfAvailable { request in
            cookiePath.utf8.withContiguousStorageIfAvailable { cookie -> Bool in
                guard request.count >= cookie.count else { return false }
                guard let cookieLast = cookie.last else { return request.first == 0x2F }
                guard memcmp(request.baseAddress!, cookie.baseAddress!, cookie.count) == 0 else { return false }
                if cookieLast == 0x2F { return true }
                return request.count > cookie.count && request[cookie.count] == 0x2F
            }
        }
        if let contiguous, let matches = contiguous { return matches }
        // Octet comparisons, as the RFC's string operations are (and no Unicode normalisation cost).
        guard requestPath.utf8.starts(with: cookiePath.utf8) else { return false }
        if cookiePath.utf8.last == 0x2F { return true }
        let request = requestPath.utf8
        return request[request.index(request.startIndex, offsetBy: cookiePath.utf8.count)] == 0x2F
    }

    /// RFC 6265 section 5.1.4 default-path: the request path up to, not including, its last `/`.
    public static func defaultPath(of url: URL) -> String {
        defaultPath(forRequestPath: requestPath(of: url))
    }

    static func defaultPath(forRequestPath path: String) -> String {
        guard path.hasPrefix("/"), let lastSlash = path.lastIndex(of: "/"), lastSlash != path.startIndex else { return "/" }
        return String(path[..<lastSlash])
    }

    /// The path of the request URI as sent on the wire (percent-encoded), `/` when empty.
    static func requestPath(of url: URL) -> String {
        let path = url.path(percentEncoded: true)
        return path.isEmpty ? "/" : path
    }

    /// RFC 6265bis "secure" schemes plus the potentially trustworthy origins of the Secure Contexts spec:
    /// https and wss, and any scheme to localhost, 127.0.0.0/8 or ::1.
    public static func isSecureOrigin(_ url: URL) -> Bool {
        RequestOrigin(url)?.isSecure ?? false
    }

    /// RFC 6265 section 5.3 steps 2-10 with the RFC 6265bis additions: turns a parsed Set-Cookie into the
    /// cookie to store for a response from `url`, or says why the user agent must ignore it.
    /// Storage-dependent rules (size limits, secure overlay, replacement) are the storage's.
    public static func makeCookie(from parsed: ParsedSetCookie, receivedFrom url: URL, now: Date) -> Result<Cookie, CookieRejection> {
        guard let origin = RequestOrigin(url) else { return .failure(.noHost) }
        var parsed = parsed
        return makeCookie(from: &parsed, origin: origin, now: now)
    }

    /// `parsed`'s strings are moved into the cookie (a copy would retain each and then release the parse
    /// result's); what is left of it afterwards is not to be used.
    static func makeCookie(from parsed: inout ParsedSetCookie, origin: RequestOrigin, now: Date) -> Result<Cookie, CookieRejection> {
        let host = origin.host
        // Step 3: Max-Age wins over Expires; 6265bis 5.6.1/5.6.2: capped at 400 days.
        var expires: Date?
        if let maxAge = parsed.maxAge {
            expires = maxAge <= 0 ? Date.distantPast : now.addingTimeInterval(min(TimeInterval(maxAge), maxExpiryInterval))
        } else if let date = parsed.expires {
            expires = date
        }
        if let date = expires, date.timeIntervalSince(now) > maxExpiryInterval {
            expires = now.addingTimeInterval(maxExpiryInterval)
        }
        // Steps 4-6: Domain attribute, public suffixes, host-only.
        var domainAttribute = parsed.domain ?? ""
        if !domainAttribute.isEmpty, PublicSuffixList.shared.isPublicSuffix(domainAttribute) {
            guard domainAttribute == host else { return .failure(.publicSuffix(domainAttribute)) }
            domainAttribute = ""
        }
        let hostOnly: Bool
        let domain: String
        // An IP address has no parent domains: Domain=<the IP> still yields a host-only cookie.
        if domainAttribute == host, origin.isIP { domainAttribute = "" }
        if domainAttribute.isEmpty {
            hostOnly = true
            domain = host
        } else {
            guard domainMatches(host: host, domain: domainAttribute) else {
                return .failure(.domainMismatch(domain: domainAttribute, host: host))
            }
            hostOnly = false
            domain = domainAttribute
        }
        // Step 7: path.
        let path = take(&parsed.path) ?? defaultPath(forRequestPath: origin.path)
        // 6265bis 5.7 step 8: Secure only from secure origins.
        if parsed.secure && !origin.isSecure { return .failure(.secureFromInsecureOrigin) }
        // 6265bis 5.7 steps 19-20: name prefixes (compared case-insensitively, as the current draft says).
        if hasPrefixIgnoringASCIICase(parsed.name, "__secure-"), !parsed.secure { return .failure(.securePrefix) }
        if hasPrefixIgnoringASCIICase(parsed.name, "__host-"), !parsed.secure || !hostOnly || path != "/" {
            return .failure(.hostPrefix)
        }
        return .success(Cookie(
            name: take(&parsed.name, leaving: ""), value: take(&parsed.value, leaving: ""), domain: domain, hostOnly: hostOnly,
            path: path, expires: expires, secure: parsed.secure, httpOnly: parsed.httpOnly, sameSite: parsed.sameSite,
            created: now, lastAccess: now, version: parsed.version, comment: take(&parsed.comment),
            commentURL: take(&parsed.commentURL), portList: take(&parsed.portList)
        ))
    }

    /// `value`, moved out and replaced by `empty` (no retain and release of what it holds).
    private static func take<Value>(_ value: inout Value, leaving empty: Value) -> Value {
        var taken = empty
        swap(&taken, &value)
        return taken
    }

    private static func take<Wrapped>(_ value: inout Wrapped?) -> Wrapped? {
        take(&value, leaving: nil)
    }
}

/// `prefix` must be lower case ASCII.
func hasPrefixIgnoringASCIICase(_ text: String, _ prefix: StaticString) -> Bool {
    let bytes = text.utf8
    guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
    return prefix.withUTF8Buffer { expected in
        // Over the contiguous bytes of a native string (zipping the UTF8View costs several times more).
        bytes.withContiguousStorageIfAvailable { actual in
            for index in expected.indices where expected[index] != ((actual[index] >= 0x41 && actual[index] <= 0x5A) ? actual[index] | 0x20 : actual[index]) {
                return false
            }
            return true
        } ?? zip(expected, bytes).allSatisfy { $0 == (($1 >= 0x41 && $1 <= 0x5A) ? $1 | 0x20 : $1) }
    }
}

/// What the rules need to know about a request URL, worked out once per URL (the storage keeps the last one).
/// It holds the URL's scheme-derived flags, host and path, never anything of a cookie. A class: handing the
/// kept origin to a call then costs one retain, not one per String and URL it holds.
final class RequestOrigin {
    /// Canonical host (5.1.2).
    let host: String
    let isIP: Bool
    /// https/wss, or a loopback host (see ``CookieRules/isSecureOrigin(_:)``).
    let isSecure: Bool
    let url: URL
    /// The request path, when it was worked out up front (see ``init(_:resolvingPath:)``).
    private let resolvedPath: String?

    /// The request path as sent, `/` when empty.
    var path: String { resolvedPath ?? CookieRules.requestPath(of: url) }

    /// - Parameter resolvingPath: work the path out now, for an origin that is kept and asked again; otherwise
    ///   only when needed (most Set-Cookie headers carry Path).
    init?(_ url: URL, resolvingPath: Bool = false) {
        guard let (host, isIP) = Self.canonicalHostAndIsIP(of: url) else { return nil }
        self.host = host
        self.isIP = isIP
        // Scheme names are ASCII: compared without lower-casing into a new String.
        if let scheme = url.scheme, Self.equalsIgnoringASCIICase(scheme, "https") || Self.equalsIgnoringASCIICase(scheme, "wss") {
            isSecure = true
        } else {
            isSecure = host == "localhost" || host.hasSuffix(".localhost") || host == "::1" || (isIP && Self.isLoopbackIPv4Prefixed(host))
        }
        self.url = url
        resolvedPath = resolvingPath ? CookieRules.requestPath(of: url) : nil
    }

    /// ``CookieRules/canonicalHost(of:)`` and ``CookieRules/isIPAddress(_:)`` of it. A host already in canonical
    /// form (ASCII, no '%', no capital, no leading dot, no brackets: the usual case) is read once for both.
    private static func canonicalHostAndIsIP(of url: URL) -> (host: String, isIP: Bool)? {
        guard let encoded = url.host(percentEncoded: true), !encoded.isEmpty else { return nil }
        let isIP = encoded.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            var colon = false
            for byte in bytes {
                if byte >= 0x80 || byte == 0x25 || (byte >= 0x41 && byte <= 0x5A) { return nil }
                if byte == 0x3A { colon = true }
            }
            if bytes.first == 0x2E || (bytes.count >= 2 && bytes.first == 0x5B && bytes.last == 0x5D) { return nil }
            if colon { return true }
            if let last = bytes.last, !(last >= 0x30 && last <= 0x39) { return false }
            return CookieRules.isIPv4Literal(bytes)
        }
        if let isIP, let isIP { return (encoded, isIP) }
        guard let host = CookieRules.canonicalHost(of: url) else { return nil }
        return (host, CookieRules.isIPAddress(host))
    }

    /// `host.hasPrefix("127.")`, by bytes when that is the same thing: the four bytes match and the next is
    /// ASCII (only a non-ASCII scalar can join the '.' into one Character); otherwise String's own test.
    private static func isLoopbackIPv4Prefixed(_ host: String) -> Bool {
        let byPrefix = host.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            guard bytes.count >= 4, bytes[0] == 0x31, bytes[1] == 0x32, bytes[2] == 0x37, bytes[3] == 0x2E else { return false }
            return bytes.count == 4 || bytes[4] < 0x80 ? true : nil
        }
        if let byPrefix, let answer = byPrefix { return answer }
        return host.hasPrefix("127.")
    }

    /// `lowercase` must be lower case ASCII.
    private static func equalsIgnoringASCIICase(_ text: String, _ lowercase: StaticString) -> Bool {
        text.utf8.count == lowercase.utf8CodeUnitCount && hasPrefixIgnoringASCIICase(text, lowercase)
    }
}

/// Why the jar ignored a cookie. Descriptions name hosts, domains and limits, never a cookie value.
public enum CookieRejection: Error, Sendable, Hashable, CustomStringConvertible {
    case parse(SetCookieParseFailure)
    case noHost
    case publicSuffix(String)
    case domainMismatch(domain: String, host: String)
    case secureFromInsecureOrigin
    case securePrefix
    case hostPrefix
    case tooLarge(limit: Int)
    case overlaysSecureCookie
    case expiredOnArrival
    case policyNever
    case outsideMainDocumentDomain(domain: String, registrableDomain: String)
    /// The domain is at its limit with cookies that may not be evicted (restored from a file).
    case domainFull(domain: String, limit: Int)
    /// The jar is at its limit with cookies that may not be evicted (restored from a file).
    case jarFull(limit: Int)

    public var description: String {
        switch self {
        case .parse(let failure): "\(failure)"
        case .noHost: "the URL has no host"
        case .publicSuffix(let domain): "Domain=\(domain) is a public suffix"
        case .domainMismatch(let domain, let host): "Domain=\(domain) does not domain-match the host \(host)"
        case .secureFromInsecureOrigin: "Secure cookie from an insecure origin"
        case .securePrefix: "__Secure- prefix without the Secure attribute"
        case .hostPrefix: "__Host- prefix needs Secure, no Domain attribute and Path=/"
        case .tooLarge(let limit): "name and value exceed \(limit) bytes"
        case .overlaysSecureCookie: "would overlay a Secure cookie of the same name from an insecure origin"
        case .expiredOnArrival: "already expired (it deletes any stored cookie it matches)"
        case .policyNever: "the accept policy is never"
        case .outsideMainDocumentDomain(let domain, let registrable):
            "domain \(domain) is outside the main document's registrable domain \(registrable)"
        case .domainFull(let domain, let limit):
            "\(domain) already holds \(limit) cookies (the per-domain limit) read from the jar file, which are never evicted"
        case .jarFull(let limit):
            "the jar already holds \(limit) cookies (the total limit) read from the jar file, which are never evicted"
        }
    }
}
