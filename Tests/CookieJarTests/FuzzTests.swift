import Foundation
import TestSupport
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

    /// What one fuzz run found: the invariants each stored cookie broke, and what the jar held at the end.
    struct FuzzRun: Sendable {
        var violations: [String] = []
        var stored = 0
        var all: [Cookie] = []
        var now = Date.distantPast
    }

    /// The run itself, CPU-bound for seconds: on a thread of its own, so that it holds no thread of Swift's
    /// cooperative pool (two on the CI machine) from the tests that wait on it.
    static func fuzzRun(seeds: [String], limits: CookieLimits) -> FuzzRun {
        var run = FuzzRun()
        var rng = SeededGenerator(state: 0x5EED_C00C1E)
        let clock = TestClock()
        let storage = CookieStorage(limits: limits, clock: clock.function)
        func check(_ holds: Bool, _ what: @autoclosure () -> String) { if !holds { run.violations.append(what()) } }
        for iteration in 0..<Self.iterations {
            let host = Self.hosts[Int(rng.next() % UInt64(Self.hosts.count))]
            let scheme = rng.next() % 2 == 0 ? "http" : "https"
            let source = URL(string: "\(scheme)://\(host)/dir/page")!
            let header = Self.randomHeader(&rng, seeds: seeds)
            let decisions = storage.setCookies(fromHeaders: [header], for: source, mainDocumentURL: nil)
            if iteration % 100 == 0 { clock.advance(by: 7) }
            for decision in decisions {
                guard case .stored(let cookie) = decision else { continue }
                run.stored += 1
                for field in [cookie.name, cookie.value, cookie.domain, cookie.path] {
                    check(!Self.hasControlCharacter(field), "control character in cookie \(cookie.description)")
                }
                check(!cookie.name.isEmpty, "empty name: \(cookie.description)")
                check(cookie.path.hasPrefix("/"), "relative path: \(cookie.description)")
                check(CookieRules.domainMatches(host: host, domain: cookie.domain), "\(cookie.description) from \(host)")
                check(!PublicSuffixList.shared.isPublicSuffix(cookie.domain) || cookie.hostOnly, "public suffix domain: \(cookie.description)")
                check(cookie.nameValueByteCount <= limits.maxCookieBytes, "too large: \(cookie.description)")
                check(!cookie.secure || CookieRules.isSecureOrigin(source), "Secure from \(source): \(cookie.description)")
                if let expires = cookie.expires {
                    check(expires.timeIntervalSince(clock.now) <= CookieRules.maxExpiryInterval, "expiry beyond the cap: \(cookie.description)")
                }
            }
            _ = storage.cookieHeader(for: source)
        }
        run.all = storage.allCookies
        run.now = clock.now
        return run
    }

    @Test("20,000 random and mutated Set-Cookie values: no crash, every stored cookie obeys the invariants")
    func fuzz() async throws {
        let seeds = Fixtures.parserCases().flatMap(\.received)
        try #require(!seeds.isEmpty)
        let limits = CookieLimits(maxCookieBytes: 4096, maxCookiesPerDomain: 50, maxCookies: 300)
        let run = await onDedicatedThread { Self.fuzzRun(seeds: seeds, limits: limits) }
        #expect(run.violations.isEmpty, "\(run.violations.count) violations, the first: \(run.violations.prefix(3))")
        let all = run.all
        #expect(run.stored > 1000, "the fuzzer should reach the storage often (stored \(run.stored))")
        #expect(all.count <= limits.maxCookies)
        #expect(Dictionary(grouping: all, by: \.domain).values.allSatisfy { $0.count <= limits.maxCookiesPerDomain })
        #expect(Set(all.map { "\($0.name)\u{0}\($0.domain)\u{0}\($0.path)" }).count == all.count, "name/domain/path is unique")
        // Whatever the jar holds can be written and read back in the lossless format.
        let text = CookieCodec.encode(all, as: .json)
        #expect(try CookieCodec.decode(text, as: .json, url: nil, now: run.now).count == all.count)
        _ = try CookieCodec.decode(CookieCodec.encode(all, as: .netscape), as: .netscape, url: nil, now: run.now)
    }

    @Test("the cookie-date algorithm survives random strings")
    func fuzzDates() async {
        // CPU-bound, on a thread of its own as `fuzz()` is.
        let failures = await onDedicatedThread { () -> [String] in
            var rng = SeededGenerator(state: 42)
            let pieces = ["Thu", "01", "Jan", "2015", "00:00:00", "GMT", "99", "1601", "23:59:60", "Feb", "29", "-", ",", " ", "\u{0}", "31", "Jun"]
            var failures: [String] = []
            for _ in 0..<Self.iterations {
                let text = (0..<Int(rng.next() % 8)).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }
                    .joined(separator: rng.next() % 2 == 0 ? " " : "")
                // A parsed date formats and parses back to itself.
                if let date = CookieDateParser.parse(text), CookieDateParser.parse(CookieTime.httpDate(date)) != date {
                    failures.append(text)
                }
            }
            return failures
        }
        #expect(failures.isEmpty, "dates that do not round-trip: \(failures.prefix(3))")
    }
}
