import Foundation
import Testing
@testable import CookieJar

@Suite("RFC 6265 matching rules")
struct MatchingTests {
    @Test("domain-match (5.1.3)", arguments: [
        ("example.com", "example.com", true), ("www.example.com", "example.com", true),
        ("wwwexample.com", "example.com", false), ("example.com", "www.example.com", false),
        ("192.168.0.1", "168.0.1", false), ("192.168.0.1", "192.168.0.1", true),
    ])
    func domainMatch(host: String, domain: String, expected: Bool) {
        #expect(CookieRules.domainMatches(host: host, domain: domain) == expected)
    }

    @Test("path-match (5.1.4)", arguments: [
        ("/", "/", true), ("/foo", "/", true), ("/foo/bar", "/foo", true), ("/foobar", "/foo", false),
        ("/foo/", "/foo/", true), ("/foo/bar", "/foo/", true), ("/fo", "/foo", false),
    ])
    func pathMatch(request: String, cookie: String, expected: Bool) {
        #expect(CookieRules.pathMatches(requestPath: request, cookiePath: cookie) == expected)
    }

    @Test("default-path (5.1.4)", arguments: [
        ("http://a.test", "/"), ("http://a.test/", "/"), ("http://a.test/x", "/"), ("http://a.test/x/y", "/x"),
        ("http://a.test/x/y/", "/x/y"), ("http://a.test/x/y?q=/z", "/x"),
    ])
    func defaultPath(source: String, expected: String) {
        #expect(CookieRules.defaultPath(of: url(source)) == expected)
    }

    @Test("secure origins: https, and http only to loopback")
    func secureOrigins() {
        #expect(CookieRules.isSecureOrigin(url("https://example.com/")))
        #expect(CookieRules.isSecureOrigin(url("http://localhost:8080/")))
        #expect(CookieRules.isSecureOrigin(url("http://127.0.0.1/")))
        #expect(CookieRules.isSecureOrigin(url("http://[::1]:80/")))
        #expect(!CookieRules.isSecureOrigin(url("http://example.com/")))
        #expect(!CookieRules.isSecureOrigin(url("http://127.example.com/")))
    }
}

@Suite("Set-Cookie parsing (RFC 6265 5.2)")
struct ParserTests {
    @Test("attributes are read case-insensitively and the last one wins")
    func attributes() throws {
        let parsed = try SetCookieParser.parse(" sid = abc ; PATH=/a; path=/b; DOMAIN=.Example.COM; secure; HTTPONLY; SameSite=STRICT; Max-Age=60").get()
        #expect(parsed.name == "sid")
        #expect(parsed.value == "abc")
        #expect(parsed.path == "/b")
        #expect(parsed.domain == "example.com")
        #expect(parsed.secure && parsed.httpOnly)
        #expect(parsed.sameSite == .strict)
        #expect(parsed.maxAge == 60)
    }

    @Test("legacy attributes are kept")
    func legacy() throws {
        let parsed = try SetCookieParser.parse("a=b; Version=1; Comment=hello; CommentURL=\"http://x.test/c\"; Port=\"80,8080\"").get()
        #expect(parsed.version == 1)
        #expect(parsed.comment == "hello")
        #expect(parsed.commentURL == "http://x.test/c")
        #expect(parsed.portList == [80, 8080])
    }

    @Test("malformed Max-Age and Expires are ignored; an unknown SameSite leaves it unset")
    func ignoredAttributes() throws {
        let parsed = try SetCookieParser.parse("a=b; Max-Age=12x; Expires=never; SameSite=sometimes").get()
        #expect(parsed.maxAge == nil && parsed.expires == nil && parsed.sameSite == nil)
        #expect(try SetCookieParser.parse("a=b; Max-Age=-5").get().maxAge == -5)
    }

    @Test("headers the RFC ignores", arguments: [
        ("foo", SetCookieParseFailure.missingEquals), ("=bar", .emptyName), ("a=b\u{0}c", .controlCharacter),
        ("a=b\rc", .controlCharacter), ("a=b\tc", .tabInNameOrValue),
    ])
    func refused(header: String, failure: SetCookieParseFailure) {
        #expect(SetCookieParser.parse(header) == .failure(failure))
    }

    @Test("attribute values over 1024 bytes are ignored (6265bis 5.6)")
    func longAttribute() throws {
        let parsed = try SetCookieParser.parse("a=b; Path=/\(String(repeating: "x", count: 1100))").get()
        #expect(parsed.path == nil)
    }
}

@Suite("Cookie creation and storage rules")
struct StorageRuleTests {
    let clock = TestClock()

    @Test("Domain=co.uk is a public suffix and refused; Domain=example.co.uk is fine")
    func publicSuffix() {
        let storage = CookieStorage(clock: clock.function)
        let decisions = storage.receive("a=1; Domain=co.uk", "b=2; Domain=example.co.uk", from: "http://www.example.co.uk/")
        #expect(decisions[0].reason?.contains("public suffix") == true)
        #expect(decisions[1].isStored)
        #expect(storage.names(for: "http://other.example.co.uk/") == ["b"])
        #expect(storage.names(for: "http://evil.co.uk/").isEmpty)
    }

    @Test("a public suffix host may set a host-only cookie with its own name as Domain")
    func publicSuffixHost() throws {
        let storage = CookieStorage(clock: clock.function)
        #expect(storage.receive("a=1; Domain=github.io", from: "http://github.io/")[0].isStored)
        let cookie = try #require(storage.allCookies.first)
        #expect(cookie.hostOnly && cookie.domain == "github.io")
    }

    @Test("IP hosts only get host-only cookies")
    func ipHosts() throws {
        let storage = CookieStorage(clock: clock.function)
        let decisions = storage.receive("a=1; Domain=0.0.1", "b=2; Domain=192.168.0.1", "c=3", from: "http://192.168.0.1/")
        #expect(!decisions[0].isStored)
        #expect(decisions[1].isStored && decisions[2].isStored)
        #expect(storage.allCookies.allSatisfy { $0.hostOnly })
        #expect(storage.names(for: "http://192.168.0.1/x") == ["b", "c"])
    }

    @Test("host-only cookies do not reach subdomains; Domain cookies do")
    func hostOnly() {
        let storage = CookieStorage(clock: clock.function)
        storage.receive("host=1", "dom=2; Domain=example.com", from: "http://example.com/")
        #expect(storage.names(for: "http://example.com/") == ["host", "dom"])
        #expect(storage.names(for: "http://www.example.com/") == ["dom"])
        #expect(storage.names(for: "http://example.org/").isEmpty)
    }

    @Test("Secure cookies only from secure origins, and only sent to them")
    func secure() {
        let storage = CookieStorage(clock: clock.function)
        #expect(storage.receive("s=1; Secure", from: "http://example.com/")[0].reason?.contains("insecure origin") == true)
        #expect(storage.receive("s=1; Secure", from: "https://example.com/")[0].isStored)
        #expect(storage.names(for: "http://example.com/").isEmpty)
        #expect(storage.names(for: "https://example.com/") == ["s"])
    }

    @Test("a non-secure cookie from an insecure origin cannot overlay a Secure one (6265bis 5.7 step 16)")
    func secureOverlay() {
        let storage = CookieStorage(clock: clock.function)
        storage.receive("sid=1; Secure; Domain=example.com; Path=/", from: "https://www.example.com/")
        let decision = storage.receive("sid=2; Path=/app", from: "http://example.com/")[0]
        #expect(decision.reason?.contains("overlay") == true)
        #expect(storage.allCookies.map(\.secure) == [true])
        // Another name, or a secure origin, is fine.
        #expect(storage.receive("other=2", from: "http://example.com/")[0].isStored)
        #expect(storage.receive("sid=3", from: "https://example.com/")[0].isStored)
    }

    @Test("the overlay rule looks both ways along the domain tree and forgets deleted Secure cookies")
    func secureOverlaySubdomain() {
        let storage = CookieStorage(clock: clock.function)
        storage.receive("sid=1; Secure", from: "https://www.example.com/")
        #expect(storage.receive("sid=2; Domain=example.com", from: "http://www.example.com/")[0].reason?.contains("overlay") == true)
        #expect(storage.receive("sid=2", from: "http://other.example.com/")[0].isStored, "sibling domains do not match")
        storage.deleteCookies(named: "sid", for: url("https://www.example.com/"))
        #expect(storage.receive("sid=3; Domain=example.com", from: "http://www.example.com/")[0].isStored)
    }

    @Test("__Secure- and __Host- prefixes (6265bis 4.1.3)")
    func prefixes() {
        let storage = CookieStorage(clock: clock.function)
        let decisions = storage.receive(
            "__Secure-a=1", "__Secure-b=1; Secure", "__Host-c=1; Secure; Path=/", "__Host-d=1; Secure; Path=/; Domain=example.com",
            "__Host-e=1; Secure; Path=/x", "__host-f=1; Path=/", "__Host-g=1; Secure", from: "https://example.com/x/y")
        #expect(decisions.map(\.isStored) == [false, true, true, false, false, false, false])
    }

    @Test("expiry is capped at 400 days (6265bis 5.6.1)")
    func expiryCap() throws {
        let storage = CookieStorage(clock: clock.function)
        storage.receive("a=1; Max-Age=999999999", "b=1; Expires=Fri, 01 Jan 2100 00:00:00 GMT", "c=1; Max-Age=60", from: "http://example.com/")
        let byName = Dictionary(uniqueKeysWithValues: storage.allCookies.map { ($0.name, $0) })
        let cap = clock.now.addingTimeInterval(400 * 86_400)
        #expect(byName["a"]?.expires == cap)
        #expect(byName["b"]?.expires == cap)
        #expect(byName["c"]?.expires == clock.now.addingTimeInterval(60))
    }

    @Test("Max-Age wins over Expires; a past expiry deletes the stored cookie")
    func maxAgeAndDeletion() throws {
        let storage = CookieStorage(clock: clock.function)
        storage.receive("a=1; Max-Age=60; Expires=Wed, 01 Jan 2014 00:00:00 GMT", from: "http://example.com/")
        #expect(storage.names(for: "http://example.com/") == ["a"])
        let decision = storage.receive("a=gone; Max-Age=0", from: "http://example.com/")[0]
        #expect(decision.reason?.contains("expired") == true)
        #expect(storage.allCookies.isEmpty)
    }

    @Test("replacement keeps the creation time (5.3 step 11.3)")
    func replacement() throws {
        let storage = CookieStorage(clock: clock.function)
        storage.receive("a=1", "b=1", from: "http://example.com/")
        let created = clock.now
        clock.advance(by: 100)
        storage.receive("a=2", from: "http://example.com/")
        let a = try #require(storage.allCookies.first { $0.name == "a" })
        #expect(a.value == "2" && a.created == created && a.lastAccess == clock.now)
        #expect(storage.names(for: "http://example.com/") == ["a", "b"])
    }

    @Test("retrieval order: longest path first, then earliest creation (5.4 step 2)")
    func order() {
        let storage = CookieStorage(clock: clock.function)
        storage.receive("root1=1; Path=/", from: "http://example.com/")
        clock.advance(by: 1)
        storage.receive("deep=1; Path=/a/b", "mid=1; Path=/a", "root2=1; Path=/", from: "http://example.com/")
        #expect(storage.names(for: "http://example.com/a/b/c") == ["deep", "mid", "root1", "root2"])
        #expect(storage.cookieHeader(for: url("http://example.com/a")) == "mid=1; root1=1; root2=1")
        #expect(storage.cookieHeader(for: url("http://other.com/")) == nil)
    }

    @Test("retrieval updates last-access and drops expired cookies")
    func lastAccessAndExpiry() throws {
        let storage = CookieStorage(clock: clock.function)
        storage.receive("short=1; Max-Age=10", "long=1; Max-Age=1000", from: "http://example.com/")
        clock.advance(by: 20)
        #expect(storage.names(for: "http://example.com/") == ["long"])
        #expect(storage.allCookies.map(\.name) == ["long"])
        #expect(storage.allCookies.first?.lastAccess == clock.now)
    }
}

@Suite("Limits and eviction")
struct LimitTests {
    let clock = TestClock()

    @Test("name plus value over the byte limit is refused")
    func size() {
        let storage = CookieStorage(limits: CookieLimits(maxCookieBytes: 10), clock: clock.function)
        let decisions = storage.receive("abc=1234567", "abc=12345678", from: "http://example.com/")
        #expect(decisions[0].isStored)
        #expect(decisions[1].reason?.contains("10 bytes") == true)
        #expect(CookieLimits().maxCookieBytes == 4096 && CookieLimits().maxCookiesPerDomain == 180 && CookieLimits().maxCookies == 3000)
    }

    @Test("over the per-domain limit, the least recently used cookie of that domain goes")
    func perDomain() {
        let storage = CookieStorage(limits: CookieLimits(maxCookiesPerDomain: 3), clock: clock.function)
        storage.receive("other=1", from: "http://other.com/")
        for name in ["a", "b", "c"] {
            clock.advance(by: 1)
            storage.receive("\(name)=1", from: "http://example.com/")
        }
        clock.advance(by: 1)
        _ = storage.cookies(for: url("http://example.com/"))  // touches a, b, c
        clock.advance(by: 1)
        storage.receive("b=2", from: "http://example.com/")  // b is now the most recent
        clock.advance(by: 1)
        storage.receive("d=1", from: "http://example.com/")
        #expect(Set(storage.allCookies.filter { $0.domain == "example.com" }.map(\.name)) == ["b", "c", "d"])
        #expect(storage.allCookies.contains { $0.name == "other" })
    }

    @Test("expired cookies are evicted before live ones")
    func expiredFirst() {
        let storage = CookieStorage(limits: CookieLimits(maxCookiesPerDomain: 2), clock: clock.function)
        storage.receive("old=1", from: "http://example.com/")
        clock.advance(by: 1)
        storage.receive("brief=1; Max-Age=5", from: "http://example.com/")
        clock.advance(by: 10)
        storage.receive("new=1", from: "http://example.com/")
        #expect(Set(storage.allCookies.map(\.name)) == ["old", "new"])
    }

    @Test("over the total limit, the least recently used cookie of the whole jar goes")
    func total() {
        let storage = CookieStorage(limits: CookieLimits(maxCookies: 3), clock: clock.function)
        for host in ["a.com", "b.com", "c.com"] {
            clock.advance(by: 1)
            storage.receive("x=1", from: "http://\(host)/")
        }
        clock.advance(by: 1)
        _ = storage.cookies(for: url("http://a.com/"))
        clock.advance(by: 1)
        storage.receive("x=1", from: "http://d.com/")
        #expect(Set(storage.allCookies.map(\.domain)) == ["a.com", "c.com", "d.com"])
    }
}

@Suite("Accept policies")
struct PolicyTests {
    @Test("never stores nothing, from responses or the API")
    func never() {
        let storage = CookieStorage(acceptPolicy: .never)
        #expect(storage.receive("a=1", from: "http://example.com/")[0].reason?.contains("never") == true)
        storage.setCookie(Cookie(name: "b", value: "1", domain: "example.com"))
        #expect(storage.allCookies.isEmpty)
    }

    @Test("main-document-domain keeps cookies within the main document's registrable domain")
    func mainDocumentDomain() {
        let storage = CookieStorage(acceptPolicy: .mainDocumentDomain)
        let main = url("https://www.example.co.uk/login")
        let same = storage.setCookies(fromHeaders: ["a=1"], for: url("https://auth.example.co.uk/"), mainDocumentURL: main)
        let parent = storage.setCookies(fromHeaders: ["b=1; Domain=example.co.uk"], for: url("https://auth.example.co.uk/"), mainDocumentURL: main)
        let third = storage.setCookies(fromHeaders: ["c=1"], for: url("https://tracker.com/"), mainDocumentURL: main)
        let cousin = storage.setCookies(fromHeaders: ["d=1"], for: url("https://other.co.uk/"), mainDocumentURL: main)
        #expect(same[0].isStored && parent[0].isStored)
        #expect(third[0].reason?.contains("example.co.uk") == true)
        #expect(!cousin[0].isStored)
        storage.acceptPolicy = .always
        #expect(storage.acceptPolicy == .always)
        #expect(storage.setCookies(fromHeaders: ["c=1"], for: url("https://tracker.com/"), mainDocumentURL: main)[0].isStored)
    }

    @Test("cookies made elsewhere (a plugin's, an import) go through the policy and the limits too")
    func madeCookies() {
        let made = [
            Cookie(name: "a", value: "1", domain: "www.example.co.uk"),
            Cookie(name: "b", value: "2", domain: "example.co.uk", hostOnly: false),
            Cookie(name: "c", value: "3", domain: "tracker.com"),
            Cookie(name: "big", value: String(repeating: "x", count: 5000), domain: "www.example.co.uk"),
        ]
        let main = url("https://www.example.co.uk/login")

        let never = CookieStorage(acceptPolicy: .never)
        #expect(never.setCookies(made, mainDocumentURL: main).allSatisfy { $0.reason?.contains("never") == true })
        #expect(never.allCookies.isEmpty)

        let strict = CookieStorage(acceptPolicy: .mainDocumentDomain)
        let decisions = strict.setCookies(made, mainDocumentURL: main)
        #expect(decisions.map(\.isStored) == [true, true, false, false])
        #expect(decisions[2].reason?.contains("example.co.uk") == true)
        #expect(decisions[3].reason?.contains("4096") == true)
        #expect(strict.allCookies.map(\.name).sorted() == ["a", "b"])
        #expect(CookieStorage(acceptPolicy: .mainDocumentDomain).setCookies(made, mainDocumentURL: nil).allSatisfy { !$0.isStored })

        let open = CookieStorage(acceptPolicy: .always)
        #expect(open.setCookies(made, mainDocumentURL: nil).map(\.isStored) == [true, true, true, false])
    }
}

@Suite("Storage API")
struct StorageAPITests {
    let clock = TestClock()

    @Test("delete one, by name and URL, since a date, all")
    func deletions() {
        let storage = CookieStorage(clock: clock.function)
        storage.receive("a=1", "b=1", "b=2; Path=/other", from: "http://example.com/")
        clock.advance(by: 10)
        let later = clock.now
        storage.receive("c=1", from: "http://example.com/")
        storage.deleteCookie(Cookie(name: "a", value: "", domain: "example.com", path: "/"))
        #expect(storage.allCookies.map(\.name) == ["b", "b", "c"])
        storage.deleteCookies(named: "b", for: url("http://example.com/"))
        #expect(storage.allCookies.map(\.path) == ["/other", "/"])
        storage.removeCookies(since: later)
        #expect(storage.allCookies.map(\.name) == ["b"])
        storage.removeAll()
        #expect(storage.allCookies.isEmpty)
    }

    @Test("setCookie stores a cookie as given and keeps the creation time on replacement")
    func setCookie() throws {
        let storage = CookieStorage(clock: clock.function)
        let first = Cookie(name: "a", value: "1", domain: ".Example.com", hostOnly: false, created: clock.now)
        storage.setCookie(first)
        var second = first
        second.value = "2"
        second.created = clock.now.addingTimeInterval(50)
        storage.setCookie(second)
        let stored = try #require(storage.allCookies.first)
        #expect(stored.domain == "example.com" && stored.value == "2" && stored.created == first.created)
        #expect(storage.names(for: "http://www.example.com/") == ["a"])
    }

    @Test("change events: added, updated, removed, expired")
    func changeEvents() async throws {
        let storage = CookieStorage(clock: clock.function)
        let stream = storage.changes()
        storage.receive("a=1", "b=1; Max-Age=5", from: "http://example.com/")
        storage.receive("a=2", from: "http://example.com/")
        storage.deleteCookies(named: "a", for: url("http://example.com/"))
        clock.advance(by: 10)
        storage.removeExpired()
        var kinds: [String] = []
        for await change in stream {
            switch change {
            case .added(let cookie): kinds.append("added \(cookie.name)")
            case .updated(let old, let new): kinds.append("updated \(old.value)->\(new.value)")
            case .removed(let cookie): kinds.append("removed \(cookie.name)")
            case .expired(let cookie): kinds.append("expired \(cookie.name)")
            case .evicted(let cookie, _): kinds.append("evicted \(cookie.name)")
            }
            if kinds.count == 5 { break }
        }
        #expect(kinds == ["added a", "added b", "updated 1->2", "removed a", "expired b"])
    }

    @Test("concurrent writers and readers keep the jar consistent")
    func concurrency() async {
        let storage = CookieStorage()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in 0..<200 {
                        storage.receive("c\(index % 20)=\(worker)", from: "http://w\(worker % 4).example.com/")
                        _ = storage.cookies(for: url("http://w\(worker % 4).example.com/"))
                    }
                }
            }
        }
        #expect(storage.allCookies.count == 80)
    }

    @Test("a cookie's description leaves out its value")
    func descriptionHidesValue() {
        let cookie = Cookie(name: "sid", value: "s3cr3t-value", domain: "example.com")
        #expect(!cookie.description.contains("s3cr3t-value"))
        #expect(!"\(cookie)".contains("s3cr3t-value"))
    }
}
