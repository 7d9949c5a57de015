import CookieJar
import Foundation
import HTTPTransport
import SiteConfig
import Testing

@testable import LoginFlow

/// Every `extract:` and `expect:` kind, passing and failing, through the engine.
@Suite struct InspectionTests {
    static let html = """
        <html><head><meta name="csrf-token" content="meta-token-777"></head>
        <body><p id="greeting">Hello, alice</p><a href="/next?id=5">next</a></body></html>
        """
    static let json = #"{"token":"json-token-abc","user":{"name":"alice","id":7,"admin":false},"list":[1,2,{"a/b":"slash","m~n":"tilde"}]}"#

    /// Extracts `extraction` and returns the value the next request received.
    static func extracted(
        _ extraction: Extraction, respond: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) async throws -> String {
        let client = FakeHTTPClient { request in
            request.url.path == "/echo" ? Fixture.response(request) : respond(request)
        }
        let site = Fixture.site([
            Fixture.step("inspect", Fixture.get("/page?ticket=T1&empty=", extract: [NamedExtraction(name: "v", extraction: extraction)])),
            Fixture.step("echo", RequestStep(method: "POST", url: Fixture.template("/echo"), body: .raw(Fixture.template("{{ v }}"), contentType: nil))),
        ])
        _ = try await Fixture.engine(client).login(site, storage: CookieStorage())
        return String(decoding: try #require(client.requests.last?.body), as: UTF8.self)
    }

    static func failure(
        extract: Extraction? = nil, expect: SiteConfig.Expectation.Kind? = nil, respond: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) async -> FlowError? {
        let client = FakeHTTPClient(respond)
        let step = Fixture.get(
            "/page?ticket=T1", extract: extract.map { [NamedExtraction(name: "v", extraction: $0)] } ?? [],
            expect: expect.map { [SiteConfig.Expectation($0)] } ?? [])
        return await loginError(Fixture.engine(client), Fixture.site([Fixture.step("inspect", step)]))
    }

    static func page(_ request: HTTPRequest) -> HTTPResponse {
        Fixture.response(request, headers: [
            ("Content-Type", "text/html"), ("X-Request-Id", "req-1"), ("X-Request-Id", "req-2"),
            ("Set-Cookie", "sid=cookie-value-99; Path=/"), ("Set-Cookie", "old=gone; Max-Age=0"),
        ], body: html)
    }

    static func api(_ request: HTTPRequest) -> HTTPResponse {
        Fixture.response(request, headers: [("Content-Type", "application/json")], body: json)
    }

    // MARK: Extraction

    @Test func regexTakesTheFirstGroupOrTheWholeMatch() async throws {
        #expect(try await Self.extracted(.regex(#"content="([^"]+)""#), respond: Self.page) == "meta-token-777")
        #expect(try await Self.extracted(.regex("Hello, [a-z]+"), respond: Self.page) == "Hello, alice")
    }

    @Test func xpathOverHTMLAndXML() async throws {
        #expect(try await Self.extracted(.xpath("//meta[@name='csrf-token']/@content"), respond: Self.page) == "meta-token-777")
        #expect(try await Self.extracted(.xpath("count(//a)"), respond: Self.page) == "1")
        let xml: @Sendable (HTTPRequest) -> HTTPResponse = {
            Fixture.response($0, headers: [("Content-Type", "application/xml")], body: "<r><t k='v'>x</t></r>")
        }
        #expect(try await Self.extracted(.xpath("/r/t/@k"), respond: xml) == "v")
    }

    @Test func jsonPointer() async throws {
        #expect(try await Self.extracted(.json(pointer: "/token"), respond: Self.api) == "json-token-abc")
        #expect(try await Self.extracted(.json(pointer: "/user/id"), respond: Self.api) == "7")
        #expect(try await Self.extracted(.json(pointer: "/user/admin"), respond: Self.api) == "false")
        #expect(try await Self.extracted(.json(pointer: "/list/2/a~1b"), respond: Self.api) == "slash")
        #expect(try await Self.extracted(.json(pointer: "/list/2/m~0n"), respond: Self.api) == "tilde")
        #expect(try await Self.extracted(.json(pointer: "/user"), respond: Self.api) == #"{"name":"alice","id":7,"admin":false}"#)
    }

    @Test func headerCookieStatusAndURL() async throws {
        #expect(try await Self.extracted(.header("x-request-id"), respond: Self.page) == "req-1")
        #expect(try await Self.extracted(.cookie("sid"), respond: Self.page) == "cookie-value-99")
        #expect(try await Self.extracted(.status, respond: Self.page) == "200")
        #expect(try await Self.extracted(.url(query: nil), respond: Self.page) == "https://app.example.com/page?ticket=T1&empty=")
        #expect(try await Self.extracted(.url(query: "ticket"), respond: Self.page) == "T1")
        #expect(try await Self.extracted(.url(query: "empty"), respond: Self.page) == "")
    }

    @Test(arguments: [
        (Extraction.regex("nomatch(\\d+)"), "no match"),
        (Extraction.regex("(unclosed"), "does not compile"),
        (Extraction.xpath("//table"), "no node"),
        (Extraction.xpath("//a["), "XPath error"),
        (Extraction.json(pointer: "/missing"), "invalid JSON"),
        (Extraction.header("X-Missing"), "none"),
        (Extraction.cookie("old"), "none"),
        (Extraction.url(query: "nope"), "none"),
    ])
    func extractionFailuresNameWhatWasMissing(extraction: Extraction, found: String) async throws {
        let error = try #require(await Self.failure(extract: extraction, respond: Self.page))
        #expect(error.kind == .extractionFailed)
        #expect(error.step == "inspect")
        #expect(error.expected?.contains("variable 'v'") == true)
        #expect(error.found?.contains(found) == true)
        #expect(error.response?.status == 200)
    }

    @Test func jsonExtractionFromHTMLIsAnError() async throws {
        let error = try #require(await Self.failure(extract: .json(pointer: "/a"), respond: Self.page))
        #expect(error.expected?.contains("a JSON body") == true)
        #expect(error.found?.hasPrefix("invalid JSON") == true)
    }

    // MARK: Expectations

    @Test(arguments: [
        SiteConfig.Expectation.Kind.status([200]), .status([201, 200]), .urlMatches("ticket=T\\d"), .bodyContains("Hello, alice"),
        .notBodyContains("Invalid"), .cookie("sid"), .header(name: "x-request-id", matches: nil),
        .header(name: "X-Request-Id", matches: "^req-2$"),
    ])
    func expectationsThatHold(kind: SiteConfig.Expectation.Kind) async {
        #expect(await Self.failure(expect: kind, respond: Self.page) == nil)
    }

    @Test(arguments: [
        SiteConfig.Expectation.Kind.json(pointer: "/user/name", equals: .string("alice")), .json(pointer: "/user/id", equals: .number("7.0")),
        .json(pointer: "/user/admin", equals: .bool(false)), .json(pointer: "/token", equals: nil),
        .json(pointer: "/user", equals: .object([("id", .number("7")), ("admin", .bool(false)), ("name", .string("alice"))])),
    ])
    func jsonExpectationsThatHold(kind: SiteConfig.Expectation.Kind) async {
        #expect(await Self.failure(expect: kind, respond: Self.api) == nil)
    }

    @Test(arguments: [
        (SiteConfig.Expectation.Kind.status([302, 303]), "status in [302, 303]", "status 200"),
        (.urlMatches("^https://other"), "final URL matching /^https://other/", "https://app.example.com/page?…"),
        (.bodyContains("Welcome"), "body containing \"Welcome\"", "it does not"),
        (.notBodyContains("Hello"), "body not containing \"Hello\"", "it does"),
        (.cookie("old"), "cookie old set and unexpired", "no such cookie"),
        (.cookie("nothing"), "cookie nothing set and unexpired", "no such cookie"),
        (.header(name: "X-Missing", matches: nil), "a X-Missing header", "none"),
        (.header(name: "X-Request-Id", matches: "^abc"), "header X-Request-Id matching /^abc/", "2 value(s) not matching"),
    ])
    func expectationsThatFail(kind: SiteConfig.Expectation.Kind, expected: String, found: String) async throws {
        let error = try #require(await Self.failure(expect: kind, respond: Self.page))
        #expect(error.kind == .expectationFailed)
        #expect(error.expected == expected)
        #expect(error.found == found)
    }

    @Test func jsonExpectationFailures() async throws {
        let wrong = try #require(await Self.failure(expect: .json(pointer: "/user/name", equals: .string("bob")), respond: Self.api))
        #expect(wrong.expected == "/user/name = \"bob\"")
        #expect(wrong.found == "\"alice\"")
        let boolNotNumber = try #require(await Self.failure(expect: .json(pointer: "/user/admin", equals: .number("0")), respond: Self.api))
        #expect(boolNotNumber.found == "false")
        let missing = try #require(await Self.failure(expect: .json(pointer: "/nope", equals: nil), respond: Self.api))
        #expect(missing.found == "nothing there")
    }

    @Test func expiredCookieDoesNotCount() async throws {
        let expiredLater: @Sendable (HTTPRequest) -> HTTPResponse = {
            Fixture.response($0, headers: [("Set-Cookie", "sid=abcdef; Expires=Wed, 01 Jan 2020 00:00:00 GMT")])
        }
        let error = try #require(await Self.failure(expect: .cookie("sid"), respond: expiredLater))
        #expect(error.kind == .expectationFailed)
    }
}
