import CookieJar
import Foundation
import HTTPTransport
import SiteConfig
import Testing

@testable import LoginFlow

@Suite struct RedirectTests {
    static let start = URL(string: "https://app.example.com/a/start#frag")!

    static func redirect(_ status: Int, _ location: String, from url: URL = start) -> HTTPResponse {
        HTTPResponse(status: status, url: url, headers: ["Location": location])
    }

    static func post() -> HTTPRequest {
        HTTPRequest(
            method: "POST", url: start,
            headers: HTTPHeaders([("Content-Type", "application/x-www-form-urlencoded"), ("Authorization", "Bearer tok-secret"), ("X-Keep", "1")]),
            body: Data("a=1".utf8))
    }

    @Test(arguments: [
        (301, "POST", "GET", false), (302, "POST", "GET", false), (303, "POST", "GET", false),
        (307, "POST", "POST", true), (308, "POST", "POST", true),
        (301, "GET", "GET", false), (302, "HEAD", "HEAD", false), (303, "HEAD", "HEAD", false),
        (302, "PUT", "GET", false), (303, "DELETE", "GET", false), (307, "PUT", "PUT", true),
    ])
    func methodRewriting(status: Int, method: String, expectedMethod: String, keepsBody: Bool) throws {
        var request = Self.post()
        request.method = method
        if method == "GET" || method == "HEAD" {
            request.body = nil
            request.headers.remove(name: "Content-Type")
        }
        let next = try RedirectRule.next(after: request, response: Self.redirect(status, "/b"))
        #expect(next.method == expectedMethod)
        #expect((next.body != nil) == (keepsBody && request.body != nil))
        #expect(next.headers.contains("Content-Type") == (keepsBody && request.body != nil))
        #expect(next.headers["X-Keep"] == "1")
    }

    @Test func relativeLocationsResolveAgainstTheAnsweringURL() throws {
        let request = HTTPRequest(url: Self.start)
        #expect(try RedirectRule.next(after: request, response: Self.redirect(302, "next?x=1")).url.absoluteString
            == "https://app.example.com/a/next?x=1#frag")
        #expect(try RedirectRule.next(after: request, response: Self.redirect(302, "/root#top")).url.absoluteString
            == "https://app.example.com/root#top")
        #expect(try RedirectRule.next(after: request, response: Self.redirect(302, "//cdn.example.net/p")).url.absoluteString
            == "https://cdn.example.net/p#frag")
        #expect(try RedirectRule.next(after: request, response: Self.redirect(302, "/with space/é")).url.absoluteString
            == "https://app.example.com/with%20space/%C3%A9#frag")
    }

    @Test func unusableLocationsAreRefused() {
        let request = HTTPRequest(url: Self.start)
        #expect(throws: RedirectRule.Failure.self) { try RedirectRule.next(after: request, response: Self.redirect(302, "ftp://x/y")) }
        #expect(throws: RedirectRule.Failure.self) { try RedirectRule.next(after: request, response: Self.redirect(302, "javascript:alert(1)")) }
        #expect(throws: RedirectRule.Failure.self) {
            try RedirectRule.next(after: request, response: HTTPResponse(status: 302, url: Self.start))
        }
    }

    @Test func authorizationStaysWithinTheOrigin() throws {
        let request = Self.post()
        #expect(try RedirectRule.next(after: request, response: Self.redirect(307, "/same")).headers["Authorization"] == "Bearer tok-secret")
        // (To http the redirect is refused outright: httpsToHTTPIsRefusedOnlyForARequestCarryingACredential.)
        for other in ["https://other.example.com/x", "https://app.example.com:8443/x"] {
            let next = try RedirectRule.next(after: request, response: Self.redirect(307, other))
            #expect(next.headers["Authorization"] == nil, "kept for \(other)")
            #expect(next.headers["X-Keep"] == "1")
        }
        #expect(try RedirectRule.next(after: request, response: Self.redirect(307, "https://APP.example.com:443/x")).headers["Authorization"] != nil)
    }

    @Test func headersBuiltFromCredentialsStayWithinTheOrigin() throws {
        var request = Self.post()
        request.headers.add(name: "X-Api-Key", value: "key-secret")
        let parts = RedirectRule.CredentialParts(headers: ["X-API-KEY"], body: false)
        let same = try RedirectRule.next(after: request, response: Self.redirect(307, "/same"), credentials: parts)
        #expect(same.request.headers["X-Api-Key"] == "key-secret")
        #expect(same.credentials == parts)
        let other = try RedirectRule.next(after: request, response: Self.redirect(302, "https://sso.example.net/x"), credentials: parts)
        #expect(other.request.headers["X-Api-Key"] == nil && other.request.headers["Authorization"] == nil)
        #expect(other.request.headers["X-Keep"] == "1")
        #expect(other.credentials == .none, "nothing of the new request comes from a credential")
    }

    @Test func aCredentialBodyIsNeverSentAgainToAnotherOrigin() throws {
        let request = Self.post()
        let parts = RedirectRule.CredentialParts(body: true)
        for status in [307, 308] {
            #expect(throws: RedirectRule.Failure.self) {
                try RedirectRule.next(after: request, response: Self.redirect(status, "https://other.example.com/x"), credentials: parts)
            }
            let same = try RedirectRule.next(after: request, response: Self.redirect(status, "/x"), credentials: parts)
            #expect(same.request.body == request.body && same.credentials.body)
        }
        // 302 and 303 drop the body: nothing of it is sent again.
        let dropped = try RedirectRule.next(after: request, response: Self.redirect(303, "https://other.example.com/x"), credentials: parts)
        #expect(dropped.request.body == nil && dropped.request.method == "GET")
    }

    @Test func httpsToHTTPIsRefusedOnlyForARequestCarryingACredential() throws {
        let plain = HTTPRequest(url: Self.start, headers: ["X-Keep": "1"])
        #expect(try RedirectRule.next(after: plain, response: Self.redirect(302, "http://app.example.com/x")).url.scheme == "http")
        let failure = try #require(throws: RedirectRule.Failure.self) {
            try RedirectRule.next(after: Self.post(), response: Self.redirect(302, "http://app.example.com/x?t=1"))
        }
        #expect(failure.message.contains("from https to http (http://app.example.com/x?…) is not followed"))
        #expect(failure.message.contains("its header Authorization") && !failure.message.contains("tok-secret"))
        var withBody = plain
        withBody.method = "POST"
        withBody.body = Data("p=1".utf8)
        #expect(throws: RedirectRule.Failure.self) {
            try RedirectRule.next(after: withBody, response: Self.redirect(303, "http://app.example.com/x"), credentials: .init(body: true))
        }
        // Up from http to https is another origin, not a downgrade: the credentials are dropped, the redirect followed.
        var up = Self.post()
        up.url = URL(string: "http://app.example.com/a")!
        #expect(try RedirectRule.next(after: up, response: Self.redirect(302, "https://app.example.com/b")).headers["Authorization"] == nil)
    }

    // MARK: Through the engine

    /// app.example.com/start (POST) → 302 sso.example.net/authorize (sets sso_id, host-only) →
    /// 302 app.example.com/callback (sets session) → 303 /account.
    static func chainClient() -> FakeHTTPClient {
        FakeHTTPClient { request in
            switch (request.url.host ?? "", request.url.path) {
            case ("app.example.com", "/start"):
                return Fixture.response(request, 302, headers: [
                    ("Location", "https://sso.example.net/authorize?return=app"), ("Set-Cookie", "app_pre=pre-value-1; Path=/"),
                ])
            case ("sso.example.net", "/authorize"):
                return Fixture.response(request, 302, headers: [
                    ("Location", "https://app.example.com/callback?ticket=T-1"), ("Set-Cookie", "sso_id=sso-value-2; Path=/"),
                ])
            case ("app.example.com", "/callback"):
                return Fixture.response(request, 303, headers: [("Location", "/account"), ("Set-Cookie", "session=session-value-3; Path=/")])
            case ("app.example.com", "/account"):
                return Fixture.response(request, body: "Welcome")
            case (_, "/loop"):
                return Fixture.response(request, 302, headers: [("Location", "/loop")])
            default:
                return Fixture.response(request, 404)
            }
        }
    }

    @Test func cookiesAreStoredAndSentOnEveryHopAcrossHosts() async throws {
        let client = Self.chainClient()
        let site = Fixture.site([
            Fixture.step("sso", RequestStep(
                method: "POST", url: Fixture.template("/start"), headers: Fixture.named(["Authorization": "Basic c2VjcmV0"]),
                body: .form(Fixture.named(["a": "1"])), extract: [NamedExtraction(name: "final", extraction: .url(query: nil))],
                expect: [SiteConfig.Expectation(.bodyContains("Welcome"))])),
        ], essential: ["session"])
        let storage = CookieStorage()
        let events = EventLog()
        let result = try await Fixture.engine(client).login(site, storage: storage, observer: events.observer)
        let requests = client.requests
        #expect(requests.map { "\($0.method) \($0.url.host!)\($0.url.path)" } == [
            "POST app.example.com/start", "GET sso.example.net/authorize", "GET app.example.com/callback", "GET app.example.com/account",
        ])
        #expect(requests[0].headers["Cookie"] == nil)
        #expect(requests[1].headers["Cookie"] == nil, "app cookies must not go to the SSO host")
        #expect(requests[2].headers["Cookie"] == "app_pre=pre-value-1")
        #expect(requests[3].headers["Cookie"] == "app_pre=pre-value-1; session=session-value-3")
        #expect(requests[0].headers["Authorization"] == "Basic c2VjcmV0")
        #expect(requests[1...].allSatisfy { $0.headers["Authorization"] == nil })
        #expect(requests[1...].allSatisfy { $0.body == nil && $0.headers["Content-Type"] == nil })
        #expect(Set(storage.allCookies.map { "\($0.name)@\($0.domain)" }) == [
            "app_pre@app.example.com", "sso_id@sso.example.net", "session@app.example.com",
        ])
        #expect(result.steps.first?.requests == 4)
        #expect(events.exchanges.map(\.redirectHop) == [0, 1, 2, 3])
        #expect(events.exchanges[1].url == "https://sso.example.net/authorize?…")
    }

    @Test func mainDocumentDomainPolicyRefusesTheOtherHostsCookies() async throws {
        let client = Self.chainClient()
        let site = Fixture.site([Fixture.step("sso", RequestStep(method: "GET", url: Fixture.template("/start")))])
        let storage = CookieStorage(acceptPolicy: .mainDocumentDomain)
        _ = try await Fixture.engine(client).login(site, storage: storage)
        #expect(Set(storage.allCookies.map(\.name)) == ["app_pre", "session"])
    }

    @Test func maxRedirectsStopsALoop() async throws {
        let client = Self.chainClient()
        let site = Fixture.site([Fixture.step("loop", Fixture.get("/loop"))], http: HTTPSettings(maxRedirects: 3))
        let error = try #require(await loginError(Fixture.engine(client), site))
        #expect(error.kind == .redirect)
        #expect(error.expected == "at most 3 redirects (http.max_redirects)")
        #expect(client.requests.count == 4)
    }

    @Test func followRedirectsFalseStopsAtTheFirstAnswer() async throws {
        let client = Self.chainClient()
        let site = Fixture.site([Fixture.step("start", RequestStep(
            method: "GET", url: Fixture.template("/start"), followRedirects: false,
            extract: [NamedExtraction(name: "next", extraction: .header("Location"))],
            expect: [SiteConfig.Expectation(.status([302])), SiteConfig.Expectation(.cookie("app_pre"))]))])
        let result = try await Fixture.engine(client).login(site, storage: CookieStorage())
        #expect(client.requests.count == 1)
        #expect(result.steps.first?.status == 302)
    }

    @Test func handleCookiesFalseNeitherSendsNorStores() async throws {
        let client = FakeHTTPClient { request in
            Fixture.response(request, headers: [("Set-Cookie", "third=party-value; Path=/")])
        }
        let storage = CookieStorage()
        storage.setCookie(Cookie(name: "mine", value: "my-value-1", domain: "app.example.com"))
        let site = Fixture.site([
            Fixture.step("third party", RequestStep(method: "GET", url: Fixture.template("/x"), handleCookies: false)),
            Fixture.step("normal", Fixture.get("/y")),
        ])
        _ = try await Fixture.engine(client).login(site, storage: storage)
        #expect(client.requests[0].headers["Cookie"] == nil)
        #expect(client.requests[1].headers["Cookie"] == "mine=my-value-1")
        #expect(storage.allCookies.contains { $0.name == "third" }, "the second step stores it")
        #expect(storage.allCookies.filter { $0.name == "third" }.count == 1)
    }

    @Test func handleCookiesFalseStoresNothing() async throws {
        let client = FakeHTTPClient { request in
            Fixture.response(request, headers: [("Set-Cookie", "third=party-value; Path=/")])
        }
        let storage = CookieStorage()
        let site = Fixture.site([Fixture.step("third party", RequestStep(method: "GET", url: Fixture.template("/x"), handleCookies: false))])
        _ = try await Fixture.engine(client).login(site, storage: storage)
        #expect(storage.allCookies.isEmpty)
    }

    @Test func explicitCookieHeaderIsMergedAndDroppedAcrossOrigins() async throws {
        let client = Self.chainClient()
        let site = Fixture.site([Fixture.step("start", RequestStep(
            method: "GET", url: Fixture.template("/start"), headers: Fixture.named(["Cookie": "manual=m-value"])))])
        _ = try await Fixture.engine(client).login(site, storage: CookieStorage())
        #expect(client.requests[0].headers["Cookie"] == "manual=m-value")
        #expect(client.requests[1].headers["Cookie"] == nil)
        #expect(client.requests[2].headers["Cookie"] == "app_pre=pre-value-1")
    }
}

