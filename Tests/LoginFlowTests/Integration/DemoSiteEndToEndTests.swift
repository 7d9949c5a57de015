import CookieJar
import CurlTransport
import DemoSite
import Foundation
import HTTPTransport
import LoginFlow
import SiteConfig
import Testing

/// The flow engine over the real libcurl client against the demo site on 127.0.0.1, as the daemon will
/// drive it: form login with CSRF, TOTP, SSO across two host names, revocation, the down switch,
/// sliding sessions and the JSON API.
@Suite(.serialized) struct DemoSiteEndToEndTests {
    static let password = "end-to-end-Pw-93"
    static let credentials = ["username": "alice", "password": password]
    static let totpSecret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

    static func formLoginYAML(_ base: URL, extra: String = "") -> String {
        """
        base_url: \(base.absoluteString)
        credentials: {username: alice, password: {env: UNUSED_IN_TESTS}}
        login:
          steps:
            - name: login page
              get: /login
              expect: {status: 200, cookie: demo_csrf}
              extract:
                csrf: {xpath: "//form[@id='login']//input[@name='csrf']/@value"}
            - name: submit
              post: /login
              form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}", csrf: "{{ csrf }}"}
              expect:
                status: 200
                url_matches: "/account$"
                body_contains: "Welcome, alice"
                not_body_contains: Invalid username or password
        check:
          get: /api/me
          expect: {status: 200, json: {path: /user/name, equals: alice}}
        keepalive: {get: /ping, expect: {status: 204}}
        cookies: {essential: [demo_session], accept: main-document-domain}
        \(extra)
        """
    }

    /// POSTs a control route of the demo site.
    static func control(_ client: CurlHTTPClient, _ server: DemoSite.RunningServer, _ path: String) async throws -> HTTPResponse {
        let url = try #require(URL(string: path, relativeTo: server.baseURL)?.absoluteURL)
        return try await client.send(HTTPRequest(method: "POST", url: url), options: TransportOptions())
    }

    @Test func csrfFormLoginFollowsTheRedirectWithTheSessionCookie() async throws {
        try await Integration.withDemo(.init(port: 0, password: Self.password)) { server, client in
            let site = try Integration.site(Self.formLoginYAML(server.baseURL))
            let storage = CookieStorage(acceptPolicy: .mainDocumentDomain)
            let events = EventLog()
            let result = try await Integration.engine(client, credentials: Self.credentials)
                .login(site, storage: storage, observer: events.observer)

            // The POST carried the CSRF field and cookie (else 403), the 303 stored the session, and the
            // GET /account hop sent it (else a redirect to /login).
            #expect(events.exchanges.map { "\($0.method) \($0.status) \($0.redirectHop)" } == ["GET 200 0", "POST 303 0", "GET 200 1"])
            #expect(events.exchanges.allSatisfy { !$0.url.contains("?") })
            let session = try #require(result.essentialCookies.first)
            #expect(session.isSet && session.domain == "127.0.0.1")
            #expect(abs(try #require(session.expires).timeIntervalSinceNow - 3600) < 120)
            #expect(Set(result.cookies.map(\.name)) == ["demo_csrf", "demo_session"])
            #expect(result.cookies.allSatisfy { $0.hostOnly && $0.httpOnly })

            let probe = try await Integration.engine(client).check(site, storage: storage)
            #expect(probe.status == 200)
        }
    }

    @Test func totpSecondFactorWithACodeComputedInTheTest() async throws {
        try await Integration.withDemo(.init(port: 0, password: Self.password, totpSecret: Self.totpSecret)) { server, client in
            let yaml = """
                base_url: \(server.baseURL.absoluteString)
                credentials: {username: alice, password: {env: UNUSED_A}, otp: {env: UNUSED_B}}
                login:
                  steps:
                    - name: login page
                      get: /login
                      extract: {csrf: {xpath: "//form[@id='login']//input[@name='csrf']/@value"}}
                    - name: password
                      post: /login
                      form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}", csrf: "{{ csrf }}"}
                      expect: {status: 200, url_matches: "/login/totp$", cookie: demo_pending}
                    - name: second factor
                      form_from: {xpath: "//form[@id='totp']"}
                      form: {code: "{{ credentials.otp }}"}
                      follow_redirects: false
                      expect: {status: 303, cookie: demo_session, header: {name: Location, matches: "^/account$"}}
                cookies: {essential: [demo_session]}
                """
            let site = try Integration.site(yaml)
            let code = TestTOTP.code(base32: Self.totpSecret)
            var credentials = Self.credentials
            credentials["otp"] = code
            let storage = CookieStorage()
            let result = try await Integration.engine(client, credentials: credentials).login(site, storage: storage)
            #expect(result.steps.map(\.status) == [200, 200, 303])
            #expect(result.essentialCookies.first?.isSet == true)
            // The pending-login cookie was expired by the server on success.
            #expect(!storage.allCookies.contains { $0.name == "demo_pending" })

            // A wrong code fails on the second-factor step, and the error never shows the code.
            var wrong = credentials
            wrong["otp"] = code == "000000" ? "111111" : "000000"
            let error = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client, credentials: wrong).login(site, storage: CookieStorage())
            }
            #expect(error?.step == "second factor")
            #expect(error?.found == "status 200")
            #expect(error.map { !"\($0)".contains(wrong["otp"]!) && !"\($0)".contains(Self.password) } == true)
        }
    }

    @Test func ssoChainAcrossTwoHostNamesPinnedWithResolve() async throws {
        try await Integration.withDemo(.init(port: 0, password: Self.password)) { server, client in
            let port = server.port
            let yaml = """
                base_url: http://demo.test:\(port)
                http:
                  resolve: ["demo.test:\(port):127.0.0.1", "sso.demo.test:\(port):127.0.0.1"]
                login:
                  steps:
                    - name: sso
                      get: /sso/start
                      expect: {status: 200, url_matches: "^http://demo\\\\.test:\(port)/account$", body_contains: "Welcome, alice"}
                check: {get: /api/me}
                cookies: {essential: [demo_session], accept: always}
                """
            let site = try Integration.site(yaml)
            let storage = CookieStorage(acceptPolicy: .always)
            let events = EventLog()
            _ = try await Integration.engine(client).login(site, storage: storage, observer: events.observer)

            #expect(events.exchanges.map(\.url) == [
                "http://demo.test:\(port)/sso/start", "http://sso.demo.test:\(port)/sso/authorize?…",
                "http://demo.test:\(port)/sso/callback?…", "http://demo.test:\(port)/account",
            ])
            #expect(events.exchanges.map(\.status) == [302, 302, 303, 200])
            // Each cookie belongs to the host that set it, host-only, under the name (not the pinned IP).
            let ssoID = try #require(storage.allCookies.first { $0.name == "sso_id" })
            #expect(ssoID.domain == "sso.demo.test" && ssoID.hostOnly)
            let session = try #require(storage.allCookies.first { $0.name == "demo_session" })
            #expect(session.domain == "demo.test" && session.hostOnly)
            #expect(storage.cookies(for: URL(string: "http://demo.test:\(port)/")!).map(\.name) == ["demo_session"])
            #expect(storage.cookies(for: URL(string: "http://sso.demo.test:\(port)/")!).map(\.name) == ["sso_id"])

            // A second run sends sso_id to the SSO host on its hop: the SSO host keeps the same identity.
            _ = try await Integration.engine(client).login(site, storage: storage)
            let again = try #require(storage.allCookies.first { $0.name == "sso_id" })
            #expect(again.value == ssoID.value)
            #expect(try await Integration.engine(client).check(site, storage: storage).status == 200)
        }
    }

    @Test func revokedSessionMakesCheckFailAsLoggedOut() async throws {
        try await Integration.withDemo(.init(port: 0, password: Self.password)) { server, client in
            let site = try Integration.site(Self.formLoginYAML(server.baseURL))
            let storage = CookieStorage(acceptPolicy: .mainDocumentDomain)
            _ = try await Integration.engine(client, credentials: Self.credentials).login(site, storage: storage)
            #expect(try await Integration.engine(client).check(site, storage: storage).status == 200)

            let revoked = try await Self.control(client, server, "/_control/revoke-all")
            #expect(revoked.status == 200)
            let error = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client).check(site, storage: storage)
            }
            #expect(error?.kind == .expectationFailed)
            #expect(error?.step == "check")
            #expect(error?.found == "status 401")
            #expect(error?.isUnreachable == false)
        }
    }

    @Test func downSiteIsA5xxAndAStoppedSiteIsUnreachableNeitherIsLoggedOut() async throws {
        let server = try await DemoSite.start(configuration: .init(port: 0, password: Self.password))
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        var stopped = false
        do {
            let site = try Integration.site(Self.formLoginYAML(server.baseURL))
            let storage = CookieStorage(acceptPolicy: .mainDocumentDomain)
            _ = try await Integration.engine(client, credentials: Self.credentials).login(site, storage: storage)

            #expect(try await Self.control(client, server, "/_control/down?enabled=true").status == 200)
            let down = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client).check(site, storage: storage)
            }
            // A 503 is the server speaking: reported as such, with the essential cookie still there.
            #expect(down?.found == "status 503")
            #expect(down?.response?.status == 503)
            #expect(down?.isUnreachable == false)
            let essentials = Integration.engine(client).essentialCookies(site, storage: storage)
            #expect(essentials.allSatisfy { $0.isSet })

            #expect(try await Self.control(client, server, "/_control/down?enabled=false").status == 200)
            #expect(try await Integration.engine(client).check(site, storage: storage).status == 200)

            await server.stop()
            stopped = true
            let gone = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client).check(site, storage: storage)
            }
            #expect(gone?.isUnreachable == true)
            #expect(gone?.kind == .transport(.connect))
        } catch {
            if !stopped { await server.stop() }
            throw error
        }
    }

    @Test func keepaliveExtendsASlidingSessionAndNotAFixedOne() async throws {
        for sliding in [true, false] {
            try await Integration.withDemo(.init(port: 0, password: Self.password, sessionMaxAge: 120, sliding: sliding)) { server, client in
                let site = try Integration.site(Self.formLoginYAML(server.baseURL))
                let storage = CookieStorage(acceptPolicy: .mainDocumentDomain)
                let result = try await Integration.engine(client, credentials: Self.credentials).login(site, storage: storage)
                let first = try #require(result.essentialCookies.first?.expires)
                // Max-Age counts from the answer: after 1.5 s a renewed cookie ends at least 1 s later.
                try await Task.sleep(for: .milliseconds(1500))
                let probe = try await Integration.engine(client).keepalive(site, storage: storage)
                #expect(probe.status == 204)
                let second = try #require(probe.essentialCookies.first?.expires)
                if sliding {
                    #expect(second.timeIntervalSince(first) >= 1)
                } else {
                    #expect(second == first)
                }
            }
        }
    }

    @Test func jsonAPILogin() async throws {
        try await Integration.withDemo(.init(port: 0, password: Self.password)) { server, client in
            let yaml = """
                base_url: \(server.baseURL.absoluteString)
                credentials: {username: alice, password: {env: UNUSED_IN_TESTS}}
                login:
                  steps:
                    - name: api login
                      post: /api/login
                      json: {username: "{{ credentials.username }}", password: "{{ credentials.password }}"}
                      expect: {status: 200, json: {path: /user/name, equals: alice}, header: {name: Content-Type, matches: json}}
                      extract: {token: {json: /token}}
                    - name: me with bearer
                      get: /api/me
                      headers: {Authorization: "Bearer {{ token }}"}
                      handle_cookies: false
                      expect: {status: 200, json: {path: /user/name, equals: alice}}
                check:
                  get: /api/me
                  expect: {status: 200, json: {path: /user/name}}
                cookies: {essential: [demo_session]}
                """
            let site = try Integration.site(yaml)
            let storage = CookieStorage()
            let result = try await Integration.engine(client, credentials: Self.credentials).login(site, storage: storage)
            #expect(result.steps.map(\.status) == [200, 200])
            #expect(result.essentialCookies.first?.isSet == true)
            #expect(try await Integration.engine(client).check(site, storage: storage).status == 200)

            var wrong = Self.credentials
            wrong["password"] = "definitely-wrong-pw"
            let error = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client, credentials: wrong).login(site, storage: CookieStorage())
            }
            #expect(error?.step == "api login")
            #expect(error?.found == "status 401")
            #expect(error.map { !"\($0)".contains("definitely-wrong-pw") } == true)
        }
    }
}
