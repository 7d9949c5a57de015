import CookieJar
import CurlTransport
import DemoSite
import Foundation
import HTTPTransport
import JSON
import SiteConfig
import Testing

@testable import LoginFlow

/// Single sign-on for real (SPEC section 3, issue 41): the shipped `sites/example-sso.yaml` against the demo app
/// on 127.0.0.1 and the demo identity provider on 127.0.0.2, both setting `demo_session` and `demo_csrf`.
/// Between logins the jar is what `keep_on_login` would leave: the default drops the app's session only.
@Suite(.serialized) struct SingleSignOnFlowTests {
    static func withProvider(_ body: (DemoSite.RunningServer, CurlHTTPClient) async throws -> Void) async throws {
        try await DemoSiteIntegrationTests.withDemo(
            DemoSite.Configuration(port: 0, password: DemoSiteIntegrationTests.password, idpHost: "127.0.0.2", idpPort: 0), body)
    }

    /// The shipped example pointed at the running app, enabled.
    static func exampleYAML(baseURL: URL) throws -> String {
        let repository = Fixture.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: repository.appendingPathComponent("sites/example-sso.yaml"), encoding: .utf8)
        return text.replacingOccurrences(of: "base_url: http://127.0.0.1:8480", with: "base_url: \(baseURL.absoluteString)")
            .replacingOccurrences(of: "enabled: false", with: "enabled: true")
    }

    static func stats(_ server: DemoSite.RunningServer, _ client: CurlHTTPClient) async throws -> (logins: Int, consents: Int) {
        let response = try await client.send(
            HTTPRequest(method: "GET", url: server.baseURL.appendingPathComponent("_control/stats")), options: TransportOptions())
        let json = try JSONValue.parse(response.bodyText)
        guard case .number(let logins)? = json["provider_logins"], case .number(let consents)? = json["consents"] else {
            throw FlowError(kind: .invalidRequest, site: "stats", detail: "no provider counters in \(response.bodyText)")
        }
        return (Int(logins) ?? -1, Int(consents) ?? -1)
    }

    static func skipped(_ log: EventLog) -> [String] {
        log.all.compactMap { if case .stepSkipped(_, let step, _, _, _) = $0 { step } else { nil } }
    }

    /// What a new login starts from under `keep_on_login: all-but-essential`, as `SiteLogin` selects it.
    static func keptForNextLogin(_ storage: CookieStorage, site: SiteDefinition) -> CookieStorage {
        let next = CookieStorage()
        for cookie in storage.allCookies where !site.cookies.essential.contains(where: { $0.matches(cookie, baseURL: site.baseURL) }) {
            next.setCookie(cookie)
        }
        return next
    }

    @Test func firstLoginThenTheProvidersSessionThenTheFormAgainWithConsentRemembered() async throws {
        try await Self.withProvider { server, client in
            let site = try DemoSiteIntegrationTests.load(Self.exampleYAML(baseURL: server.baseURL), name: "example-sso")
            let engine = FlowEngine(
                client: client, credentials: DictionaryCredentials(values: DemoSiteIntegrationTests.credentials), environment: [:])

            // 1. First login: the provider's form, then its consent page.
            let storage = CookieStorage()
            let first = EventLog()
            let result = try await engine.login(site, storage: storage, observer: first.observer)
            #expect(result.steps.map(\.step) == ["start", "provider sign-in", "consent"])
            #expect(Self.skipped(first).isEmpty)
            #expect(result.finalURL?.hasSuffix("/account") == true)
            #expect(try await Self.stats(server, client) == (1, 1))
            // Both hosts hold a demo_session; the essential one is the app's.
            let sessions = storage.allCookies.filter { $0.name == "demo_session" }.map(\.domain).sorted()
            #expect(sessions == ["127.0.0.1", "127.0.0.2"])
            #expect(result.essentialCookies.map(\.domain) == ["127.0.0.1"])
            #expect(result.steps.last?.cookiesSet.contains("demo_session (127.0.0.1)") == true, "\(result.steps.map(\.cookiesSet))")

            // 2. The app's session gone, the provider's kept: no form, no consent; done_when ends the login at once.
            let second = Self.keptForNextLogin(storage, site: site)
            #expect(second.allCookies.contains { $0.name == "demo_session" && $0.domain == "127.0.0.2" })
            let secondLog = EventLog()
            let again = try await engine.login(site, storage: second, observer: secondLog.observer)
            #expect(again.steps.map(\.step) == ["start"])
            #expect(again.steps.first?.endedLogin == true)
            #expect(!secondLog.exchanges.contains { $0.method == "POST" })
            #expect(try await Self.stats(server, client) == (1, 1), "neither the form nor the consent ran")
            #expect(again.essentialCookies.first?.isSet == true)

            // 3. Both sessions gone: the provider's form again; the consent is remembered by the provider.
            let third = EventLog()
            let fresh = try await engine.login(site, storage: CookieStorage(), observer: third.observer)
            #expect(fresh.steps.map(\.step) == ["start", "provider sign-in"])
            #expect(fresh.steps.last?.endedLogin == true)
            #expect(try await Self.stats(server, client) == (2, 1))
        }
    }

    @Test func withoutDoneWhenTheUnneededStepsAreSkipped() async throws {
        try await Self.withProvider { server, client in
            let yaml = try Self.exampleYAML(baseURL: server.baseURL)
                .replacingOccurrences(of: "  done_when: {url_matches: \"/account$\", body_contains: \"Welcome, alice\"}\n", with: "")
            let site = try DemoSiteIntegrationTests.load(yaml, name: "example-sso")
            #expect(site.doneWhen.isEmpty)
            let engine = FlowEngine(
                client: client, credentials: DictionaryCredentials(values: DemoSiteIntegrationTests.credentials), environment: [:])
            let storage = CookieStorage()
            _ = try await engine.login(site, storage: storage)
            let log = EventLog()
            let again = try await engine.login(site, storage: Self.keptForNextLogin(storage, site: site), observer: log.observer)
            #expect(again.steps.map(\.step) == ["start"])
            #expect(Self.skipped(log) == ["provider sign-in", "consent"])
        }
    }

    @Test func aFailedStepAfterASkippedOneFailsTheLogin() async throws {
        try await Self.withProvider { server, client in
            // A consent step that cannot pass: its form is answered with a wrong CSRF field (403).
            let yaml = try Self.exampleYAML(baseURL: server.baseURL)
                .replacingOccurrences(of: "      form: {allow: Authorize}", with: "      form: {allow: Authorize, csrf: forged}")
            let site = try DemoSiteIntegrationTests.load(yaml, name: "example-sso")
            let engine = FlowEngine(
                client: client, credentials: DictionaryCredentials(values: DemoSiteIntegrationTests.credentials), environment: [:])
            let log = EventLog()
            do throws(FlowError) {
                _ = try await engine.login(site, storage: CookieStorage(), observer: log.observer)
                Issue.record("the login passed with a forged consent")
            } catch {
                #expect(error.step == "consent")
                #expect(error.response?.status == 403)
            }

            // Now with the provider signed in already: its form is skipped, the consent step still fails.
            let good = try DemoSiteIntegrationTests.load(Self.exampleYAML(baseURL: server.baseURL), name: "example-sso")
            let provider = CookieStorage()
            let signIn = try await engine.login(
                good.with(steps: 2), storage: provider)  // start + sign-in: the provider's session, no consent yet
            #expect(signIn.steps.count == 2)
            let skippedLog = EventLog()
            let kept = Self.keptForNextLogin(provider, site: site)
            do throws(FlowError) {
                _ = try await engine.login(site, storage: kept, observer: skippedLog.observer)
                Issue.record("the login passed with a forged consent")
            } catch {
                #expect(error.step == "consent")
                #expect(Self.skipped(skippedLog) == ["provider sign-in"])
            }
        }
    }

    @Test func aChainAcrossHostsUnderMainDocumentDomainNamesTheRefusedCookie() async throws {
        try await Self.withProvider { server, client in
            let yaml = try Self.exampleYAML(baseURL: server.baseURL)
                .replacingOccurrences(of: "  accept: always", with: "  accept: main-document-domain")
            let site = try DemoSiteIntegrationTests.load(yaml, name: "example-sso")
            let engine = FlowEngine(
                client: client, credentials: DictionaryCredentials(values: DemoSiteIntegrationTests.credentials), environment: [:])
            let error = await loginError(engine, site, storage: CookieStorage(acceptPolicy: .mainDocumentDomain))
            #expect(error?.step == "provider sign-in")
            let detail = error?.detail ?? ""
            #expect(detail.contains("cookie 'demo_csrf' from http://127.0.0.2:"), "\(detail)")
            #expect(detail.contains("is outside the main document's registrable domain"), "\(detail)")
            #expect(detail.contains("accept: always"), "\(detail)")
        }
    }
}

/// The demo provider keeps to what an authorization server must (RFC 6749 sections 4.1 and 10): no open
/// redirect, a state checked by the app, a code used once.
@Suite(.serialized) struct DemoProviderTests {
    static func get(_ client: CurlHTTPClient, _ url: URL, cookie: String? = nil) async throws -> HTTPResponse {
        var headers = HTTPHeaders()
        if let cookie { headers.add(name: "Cookie", value: cookie) }
        return try await client.send(HTTPRequest(method: "GET", url: url, headers: headers), options: TransportOptions())
    }

    @Test func anAuthorizationToAnotherHostOrWithoutStateIsRefused() async throws {
        try await SingleSignOnFlowTests.withProvider { server, client in
            let provider = try #require(server.providerURL)
            let callback = "http%3A%2F%2F127.0.0.1%3A\(server.port)%2Foidc%2Fcallback"
            for query in [
                "response_type=code&client_id=demo-app&redirect_uri=http%3A%2F%2Fevil.example%2Foidc%2Fcallback&state=s",
                "response_type=code&client_id=demo-app&redirect_uri=\(callback)",
                "response_type=token&client_id=demo-app&redirect_uri=\(callback)&state=s",
                "response_type=code&client_id=other&redirect_uri=\(callback)&state=s",
            ] {
                let response = try await Self.get(client, try #require(URL(string: "\(provider.absoluteString)/authorize?\(query)")))
                #expect(response.status == 400, "\(query)")
            }
            let good = try await Self.get(
                client, try #require(URL(string: "\(provider.absoluteString)/authorize?response_type=code&client_id=demo-app&redirect_uri=\(callback)&state=s")))
            #expect(good.status == 302 && good.headers["Location"]?.hasPrefix("/login?next=%2Fauthorize%3F") == true)
        }
    }

    @Test func theAppChecksTheStateAndACodeWorksOnce() async throws {
        try await SingleSignOnFlowTests.withProvider { server, client in
            let site = try DemoSiteIntegrationTests.load(SingleSignOnFlowTests.exampleYAML(baseURL: server.baseURL), name: "example-sso")
            let engine = FlowEngine(
                client: client, credentials: DictionaryCredentials(values: DemoSiteIntegrationTests.credentials), environment: [:])
            let storage = CookieStorage()
            _ = try await engine.login(site, storage: storage)  // the provider's session and the consent

            // A sign-in started by the app, answered by the provider with a code: redeemed once.
            let start = try await Self.get(client, server.baseURL.appendingPathComponent("oidc/start"))
            let pending = try #require(start.headers["Set-Cookie"]?.split(separator: ";").first.map(String.init))
            let authorize = try #require(start.headers["Location"].flatMap(URL.init(string:)))
            let providerCookie = storage.cookieHeader(for: authorize)
            let answer = try await Self.get(client, authorize, cookie: providerCookie)
            let callback = try #require(answer.headers["Location"].flatMap(URL.init(string:)))
            #expect(answer.status == 302 && callback.path == "/oidc/callback")
            let first = try await Self.get(client, callback, cookie: pending)
            #expect(first.status == 303 && first.headers["Location"] == "/account")
            let again = try await Self.get(client, callback, cookie: pending)
            #expect(again.status == 403, "a code and its state are used once")

            // Another browser's code: the state is not the one this browser's sign-in sent.
            let other = try await Self.get(client, server.baseURL.appendingPathComponent("oidc/start"))
            let otherPending = try #require(other.headers["Set-Cookie"]?.split(separator: ";").first.map(String.init))
            let mixed = try await Self.get(client, callback, cookie: otherPending)
            #expect(mixed.status == 403)
        }
    }
}

extension SiteDefinition {
    /// The site with only its first `count` login steps and no done_when.
    func with(steps count: Int) -> SiteDefinition {
        var copy = self
        if case .steps(let steps) = login { copy.login = .steps(Array(steps.prefix(count))) }
        copy.doneWhen = []
        copy.cookies.essential = []
        return copy
    }
}
