import Foundation
import HTTPTransport
import Testing

/// Header fields are looked up without regard to case (RFC 9110 section 5.1) and keep their order.
@Suite struct HTTPHeadersTests {
    @Test func lookupIgnoresCaseAndKeepsOrder() {
        let headers: HTTPHeaders = ["Set-Cookie": "a=1", "content-type": "text/html", "SET-COOKIE": "b=2"]
        #expect(headers["set-cookie"] == "a=1")
        #expect(headers["Content-Type"] == "text/html")
        #expect(headers.values(for: "Set-Cookie") == ["a=1", "b=2"])
        #expect(headers.contains("CONTENT-TYPE"))
        #expect(!headers.contains("Content-Length"))
        #expect(headers["Content-Length"] == nil)
        #expect(headers.values(for: "X-None").isEmpty)
        #expect(headers.map(\.name) == ["Set-Cookie", "content-type", "SET-COOKIE"])
    }

    @Test func replaceOrAddKeepsTheFirstPositionAndDropsLaterDuplicates() {
        var headers: HTTPHeaders = ["A": "1", "Cookie": "x=1", "B": "2", "cookie": "y=2", "C": "3"]
        headers.replaceOrAdd(name: "COOKIE", value: "z=3")
        #expect(headers.fields == [
            .init(name: "A", value: "1"), .init(name: "Cookie", value: "z=3"), .init(name: "B", value: "2"), .init(name: "C", value: "3"),
        ])
        headers.replaceOrAdd(name: "B", value: "two")
        #expect(headers.fields.map(\.value) == ["1", "z=3", "two", "3"])
        headers.replaceOrAdd(name: "D", value: "4")
        #expect(headers.fields.last == .init(name: "D", value: "4"))
        #expect(headers.count == 5)
    }

    @Test func addRemoveAndReserve() {
        var headers = HTTPHeaders()
        headers.reserveCapacity(8)
        #expect(headers.isEmpty)
        headers.add(name: "X", value: "1")
        headers.add(name: "x", value: "2")
        headers.add(name: "Y", value: "3")
        #expect(headers.values(for: "X") == ["1", "2"])
        headers.remove(name: "X")
        #expect(headers.fields == [.init(name: "Y", value: "3")])
        #expect(HTTPHeaders([("A", "1")]) == HTTPHeaders([HTTPHeaders.Field(name: "A", value: "1")]))
    }
}

/// What may reach a log line: no user info, query or fragment, which can hold secrets.
@Suite struct RedactionTests {
    @Test(arguments: [
        ("https://user:secret@example.com:8443/a/b?token=SECRET#frag", "https://example.com:8443/a/b?…"),
        ("http://example.com/login", "http://example.com/login"),
        ("http://example.com/?q=1", "http://example.com/?…"),
        ("https://example.com", "https://example.com"),
    ])
    func urlsAreRedacted(_ input: String, _ expected: String) {
        let redacted = URL(string: input)!.redactedForLog
        #expect(redacted == expected)
        #expect(!redacted.contains("SECRET") && !redacted.contains("secret"))
    }

    @Test func transportErrorsDescribeKindAndRedactedURL() {
        let error = TransportError(kind: .timeout, url: URL(string: "https://example.com/x?key=SECRET")!, message: "no answer in 5 s")
        #expect(error.description == "https://example.com/x?…: the request timed out: no answer in 5 s")
        #expect(error.isUnreachable)
        #expect(!TransportError(kind: .bodyTooLarge, url: nil, message: "m").isUnreachable)
        #expect(TransportError(kind: .other, url: nil, message: "m").description == "the request failed: m")
    }

    @Test func redirectsNeedALocation() {
        let url = URL(string: "http://example.com/")!
        #expect(HTTPResponse(status: 302, url: url, headers: ["Location": "/next"], body: Data()).isRedirect)
        #expect(!HTTPResponse(status: 302, url: url, body: Data()).isRedirect)
        #expect(!HTTPResponse(status: 200, url: url, headers: ["Location": "/next"], body: Data()).isRedirect)
        #expect(HTTPResponse(status: 200, url: url, body: Data("é".utf8)).bodyText == "é")
    }
}
