import Egress
import Foundation
import HTTPTransport
import SiteConfig
import Testing

/// The egress route's header, path and replay rules (SPEC section 10), without I/O.
@Suite struct ProxyRulesTests {
    // MARK: ProxyHeaders

    @Test func aRequestLosesTheConnectionsFieldsHostCookieAndUserAgent() {
        let client = HTTPHeaders([
            ("Host", "localhost"), ("Cookie", "mine=1"), ("User-Agent", "curl/8"), ("Connection", "keep-alive, X-Private"),
            ("X-Private", "dropped"), ("Keep-Alive", "timeout=5"), ("TE", "trailers"), ("Transfer-Encoding", "chunked"),
            ("Upgrade", "h2c"), ("Proxy-Connection", "keep-alive"), ("Content-Length", "5"), ("Expect", "100-continue"),
            ("Proxy-Authorization", "Basic eA=="), ("Accept", "application/json"), ("X-Trace", "a"), ("X-Trace", "b"),
            ("Accept-Encoding", "gzip"),
        ])
        let sent = ProxyHeaders.request(client, siteHeaders: [], inspectsBody: false)
        #expect(sent.fields.map(\.name) == ["Accept", "X-Trace", "X-Trace", "Accept-Encoding"])
        #expect(sent.values(for: "X-Trace") == ["a", "b"], "repeated fields keep their order")
        let inspecting = ProxyHeaders.request(client, siteHeaders: [], inspectsBody: true)
        #expect(!inspecting.contains("Accept-Encoding"), "a rule that reads bodies needs them as the site wrote them")
    }

    @Test func theSitesHeadersFillInWhatTheClientDidNotSend() {
        let site = [HTTPSettings.Header(name: "X-Api-Version", value: "2"), HTTPSettings.Header(name: "Accept", value: "text/html")]
        let sent = ProxyHeaders.request(HTTPHeaders([("Accept", "application/json")]), siteHeaders: site, inspectsBody: false)
        #expect(sent.values(for: "Accept") == ["application/json"])
        #expect(sent.values(for: "X-Api-Version") == ["2"])
    }

    @Test func anAnswerLosesSetCookieAndTheConnectionsFields() {
        let upstream = HTTPHeaders([
            ("Content-Type", "text/plain"), ("Set-Cookie", "sid=secret"), ("set-cookie", "b=2"), ("Connection", "X-Hop"),
            ("X-Hop", "1"), ("Keep-Alive", "timeout=5"), ("Transfer-Encoding", "chunked"), ("Location", "/next"), ("Content-Length", "3"),
        ])
        let answer = ProxyHeaders.response(upstream)
        #expect(answer.fields.map(\.name) == ["Content-Type", "Location", "Content-Length"])
    }

    // MARK: ProxyAddress

    @Test func pathsGoUnderBaseURLAsWritten() throws {
        let address = ProxyAddress(base: URL(string: "https://app.example.com/api/")!, prefix: "/v1/sites/app/proxy")
        #expect(try address.upstreamURL("/me?x=%2F&y").absoluteString == "https://app.example.com/api/me?x=%2F&y")
        #expect(try address.upstreamURL("").absoluteString == "https://app.example.com/api/")
        #expect(try address.upstreamURL("?q=1").absoluteString == "https://app.example.com/api/?q=1")
        #expect(try address.upstreamURL("/a%20b/c").absoluteString == "https://app.example.com/api/a%20b/c")
        #expect(throws: ProxyAddress.PathError.dotSegment) { try address.upstreamURL("/../admin") }
        #expect(throws: ProxyAddress.PathError.dotSegment) { try address.upstreamURL("/a/%2E%2e/b") }
        #expect(throws: ProxyAddress.PathError.invalid) { try address.upstreamURL("/a#frag") }
    }

    @Test func locationsWithinBaseURLComeBackOnTheRoute() {
        let address = ProxyAddress(base: URL(string: "https://app.example.com/api")!, prefix: "/v1/sites/app/proxy")
        let answered = URL(string: "https://app.example.com/api/items/7")!
        #expect(address.clientLocation("/api/login?next=%2F", requestURL: answered) == "/v1/sites/app/proxy/login?next=%2F")
        #expect(address.clientLocation("https://APP.example.com:443/api/x#top", requestURL: answered) == "/v1/sites/app/proxy/x#top")
        #expect(address.clientLocation("8", requestURL: answered) == "/v1/sites/app/proxy/items/8")
        #expect(address.clientLocation("/api", requestURL: answered) == "/v1/sites/app/proxy/")
        #expect(address.clientLocation("/apiary", requestURL: answered) == nil, "outside base_url's folder")
        #expect(address.clientLocation("https://sso.example.com/login", requestURL: answered) == nil)
        #expect(address.clientLocation("http://app.example.com/api/x", requestURL: answered) == nil, "another scheme is another origin")
        let listener = ProxyAddress(base: URL(string: "http://127.0.0.1:8080/")!, prefix: "")
        #expect(listener.clientLocation("http://127.0.0.1:8080/home", requestURL: URL(string: "http://127.0.0.1:8080/")!) == "/home")
    }

    // MARK: LoggedOutHandling

    @Test func aRequestIsReplayedOnceWhenTheRetryRuleAllowsItsMethod() {
        #expect(LoggedOutHandling.decide(renewed: true, retry: .idempotent, method: "GET", bodyKept: true, isReplay: false) == .replay)
        #expect(LoggedOutHandling.decide(renewed: true, retry: .idempotent, method: "POST", bodyKept: true, isReplay: false) == .answerRenewed)
        #expect(LoggedOutHandling.decide(renewed: true, retry: .always, method: "POST", bodyKept: true, isReplay: false) == .replay)
        #expect(LoggedOutHandling.decide(renewed: true, retry: .always, method: "POST", bodyKept: false, isReplay: false) == .answerRenewed,
                "a body that streamed is gone")
        #expect(LoggedOutHandling.decide(renewed: true, retry: .never, method: "GET", bodyKept: true, isReplay: false) == .answerRenewed)
        #expect(LoggedOutHandling.decide(renewed: true, retry: .always, method: "GET", bodyKept: true, isReplay: true) == .answerAsItIs,
                "a request is sent again at most once")
        #expect(LoggedOutHandling.decide(renewed: false, retry: .always, method: "GET", bodyKept: true, isReplay: false) == .answerAsItIs)
    }
}
