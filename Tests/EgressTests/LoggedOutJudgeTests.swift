import Egress
import Foundation
import HTTPTransport
import SiteConfig
import Testing

/// The logged-out judgement (SPEC section 10, `egress.logged_out`), without I/O.
@Suite struct LoggedOutJudgeTests {
    private let page = URL(string: "https://wiki.example.com/api/pages?id=7")!

    private func judge(_ rule: LoggedOutRule) throws -> LoggedOutJudge { try LoggedOutJudge(rule) }

    @Test func theDefaultRuleIsA401() throws {
        let judge = try judge(LoggedOutRule())
        #expect(judge.judge(status: 401, url: page, headers: [:], bodyPrefix: nil) == .status(401))
        for status in [200, 204, 302, 403, 404, 500] {
            #expect(judge.judge(status: status, url: page, headers: [:], bodyPrefix: Data("Please sign in".utf8)) == nil)
        }
        #expect(!judge.needsBody(status: 200, url: page, headers: [:], method: "GET"), "no body_contains, no body needed")
    }

    /// The default without `egress.logged_out` (SPEC section 10): a redirect to the login page on the same origin, or
    /// the check's own request with a status the check does not accept.
    @Test func theDerivedRuleKnowsTheLoginPageAndTheCheck() throws {
        let judge = try judge(LoggedOutRule(
            loginPaths: ["/accounts/login/"],
            check: .init(method: "GET", pathAndQuery: "/api/me", statuses: [200], followsRedirects: false)))
        #expect(judge.judge(status: 302, url: page, headers: ["Location": "/accounts/login/?next=/api/pages"], bodyPrefix: nil) == .loginRedirect)
        #expect(judge.judge(status: 302, url: page, headers: ["Location": "https://wiki.example.com/accounts/login/"], bodyPrefix: nil) == .loginRedirect)
        #expect(judge.judge(status: 302, url: page, headers: ["Location": "https://other.example.com/accounts/login/"], bodyPrefix: nil) == nil)
        #expect(judge.judge(status: 302, url: page, headers: ["Location": "/accounts/profile/"], bodyPrefix: nil) == nil)
        #expect(judge.judge(status: 200, url: URL(string: "https://wiki.example.com/accounts/login/")!, headers: [:], bodyPrefix: nil) == nil,
                "the login page itself is not a logged-out answer")
        let me = URL(string: "https://wiki.example.com/api/me")!
        #expect(judge.judge(status: 403, url: me, headers: [:], bodyPrefix: nil, method: "GET") == .check(403))
        #expect(judge.judge(status: 200, url: me, headers: [:], bodyPrefix: nil, method: "GET") == nil)
        #expect(judge.judge(status: 403, url: me, headers: [:], bodyPrefix: nil, method: "POST") == nil, "another request")
        #expect(judge.judge(status: 403, url: page, headers: [:], bodyPrefix: nil, method: "GET") == nil, "another URL")
        #expect(judge.judge(status: 401, url: page, headers: [:], bodyPrefix: nil) == .status(401))
    }

    @Test func anyOneTestIsEnough() throws {
        let judge = try judge(LoggedOutRule(statuses: [401, 403], urlPattern: "/login", bodyText: "Please sign in"))
        #expect(judge.judge(status: 403, url: page, headers: [:], bodyPrefix: nil) == .status(403))
        #expect(judge.judge(status: 200, url: URL(string: "https://wiki.example.com/login?next=/")!, headers: [:], bodyPrefix: nil) == .url)
        #expect(judge.judge(status: 200, url: page, headers: [:], bodyPrefix: Data("<h1>Please sign in</h1>".utf8)) == .body)
        #expect(judge.judge(status: 200, url: page, headers: [:], bodyPrefix: Data("<h1>Welcome</h1>".utf8)) == nil)
        #expect(judge.judge(status: 200, url: page, headers: [:], bodyPrefix: nil) == nil, "a body not read says nothing")
    }

    @Test func aRedirectsLocationIsMatchedResolvedAgainstTheRequest() throws {
        let judge = try judge(LoggedOutRule(statuses: [], urlPattern: "^https://wiki\\.example\\.com/login"))
        for location in ["/login?next=%2Fapi", "https://wiki.example.com/login", "../login"] {
            #expect(judge.judge(status: 302, url: page, headers: ["Location": location], bodyPrefix: nil) == .location, "\(location)")
        }
        #expect(judge.judge(status: 302, url: page, headers: ["Location": "/dashboard"], bodyPrefix: nil) == nil)
        #expect(judge.judge(status: 302, url: page, headers: ["Location": "https://sso.example.com/login"], bodyPrefix: nil) == nil)
        // A Location outside a redirect is not where the client is sent.
        #expect(judge.judge(status: 201, url: page, headers: ["Location": "/login"], bodyPrefix: nil) == nil)
    }

    @Test func theBodyIsLookedAtOnlyWithinItsPrefixAndUnencoded() throws {
        let judge = try judge(LoggedOutRule(statuses: [], bodyText: "Session expired"))
        let limit = LoggedOutRule.bodyPrefixLimit
        let early = Data(repeating: 0x20, count: limit - 15) + Data("Session expired".utf8)
        #expect(judge.judge(status: 200, url: page, headers: [:], bodyPrefix: early) == .body)
        let late = Data(repeating: 0x20, count: limit - 14) + Data("Session expired".utf8)
        #expect(judge.judge(status: 200, url: page, headers: [:], bodyPrefix: late) == nil, "the text ends past the prefix")
        // Bytes, not characters: text around it need not be UTF-8.
        let binary = Data([0xFF, 0xFE, 0x00]) + Data("Session expired".utf8) + Data([0xC3])
        #expect(judge.judge(status: 200, url: page, headers: [:], bodyPrefix: binary) == .body)
        #expect(judge.judge(status: 200, url: page, headers: ["Content-Encoding": "gzip"], bodyPrefix: early) == nil)
        #expect(judge.judge(status: 200, url: page, headers: ["Content-Encoding": "identity"], bodyPrefix: early) == .body)
    }

    @Test func theBodyIsNeededOnlyWhenNothingElseDecidedAndThereIsOne() throws {
        let judge = try judge(LoggedOutRule(statuses: [401], urlPattern: "/login", bodyText: "Please sign in"))
        #expect(judge.needsBody(status: 200, url: page, headers: [:], method: "GET"))
        #expect(judge.needsBody(status: 200, url: page, headers: [:], method: "POST"))
        #expect(!judge.needsBody(status: 401, url: page, headers: [:], method: "GET"), "the status decided")
        #expect(!judge.needsBody(status: 302, url: page, headers: ["Location": "/login"], method: "GET"), "the Location decided")
        #expect(!judge.needsBody(status: 200, url: page, headers: [:], method: "HEAD"))
        #expect(!judge.needsBody(status: 204, url: page, headers: [:], method: "GET"))
        #expect(!judge.needsBody(status: 304, url: page, headers: [:], method: "GET"))
        #expect(!judge.needsBody(status: 200, url: page, headers: ["Content-Encoding": "br"], method: "GET"))
    }

    @Test func contentEncodingsAreReadAsLists() {
        #expect(LoggedOutJudge.canInspectBody([:]))
        #expect(LoggedOutJudge.canInspectBody(["Content-Encoding": "Identity"]))
        #expect(!LoggedOutJudge.canInspectBody(["Content-Encoding": "identity, gzip"]))
        #expect(!LoggedOutJudge.canInspectBody(HTTPHeaders([("Content-Encoding", "identity"), ("Content-Encoding", "zstd")])))
    }

    @Test func anInvalidPatternIsATypedError() {
        #expect(throws: LoggedOutJudge.InvalidPattern.self) { try LoggedOutJudge(LoggedOutRule(urlPattern: "(")) }
    }

    @Test func reasonsNameTheTestNeverTheContent() {
        #expect(LoggedOutJudge.Reason.status(401).description == "status 401")
        #expect(LoggedOutJudge.Reason.body.description == "the body contains body_contains")
    }
}
