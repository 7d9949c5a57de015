import Foundation
import Testing
@testable import CookieJar

/// SPEC section 4: browsers' limits, RFC 6265bis eviction order, evictions reported, and cookies read from a
/// file the user named never evicted.
@Suite("Eviction and restored cookies")
struct EvictionTests {
    let clock = TestClock()

    private func fileCookies(_ count: Int, domain: String = "example.com", secure: Bool = false) -> [Cookie] {
        (0..<count).map { Cookie(name: "f\($0)", value: "v", domain: domain, secure: secure, created: clock.now) }
    }

    @Test("the defaults are browsers' limits: 4096 bytes, 180 a domain, 3000 in all")
    func browserDefaults() {
        let limits = CookieLimits()
        #expect(limits.maxCookieBytes == 4096 && limits.maxCookiesPerDomain == 180 && limits.maxCookies == 3000)
    }

    @Test("storing one cookie into a 60-cookie file evicts none of them")
    func sixtyCookieFile() {
        let storage = CookieStorage(clock: clock.function)
        storage.restore(fileCookies(60))
        let decisions = storage.receive("new=1", from: "http://example.com/")
        #expect(decisions[0].isStored)
        #expect(storage.allCookies.count == 61)
    }

    @Test("restored cookies are never evicted: a new cookie finding its domain full of them is refused with a reason")
    func restoredNeverEvicted() {
        let storage = CookieStorage(limits: CookieLimits(maxCookiesPerDomain: 50), clock: clock.function)
        storage.restore(fileCookies(60))
        let (decisions, changes) = storage.recordingChanges { storage.receive("new=1", from: "http://example.com/") }
        #expect(decisions[0].reason?.contains("example.com already holds 50 cookies") == true)
        #expect(storage.allCookies.count == 60)
        #expect(changes.isEmpty)
    }

    @Test("a server's replacement of a restored cookie stays unevictable; new ones evict each other")
    func replacementKeepsPin() {
        let storage = CookieStorage(limits: CookieLimits(maxCookiesPerDomain: 3), clock: clock.function)
        storage.restore(fileCookies(2))
        clock.advance(by: 1)
        storage.receive("f0=2", from: "http://example.com/")
        storage.receive("a=1", from: "http://example.com/")
        clock.advance(by: 1)
        let (_, changes) = storage.recordingChanges { storage.receive("b=1", from: "http://example.com/") }
        #expect(Set(storage.allCookies.map(\.name)) == ["f0", "f1", "b"])
        let evicted = changes.compactMap { if case .evicted(let cookie, _) = $0 { cookie.name } else { nil } }
        #expect(evicted == ["a"])
    }

    @Test("within a full domain, non-Secure cookies go before Secure ones (RFC 6265bis 5.7)")
    func nonSecureFirst() {
        let storage = CookieStorage(limits: CookieLimits(maxCookiesPerDomain: 2), clock: clock.function)
        storage.receive("secure=1; Secure", from: "https://example.com/")
        clock.advance(by: 1)
        storage.receive("plain=1", from: "https://example.com/")
        clock.advance(by: 1)
        let (_, changes) = storage.recordingChanges { storage.receive("third=1", from: "https://example.com/") }
        #expect(Set(storage.allCookies.map(\.name)) == ["secure", "third"])
        let evicted = changes.compactMap { change -> (String, CookieEviction)? in
            if case .evicted(let cookie, let reason) = change { (cookie.name, reason) } else { nil }
        }
        #expect(evicted.count == 1 && evicted.first?.0 == "plain")
        #expect(evicted.first?.1 == .domainLimit(domain: "example.com", limit: 2))
        #expect(evicted.first?.1.description.contains("per-domain limit") == true)
    }

    @Test("over the total limit a crowded domain's non-Secure cookies go before an older cookie elsewhere")
    func totalPrefersCrowded() {
        let storage = CookieStorage(limits: CookieLimits(maxCookiesPerDomain: 2, maxCookies: 5), clock: clock.function)
        storage.receive("old=1", from: "http://other.com/")
        clock.advance(by: 1)
        storage.receive("a=1", "b=1", from: "http://crowded.com/")
        // A file read afterwards puts crowded.com over its limit with cookies that cannot be evicted.
        storage.restore(fileCookies(2, domain: "crowded.com"))
        clock.advance(by: 1)
        let (_, changes) = storage.recordingChanges { storage.receive("n=1", from: "http://new.com/") }
        #expect(storage.allCookies.count == 5)
        let evicted = changes.compactMap { change -> (String, CookieEviction)? in
            if case .evicted(let cookie, let reason) = change { (cookie.name, reason) } else { nil }
        }
        #expect(evicted.map(\.0) == ["a"])
        #expect(evicted.first?.1 == .totalLimit(limit: 5))
        #expect(storage.allCookies.contains { $0.name == "old" })
    }

    @Test("a jar full of restored cookies refuses a new one")
    func jarFull() {
        let storage = CookieStorage(limits: CookieLimits(maxCookies: 3), clock: clock.function)
        storage.restore(fileCookies(3))
        let decisions = storage.receive("x=1", from: "http://other.com/")
        #expect(decisions[0].reason?.contains("the jar already holds 3 cookies") == true)
        #expect(storage.allCookies.count == 3)
    }

    @Test("expired restored cookies are still evicted first")
    func expiredRestoredGoes() {
        let storage = CookieStorage(limits: CookieLimits(maxCookiesPerDomain: 2), clock: clock.function)
        var stale = fileCookies(2)
        stale[0].expires = clock.now.addingTimeInterval(5)
        storage.restore(stale)
        clock.advance(by: 10)
        let (decisions, changes) = storage.recordingChanges { storage.receive("new=1", from: "http://example.com/") }
        #expect(decisions[0].isStored)
        #expect(changes.contains { if case .expired(let cookie) = $0 { cookie.name == "f0" } else { false } })
    }

    @Test("the parser refuses octets that are not UTF-8 and parses those that are")
    func octets() {
        #expect(SetCookieParser.parse(octets: [0x61, 0x3D, 0xE9]) == .failure(.notUTF8))
        #expect(SetCookieParser.parse(octets: Array("a=\u{E9}".utf8)).map(\.value) == .success("\u{E9}"))
        #expect(CookieRejection.parse(.notUTF8).description.contains("not UTF-8"))
    }

    @Test("a cookie from a file with a line break in its value is unsound; the reason leaves out the value")
    func fileProblem() {
        #expect(Cookie(name: "a", value: "x\ny", domain: "example.com").fileProblem == "the value of cookie a holds a control character")
        #expect(Cookie(name: "a\tb", value: "1", domain: "example.com").fileProblem == "the name holds a control character")
        #expect(Cookie(name: "a", value: "x\ty", domain: "example.com").fileProblem == nil)
        #expect(Cookie(name: "a", value: "1", domain: "exa\rmple.com").fileProblem != nil)
    }
}
