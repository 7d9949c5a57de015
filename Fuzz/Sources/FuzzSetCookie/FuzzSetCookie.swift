// Fuzz target `set-cookie`: the Set-Cookie parser and the jar.
//
// Input: the first line is the URL the response came from (a default one when it is no URL with a host), every
// further line one Set-Cookie header value. The values are stored as one response, then the jar is read back
// for the URL and written in every export format. Besides crashes, a broken invariant traps:
// - no stored cookie breaks a rule of RFC 6265 section 5.3 / 6265bis (domain, host-only, Secure from an insecure
//   origin, the __Secure- and __Host- prefixes, the 400-day cap, the size limit, control characters);
// - `cookies(for:)` hands out only cookies that domain- and path-match the URL, Secure ones only to a secure one;
// - the lossless `json` format reads back exactly what it wrote.
import FuzzDriver
@testable import CookieJar
import Foundation

/// The conformance suite's clock (its expiry dates are fixed).
private let now = Date(timeIntervalSince1970: 1_420_070_400)
private let defaultURL = URL(string: "http://home.example.org:8888/cookie-parser?fuzz")!

@main
enum Main {
    static func main() { runFuzzer(fuzzSetCookie) }
}

/// One input (libFuzzer's LLVMFuzzerTestOneInput).
func fuzzSetCookie(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    guard let first = lines.first else { return 0 }
    var url = defaultURL
    if let text = String(validating: first, as: UTF8.self), let parsed = URL(string: text), CookieRules.canonicalHost(of: parsed) != nil {
        url = parsed
    }
    // Header values reach the jar as text; bytes that are not UTF-8 are refused before it (refusedAsNotUTF8).
    let values = lines.dropFirst().map { String(decoding: $0, as: UTF8.self) }

    let jar = CookieStorage(clock: { now })
    let decisions = jar.setCookies(fromHeaders: values, for: url, mainDocumentURL: url)
    check(decisions.count == values.count, "one decision per header")
    let host = CookieRules.canonicalHost(of: url)!
    for case .stored(let cookie) in decisions where !cookie.isExpired(at: now) {
        checkStored(cookie, from: url, host: host, limits: jar.limits)
    }
    for cookie in jar.allCookies { checkStored(cookie, from: nil, host: nil, limits: jar.limits) }

    for requestURL in [url, url.deletingLastPathComponent(), URL(string: "https://\(host)/")].compactMap({ $0 }) {
        guard let requestHost = CookieRules.canonicalHost(of: requestURL) else { continue }
        let sent = jar.cookies(for: requestURL)
        for cookie in sent {
            check(cookie.hostOnly ? cookie.domain == requestHost : CookieRules.domainMatches(host: requestHost, domain: cookie.domain),
                  "cookies(for:) sent a cookie of another domain")
            check(CookieRules.pathMatches(requestPath: CookieRules.requestPath(of: requestURL), cookiePath: cookie.path),
                  "cookies(for:) sent a cookie of another path")
            check(!cookie.secure || CookieRules.isSecureOrigin(requestURL), "cookies(for:) sent a Secure cookie to an insecure origin")
            check(!cookie.isExpired(at: now), "cookies(for:) sent an expired cookie")
        }
        let header = jar.cookieHeader(for: requestURL)
        check(header == (sent.isEmpty ? nil : CookieCodec.encode(sent, as: .header)), "cookieHeader(for:) and cookies(for:) disagree")
    }

    let all = jar.allCookies
    for format in CookieFormat.allCases { _ = CookieCodec.encode(all, as: format) }
    do {
        let readBack = try CookieCodec.decode(CookieCodec.encode(all, as: .json), as: .json, url: nil, now: now)
        check(readBack == all, "the json format did not read back what it wrote")
    } catch {
        check(false, "the json format could not read what it wrote")
    }
    return 0
}

/// The rules a cookie in the jar must satisfy; `url` and `host` when it was stored from that response.
private func checkStored(_ cookie: Cookie, from url: URL?, host: String?, limits: CookieLimits) {
    check(!cookie.name.isEmpty, "a cookie without a name")
    check(cookie.path.hasPrefix("/"), "a cookie path that does not start with '/'")
    check(cookie.nameValueByteCount <= limits.maxCookieBytes, "a cookie over the size limit")
    let controls = { (text: String) in text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F } }
    check(!controls(cookie.name) && !controls(cookie.value), "a control character in a stored name or value")
    if let expires = cookie.expires {
        check(expires.timeIntervalSince(cookie.created) <= CookieRules.maxExpiryInterval + 1, "an expiry past the 400-day cap")
    }
    if hasPrefixIgnoringASCIICase(cookie.name, "__secure-") { check(cookie.secure, "a __Secure- cookie without Secure") }
    if hasPrefixIgnoringASCIICase(cookie.name, "__host-") {
        check(cookie.secure && cookie.hostOnly && cookie.path == "/", "a __Host- cookie with Domain, another path or no Secure")
    }
    if !cookie.hostOnly {
        check(!PublicSuffixList.shared.isPublicSuffix(cookie.domain), "a domain cookie for a public suffix")
    }
    guard let url, let host else { return }
    if cookie.hostOnly {
        check(cookie.domain == host, "a host-only cookie for another host")
    } else {
        check(CookieRules.domainMatches(host: host, domain: cookie.domain), "a domain cookie the host does not domain-match")
    }
    check(!cookie.secure || CookieRules.isSecureOrigin(url), "a Secure cookie from an insecure origin")
}

/// A broken invariant: a crash libFuzzer records with its input.
private func check(_ condition: Bool, _ invariant: StaticString) {
    if !condition { fatalError("invariant broken: \(invariant)") }
}
