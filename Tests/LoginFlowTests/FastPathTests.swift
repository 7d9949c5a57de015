import CookieJar
import Foundation
import HTTPTransport
import Locking
import SiteConfig
import Synchronization
import Testing

@testable import LoginFlow

/// The performance shortcuts give exactly what the general code they bypass gives.
@Suite struct FastPathTests {
    static let contentTypes: [String?] = [
        nil, "", "text/html", "text/html; charset=utf-8", "TEXT/HTML;CHARSET=UTF-8", "text/html;\tcharset=\"ISO-8859-1\"",
        "application/xml", "application/xhtml+xml; charset=utf-8", "text/xml;charset=\"\"", "text/html; charset=",
        "text/html; foo=bar; charset=windows-1252; charset=utf-8", "  charset=utf-8  ", ";;; charset=koi8-r;",
        "text/plain; charset=\"utf-8", "application/atom+xml", "text/html; charset = utf-8", "charset=\"\"\"", ";",
        "text/html; charset=utf-8\u{301}", "text/html; charset=ÜTF-8", "text/html;\u{A0}charset=utf-8",
    ]

    @Test(arguments: contentTypes) func mediaTypeMatchesTheUnicodePath(_ header: String?) {
        let fast = ResponseInspection.mediaType(of: header)
        let general = ResponseInspection.unicodeMediaType(of: header)
        #expect(fast.charset == general.charset)
        #expect(fast.isXML == general.isXML)
    }

    @Test func asciiPathCoversEveryPlainContentType() {
        #expect(ResponseInspection.asciiMediaType(of: "text/html; charset=\"UTF-8\"")?.charset == "utf-8")
        #expect(ResponseInspection.asciiMediaType(of: "application/rss+xml")?.isXML == true)
        #expect(ResponseInspection.asciiMediaType(of: "text/html; charset=ÜTF-8") == nil)
    }

    /// The resolved-URL cache is keyed by the base URL too: two sites sharing a step path each get their own
    /// host, an invalid URL fails every time, and a rendered URL is resolved afresh.
    @Test func stepURLsResolveAgainstEachSitesOwnBase() async throws {
        let client = FakeHTTPClient { request in HTTPResponse(status: 200, url: request.url, body: Data()) }
        let engine = Fixture.engine(client)
        func site(_ base: String, _ path: String) -> SiteDefinition {
            var site = Fixture.site([Fixture.step("page", Fixture.get(path))])
            site.baseURL = URL(string: base)!
            return site
        }
        for base in ["https://one.example/", "https://two.example/app/", "https://one.example/"] {
            _ = try await engine.login(site(base, "login"), storage: CookieStorage())
            _ = try await engine.login(site(base, " /login "), storage: CookieStorage())
        }
        #expect(client.requests.map(\.url.absoluteString) == [
            "https://one.example/login", "https://one.example/login",
            "https://two.example/app/login", "https://two.example/login",
            "https://one.example/login", "https://one.example/login",
        ])
        for _ in 0..<2 {
            let error = await loginError(engine, site("https://one.example/", "ftp://files.example/x"))
            #expect(error?.kind == .invalidRequest)
        }
    }
}

@Suite struct FastPathMaskingTests {
    /// The short-value rule counts characters (grapheme clusters), not bytes or scalars.
    @Test func shortValuesStayVisibleByCharacterCount() {
        var masker = SecretMasker()
        masker.addValue("abc")
        masker.addValue("e\u{301}e\u{301}e\u{301}")  // three characters, six scalars
        masker.addValue("\r\n\r\n\r\nx")  // four characters, seven bytes
        masker.addValue("wxyz")
        #expect(masker.redact("abc e\u{301}e\u{301}e\u{301} wxyz") == "abc e\u{301}e\u{301}e\u{301} \(SecretMasker.mask)")
        #expect(masker.redact("[\r\n\r\n\r\nx]") == "[\(SecretMasker.mask)]")
    }

    /// The remembered redaction of a final URL is the URL's own, for each distinct URL.
    @Test func finalURLIsRedactedPerURL() async throws {
        let client = FakeHTTPClient { request in HTTPResponse(status: 200, url: request.url, body: Data()) }
        let engine = Fixture.engine(client)
        for path in ["/a?token=t0ps3cret", "/b", "/a?token=t0ps3cret", "https://u:pw@other.example/c#frag"] {
            let site = Fixture.site([Fixture.step("page", Fixture.get(path))])
            let result = try await engine.login(site, storage: CookieStorage())
            let url = try #require(client.requests.last?.url)
            #expect(result.finalURL == url.redactedForLog)
            #expect(result.finalURL?.contains("t0ps3cret") == false)
            #expect(result.finalURL?.contains("pw") == false)
        }
    }
}

@Suite struct FastPathCacheSecrecyTests {
    final class Counter: Sendable {
        let value = Locked(0)
        func next() -> Int { value.withLock { $0 += 1; return $0 } }
    }

    /// A URL rendered from placeholders resolves afresh on every run of one engine, so a value extracted
    /// in one run is never served to the next; final URLs with a query are redacted each time.
    @Test func renderedStepURLsAreResolvedEachRun() async throws {
        let counter = Counter()
        let client = FakeHTTPClient { request in
            guard request.url.path == "/token" else { return HTTPResponse(status: 200, url: request.url, body: Data()) }
            return HTTPResponse(status: 200, url: request.url, headers: HTTPHeaders([("X-Token", "v\(counter.next())")]), body: Data())
        }
        let engine = Fixture.engine(client)
        let site = Fixture.site([
            Fixture.step("token", Fixture.get("/token", extract: [NamedExtraction(name: "t", extraction: .header("X-Token"))])),
            Fixture.step("page", Fixture.get("/t/{{ t }}?q={{ t }}")),
        ])
        var finals: [String?] = []
        for _ in 0..<2 { finals.append(try await engine.login(site, storage: CookieStorage()).finalURL) }
        #expect(client.requests.map(\.url.path) == ["/token", "/t/v1", "/token", "/t/v2"])
        #expect(finals == ["https://app.example.com/t/v1?…", "https://app.example.com/t/v2?…"])
    }
}

/// Flows run where the engine's placement says: on the client's preferred task executor (when it has one) for
/// `.transportThread`, where the caller runs for `.caller`.
@Suite struct PreferredExecutorTests {
    /// Counts the jobs it runs; runs them on Dispatch's global queue.
    final class CountingExecutor: TaskExecutor, @unchecked Sendable {
        let jobs = Atomic<Int>(0)
        func enqueue(_ job: consuming ExecutorJob) {
            jobs.add(1, ordering: .relaxed)
            let job = UnownedJob(job)
            DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    private func engine(_ client: FakeHTTPClient, placement: FlowEngine.Placement) -> FlowEngine {
        FlowEngine(client: client, credentials: DictionaryCredentials(values: [:]), environment: [:], placement: placement)
    }

    @Test func transportThreadPlacementRunsLoginCheckAndKeepaliveOnTheClientsExecutor() async throws {
        let executor = CountingExecutor()
        let client = FakeHTTPClient(executor: executor) { request in Fixture.response(request, 200) }
        let engine = engine(client, placement: .transportThread)
        let site = Fixture.site([Fixture.step("page", Fixture.get("/page"))], check: Fixture.get("/check"), keepalive: Fixture.get("/keep"))
        _ = try await engine.login(site, storage: CookieStorage())
        let afterLogin = executor.jobs.load(ordering: .relaxed)
        #expect(afterLogin > 0)
        _ = try await engine.check(site, storage: CookieStorage())
        let afterCheck = executor.jobs.load(ordering: .relaxed)
        #expect(afterCheck > afterLogin)
        _ = try await engine.keepalive(site, storage: CookieStorage())
        #expect(executor.jobs.load(ordering: .relaxed) > afterCheck)
    }

    @Test func callerPlacementLeavesTheClientsExecutorAlone() async throws {
        let executor = CountingExecutor()
        let client = FakeHTTPClient(executor: executor) { request in Fixture.response(request, 200) }
        #expect(FlowEngine(client: client, credentials: DictionaryCredentials(values: [:])).placement == .caller)
        let engine = engine(client, placement: .caller)
        let site = Fixture.site([Fixture.step("page", Fixture.get("/page"))], check: Fixture.get("/check"), keepalive: Fixture.get("/keep"))
        _ = try await engine.login(site, storage: CookieStorage())
        _ = try await engine.check(site, storage: CookieStorage())
        _ = try await engine.keepalive(site, storage: CookieStorage())
        #expect(executor.jobs.load(ordering: .relaxed) == 0)
        #expect(client.requests.count == 3)
    }

    @Test func aClientWithoutExecutorRunsFlowsWhereTheCallerIs() async throws {
        let client = FakeHTTPClient { request in Fixture.response(request, 200) }
        #expect(client.preferredTaskExecutor == nil)
        let result = try await engine(client, placement: .transportThread).login(
            Fixture.site([Fixture.step("page", Fixture.get("/page"))]), storage: CookieStorage())
        #expect(result.steps.count == 1)
    }
}

/// The allocation-free variable visitor sees what `variables` lists, and form bodies encode alike either way.
@Suite struct VariableVisitorTests {
    @Test func visitorMatchesTheVariableList() throws {
        let step = RequestStep(
            method: "POST", url: try Template(parsing: "/x/{{ a }}/{{ b }}"),
            headers: [NamedTemplate(name: "H", value: try Template(parsing: "{{ credentials.token }} {{ a }}"))],
            query: [NamedTemplate(name: "q", value: try Template(parsing: "{{ env.HOME }}"))],
            body: .form([NamedTemplate(name: "u", value: try Template(parsing: "{{ credentials.user }}{{ b }}"))]))
        var visited: [String] = []
        step.forEachVariable { visited.append($0) }
        #expect(visited == ["a", "b", "credentials.token", "a", "env.HOME", "credentials.user", "b"])
        var unique: [String] = []
        for name in visited where !unique.contains(name) { unique.append(name) }
        #expect(unique == step.variables)
        #expect(visited.filter(RunState.needsPreparation) == ["credentials.token", "env.HOME", "credentials.user"])
    }

    @Test func formBodyBytesMatchTheStringForm() {
        let fields: [(name: String, value: String)] = [("user name", "al ice&bob"), ("pässwörd", "a=b+c/é"), ("", ""), ("csrf", "x.y-z_*~")]
        #expect(String(decoding: FormEncoding.urlEncodedData(fields), as: UTF8.self) == FormEncoding.urlEncoded(fields))
        #expect(FormEncoding.urlEncoded(fields) == "user+name=al+ice%26bob&p%C3%A4ssw%C3%B6rd=a%3Db%2Bc%2F%C3%A9&=&csrf=x.y-z_*%7E")
        #expect(FormEncoding.urlEncodedData([]).isEmpty)
    }
}
