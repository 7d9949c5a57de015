import Foundation
import JSON
import Testing
@testable import CookieJar

/// The json and playwright formats against files other code wrote, and their errors above the single key.
@Suite struct JSONCookieFormatTests {
    static let now = Fixtures.suiteNow

    static func fixtureText(_ name: String) throws -> String {
        String(decoding: try Fixtures.data(name), as: UTF8.self)
    }

    /// Fixtures/json-format-v1.json and playwright-v1.json were written by the code before the JSON module
    /// (`jar store` and `jar convert`): the same cookies must read, and write back byte for byte.
    @Test(arguments: [("json-format-v1.json", CookieFormat.json), ("playwright-v1.json", .playwright)])
    func filesTheEarlierCodeWroteReadAndWriteBackUnchanged(name: String, format: CookieFormat) throws {
        let text = try Self.fixtureText(name)
        let cookies = try CookieCodec.decode(text, as: format, url: nil, now: Self.now)
        #expect(cookies.map(\.name) == ["session", "pref", "legacy", "tracker", "api"])
        #expect(cookies[1].value == "x\"y\\z é")
        #expect(CookieCodec.encode(cookies, as: format) == text)
        if format == .json {
            #expect(cookies[2].version == 1 && cookies[2].comment == "hello" && cookies[2].portList == [80, 443])
            #expect(cookies[0].created == Date(timeIntervalSince1970: 1_767_225_600.25))
        }
    }

    @Test("a storageState as Playwright writes it, localStorage origins included, reads")
    func playwrightStorageState() throws {
        let cookies = try CookieCodec.decode(try Self.fixtureText("playwright-storage-state.json"), as: .playwright, url: nil, now: Self.now)
        #expect(cookies.count == 2)
        let session = try #require(cookies.first)
        #expect(session.name == "sid" && session.domain == "app.example.com" && session.hostOnly && session.expires == nil)
        #expect(session.httpOnly && session.secure && session.sameSite == .lax && session.created == Self.now)
        let analytics = cookies[1]
        #expect(analytics.domain == "example.com" && !analytics.hostOnly && analytics.sameSite == SameSite.none)
        #expect(abs((analytics.expires?.timeIntervalSince1970 ?? 0) - 1_801_785_600.123456) < 0.000_001)
    }

    @Test("values with control characters and non-ASCII text round-trip; the file escapes them per RFC 8259")
    func escapes() throws {
        let cookie = Cookie(name: "c", value: "a\u{7F}b\u{08}c\td\u{01}é😀/", domain: "example.com", created: Self.now)
        let text = CookieCodec.encode([cookie], as: .json)
        #expect(text.contains(#""value": "a\u007fb\bc\td\u0001é😀/""#))
        #expect(try CookieCodec.decode(text, as: .json, url: nil, now: Self.now).first?.value == cookie.value)
        let playwright = CookieCodec.encode([cookie], as: .playwright)
        #expect(try CookieCodec.decode(playwright, as: .playwright, url: nil, now: Self.now).first?.value == cookie.value)
    }

    @Test("a missing created time is the reading time; through Codable without one it is required")
    func creationTime() throws {
        let text = #"[{"name": "a", "value": "1", "domain": "example.com"}]"#
        let cookie = try #require(try CookieCodec.decode(text, as: .json, url: nil, now: Self.now).first)
        #expect(cookie.created == Self.now && cookie.lastAccess == Self.now && cookie.path == "/" && !cookie.hostOnly)
        let error = #expect(throws: JSONDecodingError.self) { try JSONValueDecoder().decode([Cookie].self, from: text) }
        #expect(error?.path == [.index(0), .key("created")])
        let withTime = try JSONValueDecoder(userInfo: [.cookieDefaultCreationTime: Self.now]).decode([Cookie].self, from: text)
        #expect(withTime.first?.created == Self.now)
    }

    @Test("the json object is one definition: Codable through any encoder writes what the file holds")
    func codableMatchesTheFile() throws {
        let cookie = Cookie(name: "a", value: "v", domain: "example.com", hostOnly: false, path: "/p",
                            expires: Date(timeIntervalSince1970: 1_500_000_000), created: Self.now.addingTimeInterval(0.25), version: 1, portList: [80])
        let encoded = try JSONEncoder().encode(cookie)
        let decoded = try JSONValueDecoder().decode(Cookie.self, from: Array(encoded))
        #expect(decoded == cookie)
        #expect(try JSONValue.parse(Array(encoded)) == cookie.jsonObject)
    }

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        var format: CookieFormat, text: String, line: Int, message: String
        var testDescription: String { "\(format.rawValue) line \(line): \(message)" }
    }

    @Test("errors above and inside a cookie name the line, the cookie and the key, never the value", arguments: [
        ErrorCase(format: .json, text: "{\"name\": \"SECRETVALUE\"}", line: 1,
                  message: "expected a list of cookie objects: the document must be an array, found an object"),
        ErrorCase(format: .json, text: "[\n  {\"name\": \"a\", \"value\": \"b\", \"domain\": \"x.com\"},\n  \"SECRETVALUE\"\n]", line: 3,
                  message: "cookie 2 must be an object, found a string"),
        ErrorCase(format: .json, text: "[{\"name\": \"a\", \"value\": \"SECRETVALUE\", \"domain\": \"x.com\",\n \"port_list\": [80, \"x\"]}]", line: 2,
                  message: "cookie 1: \"port_list\" item 2 must be a whole number, found a string"),
        ErrorCase(format: .json, text: "[{\"name\": \"\", \"value\": \"SECRETVALUE\", \"domain\": \"x.com\"}]", line: 1,
                  message: "cookie 1: \"name\" is empty"),
        ErrorCase(format: .json, text: "[{\"name\": \"a\", \"value\": \"SECRETVALUE\", \"domain\": \"x.com\", \"same_site\": \"sometimes\"}]", line: 1,
                  message: "cookie 1: \"same_site\" must be strict, lax, none or null"),
        ErrorCase(format: .json, text: "[{\"name\": \"a\", \"value\": \"SECRETVALUE\u{01}\"}]", line: 1,
                  message: "invalid JSON: a control character in a string must be escaped"),
        ErrorCase(format: .playwright, text: "{\"origins\": [\"SECRETVALUE\"]}", line: 1,
                  message: "expected an object with a \"cookies\" list: /cookies is missing"),
        ErrorCase(format: .playwright, text: "{\"cookies\": [\n{\"name\": \"a\", \"value\": \"SECRETVALUE\", \"domain\": \"x.com\", \"expires\": \"never\"}]}", line: 2,
                  message: "cookie 1: \"expires\" must be a number, found a string"),
    ])
    func errors(_ testCase: ErrorCase) {
        do {
            _ = try CookieCodec.decode(testCase.text, as: testCase.format, url: nil, now: Self.now)
            Issue.record("decoding succeeded")
        } catch {
            #expect(error.line == testCase.line)
            #expect(error.message == testCase.message, "\(error.description)")
            #expect(!error.description.contains("SECRETVALUE"))
        }
    }
}
