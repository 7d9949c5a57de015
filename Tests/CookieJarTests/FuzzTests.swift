import Foundation
import Testing
@testable import CookieJar

/// SplitMix64: a small seeded generator, so a failing fuzz run can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Fuzzing the parser and the storage")
struct FuzzTests {
    static let iterations = 20_000

    static let hosts = ["home.example.org", "www.example.co.uk", "example.com", "192.168.1.20", "localhost", "a.b.c.d.test", "co.uk"]

    static let fragments = [
        "a=b", "=", ";", " ", "\t", "Domain=", "domain=.example.org", "Domain=example.com", "Domain=co.uk", "Domain=..",
        "Path=/", "path=/a/b", "Path=", "Path=relative", "Expires=Thu, 01 Jan 2015 00:00:10 GMT", "expires=31 Dec 1999",
        "Expires=Wed, 09 Jun 2121 10:18:14 GMT", "Max-Age=0", "Max-Age=-1", "max-age=99999999999999999999", "Max-Age=12",
        "Secure", "HttpOnly", "SameSite=Lax", "SameSite=None", "samesite=x", "__Host-", "__Secure-", "\"", "\u{0}", "\r", "\n",
        "\u{7F}", "é", "春节", "\u{1F36A}", "Version=1", "Port=\"80,x\"", "Comment=c", ",", "%00", String(repeating: "z", count: 5000),
    ]

    static func randomHeader(_ rng: inout SeededGenerator, seeds: [String]) -> String {
        switch rng.next() % 3 {
        case 0:
            // Random bytes, many of them delimiters and controls.
            let length = Int(rng.next() % 64)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next() % 3 == 0 ? rng.next() % 0x30 : 0x20 + rng.next() % 0x60) }
            return String(decoding: bytes, as: UTF8.self)
        case 1:
            // Fragments glued together.
            let count = 1 + Int(rng.next() % 8)
            return (0..<count).map { _ in fragments[Int(rng.next() % UInt64(fragments.count))] }
                .joined(separator: rng.next() % 2 == 0 ? "; " : "")
        default:
            // A header of the http-state suite with bytes flipped, inserted or deleted.
            var bytes = Array(seeds[Int(rng.next() % UInt64(seeds.count))].utf8)
            for _ in 0..<(1 + rng.next() % 4) {
                let position = bytes.isEmpty ? 0 : Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0 where !bytes.isEmpty: bytes[position] = UInt8(truncatingIfNeeded: rng.next())
                case 1: bytes.insert(UInt8(truncatingIfNeeded: rng.next() % 0x80), at: position)
                default: if !bytes.isEmpty { bytes.remove(at: position) }
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    static func hasControlCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    @Test("20,000 random and mutated Set-Cookie values: no crash, every stored cookie obeys the invariants")
    func fuzz() throws {
        let seeds = Fixtures.parserCases().flatMap(\.received)
        try #require(!seeds.isEmpty)
        var rng = SeededGenerator(state: 0x5EED_C00C1E)
        let clock = TestClock()
        let limits = CookieLimits(maxCookieBytes: 4096, maxCookiesPerDomain: 50, maxCookies: 300)
        let storage = CookieStorage(limits: limits, clock: clock.function)
        var stored = 0
        for iteration in 0..<Self.iterations {
            let host = Self.hosts[Int(rng.next() % UInt64(Self.hosts.count))]
            let scheme = rng.next() % 2 == 0 ? "http" : "https"
            let source = URL(string: "\(scheme)://\(host)/dir/page")!
            let header = Self.randomHeader(&rng, seeds: seeds)
            let decisions = storage.setCookies(fromHeaders: [header], for: source, mainDocumentURL: nil)
            if iteration % 100 == 0 { clock.advance(by: 7) }
            for decision in decisions {
                guard case .stored(let cookie) = decision else { continue }
                stored += 1
                for field in [cookie.name, cookie.value, cookie.domain, cookie.path] {
                    #expect(!Self.hasControlCharacter(field), "control character in cookie \(cookie.description)")
                }
                #expect(!cookie.name.isEmpty)
                #expect(cookie.path.hasPrefix("/"))
                #expect(CookieRules.domainMatches(host: host, domain: cookie.domain), "\(cookie.description) from \(host)")
                #expect(!PublicSuffixList.shared.isPublicSuffix(cookie.domain) || cookie.hostOnly)
                #expect(cookie.nameValueByteCount <= limits.maxCookieBytes)
                #expect(!cookie.secure || CookieRules.isSecureOrigin(source))
                if let expires = cookie.expires { #expect(expires.timeIntervalSince(clock.now) <= CookieRules.maxExpiryInterval) }
            }
            _ = storage.cookieHeader(for: source)
        }
        let all = storage.allCookies
        #expect(stored > 1000, "the fuzzer should reach the storage often (stored \(stored))")
        #expect(all.count <= limits.maxCookies)
        #expect(Dictionary(grouping: all, by: \.domain).values.allSatisfy { $0.count <= limits.maxCookiesPerDomain })
        #expect(Set(all.map { "\($0.name)\u{0}\($0.domain)\u{0}\($0.path)" }).count == all.count, "name/domain/path is unique")
        // Whatever the jar holds can be written and read back in the lossless format.
        let text = CookieCodec.encode(all, as: .json)
        #expect(try CookieCodec.decode(text, as: .json, url: nil, now: clock.now).count == all.count)
        _ = try CookieCodec.decode(CookieCodec.encode(all, as: .netscape), as: .netscape, url: nil, now: clock.now)
    }

    @Test("the cookie-date algorithm survives random strings")
    func fuzzDates() {
        var rng = SeededGenerator(state: 42)
        let pieces = ["Thu", "01", "Jan", "2015", "00:00:00", "GMT", "99", "1601", "23:59:60", "Feb", "29", "-", ",", " ", "\u{0}", "31", "Jun"]
        for _ in 0..<Self.iterations {
            let text = (0..<Int(rng.next() % 8)).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }.joined(separator: rng.next() % 2 == 0 ? " " : "")
            if let date = CookieDateParser.parse(text) {
                // A parsed date formats and parses back to itself.
                #expect(CookieDateParser.parse(CookieTime.httpDate(date)) == date)
            }
        }
    }
}
