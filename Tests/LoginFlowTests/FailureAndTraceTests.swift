import CookieJar
import Foundation
import HTTPTransport
import LoginFlow
import SiteConfig
import Testing

/// Issue 10: a final 4xx or 5xx fails a step that names no status (as `curl --fail`), every credential and
/// environment variable is resolved before the first request, and `tracesExchanges` reports masked
/// headers, bodies and cookie decisions.
struct FailureAndTraceTests {
    @Test(arguments: [400, 401, 404, 500, 503])
    func anErrorStatusFailsAStepWithoutStatusExpectation(_ status: Int) async throws {
        let client = FakeHTTPClient { Fixture.response($0, status, headers: [("Retry-After", "120")], body: "down") }
        let site = Fixture.site([Fixture.step("front", Fixture.get("/", expect: [Expectation(.bodyContains("down"))]))])
        let error = try #require(await loginError(Fixture.engine(client), site))
        #expect(error.kind == .expectationFailed)
        #expect(error.step == "front")
        #expect(error.found == "status \(status)")
        #expect(error.response?.status == status)
        #expect(error.response?.retryAfter == "120", "the daemon's classifier sees the status and Retry-After")
    }

    @Test func anExpectedErrorStatusPasses() async throws {
        let client = FakeHTTPClient { Fixture.response($0, 401) }
        let site = Fixture.site([Fixture.step("front", Fixture.get("/", expect: [Expectation(.status([401]))]))])
        _ = try await Fixture.engine(client).login(site, storage: CookieStorage())
    }

    @Test func aMissingCredentialFailsBeforeTheFirstRequest() async throws {
        let client = FakeHTTPClient { Fixture.response($0) }
        let site = Fixture.site([
            Fixture.step("first", Fixture.get("/")),
            Fixture.step("second", RequestStep(
                method: "POST", url: Fixture.template("/login"), body: .form(Fixture.named(["p": "{{ credentials.password }}"])))),
        ], credentials: ["password"])
        let error = try #require(await loginError(Fixture.engine(client), site))
        #expect(error.kind == .credential)
        #expect(error.step == "second")
        #expect(client.requests.isEmpty)
        #expect(error.description.hasPrefix("site 'test', step 'second' (/sites/test.yaml:3:5): credential 'password' is not available: "))
    }

    @Test func anUnsetEnvironmentVariableFailsBeforeTheFirstRequest() async throws {
        let client = FakeHTTPClient { Fixture.response($0) }
        let site = Fixture.site([
            Fixture.step("first", Fixture.get("/")),
            Fixture.step("second", Fixture.get("/x?v={{ env.UNSET_FOR_TEST }}")),
        ], allowEnv: ["UNSET_FOR_TEST"])
        let error = try #require(await loginError(Fixture.engine(client), site))
        #expect(error.kind == .template)
        #expect(error.detail == "environment variable UNSET_FOR_TEST is not set; set it before logging in")
        #expect(client.requests.isEmpty)
    }

    @Test func transportErrorsReadAsSentences() {
        let error = FlowError(kind: .transport(.connect), site: "wiki", step: "login page", detail: "http://127.0.0.1:9/: refused")
        #expect(error.description == "site 'wiki', step 'login page': cannot connect to the server; http://127.0.0.1:9/: refused")
        for kind in [TransportError.Kind.dns, .connect, .tls, .timeout, .bodyTooLarge, .proxy, .invalidRequest, .protocolError, .interrupted, .requestBody, .cancelled, .other] {
            #expect(!kind.summary.hasSuffix(" error") && kind.summary.contains(" "), "\(kind) reads as words, not its case name")
        }
    }

    @Test func tracesAreMaskedAndCookieDecisionsExplained() async throws {
        let password = "Tr4ce-Secret-Value"
        let client = FakeHTTPClient(routes: [
            "GET /login": { Fixture.response($0, headers: [
                ("Set-Cookie", "first=first-cookie-value; Path=/"), ("Set-Cookie", "bad=x; Domain=elsewhere.example"),
            ], body: "<p>hello</p>") },
            "POST /login": { Fixture.response($0, headers: [("Set-Cookie", "second=second-cookie-value; Path=/")], body: "welcome") },
        ])
        let site = Fixture.site([
            Fixture.step("page", Fixture.get("/login")),
            Fixture.step("submit", RequestStep(
                method: "POST", url: Fixture.template("/login"), headers: Fixture.named(["Authorization": "Basic {{ credentials.password }}"]),
                body: .form(Fixture.named(["p": "{{ credentials.password }}"])))),
        ], credentials: ["password"])
        var engine = Fixture.engine(client, credentials: ["password": password])
        engine.tracesExchanges = true
        let log = EventLog()
        let storage = CookieStorage(limits: CookieLimits(maxCookiesPerDomain: 1))
        _ = try await engine.login(site, storage: storage, observer: log.observer)

        var requests: [FlowEvent.Trace] = [], responses: [FlowEvent.Trace] = [], cookies: [FlowEvent.CookieTrace] = []
        for event in log.all {
            switch event {
            case .requestTrace(let trace): requests.append(trace)
            case .responseTrace(let trace): responses.append(trace)
            case .cookieTrace(let trace): cookies.append(trace)
            default: break
            }
        }
        #expect(requests.map(\.method) == ["GET", "POST"])
        let post = try #require(requests.last)
        #expect(post.headers.contains(FlowEvent.Trace.Header(name: "Cookie", value: "first=<masked>")))
        #expect(post.headers.contains(FlowEvent.Trace.Header(name: "Authorization", value: "Basic <masked>")))
        #expect(post.bodyStart == "p=\(SecretMasker.mask)")
        #expect(responses.first?.headers.contains(FlowEvent.Trace.Header(name: "Set-Cookie", value: "first=<masked>; Path=/")) == true)
        #expect(responses.last?.bodyStart == "welcome")
        #expect(cookies.contains { $0.name == "first" && $0.outcome == .stored })
        #expect(cookies.contains { if case .refused = $0.outcome { $0.name == "bad" } else { false } })
        #expect(cookies.contains { if case .evicted = $0.outcome { $0.name == "first" } else { false } })
        let everything = "\(requests) \(responses) \(cookies)"
        for secret in [password, "first-cookie-value", "second-cookie-value"] {
            #expect(!everything.contains(secret))
        }
    }

    /// RFC 6265bis: a Set-Cookie whose bytes were not UTF-8 (the transport decoded them as ISO-8859-1 and
    /// said so) is refused with that reason, never stored as the other bytes the decoded text would give;
    /// the other Set-Cookie fields of the response are stored in order as usual.
    @Test func aSetCookieThatWasNotUTF8IsRefusedWithItsReason() async throws {
        let client = FakeHTTPClient { request in
            var response = Fixture.response(request, headers: [("Set-Cookie", "good=1; Path=/")])
            response.headers.add(HTTPHeaders.Field(name: "Set-Cookie", value: "latin=caf\u{E9}; Path=/", valueIsUTF8: false))
            response.headers.add(name: "Set-Cookie", value: "later=2; Path=/")
            return response
        }
        var engine = Fixture.engine(client)
        engine.tracesExchanges = true
        let log = EventLog()
        let storage = CookieStorage()
        _ = try await engine.login(Fixture.site([Fixture.step("one", Fixture.get("/"))]), storage: storage, observer: log.observer)
        #expect(storage.allCookies.map(\.name).sorted() == ["good", "later"])
        let refused = log.all.compactMap { event -> String? in
            guard case .cookieTrace(let trace) = event, case .refused(let reason) = trace.outcome, trace.name == "latin" else { return nil }
            return reason
        }
        #expect(refused == [SetCookieParseFailure.notUTF8.description])
    }

    @Test func noTracesUnlessAsked() async throws {
        let client = FakeHTTPClient { Fixture.response($0, headers: [("Set-Cookie", "a=bcdefgh")]) }
        let log = EventLog()
        _ = try await Fixture.engine(client).login(Fixture.site([Fixture.step("one", Fixture.get("/"))]), storage: CookieStorage(), observer: log.observer)
        #expect(!log.all.contains { if case .requestTrace = $0 { true } else if case .cookieTrace = $0 { true } else { false } })
    }
}
