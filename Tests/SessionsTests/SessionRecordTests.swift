import CookieJar
import Foundation
import LoginFlow
import Sessions
import SiteConfig
import Testing

@Suite struct SessionRecordTests {
    static let created = Date(timeIntervalSince1970: 1_700_000_000.25)
    static let secretValue = "v4lue-that-must-never-show"

    static func sample() -> SessionRecord {
        let session = Cookie(
            name: "sid", value: secretValue, domain: "wiki.example.com", hostOnly: true, path: "/",
            expires: Date(timeIntervalSince1970: 1_800_000_000), secure: true, httpOnly: true, sameSite: .lax,
            created: created, lastAccess: created.addingTimeInterval(10))
        let legacy = Cookie(
            name: "old", value: "ünïcode \"quoted\"", domain: "example.com", hostOnly: false, path: "/app",
            created: created, version: 1, comment: "kept", commentURL: "http://example.com/c", portList: [80, 8080])
        return SessionRecord(
            cookies: [session, legacy], lastLogin: Date(timeIntervalSince1970: 1_700_000_100),
            expiresAt: Date(timeIntervalSince1970: 1_800_000_000), userAgent: "Mozilla/5.0 (X11; Linux x86_64)")
    }

    @Test func roundTripsEveryField() throws {
        let record = Self.sample()
        let decoded = try SessionRecord.decode(try record.encoded())
        #expect(decoded == record)
        #expect(decoded.userAgent == "Mozilla/5.0 (X11; Linux x86_64)")
    }

    @Test func writesTheVersionedLayoutWithTheJSONFormatKeys() throws {
        let text = String(decoding: try Self.sample().encoded(), as: UTF8.self)
        #expect(text.hasPrefix("{\"cookies\":[{"))
        #expect(text.contains("\"format\":\"sessionkeeper-site-session\""))
        #expect(text.contains("\"version\":2"))
        #expect(text.contains("\"user_agent\":\"Mozilla/5.0 (X11; Linux x86_64)\""))
        #expect(text.contains("\"host_only\":true"))
        #expect(text.contains("\"same_site\":\"lax\""))
        #expect(text.contains("\"created\":\"2023-11-14T22:13:20.250000Z\""))
        let none = SessionRecord(cookies: [], lastLogin: Self.created, expiresAt: nil, userAgent: nil)
        let noneText = String(decoding: try none.encoded(), as: UTF8.self)
        #expect(noneText.contains("\"expires_at\":null"))
        #expect(noneText.contains("\"user_agent\":null"))
    }

    /// A record as version 1 (the CLI before the Sessions module) wrote it: no user_agent.
    @Test func readsVersion1Records() throws {
        let text = """
            {"cookies":[{"created":"2023-11-14T22:13:20.250000Z","domain":"127.0.0.1","expires":"2027-01-15T08:00:00Z",\
            "host_only":true,"http_only":true,"last_access":"2023-11-14T22:13:20.250000Z","name":"demo_session",\
            "path":"/","same_site":"lax","secure":false,"value":"abc"}],"expires_at":"2027-01-15T08:00:00Z",\
            "format":"sessionkeeper-site-session","last_login":"2023-11-14T22:15:00Z","version":1}
            """
        let record = try SessionRecord.decode(Array(text.utf8))
        #expect(record.userAgent == nil)
        #expect(record.cookies.map(\.name) == ["demo_session"])
        #expect(record.cookies.first?.sameSite == .lax)
        #expect(record.lastLogin == Date(timeIntervalSince1970: 1_700_000_100))
        #expect(record.expiresAt == CookieTime.parseRFC3339("2027-01-15T08:00:00Z"))
    }

    /// A browser login's localStorage round-trips; a record without any writes no `origins` key, and one
    /// without the key (every record written before it existed) reads as having none.
    @Test func keepsLocalStorageOriginsAndReadsRecordsWithout() throws {
        var record = Self.sample()
        record.origins = [StorageOrigin(origin: "http://127.0.0.1:8480", localStorage: [.init(name: "token", value: Self.secretValue)])]
        let text = String(decoding: try record.encoded(), as: UTF8.self)
        #expect(text.contains(#""origins":[{"localStorage":[{"name":"token","value":"#))
        #expect(try SessionRecord.decode(try record.encoded()) == record)
        #expect(!String(decoding: try Self.sample().encoded(), as: UTF8.self).contains("origins"))
        #expect(try SessionRecord.decode(try Self.sample().encoded()).origins.isEmpty)
    }

    /// The TOTP periods a login sent round-trip as `one_time_codes` (numbers, never a code); a record without the key
    /// reads as none, and one without any writes no key, so older binaries read records as before.
    @Test func keepsTheTOTPPeriodsSentAndReadsRecordsWithout() throws {
        var record = Self.sample()
        record.oneTimeCodes = ["otp": 59_333_333]
        let text = String(decoding: try record.encoded(), as: UTF8.self)
        #expect(text.contains(#""one_time_codes":{"otp":59333333}"#))
        #expect(try SessionRecord.decode(try record.encoded()) == record)
        #expect(!String(decoding: try Self.sample().encoded(), as: UTF8.self).contains("one_time_codes"))
        #expect(try SessionRecord.decode(try Self.sample().encoded()).oneTimeCodes.isEmpty)
    }

    /// What was learned of the site's sessions round-trips as `learned` (seconds, counts); a record without the key
    /// reads as nothing learned, and one with nothing learned writes no key.
    @Test func keepsWhatWasLearnedAndReadsRecordsWithout() throws {
        var record = Self.sample()
        record.learned = LearnedLifetimes(
            idle: .init(atLeast: 15.5, atMost: 20, observations: 7), lifetime: .init(atLeast: 88, atMost: nil, observations: 9), relearned: 1)
        let text = String(decoding: try record.encoded(), as: UTF8.self)
        #expect(text.contains(#""learned":{"idle":{"alive_s":15.5,"dead_s":20,"observations":7},"lifetime":{"alive_s":88,"dead_s":null,"observations":9},"relearned":1}"#), "\(text)")
        #expect(try SessionRecord.decode(try record.encoded()) == record)
        #expect(!String(decoding: try Self.sample().encoded(), as: UTF8.self).contains("learned"))
        #expect(try SessionRecord.decode(try Self.sample().encoded()).learned == nil)
        let damaged = text.replacingOccurrences(of: #""alive_s":15.5"#, with: #""alive_s":-3"#)
        #expect(throws: SessionRecordError.self) { try SessionRecord.decode(Array(damaged.utf8)) }
    }

    @Test(arguments: [
        ("{\"format\":\"sessionkeeper-site-session\",\"version\":3}", "format version 3, newer than this SessionKeeper understands (2)"),
        ("{\"format\":\"sessionkeeper-site-session\",\"version\":0}", "invalid format version (0)"),
        ("not json", "is not a sessionkeeper-site-session record"),
        ("{\"format\":\"something-else\",\"version\":1}", "is not a sessionkeeper-site-session record"),
        ("{\"format\":\"sessionkeeper-site-session\",\"version\":2,\"cookies\":[]}", "lacks 'last_login'"),
        ("{\"format\":\"sessionkeeper-site-session\",\"version\":2,\"cookies\":[],\"last_login\":\"yesterday\"}", "invalid 'last_login'"),
        ("{\"format\":\"sessionkeeper-site-session\",\"version\":2,\"last_login\":\"2023-11-14T22:15:00Z\",\"cookies\":[{\"name\":\"sid\",\"value\":\"v4lue-that-must-never-show\"}]}",
         "lacks 'cookies[0].created'"),
    ])
    func refusesDamagedOrNewerRecordsSayingWhy(text: String, expected: String) {
        do {
            _ = try SessionRecord.decode(Array(text.utf8))
            Issue.record("decoded a damaged record")
        } catch {
            #expect(error.description.contains(expected), "message: \(error.description)")
            #expect(!error.description.contains(Self.secretValue))
        }
    }

    @Test func persistableLeavesOutExpiredAndOptionallySessionCookies() {
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        let live = Cookie(name: "a", value: "1", domain: "x.test", expires: now.addingTimeInterval(60), created: now)
        let expired = Cookie(name: "b", value: "2", domain: "x.test", expires: now, created: now)
        let session = Cookie(name: "c", value: "3", domain: "x.test", created: now)
        #expect(SessionRecord.persistable([live, expired, session], keepSessionCookies: true, now: now).map(\.name) == ["a", "c"])
        #expect(SessionRecord.persistable([live, expired, session], keepSessionCookies: false, now: now).map(\.name) == ["a"])
    }
}

@Suite struct StartingCookiesTests {
    static let now = Date(timeIntervalSince1970: 1_750_000_000)
    static let site = URL(string: "https://x.test/")!
    static let stored = [
        Cookie(name: "sid", value: "s", domain: "x.test", expires: now.addingTimeInterval(600), created: now),
        Cookie(name: "device", value: "d", domain: "x.test", expires: now.addingTimeInterval(86_400), created: now),
        Cookie(name: "prefs", value: "p", domain: "x.test", created: now),
        Cookie(name: "stale", value: "o", domain: "x.test", expires: now.addingTimeInterval(-1), created: now),
    ]

    @Test func defaultKeepsEverythingButTheEssentialCookies() {
        let kept = StartingCookies.select(from: Self.stored, policy: .allButEssential, essential: ["sid"], baseURL: Self.site, now: Self.now)
        #expect(kept.map(\.name) == ["device", "prefs"])
        // An essential name ending in * leaves out what it matches, as the full name does.
        let byPrefix = StartingCookies.select(from: Self.stored, policy: .allButEssential, essential: ["s*"], baseURL: Self.site, now: Self.now)
        #expect(byPrefix.map(\.name) == ["device", "prefs"])
        #expect(CookieSelector("DW*").matches(name: "DW7f3a") && !CookieSelector("DW*").matches(name: "XDW"))
        #expect(CookieSelector("sid").matches(name: "sid") && !CookieSelector("sid").matches(name: "sid2"))
    }

    @Test func noneStartsEmpty() {
        #expect(StartingCookies.select(from: Self.stored, policy: .none, essential: ["sid"], baseURL: Self.site, now: Self.now).isEmpty)
    }

    @Test func aListKeepsOnlyThoseNamesAndNeverExpiredOnes() {
        let kept = StartingCookies.select(
            from: Self.stored, policy: .names(["device", "stale", "absent"]), essential: ["sid"], baseURL: Self.site, now: Self.now)
        #expect(kept.map(\.name) == ["device"])
    }

    /// An app and its identity provider, each with a `sessionid`: a bare name means the app's (base_url's host),
    /// `{name, domain}` the provider's, so the provider's session can be kept while the app's is dropped.
    @Test func entriesNameTheHostOfTheCookieTheyMean() {
        let app = URL(string: "http://127.0.0.2:8000/")!
        let cookies = [
            Cookie(name: "sessionid", value: "a", domain: "127.0.0.2", expires: Self.now.addingTimeInterval(600), created: Self.now),
            Cookie(name: "sessionid", value: "i", domain: "127.0.0.1", expires: Self.now.addingTimeInterval(600), created: Self.now),
            Cookie(name: "csrftoken", value: "c", domain: "127.0.0.1", expires: Self.now.addingTimeInterval(600), created: Self.now),
            Cookie(name: "sessionid", value: "w", domain: "example.com", hostOnly: false, expires: Self.now.addingTimeInterval(600), created: Self.now),
        ]
        let byDefault = StartingCookies.select(from: cookies, policy: .allButEssential, essential: ["sessionid"], baseURL: app, now: Self.now)
        #expect(byDefault.map(\.domain) == ["127.0.0.1", "127.0.0.1", "example.com"], "only the app's sessionid is left out")
        let provider = CookieSelector("sessionid", domain: "127.0.0.1")
        let kept = StartingCookies.select(from: cookies, policy: .names([provider]), essential: ["sessionid"], baseURL: app, now: Self.now)
        #expect(kept.map { "\($0.name)@\($0.domain)" } == ["sessionid@127.0.0.1"])
        // A domain cookie is meant by an entry for any host inside its domain; a host-only one by its host alone.
        let inside = CookieSelector("sessionid", domain: "www.example.com")
        #expect(cookies.filter { inside.matches($0, baseURL: app) }.map(\.domain) == ["example.com"])
        #expect(cookies.filter { CookieSelector("sessionid", domain: "www.127.0.0.1").matches($0, baseURL: app) }.isEmpty)
        #expect(!CookieSelector("sessionid", path: "/app").matches(cookies[0], baseURL: app), "a path given must be the cookie's")
        #expect(Cookie.labels(cookies) == ["sessionid (127.0.0.2)", "sessionid (127.0.0.1)", "csrftoken", "sessionid (example.com)"])
    }
}
