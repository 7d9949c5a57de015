import CookieJar
import CurlTransport
import DemoSite
import Foundation
import HTTPTransport
import SiteConfig
import Testing

@testable import LoginFlow

/// `when:` and `done_when:` (SPEC section 3) run for real: libcurl against the demo site, whose `/account`
/// redirects a visitor without a session to its sign-in form. The flow opens `/account` first, so a kept
/// session reaches the page at once and the form step is not needed.
@Suite(.serialized) struct ConditionalStepFlowTests {
    static func flow(baseURL: URL, doneWhen: Bool, last: String = "") -> String {
        """
        base_url: \(baseURL.absoluteString)
        credentials: {username: alice, password: {env: DEMO_PASSWORD}}
        login:
          \(doneWhen ? "done_when: {url_matches: \"/account$\", body_contains: \"Welcome, alice\"}" : "")
          steps:
            - name: open the account page
              get: /account
            - name: sign in
              when: {url_matches: "/login", body_contains: "<form id=\\"login\\""}
              form_from: {xpath: "//form[@id='login']"}
              form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}"}
              expect: {url_matches: "/account$"}
        \(last)
        cookies: {essential: [demo_session]}
        """
    }

    static func engine(_ client: CurlHTTPClient) -> FlowEngine {
        FlowEngine(client: client, credentials: DictionaryCredentials(values: DemoSiteIntegrationTests.credentials), environment: [:])
    }

    static func skipped(_ log: EventLog) -> [String] {
        log.all.compactMap { if case .stepSkipped(_, let step, _, _, _) = $0 { step } else { nil } }
    }

    @Test func aStepWhoseConditionFailsIsSkippedAndSaysWhy() async throws {
        try await DemoSiteIntegrationTests.withDemo { server, client in
            let site = try DemoSiteIntegrationTests.load(Self.flow(baseURL: server.baseURL, doneWhen: false))
            let engine = Self.engine(client)
            let storage = CookieStorage()

            let first = EventLog()
            let result = try await engine.login(site, storage: storage, observer: first.observer)
            #expect(result.steps.map(\.step) == ["open the account page", "sign in"])
            #expect(Self.skipped(first).isEmpty)

            // The session is still in the jar: /account answers at once, the form step is not needed.
            let second = EventLog()
            let again = try await engine.login(site, storage: storage, observer: second.observer)
            #expect(again.steps.map(\.step) == ["open the account page"])
            #expect(Self.skipped(second) == ["sign in"])
            #expect(!second.exchanges.contains { $0.method == "POST" })
            let reason = second.all.compactMap { if case .stepSkipped(_, _, let index, let count, let reason) = $0 { "\(index)/\(count) \(reason)" } else { nil } }
            #expect(reason.first?.hasPrefix("2/2 when: expected ") == true, "\(reason)")
            #expect(again.essentialCookies.first?.isSet == true)
        }
    }

    @Test func doneWhenEndsTheLoginAtTheAppsPage() async throws {
        try await DemoSiteIntegrationTests.withDemo { server, client in
            // A last step that would fail if it ran: done_when must end the login before it.
            let site = try DemoSiteIntegrationTests.load(Self.flow(
                baseURL: server.baseURL, doneWhen: true,
                last: """
                    - name: never reached
                      get: /no-such-page
                """))
            let engine = Self.engine(client)
            let storage = CookieStorage()
            let first = EventLog()
            let result = try await engine.login(site, storage: storage, observer: first.observer)
            #expect(result.steps.map(\.step) == ["open the account page", "sign in"])
            #expect(result.steps.map(\.endedLogin) == [false, true])
            let done = first.all.compactMap { if case .loginDone(_, let step, let left) = $0 { "\(step) \(left)" } else { nil } }
            #expect(done == ["sign in 1"])

            let second = EventLog()
            let again = try await engine.login(site, storage: storage, observer: second.observer)
            #expect(again.steps.map(\.step) == ["open the account page"])
            #expect(second.exchanges.map { "\($0.method) \($0.status)" } == ["GET 200"])
            #expect(again.essentialCookies.first?.isSet == true)
        }
    }

    @Test func aFailedStepAfterASkippedOneFailsTheLogin() async throws {
        try await DemoSiteIntegrationTests.withDemo { server, client in
            let site = try DemoSiteIntegrationTests.load(Self.flow(
                baseURL: server.baseURL, doneWhen: false,
                last: """
                    - name: settings
                      get: /account
                      expect: {body_contains: "Settings saved"}
                """))
            let engine = Self.engine(client)
            let storage = CookieStorage()
            await #expect(throws: FlowError.self) { try await engine.login(site, storage: storage) }
            let log = EventLog()
            do throws(FlowError) {
                _ = try await engine.login(site, storage: storage, observer: log.observer)
                Issue.record("the login passed although its last step fails")
            } catch {
                #expect(error.step == "settings")
                #expect(error.kind == .expectationFailed)
                #expect(Self.skipped(log) == ["sign in"])
            }
        }
    }
}
