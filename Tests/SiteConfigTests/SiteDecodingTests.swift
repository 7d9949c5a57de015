import Foundation
import Testing
@testable import SiteConfig

@Suite struct SiteDecodingTests {
    static let folder = Paths.fixture("valid")

    func full() throws -> SiteDefinition {
        try loader.loadSite(at: Self.folder + "/full.yaml", config: fixtureConfig())
    }

    func template(_ text: String) throws -> Template { try Template(parsing: text) }

    @Test func topLevelKeys() throws {
        let site = try full()
        #expect(site.name == "wiki")
        #expect(site.file == Self.folder + "/full.yaml")
        #expect(site.description == "Intranet wiki")
        #expect(site.baseURL == URL(string: "https://wiki.example.com/app/"))
        #expect(site.allowEnv == ["WIKI_TENANT"])
        #expect(site.enabled)
        #expect(site.access == AccessPolicy(uids: [1000, 1001], groups: ["scrapers"]))
        #expect(site.refresh == RefreshPolicy(beforeExpiry: .seconds(600), maxAge: .seconds(43_200),
            retry: .init(initial: .seconds(30), max: .seconds(1800), maxFailuresPerDay: 12)))
        #expect(site.cookies == CookiePolicy(essential: ["wiki_session"], accept: .mainDocumentDomain,
            persistSessionCookies: false, limits: .init(maxCookieBytes: 8192, maxCookiesPerDomain: 100, maxCookies: 5000),
            keepOnLogin: .names(["device_id", "remember_me"])))
        #expect(site.outputs.map(\.path) == ["/home/tester/.cache/wiki.cookies.txt", Self.folder + "/out/wiki.json"])
        #expect(site.outputs.map(\.format) == [.netscape, .json])
        #expect(site.outputs.map(\.mode) == [0o640, 0o600])
    }

    @Test func httpSettingsWithPathsResolvedAgainstTheFile() throws {
        let http = try full().http
        #expect(http == HTTPSettings(
            timeout: .seconds(20), connectTimeout: .seconds(5), userAgent: "Mozilla/5.0 (X11; Linux x86_64)",
            headers: [.init(name: "Accept-Language", value: "en"), .init(name: "X-Tenant", value: "acme")],
            proxy: "socks5h://127.0.0.1:9050", resolve: ["wiki.example.com:443:10.1.2.3"], caFile: Self.folder + "/ca.pem",
            clientCertificate: .init(certificatePath: Self.folder + "/certs/client.pem", keyPath: Self.folder + "/certs/client.key"),
            insecure: false, httpVersion: .http2, maxRedirects: 5))
    }

    @Test func credentialsInFileOrder() throws {
        let credentials = try full().credentials
        #expect(credentials.map(\.name) == ["username", "password", "token", "pin", "api", "otp"])
        #expect(credentials.map(\.source) == [
            .literal("alice"), .secret("wiki/password"), .environment("WIKI_TOKEN"), .file(path: "/home/tester/wiki.pin"),
            .command(["pass", "show", "wiki/api"]),
            .totp(TOTPParameters(secretName: "wiki/totp", digits: 8, period: .seconds(60), algorithm: .sha256)),
        ])
        #expect(credentials[0].mark?.line == 19)
    }

    @Test func loginStepsDecodeEveryKind() throws {
        guard case .steps(let steps) = try full().login else {
            Issue.record("expected steps")
            return
        }
        #expect(steps.map(\.name) == ["login page", "submit", "api", "raw", "third party", "second factor", "finish"])
        #expect(steps[0].mark.line == 29 && steps[0].mark.column == 7)

        let page = try #require(steps[0].request)
        #expect(page.method == "GET")
        #expect(page.url == (try template("/login")))
        #expect(page.headers.map(\.name) == ["Referer", "X-Requested-With"], "merge key entries follow explicit ones")
        #expect(page.headers[0].value.variables == ["site.base_url"])
        #expect(page.query == [NamedTemplate(name: "tenant", value: try template("{{ env.WIKI_TENANT }}"), mark: page.query[0].mark)])
        #expect(page.extract.map(\.extraction) == [
            .xpath("//form[@id='login']//input[@name='csrf']/@value"), .regex("nonce=([a-f0-9]+)"), .header("Server"),
            .cookie("pre_session"), .status, .url(query: nil), .url(query: "next"),
        ])
        #expect(page.extract.map(\.name) == ["csrf", "nonce", "server", "pre", "code", "landed", "next"])

        let submit = try #require(steps[1].request)
        #expect(submit.method == "POST")
        #expect(submit.url?.source == "https://sso.example.com/login")
        #expect(submit.followRedirects == false)
        #expect(submit.handleCookies)
        guard case .form(let fields) = submit.body else {
            Issue.record("expected a form body")
            return
        }
        #expect(fields.map(\.name) == ["user", "pass", "csrf"])
        #expect(submit.variables == ["credentials.username", "credentials.password", "csrf"])
        #expect(submit.expect.map(\.kind) == [
            .status([302, 303]), .urlMatches("sso\\.example\\.com"), .notBodyContains("Invalid password"),
            .cookie("wiki_session"), .cookie("wiki_user"), .header(name: "Location", matches: "^/home"),
        ])

        let api = try #require(steps[2].request)
        #expect(api.body == .json(.object([
            ("user", .string(try template("{{ credentials.username }}"))), ("remember", .bool(true)), ("ttl", .number("3600")),
            ("scopes", .array([.string(Template(literal: "read")), .string(Template(literal: "write"))])), ("extra", .null),
        ])))
        #expect(api.expect.map(\.kind) == [.bodyContains("\"ok\""), .json(pointer: "/ok", equals: .bool(true))])

        let raw = try #require(steps[3].request)
        #expect(raw.method == "PUT")
        #expect(raw.body == .raw(try template("<login nonce='{{ nonce }}'/>"), contentType: "application/xml"))

        let thirdParty = try #require(steps[4].request)
        #expect(thirdParty.method == "DELETE")
        #expect(thirdParty.handleCookies == false)

        let plugin = try #require(steps[5].plugin)
        #expect(plugin.plugin == "ok.sh")
        #expect(plugin.executablePath == Paths.fixture("plugins/ok.sh"))
        #expect(plugin.with == .object([
            ("code", .string(try template("{{ credentials.otp }}"))), ("nested", .object([("n", .number("1"))])),
        ]))
        #expect(plugin.environment == [.set(name: "TENANT", value: try template("{{ env.WIKI_TENANT }}"))])
        #expect(plugin.timeout == .seconds(10))
        #expect(plugin.passCredentials)

        let finish = try #require(steps[6].request)
        #expect(finish.method == nil && finish.url == nil)
        #expect(finish.body == .formFrom(xpath: "//form[@id='confirm']", overrides: [
            NamedTemplate(name: "device", value: try template("{{ device }}"), mark: finish.variables.isEmpty ? nil : {
                guard case .formFrom(_, let overrides) = finish.body else { return nil }
                return overrides[0].mark
            }()),
        ]))
    }

    @Test func probes() throws {
        let site = try full()
        let check = try #require(site.check)
        #expect(check.every == .seconds(900))
        #expect(check.request.method == "GET")
        #expect(check.request.expect.map(\.kind) == [.status([200]), .json(pointer: "/user/name", equals: .string("alice"))])
        let keepalive = try #require(site.keepalive)
        #expect(keepalive.request.method == "PATCH")
        #expect(keepalive.every == .seconds(300))
        #expect(keepalive.request.expect.isEmpty)
    }

    @Test func minimalSiteTakesEveryDefault() throws {
        let site = try loader.loadSite(at: Self.folder + "/minimal.yaml", config: fixtureConfig())
        #expect(site.name == "minimal")
        #expect(site.login == .manual)
        #expect(site.http == HTTPSettings(userAgent: SessionKeeperVersion.userAgent))
        #expect(site.refresh == RefreshPolicy())
        #expect(site.cookies == CookiePolicy())
        #expect(site.cookies.keepOnLogin == .allButEssential)
        #expect(site.check == nil && site.keepalive == nil)
        #expect(site.enabled)
    }

    @Test func checkWithoutExpectationsExpectsSuccess() throws {
        let site = try site("base_url: https://a.example\nlogin: manual\ncheck: {get: /me}\n")
        #expect(site.check?.request.expect.map(\.kind) == [.status(Array(200...299))])
        #expect(site.check?.every == Probe.defaultCheckInterval)
    }

    @Test func configDefaultsMergeUnderTheSite() throws {
        let config = try loader.loadConfig(
            text: """
                defaults:
                  http: {timeout: 45s, user_agent: Default/1, headers: {Accept: text/html, X-A: one}, max_redirects: 3}
                  refresh: {before_expiry: 20m, max_age: 6h, min_interval: 5m}
                """, file: Paths.fixture("config.yaml"))
        let site = try loader.loadSite(
            text: """
                base_url: https://a.example
                login: manual
                http: {user_agent: Mine/2, headers: {x-a: two}}
                refresh: {max_age: 1h}
                """, file: Paths.fixture("merged.yaml"), config: config)
        #expect(site.http.timeout == .seconds(45))
        #expect(site.http.userAgent == "Mine/2")
        #expect(site.http.maxRedirects == 3)
        #expect(site.http.headers == [.init(name: "Accept", value: "text/html"), .init(name: "x-a", value: "two")])
        #expect(site.refresh.beforeExpiry == .seconds(1200))
        #expect(site.refresh.maxAge == .seconds(3600))
        #expect(site.refresh.minInterval == .seconds(300), "the readers' interval from the defaults")
        #expect(try SiteConfigTests.site("base_url: https://a.example\nlogin: manual\n").refresh.minInterval == .seconds(60), "1m unsaid")
        #expect(try SiteConfigTests.site("base_url: https://a.example\nlogin: manual\nrefresh: {min_interval: 90s}\n").refresh.minInterval == .seconds(90))
        #expect(throws: ConfigError.self) { try SiteConfigTests.site("base_url: https://a.example\nlogin: manual\nrefresh: {min_interval: 0s}\n") }
    }

    @Test func keepOnLoginTakesAWordOrAList() throws {
        func keep(_ value: String) throws -> KeepOnLogin {
            try site("base_url: https://a.example\nlogin: manual\ncookies: {essential: [sid], keep_on_login: \(value)}\n")
                .cookies.keepOnLogin
        }
        #expect(try keep("all-but-essential") == .allButEssential)
        #expect(try keep("none") == KeepOnLogin.none)
        #expect(try keep("[device_id]") == .names(["device_id"]))
        #expect(try keep("[device_id, sid]") == .names(["device_id", "sid"]), "an essential cookie may be kept on purpose")
        #expect(try keep("~") == .allButEssential, "a key without a value takes the default")
    }

    @Test func userAgentIsTheSitesElseTheConfigDefaultElseSessionKeepers() throws {
        let withDefault = try loader.loadConfig(
            text: "defaults:\n  http: {user_agent: Fleet/3}\n", file: Paths.fixture("config.yaml"))
        let withoutDefault = try loader.loadConfig(text: "defaults:\n  http: {timeout: 10s}\n", file: Paths.fixture("config.yaml"))
        func userAgent(site http: String, config: DaemonConfig) throws -> String? {
            try loader.loadSite(
                text: "base_url: https://a.example\nlogin: manual\n\(http)", file: Paths.fixture("ua.yaml"), config: config
            ).http.userAgent
        }
        #expect(try userAgent(site: "http: {user_agent: Mine/2}\n", config: withDefault) == "Mine/2")
        #expect(try userAgent(site: "", config: withDefault) == "Fleet/3")
        #expect(try userAgent(site: "http: {timeout: 5s}\n", config: withoutDefault) == "SessionKeeper/\(SessionKeeperVersion.string)")
        #expect(SessionKeeperVersion.userAgent == "SessionKeeper/\(SessionKeeperVersion.string)")
        // "never none": an empty one is refused where it is written, in the site or in the config.
        #expect(problems("base_url: https://a.example\nlogin: manual\nhttp: {user_agent: \"  \"}\n").map(\.mark.line) == [3])
    }

    @Test func pluginLoginAndManualLogin() throws {
        let plugin = try site("base_url: https://a.example\nlogin: {plugin: ok.sh, with: {a: 1}}\n")
        guard case .plugin(let step) = plugin.login else {
            Issue.record("expected a plugin login")
            return
        }
        #expect(step.executablePath == Paths.fixture("plugins/ok.sh"))
        #expect(step.timeout == PluginStep.defaultTimeout)
        #expect(step.passCredentials == false)
    }

    @Test func pluginStepWithoutProvidesOpensTheScope() throws {
        // The plugin may return any variable, so later steps may use names this file cannot know.
        let text = """
            base_url: https://a.example
            login:
              steps:
                - plugin: ok.sh
                - get: "/next?t={{ from_plugin }}"
            """
        #expect(problems(text).isEmpty)
        let closed = text.replacingOccurrences(of: "- plugin: ok.sh", with: "- plugin: ok.sh\n      provides: [other]")
        #expect(problems(closed).map(\.message) == [
            "step 2: '{{ from_plugin }}': no earlier step extracts 'from_plugin'",
        ])
    }

    @Test func everyProblemOfAFileIsReportedAtOnce() {
        let found = problems("""
            base_url: https://a.example
            enabled: maybe
            login:
              steps:
                - get: /a
                  post: /b
                - get: "/c?{{ nope }}"
                  expect: {status: 42}
            cookies: {accept: sometimes, essentail: [x]}
            """)
        #expect(found.map { "\($0.mark.line):\($0.mark.column)" } == ["2:10", "6:7", "7:12", "8:24", "9:19", "9:30"])
    }
}
