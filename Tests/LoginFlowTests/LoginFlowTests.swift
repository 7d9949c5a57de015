import CookieJar
import Foundation
import HTTPTransport
import SiteConfig
import Testing

@testable import LoginFlow

@Suite struct LoginFlowTests {
    static let loginPage = """
        <html><body><form id="login" method="post" action="/login">
        <input type="hidden" name="csrf" value="csrf-token-value-42">
        <input name="username"><input type="password" name="password">
        <input type="submit" value="Sign in"></form></body></html>
        """

    /// A small site: the login page sets a CSRF cookie, the POST checks field and cookie and redirects
    /// with the session cookie, /account needs the session.
    static func demoClient() -> FakeHTTPClient {
        FakeHTTPClient(routes: [
            "GET /login": { request in
                Fixture.response(request, headers: [("Set-Cookie", "csrf_cookie=csrf-token-value-42; Path=/; HttpOnly")], body: loginPage)
            },
            "POST /login": { request in
                let body = String(decoding: request.body ?? Data(), as: UTF8.self)
                let cookie = request.headers["Cookie"] ?? ""
                guard body.contains("csrf=csrf-token-value-42"), cookie.contains("csrf_cookie=csrf-token-value-42"),
                    body.contains("password=s3cret%21pass")
                else { return Fixture.response(request, 200, body: "Invalid username or password") }
                return Fixture.response(request, 303, headers: [
                    ("Location", "/account"), ("Set-Cookie", "session=session-value-xyz; Path=/; Max-Age=3600; HttpOnly"),
                ])
            },
            "GET /account": { request in
                guard request.headers["Cookie"]?.contains("session=session-value-xyz") == true else {
                    return Fixture.response(request, 302, headers: [("Location", "/login")])
                }
                return Fixture.response(request, body: "Welcome, alice")
            },
            "GET /api/me": { request in
                guard request.headers["Cookie"]?.contains("session=session-value-xyz") == true else {
                    return Fixture.response(request, 401, body: #"{"error":"not logged in"}"#)
                }
                return Fixture.response(request, headers: [("Content-Type", "application/json")], body: #"{"user":{"name":"alice"}}"#)
            },
        ])
    }

    static func demoSite(password: String = "{{ credentials.password }}") -> SiteDefinition {
        Fixture.site(
            [
                Fixture.step("login page", Fixture.get("/login", extract: [
                    NamedExtraction(name: "csrf", extraction: .xpath("//form[@id='login']//input[@name='csrf']/@value")),
                ])),
                Fixture.step("submit", RequestStep(
                    method: "POST", url: Fixture.template("/login"),
                    body: .form(Fixture.named(["username": "{{ credentials.username }}", "password": password, "csrf": "{{ csrf }}"])),
                    expect: [Expectation(.status([200])), Expectation(.bodyContains("Welcome")), Expectation(.cookie("session"))])),
            ],
            credentials: ["username", "password"], essential: ["session"],
            check: RequestStep(method: "GET", url: Fixture.template("/api/me"), expect: [
                Expectation(.json(pointer: "/user/name", equals: .string("alice"))),
            ]))
    }

    static let credentials = ["username": "alice", "password": "s3cret!pass"]

    @Test func logsInThroughFormCSRFAndRedirect() async throws {
        let client = Self.demoClient()
        let engine = Fixture.engine(client, credentials: Self.credentials)
        let storage = CookieStorage()
        let events = EventLog()
        let result = try await engine.login(Self.demoSite(), storage: storage, observer: events.observer)

        #expect(result.steps.map(\.step) == ["login page", "submit"])
        #expect(result.steps.map(\.requests) == [1, 2])
        #expect(result.steps.last?.status == 200)
        #expect(result.essentialCookies.map(\.name) == ["session"])
        #expect(result.essentialCookies.first?.isSet == true)
        let expiry = try #require(result.sessionExpiry)
        #expect(abs(expiry.timeIntervalSinceNow - 3600) < 60)
        #expect(Set(result.cookies.map(\.name)) == ["csrf_cookie", "session"])
        #expect(result.finalURL == "https://app.example.com/account")

        let post = try #require(client.requests.first { $0.method == "POST" })
        #expect(post.headers["Content-Type"] == "application/x-www-form-urlencoded")
        #expect(String(decoding: post.body ?? Data(), as: UTF8.self) == "username=alice&password=s3cret%21pass&csrf=csrf-token-value-42")
        #expect(events.exchanges.map { "\($0.method) \($0.url) \($0.status) \($0.redirectHop)" } == [
            "GET https://app.example.com/login 200 0", "POST https://app.example.com/login 303 0",
            "GET https://app.example.com/account 200 1",
        ])
    }

    @Test func checkAndKeepaliveUseTheStoredSession() async throws {
        let client = Self.demoClient()
        let engine = Fixture.engine(client, credentials: Self.credentials)
        let storage = CookieStorage()
        var site = Self.demoSite()
        site.keepalive = Probe(request: Fixture.get("/account"), every: .seconds(60), mark: Fixture.mark)
        _ = try await engine.login(site, storage: storage)
        let check = try await engine.check(site, storage: storage)
        #expect(check.status == 200)
        #expect(check.essentialCookies.first?.isSet == true)
        let keepalive = try await engine.keepalive(site, storage: storage)
        #expect(keepalive.status == 200)

        storage.removeAll()
        do {
            _ = try await engine.check(site, storage: storage)
            Issue.record("check passed without a session")
        } catch {
            #expect(error.kind == .expectationFailed)
            #expect(error.step == "check")
            #expect(error.response?.status == 401)
        }
    }

    @Test func checkWithoutExpectationsWantsTwoHundreds() async throws {
        let client = FakeHTTPClient { request in Fixture.response(request, 500, body: "down") }
        let site = Fixture.site([], check: Fixture.get("/ping"))
        do {
            _ = try await Fixture.engine(client).check(site, storage: CookieStorage())
            Issue.record("a 500 passed the check")
        } catch {
            #expect(error.kind == .expectationFailed)
            #expect(error.found == "status 500")
        }
    }

    @Test func badPasswordFailsWithANamedExpectation() async throws {
        let engine = Fixture.engine(Self.demoClient(), credentials: ["username": "alice", "password": "wrong-password-123"])
        let error = try #require(await loginError(engine, Self.demoSite()))
        #expect(error.kind == .expectationFailed)
        #expect(error.site == "test")
        #expect(error.step == "submit")
        #expect(error.expected == "body containing \"Welcome\"")
        #expect(error.response?.bodyExcerpt == "Invalid username or password")
        #expect(error.description.contains("site 'test', step 'submit'"))
        #expect(!error.description.contains("wrong-password-123"))
    }

    @Test func essentialCookieMissingFailsTheLogin() async throws {
        let client = FakeHTTPClient { request in Fixture.response(request, body: "ok") }
        let site = Fixture.site([Fixture.step("only", Fixture.get("/"))], essential: ["session"])
        let error = try #require(await loginError(Fixture.engine(client), site))
        #expect(error.kind == .essentialCookieMissing)
        #expect(error.expected?.contains("session") == true)
    }

    @Test func insecureTLSIsAWarningAtEveryLogin() async throws {
        let client = FakeHTTPClient { request in Fixture.response(request) }
        let site = Fixture.site([Fixture.step("one", Fixture.get("/"))], http: HTTPSettings(insecure: true))
        let events = EventLog()
        let engine = Fixture.engine(client)
        _ = try await engine.login(site, storage: CookieStorage(), observer: events.observer)
        _ = try await engine.login(site, storage: CookieStorage(), observer: events.observer)
        #expect(events.warnings.count == 2)
        #expect(events.warnings.allSatisfy { $0.contains("TLS certificate verification is disabled") })
        #expect(client.options.allSatisfy { $0.insecure })
    }

    @Test func siteHTTPSettingsBecomeTransportOptions() async throws {
        let client = FakeHTTPClient { request in Fixture.response(request) }
        let http = HTTPSettings(
            timeout: .seconds(5), connectTimeout: .seconds(2), userAgent: "UA/1", headers: [.init(name: "Accept-Language", value: "en")],
            proxy: "socks5h://127.0.0.1:9050", resolve: ["app.example.com:443:127.0.0.1"], caFile: "/ca.pem", httpVersion: .http2)
        let site = Fixture.site([Fixture.step("one", Fixture.get("/"))], http: http)
        _ = try await Fixture.engine(client).login(site, storage: CookieStorage())
        let options = try #require(client.options.first)
        #expect(options.timeout == .seconds(5))
        #expect(options.connectTimeout == .seconds(2))
        #expect(options.userAgent == "UA/1")
        #expect(options.proxy == "socks5h://127.0.0.1:9050")
        #expect(options.resolve == ["app.example.com:443:127.0.0.1"])
        #expect(options.caFile == "/ca.pem")
        #expect(options.httpVersion == .http2)
        #expect(client.requests.first?.headers["Accept-Language"] == "en")
    }

    @Test func transportErrorsKeepTheirKind() async throws {
        let client = FakeHTTPClient { request throws(TransportError) in
            throw TransportError(kind: .connect, url: request.url, message: "connection refused")
        }
        let error = try #require(await loginError(Fixture.engine(client), Fixture.site([Fixture.step("one", Fixture.get("/"))])))
        #expect(error.kind == .transport(.connect))
        #expect(error.isUnreachable)
    }

    @Test func manualLoginIsNotRun() async throws {
        var site = Fixture.site([])
        site.login = .manual
        let error = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }), site))
        #expect(error.kind == .invalidRequest)
    }

    @Test func bodiesAndQueryAndHeaders() async throws {
        let client = FakeHTTPClient { request in Fixture.response(request) }
        let site = Fixture.site([
            Fixture.step("json", RequestStep(
                method: "POST", url: Fixture.template("api/login"), headers: Fixture.named(["X-Token": "t-{{ credentials.username }}"]),
                query: Fixture.named(["a b": "c&d", "lang": "fr"]),
                body: .json(.object([("user", .string(Fixture.template("{{ credentials.username }}"))), ("n", .number("1.10"))])))),
            Fixture.step("raw", RequestStep(
                method: "PUT", url: Fixture.template("https://other.example.net/x?keep=1"), query: Fixture.named(["q": "1"]),
                body: .raw(Fixture.template("<x>{{ site.base_url }}</x>"), contentType: "application/xml"))),
            Fixture.step("raw default", RequestStep(method: "PATCH", url: Fixture.template("/p"), body: .raw(Fixture.template("hi"), contentType: nil))),
        ], credentials: ["username"])
        _ = try await Fixture.engine(client, credentials: ["username": "al ice"]).login(site, storage: CookieStorage())
        let requests = client.requests
        #expect(requests[0].url.absoluteString == "https://app.example.com/api/login?a+b=c%26d&lang=fr")
        #expect(requests[0].headers["X-Token"] == "t-al ice")
        #expect(requests[0].headers["Content-Type"] == "application/json")
        #expect(String(decoding: requests[0].body!, as: UTF8.self) == #"{"user":"al ice","n":1.10}"#)
        #expect(requests[1].method == "PUT")
        #expect(requests[1].url.absoluteString == "https://other.example.net/x?keep=1&q=1")
        #expect(requests[1].headers["Content-Type"] == "application/xml")
        #expect(String(decoding: requests[1].body!, as: UTF8.self) == "<x>https://app.example.com/</x>")
        #expect(requests[2].headers["Content-Type"] == "text/plain; charset=utf-8")
    }

    @Test func formFromTakesTheFormWithOverrides() async throws {
        let page = """
            <form id="login" method="post" action="/session?x=1">
              <input type="hidden" name="csrf" value="hidden-token-1234"><input name="user" value="prefilled">
              <input type="checkbox" name="remember" checked><input name="password">
              <input type="submit" name="go" value="Go">
            </form>
            <form id="search" action="/search"><input name="q" value="a b"></form>
            """
        let client = FakeHTTPClient(routes: [
            "GET /login": { Fixture.response($0, headers: [("Content-Type", "text/html; charset=utf-8")], body: page) },
            "POST /session": { Fixture.response($0) },
            "GET /search": { Fixture.response($0) },
        ])
        let site = Fixture.site([
            Fixture.step("page", Fixture.get("/login")),
            Fixture.step("submit", RequestStep(
                method: nil, url: nil, body: .formFrom(xpath: "//form[@id='login']", overrides: Fixture.named([
                    "password": "{{ credentials.password }}", "extra": "yes",
                ])))),
            Fixture.step("page again", Fixture.get("/login")),
            Fixture.step("search", RequestStep(method: nil, url: nil, body: .formFrom(xpath: "//form[@id='search']", overrides: []))),
        ], credentials: ["password"])
        _ = try await Fixture.engine(client, credentials: ["password": "pa ss"]).login(site, storage: CookieStorage())
        let post = client.requests[1]
        #expect(post.method == "POST")
        #expect(post.url.absoluteString == "https://app.example.com/session?x=1")
        #expect(String(decoding: post.body!, as: UTF8.self) == "csrf=hidden-token-1234&user=prefilled&remember=on&password=pa+ss&extra=yes")
        let search = client.requests[3]
        #expect(search.method == "GET")
        #expect(search.body == nil)
        #expect(search.url.absoluteString == "https://app.example.com/search?q=a+b")
    }

    @Test func formFromWithoutAPreviousResponseOrFormFails() async throws {
        let client = FakeHTTPClient { Fixture.response($0, body: "<p>no form</p>") }
        let first = Fixture.site([Fixture.step("submit", RequestStep(method: nil, url: nil, body: .formFrom(xpath: "//form", overrides: [])))])
        let error = try #require(await loginError(Fixture.engine(client), first))
        #expect(error.kind == .invalidRequest)
        let second = Fixture.site([
            Fixture.step("page", Fixture.get("/")),
            Fixture.step("submit", RequestStep(method: nil, url: nil, body: .formFrom(xpath: "//form", overrides: []))),
        ])
        let missing = try #require(await loginError(Fixture.engine(client), second))
        #expect(missing.kind == .extractionFailed)
        #expect(missing.step == "submit")
        #expect(missing.found?.contains("selects no node") == true)
    }
}
