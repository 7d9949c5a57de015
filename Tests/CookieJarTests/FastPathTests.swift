import Foundation
import TestSupport
import Testing
@testable import CookieJar

/// The small-jar fast paths (byte-level host canonicalisation, the IPv4 literal check without inet_pton, the
/// origin the storage keeps, the Cookie header written straight from the jar, `allCookies` without a sort)
/// must give exactly what the general rules give. Comparisons that involve values are reduced to a Bool
/// first, so a failure never prints a cookie value.
@Suite("Fast paths agree with the general rules")
struct FastPathTests {
    /// The canonical host as the jar computed it before the fast path: Foundation's decoded host when the
    /// encoded one holds a '%', brackets and one leading dot dropped by character, Unicode lower-casing; no
    /// host when what is left is empty or starts with another dot.
    static func referenceCanonicalHost(_ url: URL) -> String? {
        guard var host = url.host(percentEncoded: true), !host.isEmpty else { return nil }
        if host.utf8.contains(0x25), let decoded = url.host(percentEncoded: false) { host = decoded }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.utf8.first == 0x2E { host.removeFirst() }
        if host.isEmpty || host.utf8.first == 0x2E { return nil }
        if host.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) { host = host.lowercased() }
        return host
    }

    static let urls: [URL] = [
        "http://127.0.0.1:41125/login", "http://127.0.0.1:41125", "https://www.Example.COM/a/b?x=1", "HTTPS://secure.example.com/",
        "wss://ws.example.com/chat", "WSS://WS.example.com/", "Https://Sub.Example.com/x/", "ws://example.com/", "ftp://example.com/",
        "http://localhost:8080/", "http://foo.localhost/p", "http://LOCALHOST/", "http://[::1]:80/", "http://[2001:DB8::1]/a",
        "http://127.1.2.3/", "http://127.0.0.01/", "http://0x7f.0.0.1/", "http://127.0.0.1./", "http://ex%61mple.com/",
        "http://EX%41MPLE.com/b", "http://user:pw@Example.com/p", "http://example.com./", "http://.example.com/", "http://..example.com/", "http://./", "http://256.1.1.1/",
        "http://1.2.3/", "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/", "file:///etc/hosts", "mailto:someone@example.com",
        "http://xn--bcher-kva.example/", "http://example.com/%7Euser/x",
    ].map { URL(string: $0)! } + [
        URL(string: "/p/q", relativeTo: URL(string: "http://Rel.example.com/base/")!)!,
        URL(string: "page", relativeTo: URL(string: "https://rel.example.com/base/dir/")!)!,
    ]

    @Test("the canonical host and the secure-origin flag are those of the general rules")
    func canonicalHosts() {
        for (index, url) in Self.urls.enumerated() {
            let host = CookieRules.canonicalHost(of: url)
            #expect(host == Self.referenceCanonicalHost(url), "URL #\(index)")
            let scheme = url.scheme?.lowercased()
            let loopback = host.map { host in
                host == "localhost" || host.hasSuffix(".localhost") || host == "::1"
                    || (host.hasPrefix("127.") && CookieRules.isIPAddress(host))
            } ?? false
            #expect(CookieRules.isSecureOrigin(url) == (host != nil && (scheme == "https" || scheme == "wss" || loopback)), "URL #\(index)")
        }
        #expect(CookieRules.canonicalHost(of: url("http://WWW.Example.COM/")) == "www.example.com")
        #expect(CookieRules.canonicalHost(of: url("http://[2001:DB8::1]/")) == "2001:db8::1")
        #expect(CookieRules.canonicalHost(of: url("http://127.0.0.1:41125/login")) == "127.0.0.1")
    }

    @Test("IPv4 literals are what inet_pton accepts", arguments: [
        "127.0.0.1", "0.0.0.0", "255.255.255.255", "256.1.1.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.02.3.4", "1.2.3.04",
        "1..2.3", ".1.2.3", "1.2.3.4.", "1.2.3.-4", "1.2.3.4a", "a1.2.3.4", "1.2.3.4\u{0}9", "1.2.3.4\u{0}", "", "1234", "1.2.3.0x4",
        "001.2.3.4", "1.2.3.400", "127.0.0.1 ", " 127.0.0.1", "::1", "::ffff:1.2.3.4", "example.com", "1.2.3.com", "9",
    ])
    func ipv4Literals(text: String) {
        var address = in_addr()
        #expect(Array(text.utf8).withUnsafeBufferPointer(CookieRules.isIPv4Literal) == (inet_pton(AF_INET, text, &address) == 1))
        let expected = text.utf8.contains(0x3A) || (text.utf8.last.map { $0 >= 0x30 && $0 <= 0x39 } ?? true && inet_pton(AF_INET, text, &address) == 1)
        #expect(CookieRules.isIPAddress(text) == expected)
    }

    @Test("IPv4 literals: 100,000 random digit-and-dot strings agree with inet_pton")
    func ipv4Random() async {
        // CPU-bound for seconds: on a thread of its own, holding no thread of the cooperative pool.
        let disagreements = await onDedicatedThread { () -> Int in
            var rng = SeededGenerator(state: 0x1F4)
            let alphabet = Array("0123456789..0\u{0}x:".utf8)
            var disagreements = 0
            for _ in 0..<100_000 {
                let bytes = (0..<Int(rng.next() % 17)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
                let text = String(decoding: bytes, as: UTF8.self)
                var address = in_addr()
                if bytes.withUnsafeBufferPointer(CookieRules.isIPv4Literal) != (inet_pton(AF_INET, text, &address) == 1) { disagreements += 1 }
            }
            return disagreements
        }
        #expect(disagreements == 0)
    }

    @Test("the parser's word-at-a-time control scan and memchr search agree with byte loops on 50,000 random headers")
    func parserScans() async {
        let disagreements = await onDedicatedThread { Self.parserScanDisagreements() }
        #expect(disagreements == 0)
    }

    /// `parserScans`' loop, CPU-bound for seconds: run on a thread of its own.
    static func parserScanDisagreements() -> Int {
        var rng = SeededGenerator(state: 0x5CA9)
        // Mostly printable bytes, with controls, tabs, DEL, ';' and non-ASCII sprinkled in, at every alignment.
        let rare: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x3B, 0x7F, 0x80, 0xC3, 0xFF]
        var disagreements = 0
        for _ in 0..<50_000 {
            let bytes = (0..<Int(rng.next() % 40)).map { _ in
                rng.next() % 12 == 0 ? rare[Int(rng.next() % UInt64(rare.count))] : UInt8(0x21 + rng.next() % 0x5D)
            }
            let start = bytes.isEmpty ? 0 : Int(rng.next() % UInt64(bytes.count))
            bytes.withUnsafeBufferPointer { buffer in
                let slice = buffer[start...]
                let expectedOther = slice.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
                let scan = SetCookieParser.scanControls(slice)
                if scan.other != expectedOther || (!expectedOther && scan.tab != slice.contains(0x09)) { disagreements += 1 }
                if SetCookieParser.firstIndex(of: 0x3B, in: slice) != slice.firstIndex(of: 0x3B) { disagreements += 1 }
            }
        }
        return disagreements
    }

    /// RFC 6265 section 5.4 straight from a snapshot of the jar: filter, then sort by path length and by the
    /// snapshot's order (creation, then storage order).
    static func referenceRetrieval(_ all: [Cookie], for url: URL, now: Date) -> [Cookie] {
        guard let host = referenceCanonicalHost(url) else { return [] }
        let path = url.path(percentEncoded: true).isEmpty ? "/" : url.path(percentEncoded: true)
        let secure = CookieRules.isSecureOrigin(url)
        let matching = all.enumerated().filter { _, cookie in
            !cookie.isExpired(at: now) && (cookie.hostOnly ? cookie.domain == host : CookieRules.domainMatches(host: host, domain: cookie.domain))
                && CookieRules.pathMatches(requestPath: path, cookiePath: cookie.path) && (!cookie.secure || secure)
        }
        return matching.sorted { a, b in
            a.element.path.utf8.count != b.element.path.utf8.count ? a.element.path.utf8.count > b.element.path.utf8.count : a.offset < b.offset
        }.map(\.element)
    }

    @Test("random small jars: cookies(for:), cookieHeader(for:) and allCookies match the RFC order computed afresh")
    func randomJars() async {
        let (checks, mismatches) = await onDedicatedThread { Self.randomJarRuns() }
        #expect(checks > 100)
        #expect(mismatches == 0)
    }

    /// `randomJars`' loop, CPU-bound for seconds: run on a thread of its own. The checks made and the mismatches.
    static func randomJarRuns() -> (checks: Int, mismatches: Int) {
        var rng = SeededGenerator(state: 0xC00C1E5)
        let targets = [
            "http://127.0.0.1:41125/login", "http://127.0.0.1:41125/account", "http://example.com/", "https://www.example.com/a/b",
            "http://www.example.com/a", "http://a.www.example.com/a/bc", "http://EXAMPLE.com/a/", "http://localhost/",
        ].map { URL(string: $0)! }
        let domains = ["127.0.0.1", "example.com", "www.example.com", "a.www.example.com", "localhost"]
        let paths = ["/", "/a", "/a/", "/a/b", "/account", "/login"]
        var mismatches = 0
        var checks = 0
        for _ in 0..<300 {
            let clock = TestClock()
            let storage = CookieStorage(clock: clock.function)
            for _ in 0..<(1 + Int(rng.next() % 8)) {
                switch rng.next() % 4 {
                case 0:
                    // Stored as given, possibly with an older creation time (out of storage order).
                    let hostOnly = rng.next() % 2 == 0
                    storage.setCookie(Cookie(
                        name: "n\(rng.next() % 4)", value: "v\(rng.next() % 100)", domain: domains[Int(rng.next() % UInt64(domains.count))],
                        hostOnly: hostOnly, path: paths[Int(rng.next() % UInt64(paths.count))],
                        expires: rng.next() % 3 == 0 ? clock.now.addingTimeInterval(Double(rng.next() % 20)) : nil,
                        secure: rng.next() % 4 == 0, created: clock.now.addingTimeInterval(-Double(rng.next() % 10))))
                case 1:
                    let path = paths[Int(rng.next() % UInt64(paths.count))]
                    storage.setCookies(
                        fromHeaders: ["s\(rng.next() % 4)=w; Path=\(path)" + (rng.next() % 2 == 0 ? "; Max-Age=\(rng.next() % 15)" : "")],
                        for: targets[Int(rng.next() % UInt64(targets.count))], mainDocumentURL: nil)
                case 2:
                    clock.advance(by: Double(rng.next() % 8))
                default:
                    let target = targets[Int(rng.next() % UInt64(targets.count))]
                    let expected = Self.referenceRetrieval(storage.allCookies, for: target, now: clock.now)
                    let header = storage.cookieHeader(for: target)
                    let found = storage.cookies(for: target)
                    let expectedHeader = expected.isEmpty ? nil : CookieCodec.encode(expected, as: .header)
                    let sameHeader = header == expectedHeader
                    let sameCookies = found.map(\.key) == expected.map(\.key) && found.allSatisfy { $0.lastAccess == clock.now }
                    checks += 1
                    if !sameHeader || !sameCookies { mismatches += 1 }
                }
                let all = storage.allCookies
                let ordered = zip(all, all.dropFirst()).allSatisfy { $0.created <= $1.created }
                if !ordered { mismatches += 1 }
            }
        }
        return (checks, mismatches)
    }

    @Test("an expired cookie emptying its bucket leaves the parent domain's cookies to the same request")
    func expiryEmptiesBucket() {
        let clock = TestClock()
        let storage = CookieStorage(clock: clock.function)
        storage.setCookie(Cookie(name: "host", value: "1", domain: "www.example.com", expires: clock.now.addingTimeInterval(5), created: clock.now))
        storage.setCookie(Cookie(name: "parent", value: "2", domain: "example.com", hostOnly: false, created: clock.now))
        storage.setCookie(Cookie(name: "deep", value: "3", domain: "example.com", hostOnly: false, path: "/a", created: clock.now))
        clock.advance(by: 10)
        // Compared as a Bool, so a failure does not print the values.
        let headerIsRight = storage.cookieHeader(for: url("http://www.example.com/a/b")) == "deep=3; parent=2"
        #expect(headerIsRight)
        #expect(storage.allCookies.map(\.name) == ["parent", "deep"])
        #expect(storage.names(for: "http://www.example.com/") == ["parent"])
    }

    @Test("the origin the storage keeps follows the URL: same host, other path or scheme")
    func originFollowsURL() {
        let storage = CookieStorage()
        storage.receive("a=1; Path=/a", "s=1; Secure; Path=/", from: "https://example.com/")
        #expect(storage.names(for: "https://example.com/a/x") == ["a", "s"])
        #expect(storage.names(for: "http://example.com/a/x") == ["a"])
        #expect(storage.names(for: "http://example.com/b") == [])
        #expect(storage.names(for: "https://EXAMPLE.com/b") == ["s"])
        // A default-path cookie takes the path of the URL it came from, not of the previous call's URL.
        storage.receive("d=1", from: "http://example.com/dir/page")
        #expect(storage.allCookies.first { $0.name == "d" }?.path == "/dir")
    }
}
