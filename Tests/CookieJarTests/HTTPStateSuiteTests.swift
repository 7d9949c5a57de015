import Foundation
import Testing
@testable import CookieJar

/// One test of the http-state parser suite (see shared/conformance/http-state/README.md).
struct HTTPStateCase: Decodable, Sendable, CustomTestStringConvertible {
    struct SentCookie: Decodable, Sendable, Equatable {
        var name: String
        var value: String
    }

    var test: String
    var received: [String]
    var sentTo: String?
    var sent: [SentCookie]

    enum CodingKeys: String, CodingKey {
        case test, received, sentTo = "sent-to", sent
    }

    var testDescription: String { test }

    /// Where the cookies are set: `http://home.example.org:8888/cookie-parser?name`.
    var setURL: URL { URL(string: "http://home.example.org:8888/cookie-parser?\(test.lowercased())")! }

    /// Where they are read back: `sent-to` resolved against the set URL, or the suite's default.
    var readURL: URL {
        if let sentTo { return URL(string: sentTo, relativeTo: setURL)!.absoluteURL }
        return URL(string: "http://home.example.org:8888/cookie-parser-result?\(test.lowercased())")!
    }

    /// The expected Cookie header, nil for none.
    var expectedHeader: String? {
        sent.isEmpty ? nil : sent.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }
}

enum Fixtures {
    static func data(_ name: String) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"))
        return try Data(contentsOf: url)
    }

    /// The suite's clock: its expiry dates (2019, 2027...) are fixed, so it runs at 2015-01-01T00:00:00Z.
    static let suiteNow = Date(timeIntervalSince1970: 1_420_070_400)

    /// Every enabled test of parser.json (loaded when the test list is built, so each shows by name).
    static func parserCases() -> [HTTPStateCase] {
        guard let url = Bundle.module.url(forResource: "parser", withExtension: "json", subdirectory: "Fixtures"),
              let data = try? Data(contentsOf: url),
              let cases = try? JSONDecoder().decode([HTTPStateCase].self, from: data)
        else { return [] }
        return cases.filter { !$0.test.hasPrefix("DISABLED_") }
    }

    struct DateCase: Decodable, Sendable, CustomTestStringConvertible {
        var test: String
        var expected: String?
        var testDescription: String { test.debugDescription }
    }

    /// A dates file; the BSD one opens with `//` comment lines before the JSON list.
    static func dateCases(_ file: String) -> [DateCase] {
        guard let url = Bundle.module.url(forResource: file, withExtension: "json", subdirectory: "Fixtures"),
              let text = try? String(contentsOf: url, encoding: .utf8)
        else { return [] }
        let json = text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
            .joined(separator: "\n")
        return (try? JSONDecoder().decode([DateCase].self, from: Data(json.utf8))) ?? []
    }
}

@Suite("http-state conformance")
struct HTTPStateSuiteTests {
    @Test("the suite's files hold every case the README counts")
    func caseCounts() {
        #expect(Fixtures.parserCases().count == 218)
        #expect(Fixtures.dateCases("dates-examples").count > 0)
        #expect(Fixtures.dateCases("dates-bsd-examples").count > 0)
    }

    @Test("parser.json", arguments: Fixtures.parserCases())
    func parserCase(_ testCase: HTTPStateCase) {
        let storage = CookieStorage(clock: { Fixtures.suiteNow })
        storage.setCookies(fromHeaders: testCase.received, for: testCase.setURL, mainDocumentURL: testCase.setURL)
        #expect(storage.cookieHeader(for: testCase.readURL) == testCase.expectedHeader)
    }

    @Test("dates-examples.json", arguments: Fixtures.dateCases("dates-examples"))
    func dateExample(_ testCase: Fixtures.DateCase) {
        #expect(CookieDateParser.parse(testCase.test).map(CookieTime.httpDate) == testCase.expected)
    }

    @Test("dates-bsd-examples.json", arguments: Fixtures.dateCases("dates-bsd-examples"))
    func bsdDateExample(_ testCase: Fixtures.DateCase) {
        #expect(CookieDateParser.parse(testCase.test).map(CookieTime.httpDate) == testCase.expected)
    }
}
