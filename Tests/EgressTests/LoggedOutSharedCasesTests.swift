import Egress
import Foundation
import HTTPTransport
import JSON
import SiteConfig
import Testing

/// The verdicts of `Fixtures/logged-out-answers.json`, which the Python client's judge gives too
/// (clients/python/tests/test_logged_out_cases.py): one rule, two clients, the same answer on every case.
struct LoggedOutSharedCasesTests {
    /// The file's cases, read once.
    static let cases: [SharedCase] = {
        let url = Bundle.module.url(forResource: "logged-out-answers", withExtension: "json", subdirectory: "Fixtures")!
        let bytes = Array(try! Data(contentsOf: url))
        return try! JSONValueDecoder().decode(SharedFile.self, from: bytes).cases
    }()

    @Test(arguments: cases)
    func theDaemonsJudgeGivesEveryVerdict(_ shared: SharedCase) throws {
        let judge = try LoggedOutJudge(shared.rule.loggedOutRule)
        for answer in shared.answers {
            let url = try #require(URL(string: answer.url))
            var headers = HTTPHeaders()
            if let location = answer.location { headers.add(name: "Location", value: location) }
            if let encoding = answer.contentEncoding { headers.add(name: "Content-Encoding", value: encoding) }
            let body = answer.body.map { Data(repeating: 0x20, count: answer.bodyPadding ?? 0) + Data($0.utf8) }
            let reason = judge.judge(status: answer.status, url: url, headers: headers, bodyPrefix: body, method: answer.method ?? "GET")
            #expect(reason.map(Self.name) == answer.verdict, "\(shared.what): \(answer.method ?? "GET") \(answer.url) \(answer.status)")
        }
    }

    /// A reason as the file names it.
    static func name(_ reason: LoggedOutJudge.Reason) -> String {
        switch reason {
        case .status: "status"
        case .url: "url"
        case .location: "location"
        case .body: "body"
        case .loginRedirect: "login_redirect"
        case .check: "check"
        }
    }
}

struct SharedFile: Decodable {
    var cases: [SharedCase]
}

/// One rule, as `GET /v1/sites/NAME` hands it out, and answers with their verdicts.
struct SharedCase: Decodable, Sendable, CustomTestStringConvertible {
    var what: String
    var rule: WireRule
    var answers: [SharedAnswer]

    var testDescription: String { what }
}

/// `egress.logged_out` in the wire's words (SocketAPI's SiteWire.egress).
struct WireRule: Decodable, Sendable {
    struct Check: Decodable, Sendable {
        var method: String
        var path: String
        var status: [Int]
        var followsRedirects: Bool

        enum CodingKeys: String, CodingKey {
            case method, path, status
            case followsRedirects = "follows_redirects"
        }
    }

    var status: [Int]
    var urlMatches: String?
    var bodyContains: String?
    var loginPaths: [String]
    var check: Check?

    enum CodingKeys: String, CodingKey {
        case status, check
        case urlMatches = "url_matches"
        case bodyContains = "body_contains"
        case loginPaths = "login_paths"
    }

    var loggedOutRule: LoggedOutRule {
        LoggedOutRule(
            statuses: status, urlPattern: urlMatches, bodyText: bodyContains, loginPaths: loginPaths,
            check: check.map { .init(method: $0.method, pathAndQuery: $0.path, statuses: $0.status, followsRedirects: $0.followsRedirects) })
    }
}

struct SharedAnswer: Decodable, Sendable {
    var url: String
    var method: String?
    var status: Int
    var location: String?
    var contentEncoding: String?
    var body: String?
    var bodyPadding: Int?
    var verdict: String?

    enum CodingKeys: String, CodingKey {
        case url, method, status, location, body, verdict
        case contentEncoding = "content_encoding"
        case bodyPadding = "body_padding"
    }
}
