import CookieJar
import CurlTransport
import DemoSite
import Foundation
import HTTPTransport
import SiteConfig
import Testing

@testable import LoginFlow

/// The flow engine over the real libcurl client against the bundled demo site on 127.0.0.1.
@Suite(.serialized) struct DemoSiteIntegrationTests {
    static let password = "integration-pass-Q7"
    static let credentials = ["username": "alice", "password": password]

    /// Runs `body` against a fresh demo site and a fresh libcurl client.
    static func withDemo(
        _ configuration: DemoSite.Configuration = DemoSite.Configuration(port: 0, password: password),
        _ body: (DemoSite.RunningServer, CurlHTTPClient) async throws -> Void
    ) async throws {
        let server = try await DemoSite.start(configuration: configuration)
        let client = try CurlHTTPClient()
        do {
            try await body(server, client)
        } catch {
            client.shutdown()
            await server.stop()
            throw error
        }
        client.shutdown()
        await server.stop()
    }

    /// A site file as a user writes it, loaded by SiteConfig, pointed at the running server.
    static func load(_ yaml: String, name: String = "demo") throws -> SiteDefinition {
        let loader = ConfigurationLoader(environment: [:])
        let config = loader.defaultConfig(directory: Fixture.directory.path)
        return try loader.loadSite(text: yaml, file: Fixture.directory.appendingPathComponent("\(name).yaml").path, config: config)
    }

    /// The repository's sites/demo.yaml with its base_url replaced.
    static func demoYAML(baseURL: URL) throws -> String {
        let repository = Fixture.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: repository.appendingPathComponent("sites/demo.yaml"), encoding: .utf8)
        return text.replacingOccurrences(of: "base_url: http://127.0.0.1:8480", with: "base_url: \(baseURL.absoluteString)")
    }

    @Test func bundledDemoSiteLogsInChecksKeepsAliveAndNoticesRevocation() async throws {
        try await Self.withDemo { server, client in
            let site = try Self.load(Self.demoYAML(baseURL: server.baseURL))
            let engine = FlowEngine(client: client, credentials: DictionaryCredentials(values: Self.credentials), environment: [:])
            let storage = CookieStorage(acceptPolicy: .mainDocumentDomain)
            let events = EventLog()
            let result = try await engine.login(site, storage: storage, observer: events.observer)

            #expect(result.steps.map(\.status) == [200, 303])
            let session = try #require(result.essentialCookies.first)
            #expect(session.name == "demo_session" && session.isSet)
            let expiry = try #require(session.expires)
            #expect(abs(expiry.timeIntervalSinceNow - 3600) < 120)
            #expect(events.exchanges.map { "\($0.method) \($0.status)" } == ["GET 200", "POST 303"])

            #expect(try await engine.check(site, storage: storage).status == 200)
            #expect(try await engine.keepalive(site, storage: storage).status == 204)

            let revoke = HTTPRequest(method: "POST", url: server.baseURL.appendingPathComponent("_control/revoke-all"))
            _ = try await client.send(revoke, options: TransportOptions())
            do throws(FlowError) {
                _ = try await engine.check(site, storage: storage)
                Issue.record("the check passed after every session was revoked")
            } catch {
                #expect(error.kind == .expectationFailed)
                #expect(error.response?.status == 401)
                #expect(!error.isUnreachable)
            }
        }
    }

    @Test func wrongPasswordIsAClearErrorWithoutSecrets() async throws {
        try await Self.withDemo { server, client in
            let site = try Self.load(Self.demoYAML(baseURL: server.baseURL))
            let wrong = "not-the-password-9"
            let storage = CookieStorage()
            let engine = FlowEngine(client: client, credentials: DictionaryCredentials(values: ["username": "alice", "password": wrong]), environment: [:])
            let error = try #require(await loginError(engine, site, storage: storage))
            #expect(error.kind == .expectationFailed)
            #expect(error.step == "submit")
            #expect(error.found == "status 200")
            #expect(error.response?.bodyExcerpt.contains("Invalid username or password") == true)
            let text = error.description
            #expect(!text.contains(wrong))
            for cookie in storage.allCookies { #expect(!text.contains(cookie.value)) }
        }
    }

    @Test func formFromFollowingTheRedirectToTheAccountPage() async throws {
        try await Self.withDemo { server, client in
            let site = try Self.load("""
                base_url: \(server.baseURL.absoluteString)
                credentials: {username: alice, password: {env: DEMO_PASSWORD}}
                login:
                  steps:
                    - name: login page
                      get: /login
                    - name: submit
                      form_from: {xpath: "//form[@id='login']"}
                      form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}"}
                      expect: {status: 200, body_contains: "Welcome, alice", url_matches: "/account$"}
                cookies: {essential: [demo_session]}
                """)
            let engine = FlowEngine(client: client, credentials: DictionaryCredentials(values: Self.credentials), environment: [:])
            let result = try await engine.login(site, storage: CookieStorage())
            #expect(result.steps.map(\.requests) == [1, 2])
            #expect(result.finalURL?.hasSuffix("/account") == true)
        }
    }
}
