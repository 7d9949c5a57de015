import Foundation
import Testing
@testable import CookieJar

/// Inputs on which a libFuzzer target (Fuzz/, docs/RELIABILITY.md) crashed, kept as regression tests. Their
/// crash inputs are also in Fuzz/regressions/TARGET, which every fuzz run replays first.
@Suite("Inputs the fuzz targets crashed on")
struct FuzzRegressionTests {
    /// plugin-answer and cookie-import (AddressSanitizer: heap-use-after-free): under the main-document-domain
    /// policy the registrable domain was read from libpsl's answer, a pointer into the temporary C string made
    /// for its argument, after that string was freed. An ordinary build mostly read the stale bytes intact;
    /// `swift test --sanitize=address` fails here without the fix. In any build the answers must be right.
    @Test func mainDocumentDomainReadsTheRegistrableDomainWhileLibpslsArgumentLives() throws {
        let lines = String(decoding: try Fixtures.data("fuzz-registrable-domain.txt"), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        let site = url("https://app.example.com/")
        let storage = CookieStorage(acceptPolicy: .mainDocumentDomain, clock: { Fixtures.suiteNow })
        let decisions = storage.setCookies(fromHeaders: lines, for: site, mainDocumentURL: site)
        #expect(decisions.map(\.isStored) == [true, true, true, false])
        #expect(Set(storage.allCookies.map(\.name)) == ["from_line", "__Host-x", "wide"])

        let expected = [
            "app.example.com": "example.com", "www.example.co.uk": "example.co.uk", "a.b.c.example.org": "example.org",
            "co.uk": "co.uk", "192.168.1.20": "192.168.1.20",
        ]
        for (host, registrable) in expected {
            #expect((0..<100).allSatisfy { _ in PublicSuffixList.shared.registrableDomain(of: host) == registrable }, "\(host)")
        }
    }

    /// Replays a set-cookie crash input (line 1 the response's URL, then one Set-Cookie value a line): the
    /// response's host has no canonical form, so every cookie is refused and none is stored.
    static func expectNoCookieStored(fromResponseIn fixture: String) throws {
        let lines = try Fixtures.data(fixture).split(separator: 0x0A, omittingEmptySubsequences: false)
        let source = try #require(URL(string: String(decoding: lines[0], as: UTF8.self)))
        let storage = CookieStorage(clock: { Fixtures.suiteNow })
        let decisions = storage.setCookies(
            fromHeaders: lines.dropFirst().map { String(decoding: $0, as: UTF8.self) }, for: source, mainDocumentURL: nil)
        #expect(!decisions.isEmpty && decisions.allSatisfy { !$0.isStored })
        #expect(storage.allCookies.isEmpty)
        #expect(CookieRules.canonicalHost(of: source) == nil)
    }

    /// set-cookie (invariant "a host-only cookie for another host"): a response from a host with an empty first
    /// label (`h...https://............ttp/`, two or more leading dots) stored a host-only cookie whose domain had
    /// lost one more dot than the host, so it named another host ("..example.com" would have set a cookie for
    /// "example.com"). Such a host has no canonical form now: its cookies are refused for having no host.
    @Test func aHostWithAnEmptyLabelGetsNoCookie() throws {
        try Self.expectNoCookieStored(fromResponseIn: "fuzz-empty-label-host.txt")
        #expect(CookieRules.canonicalHost(of: url("http://..example.com/")) == nil)
        #expect(CookieRules.canonicalHost(of: url("http://%2E%2Eexample.com/")) == nil)
        #expect(CookieRules.canonicalHost(of: url("http://.example.com/")) == "example.com")
        let storage = CookieStorage(clock: { Fixtures.suiteNow })
        #expect(storage.receive("a=1", from: "http://..example.com/").allSatisfy { !$0.isStored })
        #expect(storage.names(for: "http://example.com/").isEmpty)
    }

    /// set-cookie (invariant: the json format could not read what it wrote), fourth session: a response from
    /// `http://cookie%01%00%00...-parse-parser/` stored host-only cookies whose domain held the decoded control
    /// characters, which no cookie file can carry (the json reader refused its own output). A host whose
    /// percent escapes decode to a control character, a space or a leading `#` has no canonical form now, so its
    /// cookies are refused for having no host, as an empty label's are.
    @Test func aHostWithEscapedControlCharactersGetsNoCookie() throws {
        try Self.expectNoCookieStored(fromResponseIn: "fuzz-control-characters-in-host.txt")
        for host in ["a%00b.example", "a%09b.example", "a%0Ab.example", "a%20b.example", "%23a.example", "a%7Fb.example"] {
            #expect(CookieRules.canonicalHost(of: url("http://\(host)/")) == nil, "\(host)")
        }
        // Escapes that decode to what a host may hold still work.
        #expect(CookieRules.canonicalHost(of: url("http://%65xample.com/")) == "example.com")
        #expect(CookieRules.canonicalHost(of: url("http://b%C3%BCcher.example/")) != nil)
        #expect(!CookieRules.isStorableDomain("#a.example"))
        #expect(CookieRules.isStorableDomain("a.example"))
    }

    /// cookie-import (Fatal error: Double value cannot be converted to Int64): a Playwright `expires` of 1e300
    /// reads as a time no whole-second count holds, and writing it in any format with a date trapped. So did a
    /// cookies.txt expiry of Int64.max. Writers now show the nearest time they can write (year 9999).
    /// Found by the fuzz helper's review of cookie-import: a `json` cookie with a relative path, or a domain
    /// starting with `#` (a comment line in cookies.txt) or holding a tab, was read, then written as a
    /// cookies.txt line that does not read back. The json reader refuses them, naming the key, never a value.
    @Test(arguments: [
        (#""path": "relative""#, "\"path\" must start with /"),
        (#""path": "/a\tb""#, "\"path\" must start with /"),
        (##""domain": "#example.com""##, "\"domain\" must be a host name"),
        (#""domain": "example.com\t1""#, "\"domain\" must be a host name"),
    ])
    func theJSONReaderRefusesWhatCookiesTxtCannotCarry(field: String, message: String) throws {
        var object = #"{"name": "sid", "value": "v-secret-1", "domain": "example.com", "path": "/", "created": "2026-01-01T00:00:00Z"}"#
        let key = String(field.prefix { $0 != ":" })
        object = object.replacingOccurrences(of: key == #""path""# ? #""path": "/""# : #""domain": "example.com""#, with: field)
        #expect {
            try CookieCodec.decode("[\(object)]", as: .json, url: nil, now: Fixtures.suiteNow)
        } throws: { error in
            let text = "\(error)"
            return text.contains(message) && !text.contains("v-secret-1")
        }
        let good = #"[{"name": "sid", "value": "v", "domain": "example.com", "path": "/a", "created": "2026-01-01T00:00:00Z"}]"#
        let cookies = try CookieCodec.decode(good, as: .json, url: nil, now: Fixtures.suiteNow)
        let netscape = CookieCodec.encode(cookies, as: .netscape)
        #expect(try CookieCodec.decode(netscape, as: .netscape, url: nil, now: Fixtures.suiteNow).map(\.path) == ["/a"])
    }

    /// cookie-import (invariant: the json format could not read what it wrote), fourth session: a Playwright
    /// file whose cookie has `"path": ""` was imported, and the jar then wrote a `json` file its own reader
    /// refuses. The Playwright reader now applies the json reader's rules to `path` and `domain`, and
    /// `fileProblem` names the same faults for what the line formats read (a cookies.txt domain with a space).
    @Test func thePlaywrightReaderRefusesWhatTheJSONReaderRefuses() throws {
        let text = String(decoding: try Fixtures.data("fuzz-playwright-empty-path.json"), as: UTF8.self)
        #expect {
            try CookieCodec.decode(text, as: .playwright, url: nil, now: Fixtures.suiteNow)
        } throws: { error in
            "\(error)".contains("\"path\" must start with /") && !"\(error)".contains("abc123")
        }
        for domain in ["#example.com", "exa mple.com"] {
            let file = #"{"cookies": [{"name": "sid", "value": "v-secret-1", "domain": "DOMAIN", "path": "/"}], "origins": []}"#
            #expect {
                try CookieCodec.decode(file.replacingOccurrences(of: "DOMAIN", with: domain), as: .playwright, url: nil, now: Fixtures.suiteNow)
            } throws: { error in
                "\(error)".contains("\"domain\" must be a host name") && !"\(error)".contains("v-secret-1")
            }
        }
        let spaced = try CookieCodec.decode("exa mple.com\tFALSE\t/\tFALSE\t0\tsid\tv\n", as: .netscape, url: nil, now: Fixtures.suiteNow)
        #expect(spaced.first?.fileProblem == "the domain of cookie sid is not a host name (a space, or a leading #)")
        #expect(Cookie(name: "sid", value: "v", domain: "example.com", path: "relative").fileProblem == "the path of cookie sid does not start with /")
    }

    @Test func expiriesBeyondYear9999AreWrittenAsTheLastWritableSecond() throws {
        let text = String(decoding: try Fixtures.data("fuzz-expires-beyond-year-9999.json"), as: UTF8.self)
        let cookies = try CookieCodec.decode(text, as: .playwright, url: nil, now: Fixtures.suiteNow)
        let netscape = try CookieCodec.decode(".example.com\tTRUE\t/\tFALSE\t9223372036854775807\tmax\t1\n", as: .netscape, url: nil, now: Fixtures.suiteNow)
        for cookie in cookies + netscape {
            #expect(CookieTime.rfc3339(try #require(cookie.expires)) == "9999-12-31T23:59:59Z")
            #expect(CookieTime.httpDate(try #require(cookie.expires)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        }
        for format in CookieFormat.allCases {
            let written = CookieCodec.encode(cookies + netscape, as: format)
            #expect(format == .header || written.contains("far"), "\(format)")
        }
        let json = CookieCodec.encode(cookies, as: .json)
        #expect(CookieCodec.encode(try CookieCodec.decode(json, as: .json, url: nil, now: Fixtures.suiteNow), as: .json) == json)
    }
}
