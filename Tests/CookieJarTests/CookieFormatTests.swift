import Foundation
import Testing
@testable import CookieJar

@Suite("Cookie formats (SPEC section 4)")
struct CookieFormatTests {
    static let now = Fixtures.suiteNow

    /// Cookies exercising every field: host-only and domain, session and persistent, flags, SameSite, legacy.
    static let sample: [Cookie] = [
        Cookie(name: "sid", value: "abc\"def", domain: "example.com", hostOnly: true, path: "/",
               expires: nil, secure: true, httpOnly: true, sameSite: .strict,
               created: now, lastAccess: now.addingTimeInterval(1.25)),
        Cookie(name: "pref", value: "dark mode=1", domain: "example.com", hostOnly: false, path: "/app",
               expires: Date(timeIntervalSince1970: 1_450_000_000), secure: false, httpOnly: false, sameSite: .lax,
               created: now.addingTimeInterval(0.5), lastAccess: now.addingTimeInterval(2),
               version: 1, comment: "kept", commentURL: "http://example.com/c", portList: [80, 443]),
        Cookie(name: "n", value: "", domain: "sub.example.org", hostOnly: false, path: "/",
               expires: Date(timeIntervalSince1970: 1_440_000_000.5), secure: false, httpOnly: true, sameSite: nil,
               created: now.addingTimeInterval(3), lastAccess: now.addingTimeInterval(3)),
        Cookie(name: "x", value: "é/ü", domain: "example.com", hostOnly: true, path: "/", sameSite: SameSite.none,
               created: now.addingTimeInterval(4)),
    ]

    static func same(_ a: Date?, _ b: Date?, tolerance: TimeInterval = 0.000_001) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case let (x?, y?): abs(x.timeIntervalSince(y)) <= tolerance
        default: false
        }
    }

    @Test("json is lossless")
    func jsonRoundTrip() throws {
        let text = CookieCodec.encode(Self.sample, as: .json)
        let decoded = try CookieCodec.decode(text, as: .json, url: nil, now: Date())
        #expect(decoded.count == Self.sample.count)
        for (original, copy) in zip(Self.sample, decoded) {
            var normalized = copy
            #expect(Self.same(copy.created, original.created) && Self.same(copy.lastAccess, original.lastAccess))
            #expect(Self.same(copy.expires, original.expires))
            normalized.created = original.created
            normalized.lastAccess = original.lastAccess
            normalized.expires = original.expires
            #expect(normalized == original)
        }
    }

    @Test("json has exactly the SPEC's keys, in its forms")
    func jsonKeys() throws {
        let text = CookieCodec.encode([Self.sample[0], Self.sample[1]], as: .json)
        let objects = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
        let specKeys: Set = ["name", "value", "domain", "host_only", "path", "expires", "secure", "http_only", "same_site", "created", "last_access"]
        #expect(Set(objects[0].keys) == specKeys)
        #expect(Set(objects[1].keys) == specKeys.union(["version", "comment", "comment_url", "port_list"]))
        #expect(objects[0]["expires"] is NSNull && objects[0]["same_site"] as? String == "strict")
        #expect(objects[1]["expires"] as? String == "2015-12-13T09:46:40Z")
        #expect(objects[0]["created"] as? String == "2015-01-01T00:00:00.000000Z")
        #expect(objects[0]["last_access"] as? String == "2015-01-01T00:00:01.250000Z")
        #expect(objects[1]["domain"] as? String == "example.com" && objects[1]["host_only"] as? Bool == false)
    }

    @Test("Codable uses the json format's keys too")
    func codable() throws {
        let data = try JSONEncoder().encode(Self.sample[1])
        let object = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["host_only"] as? Bool == false && object["same_site"] as? String == "lax")
        let decoded = try JSONDecoder().decode(Cookie.self, from: data)
        #expect(decoded == Self.sample[1])
    }

    @Test("netscape keeps domain, flags, path, expiry, name and value; #HttpOnly_ both ways")
    func netscapeRoundTrip() throws {
        let text = CookieCodec.encode(Self.sample, as: .netscape)
        #expect(text.hasPrefix("# Netscape HTTP Cookie File"))
        #expect(text.contains("#HttpOnly_example.com\tFALSE\t/\tTRUE\t0\tsid\t"))
        #expect(text.contains("\n.example.com\tTRUE\t/app\tFALSE\t1450000000\tpref\tdark mode=1\n"))
        let decoded = try CookieCodec.decode(text, as: .netscape, url: nil, now: Self.now)
        #expect(decoded.count == Self.sample.count)
        for (original, copy) in zip(Self.sample, decoded) {
            #expect(copy.name == original.name && copy.value == original.value && copy.domain == original.domain)
            #expect(copy.hostOnly == original.hostOnly && copy.path == original.path)
            #expect(copy.secure == original.secure && copy.httpOnly == original.httpOnly)
            #expect(Self.same(copy.expires, original.expires, tolerance: 1))
        }
    }

    @Test("netscape reads curl's and wget's files")
    func netscapeForeign() throws {
        let text = """
        # HTTP Cookie File
        # comment line

        .example.com\tTRUE\t/\tFALSE\t1735689600\tsid\tv1
        #HttpOnly_www.example.com\tFALSE\t/x\ttrue\t0\ttoken\tv\twith tab
        example.net\tFALSE\t/\tFALSE\t0\tempty
        """
        let cookies = try CookieCodec.decode(text, as: .netscape, url: nil, now: Self.now)
        #expect(cookies.map(\.name) == ["sid", "token", "empty"])
        #expect(cookies[0].domain == "example.com" && !cookies[0].hostOnly && cookies[0].expires == Date(timeIntervalSince1970: 1_735_689_600))
        #expect(cookies[1].httpOnly && cookies[1].secure && cookies[1].hostOnly && cookies[1].isSessionOnly && cookies[1].value == "v\twith tab")
        #expect(cookies[2].value == "")
    }

    @Test("netscape: a file libcurl 7.88 wrote (Fixtures/curl-7.88-cookies.txt) reads, and writes back line for line")
    func netscapeFromLibcurl() throws {
        let text = String(decoding: try Fixtures.data("curl-7.88-cookies.txt"), as: UTF8.self)
        let cookies = try CookieCodec.decode(text, as: .netscape, url: nil, now: Self.now)
        let byName = Dictionary(uniqueKeysWithValues: cookies.map { ($0.name, $0) })
        let sid = try #require(byName["sid"])
        #expect(sid.domain == "example.com" && !sid.hostOnly && sid.secure && sid.httpOnly)
        #expect(sid.expires == CookieDateParser.parse("Fri, 01 Jan 2049 00:00:00 GMT"))
        let session = try #require(byName["session"])
        #expect(session.hostOnly && session.isSessionOnly && session.httpOnly && session.secure && session.path == "/x")
        #expect(byName["theme"]?.isSessionOnly == true && byName["hostonly"]?.hostOnly == true)
        func dataLines(_ text: String) -> Set<String> {
            Set(text.split(separator: "\n").map(String.init).filter { !$0.isEmpty && (!$0.hasPrefix("#") || $0.hasPrefix("#HttpOnly_")) })
        }
        #expect(dataLines(CookieCodec.encode(cookies, as: .netscape)) == dataLines(text))
    }

    @Test("playwright storageState round trip")
    func playwrightRoundTrip() throws {
        let text = CookieCodec.encode(Self.sample, as: .playwright)
        let root = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let list = try #require(root["cookies"] as? [[String: Any]])
        #expect((root["origins"] as? [Any])?.isEmpty == true)
        #expect(list[0]["expires"] as? Double == -1 && list[0]["sameSite"] as? String == "Strict" && list[0]["domain"] as? String == "example.com")
        #expect(list[1]["domain"] as? String == ".example.com" && list[1]["expires"] as? Double == 1_450_000_000)
        #expect(list[1]["httpOnly"] as? Bool == false && list[3]["sameSite"] as? String == "None")
        let decoded = try CookieCodec.decode(text, as: .playwright, url: nil, now: Self.now)
        for (original, copy) in zip(Self.sample, decoded) {
            #expect(copy.name == original.name && copy.value == original.value && copy.domain == original.domain)
            #expect(copy.hostOnly == original.hostOnly && copy.path == original.path)
            #expect(copy.sameSite == (original.sameSite ?? .lax), "Playwright always has sameSite; unset is written as Lax")
            #expect(copy.secure == original.secure && copy.httpOnly == original.httpOnly)
            #expect(Self.same(copy.expires, original.expires))
        }
        #expect(list.allSatisfy { $0["sameSite"] is String })
    }

    /// A browser login's localStorage goes into storageState's `origins`, in Playwright's own layout, and
    /// reading the file back still gives the cookies.
    @Test("playwright storageState carries localStorage origins")
    func playwrightOrigins() throws {
        let origins = [
            StorageOrigin(origin: "http://127.0.0.1:8480", localStorage: [.init(name: "user", value: "alice"), .init(name: "t", value: "q\"1")]),
            StorageOrigin(origin: "https://app.example.com", localStorage: []),
        ]
        let text = CookieCodec.encode(Self.sample, as: .playwright, origins: origins)
        let root = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let written = try #require(root["origins"] as? [[String: Any]])
        #expect(written.map { $0["origin"] as? String } == ["http://127.0.0.1:8480", "https://app.example.com"])
        #expect(written[0]["localStorage"] as? [[String: String]] == [["name": "user", "value": "alice"], ["name": "t", "value": "q\"1"]])
        #expect(try CookieCodec.decode(text, as: .playwright, url: nil, now: Self.now).map(\.name) == Self.sample.map(\.name))
        // Only playwright has a place for them.
        #expect(CookieCodec.encode(Self.sample, as: .json, origins: origins) == CookieCodec.encode(Self.sample, as: .json))

        #expect(origins[0].isOrigin(of: URL(string: "http://127.0.0.1:8480/app/home?x=1")!))
        #expect(!origins[0].isOrigin(of: URL(string: "https://127.0.0.1:8480/")!))
        #expect(origins[1].isOrigin(of: URL(string: "https://APP.example.com:443/")!))
        #expect(!origins[1].isOrigin(of: URL(string: "https://app.example.com:8443/")!))
    }

    @Test("set-cookie round trip through the RFC rules for the URL")
    func setCookieRoundTrip() throws {
        let cookies = [Self.sample[1], Self.sample[2]].map { cookie -> Cookie in
            var copy = cookie
            copy.domain = "example.com"
            return copy
        } + [Cookie(name: "h", value: "1", domain: "example.com", hostOnly: true, path: "/", httpOnly: true, sameSite: .lax, created: Self.now)]
        let text = CookieCodec.encode(cookies, as: .setCookie)
        #expect(text.hasPrefix("Set-Cookie: pref=dark mode=1; Domain=example.com; Path=/app; Expires=Sun, 13 Dec 2015 09:46:40 GMT; SameSite=Lax; Version=1"))
        let decoded = try CookieCodec.decode(text, as: .setCookie, url: url("https://example.com/"), now: Self.now)
        for (original, copy) in zip(cookies, decoded) {
            #expect(copy.name == original.name && copy.value == original.value && copy.domain == original.domain)
            #expect(copy.hostOnly == original.hostOnly && copy.path == original.path && copy.sameSite == original.sameSite)
            #expect(copy.httpOnly == original.httpOnly && copy.version == original.version && copy.comment == original.comment)
            #expect(copy.commentURL == original.commentURL && copy.portList == original.portList)
            #expect(Self.same(copy.expires, original.expires, tolerance: 1))
        }
        // Without a URL, domain cookies still read; a host-only one has no host to go to.
        #expect(throws: CookieFormatError.self) { try CookieCodec.decode(text, as: .setCookie, url: nil, now: Self.now) }
        let domainOnly = try CookieCodec.decode("Set-Cookie: a=1; Domain=.example.com; Max-Age=60\n", as: .setCookie, url: nil, now: Self.now)
        #expect(domainOnly.first?.domain == "example.com" && domainOnly.first?.expires == Self.now.addingTimeInterval(60))
    }

    @Test("header round trip keeps names and values")
    func headerRoundTrip() throws {
        let text = CookieCodec.encode(Self.sample, as: .header)
        #expect(text == "sid=abc\"def; pref=dark mode=1; n=; x=é/ü")
        let decoded = try CookieCodec.decode("Cookie: " + text, as: .header, url: url("https://example.com/a/b"), now: Self.now)
        #expect(decoded.map(\.name) == Self.sample.map(\.name))
        #expect(decoded.map(\.value) == Self.sample.map(\.value))
        #expect(decoded.allSatisfy { $0.domain == "example.com" && $0.hostOnly && $0.path == "/" })
        #expect(throws: CookieFormatError.self) { try CookieCodec.decode(text, as: .header, url: nil, now: Self.now) }
    }

    @Test("guess tells the formats apart", arguments: CookieFormat.allCases)
    func guess(_ format: CookieFormat) {
        #expect(CookieFormat.guess(from: CookieCodec.encode(Self.sample, as: format)) == format)
    }

    @Test("guess gives up on empty or unrelated text")
    func guessNothing() {
        #expect(CookieFormat.guess(from: "") == nil)
        #expect(CookieFormat.guess(from: "  \n") == nil)
        #expect(CookieFormat.guess(from: "hello world") == nil)
        #expect(CookieFormat.guess(from: "{\"a\": 1}") == nil)
        #expect(CookieFormat.guess(from: "a=b; Path=/") == .setCookie)
    }

    /// A malformed text; its test description leaves out the text, which holds a stand-in cookie value.
    struct ErrorCase: Sendable, CustomTestStringConvertible {
        var format: CookieFormat, text: String, line: Int, message: String
        init(_ format: CookieFormat, _ text: String, _ line: Int, _ message: String) {
            (self.format, self.text, self.line, self.message) = (format, text, line, message)
        }
        var testDescription: String { "\(format.rawValue) line \(line): \(message)" }
    }

    @Test("errors say the line and what is wrong, never the value", arguments: [
        ErrorCase(CookieFormat.netscape, "# Netscape HTTP Cookie File\n\nexample.com\tMAYBE\t/\tFALSE\t0\tsid\tSECRETVALUE\n", 3, "TRUE or FALSE"),
        ErrorCase(.netscape, "example.com\tFALSE\t/\tFALSE\tsoon\tsid\tSECRETVALUE\n", 1, "expiry"),
        ErrorCase(.netscape, "a\tb\n", 1, "7 tab-separated fields"),
        ErrorCase(.json, "[\n  {\"name\": \"a\", \"value\": \"SECRETVALUE\", \"domain\": \"x.com\",\n   \"secure\": \"yes\"}\n]", 3, "\"secure\" must be true or false"),
        ErrorCase(.json, "[\n  {\"value\": \"SECRETVALUE\", \"domain\": \"x.com\"}\n]", 2, "\"name\" is missing"),
        ErrorCase(.json, "[\n  {\"name\": \"a\", \"value\": \"SECRETVALUE\",\n", 3, "invalid JSON"),
        ErrorCase(.json, "[{\"name\": \"a\", \"value\": \"SECRETVALUE\", \"domain\": \"x.com\", \"expires\": \"tomorrow\"}]", 1, "RFC 3339"),
        ErrorCase(.playwright, "{\"cookies\": [\n{\"name\": \"a\", \"value\": \"SECRETVALUE\", \"domain\": \"x.com\", \"sameSite\": \"Sometimes\"}]}", 2, "Strict, Lax or None"),
        ErrorCase(.setCookie, "Set-Cookie: a=1; Domain=x.com\nSet-Cookie: SECRETVALUE\n", 2, "no '='"),
        ErrorCase(.header, "a=1; SECRETVALUE", 1, "no '='"),
    ])
    func errors(_ testCase: ErrorCase) {
        let (format, text, line, message) = (testCase.format, testCase.text, testCase.line, testCase.message)
        do {
            _ = try CookieCodec.decode(text, as: format, url: url("http://x.com/"), now: Self.now)
            Issue.record("decoding succeeded")
        } catch {
            #expect(error.line == line)
            #expect(error.description.contains(message), "\(error.description)")
            #expect(!error.description.contains("SECRETVALUE"))
        }
    }

    @Test("RFC 3339 and HTTP dates")
    func times() {
        #expect(CookieTime.rfc3339(Fixtures.suiteNow) == "2015-01-01T00:00:00Z")
        #expect(CookieTime.httpDate(Fixtures.suiteNow) == "Thu, 01 Jan 2015 00:00:00 GMT")
        #expect(CookieTime.parseRFC3339("2015-01-01T01:00:00+01:00") == Fixtures.suiteNow)
        #expect(CookieTime.parseRFC3339("2015-01-01T00:00:00.5Z") == Fixtures.suiteNow.addingTimeInterval(0.5))
        #expect(CookieTime.parseRFC3339("2015-02-30T00:00:00Z") == nil)
        #expect(CookieTime.parseRFC3339("yesterday") == nil)
        #expect(CookieTime.rfc3339(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
    }
}
