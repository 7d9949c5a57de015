import CookieJar
import CurlTransport
import DemoSite
import Foundation
import HTTPTransport
import JSON
import SiteConfig
import Synchronization
import Testing

@testable import LoginFlow

/// The versioned plugin protocol (docs/PLUGINS.md) through the engine and real plugin processes: what
/// stdin carries, `protocol`, `user_agent` and `origins` in answers, and the masked `-vv` traces.
@Suite struct PluginProtocolTests {
    static let environment = PluginStepTests.environment

    static func replying(_ reply: String, then next: Step? = nil) -> SiteDefinition {
        Fixture.site([
            Step(name: "plugin", mark: Fixture.mark, action: .plugin(PluginStepTests.plugin(
                "reply-plugin.sh", env: [.set(name: "REPLY", value: Fixture.template(reply))]))),
        ] + (next.map { [$0] } ?? []))
    }

    @Test func stdinCarriesTheProtocolVersionAndTheBaseURL() async throws {
        let site = Fixture.site([
            Step(name: "echo", mark: Fixture.mark, action: .plugin(PluginStepTests.plugin("request-echo-plugin.py"))),
            Fixture.step("after", Fixture.get("/after?p={{ protocol }}&b={{ base_url }}&k={{ keys }}")),
        ])
        let client = FakeHTTPClient { Fixture.response($0) }
        _ = try await Fixture.engine(client, environment: Self.environment).login(site, storage: CookieStorage())
        let query = try #require(client.requests.last?.url.query(percentEncoded: false))
        #expect(query == "p=1&b=https://app.example.com/&k=base_url,cookies,http,last_response,protocol,site,step,vars,with")
    }

    /// A plugin that makes its own requests (a browser) gets the site's transport settings; the proxy's password
    /// is masked in the trace.
    @Test func stdinCarriesTheSitesHTTPSettings() async throws {
        var site = Fixture.site([
            Step(name: "echo", mark: Fixture.mark, action: .plugin(PluginStepTests.plugin("request-echo-plugin.py"))),
            Fixture.step("after", RequestStep(method: "POST", url: Fixture.template("/after"), body: .form(Fixture.named(["h": "{{ http }}"])))),
        ])
        site.http.proxy = "http://proxy-user:pw-proxy-9@127.0.0.1:3128"
        site.http.resolve = ["app.example.com:443:127.0.0.1"]
        site.http.caFile = "/etc/ssl/private-ca.pem"
        site.http.clientCertificate = HTTPSettings.ClientCertificate(certificatePath: "/c.pem", keyPath: "/k.pem")
        site.http.insecure = true
        let client = FakeHTTPClient { Fixture.response($0) }
        var engine = Fixture.engine(client, environment: Self.environment)
        engine.tracesExchanges = true
        let events = EventLog()
        _ = try await engine.login(site, storage: CookieStorage(), observer: events.observer)
        let input = try #require(events.all.compactMap { if case .pluginTrace(let trace) = $0, trace.direction == .input { trace.json } else { nil } }.first)
        #expect(input.contains(#""http": {"proxy": "http://proxy-user:•••@127.0.0.1:3128", "resolve": ["app.example.com:443:127.0.0.1"], "#
            + #""ca_file": "/etc/ssl/private-ca.pem", "client_cert": {"cert": "/c.pem", "key": "/k.pem"}, "insecure": true}"#), "\(input)")
        #expect(!input.contains("pw-proxy-9"))
        // What the plugin itself received, which it answered back as a variable the next step sends.
        let body = String(decoding: try #require(client.requests.last?.body), as: UTF8.self)
        let received = try #require(body.removingPercentEncoding?.replacingOccurrences(of: "+", with: " "))
        #expect(received == #"h={"ca_file": "/etc/ssl/private-ca.pem", "client_cert": {"cert": "/c.pem", "key": "/k.pem"}, "insecure": true, "#
            + #""proxy": "http://proxy-user:pw-proxy-9@127.0.0.1:3128", "resolve": ["app.example.com:443:127.0.0.1"]}"#)
    }

    @Test(arguments: [
        (#"{"protocol": 2}"#, "reply-plugin.sh: it answered protocol 2; this SessionKeeper speaks protocol 1"),
        (#"{"protocol": "1", "vars": {}}"#, #"reply-plugin.sh: it answered protocol "1"; this SessionKeeper speaks protocol 1"#),
        // The version is judged before the error: another protocol's error may not mean what ours does.
        (#"{"protocol": 7, "error": "boom"}"#, "reply-plugin.sh: it answered protocol 7; this SessionKeeper speaks protocol 1"),
    ])
    func anAnswerInAnotherProtocolFailsTheStep(reply: String, detail: String) async throws {
        let error = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment), Self.replying(reply)))
        #expect(error.kind == .plugin)
        #expect(error.step == "plugin")
        #expect(error.detail == detail)
    }

    @Test(arguments: [#"{"protocol": 1, "vars": {"v": "x"}}"#, #"{"protocol": null, "vars": {"v": "x"}}"#, #"{"vars": {"v": "x"}}"#])
    func protocolOneOrNoneIsAccepted(reply: String) async throws {
        let client = FakeHTTPClient { Fixture.response($0) }
        _ = try await Fixture.engine(client, environment: Self.environment)
            .login(Self.replying(reply, then: Fixture.step("after", Fixture.get("/after?v={{ v }}"))), storage: CookieStorage())
        #expect(client.requests.last?.url.query == "v=x")
    }

    @Test func aUserAgentAnswerIsSentByLaterRequestsAndIsTheSessions() async throws {
        let client = FakeHTTPClient { Fixture.response($0) }
        var site = Self.replying(#"{"user_agent": "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/156.0.0.0"}"#, then: Fixture.step("after", Fixture.get("/after")))
        site.http.userAgent = "SessionKeeper/1"
        let result = try await Fixture.engine(client, environment: Self.environment).login(site, storage: CookieStorage())
        #expect(client.options.last?.userAgent == "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/156.0.0.0")
        #expect(result.userAgent == "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/156.0.0.0")

        let plain = try await Fixture.engine(client, environment: Self.environment)
            .login(Self.replying(#"{"vars": {}}"#), storage: CookieStorage())
        #expect(plain.userAgent == nil)
    }

    @Test(arguments: [#"{"user_agent": "two\nlines"}"#, #"{"user_agent": "  "}"#])
    func aUserAgentThatCannotBeAHeaderFailsTheStep(reply: String) async throws {
        let error = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment), Self.replying(reply)))
        #expect(error.detail == #"reply-plugin.sh: its output does not fit the plugin protocol: "user_agent" must be one line of text"#)
    }

    @Test func originsAnswerIsTheSessionsLocalStorageAndIsMasked() async throws {
        let reply = #"{"origins": [{"origin": "https://app.example.com", "localStorage": [{"name": "token", "value": "local-storage-token-1"}]}]}"#
        let client = FakeHTTPClient { Fixture.response($0, 403, body: "refused local-storage-token-1") }
        let site = Self.replying(reply)
        let result = try await Fixture.engine(client, environment: Self.environment).login(site, storage: CookieStorage())
        #expect(result.storageOrigins == [StorageOrigin(origin: "https://app.example.com", localStorage: [.init(name: "token", value: "local-storage-token-1")])])

        let failing = Self.replying(reply, then: Fixture.step("use", Fixture.get("/x", expect: [SiteConfig.Expectation(.status([200]))])))
        let error = try #require(await loginError(Fixture.engine(client, environment: Self.environment), failing))
        #expect(error.response?.bodyExcerpt == "refused •••")

        let broken = try #require(await loginError(
            Fixture.engine(client, environment: Self.environment), Self.replying(#"{"origins": [{"origin": "x"}]}"#)))
        #expect(broken.detail == #"reply-plugin.sh: its output does not fit the plugin protocol: "origins" item 1: "localStorage" is missing"#)
    }

    /// `login -vv`: both directions as JSON, every secret the protocol names replaced, the rest masked.
    @Test func tracesShowTheExchangedJSONWithSecretsMasked() async throws {
        let client = FakeHTTPClient { request in
            Fixture.response(request, headers: [("Set-Cookie", "page_cookie=page-value-1; Path=/")], body: "<p>page with pw-secret-1</p>")
        }
        let site = Fixture.site([
            Fixture.step("page", Fixture.get("/page")),
            Step(name: "second factor", mark: Fixture.mark, action: .plugin(PluginStepTests.plugin(
                "echo-plugin.py",
                with: .object([("name", .string(Fixture.template("bob"))), ("code", .string(Fixture.template("{{ credentials.otp }}")))]),
                passCredentials: true))),
        ], credentials: ["otp", "password"])
        var engine = Fixture.engine(client, credentials: ["otp": "987654", "password": "pw-secret-1"], environment: Self.environment)
        engine.tracesExchanges = true
        let events = EventLog()
        _ = try await engine.login(site, storage: CookieStorage(), observer: events.observer)
        let traces = events.all.compactMap { if case .pluginTrace(let trace) = $0 { trace } else { nil } }
        #expect(traces.map(\.direction) == [.input, .output])
        let input = try #require(traces.first?.json)
        let output = try #require(traces.last?.json)
        #expect(input.hasPrefix(#"{"protocol": 1, "site": "test", "base_url": "https://app.example.com/", "http": {"proxy": null, "resolve": [], "#
            + #""ca_file": null, "client_cert": null, "insecure": false}, "step": "second factor""#))
        #expect(input.contains(#""with": {"name": "bob", "code": "•••"}"#))
        #expect(input.contains(#""credentials": {"otp": "<masked>", "password": "<masked>"}"#))
        #expect(input.contains(#""value": "<masked>""#))
        #expect(input.contains(#""body": "<p>page with •••</p>""#))
        #expect(output.contains(#""headers": {"X-Plugin-Token": "<masked>"}"#))
        #expect(output.contains(#""set_cookie": ["from_line=<masked>; Path=/; Max-Age=600"]"#))
        #expect(output.contains(#""password_seen": "•••""#))
        let leaks = ["987654", "pw-secret-1", "page-value-1", "plugin-cookie-value", "plugin-header-token", "line-cookie-value"]
            .filter { input.contains($0) || output.contains($0) }
        #expect(leaks.isEmpty)
    }

    @Test func withoutTracingNoPluginTraceIsMade() async throws {
        let events = EventLog()
        _ = try await Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment)
            .login(Self.replying(#"{"vars": {}}"#), storage: CookieStorage(), observer: events.observer)
        #expect(!events.all.contains { if case .pluginTrace = $0 { true } else { false } })
        #expect(events.all.contains { if case .stepFinished = $0 { true } else { false } })
    }
}

/// The Python helper every shipped Python plugin uses (plugins/lib/sessionkeeper_plugin.py), run for real
/// through `Fixtures/helper-plugin.py` with the runner alone, so that its own masking is what is seen
/// (the engine masks stderr again).
@Suite struct PythonPluginHelperTests {
    static func run(_ request: String) async throws -> (answer: JSONValue, stderr: [String]) {
        let (output, lines) = try await ProcessPluginRunnerTests.run("helper-plugin.py", input: request)
        #expect(output.termination == .exited(0))
        return (try JSONValue.parse(Array(output.standardOutput)), lines)
    }

    @Test func answersInTheProtocolAndLogsWithSecretsMasked() async throws {
        let (answer, stderr) = try await Self.run(#"""
            {"protocol": 1, "site": "s", "step": "login", "with": {"mode": "answer", "url": "/login", "token": "tok-123456", "timeout": "2m"},
             "vars": {}, "cookies": [], "last_response": null, "credentials": {"username": "al", "password": "pw-secret-9"}}
            """#)
        #expect(answer["protocol"] == .number("1"))
        #expect(JSONPointer.resolve("/vars/timeout", in: answer) == .string("120.0"))
        #expect(JSONPointer.resolve("/headers/X-Helper", in: answer) == .string("on"))
        #expect(JSONPointer.resolve("/cookies/0/domain", in: answer) == .string("app.example.com"))
        #expect(JSONPointer.resolve("/cookies/0/host_only", in: answer) == .bool(false))
        #expect(JSONPointer.resolve("/cookies/0/expires", in: answer) == .string("2100-01-01T00:00:00Z"))
        #expect(JSONPointer.resolve("/cookies/0/same_site", in: answer) == .string("lax"))
        // The URL is a public option; the credentials (however short) and the other with values are not.
        #expect(stderr == ["logging in at /login as ••• with ••• and •••"])
    }

    @Test(arguments: [
        (#"{"with": {"mode": "fail"}, "credentials": {"password": "pw-secret-9"}}"#, "the site refused •••"),
        (#"{"with": {"mode": "crash", "token": "tok-123456"}}"#, "unexpected ValueError: cannot parse •••"),
        (#"{"with": {"mode": "bad-duration", "timeout": "soon"}}"#, "with.timeout must be a duration such as 30s or 2m"),
        (#"{"with": {}}"#, "with.mode is missing"),
        (#"{"protocol": 2, "with": {"mode": "answer"}}"#, "SessionKeeper speaks plugin protocol 2; this plugin speaks protocol 1"),
        ("not json", "stdin is not JSON"),
    ])
    func failuresAreOneErrorAnswerWithSecretsMasked(request: String, error: String) async throws {
        let (answer, stderr) = try await Self.run(request)
        #expect(answer == .object([("protocol", .number("1")), ("error", .string(error))]))
        #expect(stderr.isEmpty, "a failure is reported in the answer, never as a traceback")
    }
}

/// The example plugins shipped in plugins/, each doing its job for real.
@Suite(.serialized) struct ShippedPluginTests {
    static var repository: URL {
        Fixture.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
    static let environment = ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"]

    static func shipped(_ name: String, env: [PluginStep.EnvironmentEntry] = [], with: JSONTemplate = .object([])) -> PluginStep {
        PluginStep(
            plugin: name, executablePath: repository.appendingPathComponent("plugins/\(name)").path, with: with, environment: env,
            timeout: .seconds(20), passCredentials: false)
    }

    @Test func theShellPluginPutsTheAPIKeyIntoAHeaderWithoutLoggingIt() async throws {
        let site = Fixture.site([
            Step(name: "api key", mark: Fixture.mark, action: .plugin(Self.shipped(
                "api-key-header.sh", env: [.set(name: "API_KEY", value: Fixture.template(#"{{ credentials.api_key }}"#))]))),
            Fixture.step("call", Fixture.get("/api")),
        ], credentials: ["api_key"])
        let client = FakeHTTPClient { Fixture.response($0) }
        let events = EventLog()
        let key = #"key-"quoted"\and-long-0123456789"#
        _ = try await Fixture.engine(client, credentials: ["api_key": key], environment: Self.environment)
            .login(site, storage: CookieStorage(), observer: events.observer)
        #expect(client.requests.last?.headers["X-API-Key"] == key)
        #expect(events.pluginLines == ["api-key-header.sh: adding header X-API-Key"])

        let named = Fixture.site([
            Step(name: "api key", mark: Fixture.mark, action: .plugin(Self.shipped(
                "api-key-header.sh", env: [.set(name: "API_KEY", value: Fixture.template("k-1")), .set(name: "HEADER_NAME", value: Fixture.template("X-Token"))]))),
            Fixture.step("call", Fixture.get("/api")),
        ])
        _ = try await Fixture.engine(client, environment: Self.environment).login(named, storage: CookieStorage())
        #expect(client.requests.last?.headers["X-Token"] == "k-1")
    }

    @Test func theShellPluginSaysWhatIsMissing() async throws {
        let site = Fixture.site([Step(name: "api key", mark: Fixture.mark, action: .plugin(Self.shipped("api-key-header.sh")))])
        let error = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment), site))
        #expect(error.detail == "api-key-header.sh: API_KEY is empty or unset (set it under the step's env:)")
    }

    /// sites/example-signed-api.yaml against the demo site's `/api/signed`, over libcurl: the right key
    /// logs in; a wrong key makes the signed call fail with the site's 401.
    @Test func theSignerSignsWhatTheDemoSitesSignedRouteChecks() async throws {
        let key = "shared-signing-key-\(UUID().uuidString.prefix(8))"
        let server = try await DemoSite.start(configuration: DemoSite.Configuration(port: 0, password: "signer-pass", signingKey: key))
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        do {
            let loader = ConfigurationLoader(environment: [:])
            let config = loader.defaultConfig(directory: Self.repository.path)
            let text = try String(contentsOf: Self.repository.appendingPathComponent("sites/example-signed-api.yaml"), encoding: .utf8)
                .replacingOccurrences(of: "base_url: http://127.0.0.1:8480", with: "base_url: \(server.baseURL.absoluteString)")
            let site = try loader.loadSite(text: text, file: Self.repository.appendingPathComponent("sites/example-signed-api.yaml").path, config: config)

            let right = FlowEngine(
                client: client, credentials: DictionaryCredentials(values: ["username": "alice", "password": "signer-pass", "signing_key": key]),
                environment: Self.environment)
            let events = EventLog()
            let result = try await right.login(site, storage: CookieStorage(), observer: events.observer)
            #expect(result.steps.map(\.step) == ["api login", "sign", "signed call"])
            #expect(result.steps.last?.status == 200)
            #expect(events.pluginLines.count == 1)
            #expect(events.pluginLines.first?.hasPrefix("signed GET /api/signed at ") == true)

            let wrong = FlowEngine(
                client: client, credentials: DictionaryCredentials(values: ["username": "alice", "password": "signer-pass", "signing_key": "not-the-key"]),
                environment: Self.environment)
            let error = try #require(await loginError(wrong, site))
            #expect(error.step == "signed call")
            #expect(error.response?.status == 401)
            #expect(error.response?.bodyExcerpt.contains("wrong signature") == true)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test func theSignerRefusesBadOptionsInOneSentence() async throws {
        let site = Fixture.site([Step(name: "sign", mark: Fixture.mark, action: .plugin(Self.shipped(
            "sign-request.py", with: .object([("key", .string(Fixture.template("k"))), ("path", .string(Fixture.template("api/x")))]))))])
        let error = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment), site))
        #expect(error.detail == "sign-request.py: with.path must start with / (the path of the request being signed)")
    }

    /// browser-login's errors when its parts are missing are one sentence saying what to install.
    @Test func browserLoginSaysWhatToInstall() async throws {
        var site = Fixture.site([])
        site.login = .plugin(Self.shipped(
            "browser-login", env: [.set(name: "SESSIONKEEPER_PLUGIN_VENV", value: Fixture.template("/nonexistent/venv"))],
            with: .object([("url", .string(Fixture.template("/login")))])))
        let error = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment), site))
        #expect(error.detail == "browser-login: Playwright for Python is not installed (looked in /nonexistent/venv); "
            + "run scripts/install-deps --browser, which creates that virtualenv with playwright==1.65.0")

        site.login = .plugin(Self.shipped(
            "browser-login", with: .object([("url", .string(Fixture.template("/login"))), ("browser", .string(Fixture.template("/nonexistent/chromium")))])))
        let noBrowser = try #require(await loginError(Fixture.engine(FakeHTTPClient { Fixture.response($0) }, environment: Self.environment), site))
        #expect(noBrowser.detail == "browser-login: the browser /nonexistent/chromium (with.browser) is not an executable file")
    }
}
