import CookieJar
import Foundation
import HTTPTransport
import SiteConfig
import Testing

@testable import LoginFlow

@Suite struct TemplatingTests {
    static func site(_ url: String, credentials: [String] = [], allowEnv: [String] = []) -> SiteDefinition {
        Fixture.site([Fixture.step("one", Fixture.get(url))], credentials: credentials, allowEnv: allowEnv)
    }

    static let client = FakeHTTPClient { Fixture.response($0) }

    @Test func variablesCredentialsSiteAndAllowedEnvironment() async throws {
        let client = FakeHTTPClient { Fixture.response($0) }
        let site = Self.site("/{{ site.name }}?u={{ credentials.user }}&h={{ env.HOME_DIR }}&b={{ site.base_url }}", credentials: ["user"], allowEnv: ["HOME_DIR"])
        _ = try await Fixture.engine(client, credentials: ["user": "alice"], environment: ["HOME_DIR": "/home/a"]).login(site, storage: CookieStorage())
        #expect(client.requests.first?.url.absoluteString == "https://app.example.com/test?u=alice&h=/home/a&b=https://app.example.com/")
    }

    @Test func unknownVariableNamesTheDefinedOnes() async throws {
        let error = try #require(await loginError(Fixture.engine(Self.client), Self.site("/{{ csrf }}")))
        #expect(error.kind == .template)
        #expect(error.step == "one")
        #expect(error.mark == Fixture.mark)
        #expect(error.detail == "unknown variable '{{ csrf }}' (defined so far: none)")
        #expect(error.description.hasPrefix("site 'test', step 'one' (/sites/test.yaml:3:5): a placeholder cannot be filled"))
    }

    @Test func environmentNeedsAllowEnv() async throws {
        let engine = Fixture.engine(Self.client, environment: ["SECRET_TOKEN": "env-secret-value"])
        let refused = try #require(await loginError(engine, Self.site("/{{ env.SECRET_TOKEN }}")))
        #expect(refused.kind == .template)
        #expect(refused.detail?.contains("not listed under allow_env") == true)
        let unset = try #require(await loginError(engine, Self.site("/{{ env.OTHER }}", allowEnv: ["OTHER"])))
        #expect(unset.detail == "environment variable OTHER is not set; set it before logging in")
    }

    @Test func undeclaredOrUnavailableCredentials() async throws {
        let undeclared = try #require(await loginError(Fixture.engine(Self.client), Self.site("/{{ credentials.pin }}", credentials: ["user"])))
        #expect(undeclared.kind == .template)
        #expect(undeclared.detail?.contains("declared: user") == true)
        let unavailable = try #require(await loginError(Fixture.engine(Self.client), Self.site("/{{ credentials.user }}", credentials: ["user"])))
        #expect(unavailable.kind == .credential)
        #expect(unavailable.detail == "credential 'user' is not available: no credential named user")
    }

    @Test func credentialsAreResolvedOncePerRun() async throws {
        final class Counting: CredentialProvider {
            let calls = Atomic(0)
            func value(of name: String, site: String) async throws -> String {
                calls.add(1, ordering: .relaxed)
                return "v"
            }
        }
        let provider = Counting()
        let site = Fixture.site(
            [Fixture.step("a", Fixture.get("/{{ credentials.user }}")), Fixture.step("b", Fixture.get("/{{ credentials.user }}/{{ credentials.user }}"))],
            credentials: ["user"])
        let engine = FlowEngine(client: Self.client, credentials: provider, environment: [:])
        _ = try await engine.login(site, storage: CookieStorage())
        #expect(provider.calls.load(ordering: .relaxed) == 1)
    }

    @Test func invalidRenderedURLDoesNotEchoIt() async throws {
        let error = try #require(await loginError(
            Fixture.engine(Self.client, credentials: ["user": "p@ss word:x"]), Self.site("ftp://{{ credentials.user }}", credentials: ["user"])))
        #expect(error.kind == .invalidRequest)
        #expect(!error.description.contains("p@ss"))
    }
}

import Synchronization

@Suite struct MaskingTests {
    static let password = "Pa55-word&<secret>"
    static let token = "tok_9f8e7d6c5b4a"
    static let cookieValue = "sess-cookie-0123456789"

    /// A server that echoes everything it knows into its failure page.
    static let leakyClient = FakeHTTPClient { request in
        let body = String(decoding: request.body ?? Data(), as: UTF8.self)
        if request.url.path == "/token" {
            return Fixture.response(request, headers: [
                ("Content-Type", "application/json"), ("Set-Cookie", "sid=\(cookieValue); Path=/"), ("X-Token", token),
            ], body: #"{"token":"\#(token)"}"#)
        }
        let page = """
            <p>Login failed for password \(password) (escaped: Pa55-word&amp;&lt;secret&gt;), form body: \(body),
            cookie: \(request.headers["Cookie"] ?? ""), token \(token), auth \(request.headers["Authorization"] ?? "")</p>
            """
        return Fixture.response(request, 401, headers: [("X-Echo", token)], body: page)
    }

    static func site(expect: [SiteConfig.Expectation]) -> SiteDefinition {
        Fixture.site([
            Fixture.step("token", Fixture.get("/token", extract: [NamedExtraction(name: "token", extraction: .json(pointer: "/token"))])),
            Fixture.step("submit", RequestStep(
                method: "POST", url: Fixture.template("/login"), headers: Fixture.named(["Authorization": "Bearer {{ token }}"]),
                body: .form(Fixture.named(["password": "{{ credentials.password }}", "t": "{{ token }}"])), expect: expect)),
        ], credentials: ["password"])
    }

    static func assertClean(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for secret in [password, token, cookieValue, "Pa55-word%26%3Csecret%3E", "Pa55-word&amp;&lt;secret&gt;"] {
            #expect(!text.contains(secret), "leaked \(secret.prefix(4))… in: \(text)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [
        SiteConfig.Expectation.Kind.status([200]), .bodyContains("Welcome"), .notBodyContains("Login failed"),
        .header(name: "X-Echo", matches: "^nomatch$"), .urlMatches("^nope"), .cookie("absent"),
    ])
    func noSecretInAnyExpectationFailure(kind: SiteConfig.Expectation.Kind) async throws {
        let engine = Fixture.engine(Self.leakyClient, credentials: ["password": Self.password])
        let error = try #require(await loginError(engine, Self.site(expect: [SiteConfig.Expectation(kind)])))
        #expect(error.kind == .expectationFailed)
        #expect(error.response?.bodyExcerpt.contains(SecretMasker.mask) == true)
        Self.assertClean(error.description)
        Self.assertClean(String(describing: error))
        Self.assertClean(error.expected ?? "")
        Self.assertClean(error.found ?? "")
    }

    @Test func noSecretInExtractionFailures() async throws {
        // The 401 is expected, so the step goes on to its extraction.
        var site = Self.site(expect: [SiteConfig.Expectation(.status([401]))])
        if case .request(var request) = site.login.steps[1].action {
            request.extract = [NamedExtraction(name: "x", extraction: .regex("nomatch"))]
            site.login = .steps([site.login.steps[0], Step(name: "submit", mark: Fixture.mark, action: .request(request))])
        }
        let error = try #require(await loginError(Fixture.engine(Self.leakyClient, credentials: ["password": Self.password]), site))
        #expect(error.kind == .extractionFailed)
        Self.assertClean(error.description)
    }

    @Test func excerptIsShortAndCollapsed() async throws {
        let long = FakeHTTPClient { Fixture.response($0, 500, body: String(repeating: "word \n\t ", count: 400)) }
        let error = try #require(await loginError(Fixture.engine(long), Fixture.site([
            Fixture.step("one", Fixture.get("/", expect: [SiteConfig.Expectation(.status([200]))])),
        ])))
        let excerpt = try #require(error.response?.bodyExcerpt)
        #expect(excerpt.count == FlowError.excerptLength + 1)
        #expect(excerpt.hasSuffix("…"))
        #expect(!excerpt.contains("\n"))
    }

    @Test func maskerVariants() {
        var masker = SecretMasker()
        masker.addSecret("a b&c")
        masker.addValue("en")
        masker.addValue("long-cookie")
        #expect(masker.redact("x a b&c y") == "x ••• y")
        #expect(masker.redact("x a+b%26c y") == "x ••• y")
        #expect(masker.redact("x a%20b%26c y") == "x ••• y")
        #expect(masker.redact("x a b&amp;c y") == "x ••• y")
        #expect(masker.redact("lang en, long-cookie!") == "lang en, •••!")
    }
}

extension Login {
    fileprivate var steps: [Step] {
        if case .steps(let steps) = self { return steps }
        return []
    }
}
