@testable import CurlTransport
import Foundation
import HTTPTransport
import Testing

/// The pure parts, without I/O: the header-block state machine and option validation.
@Suite("Response header blocks and option validation")
struct ParsingTests {
    private func parse(_ lines: [String]) -> ResponseHeaderParser {
        var parser = ResponseHeaderParser()
        for line in lines { parser.consume(line: line) }
        return parser
    }

    @Test("interim 100 and 103 blocks are dropped; the final block's fields stay in order")
    func interimBlocks() {
        let parser = parse([
            "HTTP/1.1 100 Continue\r\n", "\r\n",
            "HTTP/1.1 103 Early Hints\r\n", "Link: </a.css>; rel=preload\r\n", "\r\n",
            "HTTP/1.1 200 OK\r\n", "Set-Cookie: a=1\r\n", "Content-Type: text/html\r\n", "Set-Cookie: b=2\r\n", "\r\n",
        ])
        #expect(parser.status == 200)
        #expect(parser.blockCount == 3)
        #expect(parser.headers.fields.map(\.name) == ["Set-Cookie", "Content-Type", "Set-Cookie"])
        #expect(parser.headers.values(for: "set-cookie") == ["a=1", "b=2"])
        #expect(parser.headers["Link"] == nil)
    }

    @Test("trailers after the final block are not response headers; they are kept apart")
    func trailersApart() {
        let parser = parse([
            "HTTP/1.1 200 OK\r\n", "Transfer-Encoding: chunked\r\n", "\r\n", "X-Checksum: abc\r\n", " folded\r\n",
            "Server-Timing: total;dur=3\r\n", "\r\n",
        ])
        #expect(parser.headers.count == 1)
        #expect(parser.headers["X-Checksum"] == nil)
        #expect(parser.trailers["X-Checksum"] == "abc folded")
        #expect(parser.trailers.fields.map(\.name) == ["X-Checksum", "Server-Timing"])
    }

    @Test("the head is complete at the empty line of a final block, never of an interim one")
    func headCompletion() {
        var parser = ResponseHeaderParser()
        for (line, complete) in [
            ("HTTP/1.1 100 Continue\r\n", false), ("\r\n", false),
            ("HTTP/1.1 103 Early Hints\r\n", false), ("Link: </a.css>\r\n", false), ("\r\n", false),
            ("HTTP/1.1 204 No Content\r\n", false), ("Server: x\r\n", false), ("\r\n", true),
        ] {
            parser.consume(line: line)
            #expect(parser.headComplete == complete, "after \(line.debugDescription)")
        }
        #expect(parser.trailers.isEmpty)
        // Lines before any status line are neither headers nor trailers.
        let stray = parse(["X-Stray: 1\r\n", "\r\n"])
        #expect(!stray.headComplete)
        #expect(stray.trailers.isEmpty && stray.headers.isEmpty)
    }

    @Test("HTTP/2 status lines, optional whitespace, obs-fold and empty values")
    func fieldSyntax() {
        let parser = parse([
            "HTTP/2 302\r\n", "location:   /next \t\r\n", "x-folded: first\r\n", " second\r\n", "x-empty:\r\n",
            "no colon here\r\n", "\r\n",
        ])
        #expect(parser.status == 302)
        #expect(parser.headers["Location"] == "/next")
        #expect(parser.headers["X-Folded"] == "first second")
        #expect(parser.headers["X-Empty"] == "")
        #expect(parser.headers.count == 3)
    }

    @Test("a proxy's CONNECT answer is replaced by the origin's response")
    func connectBlock() {
        let parser = parse([
            "HTTP/1.1 200 Connection established\r\n", "\r\n", "HTTP/1.1 404 Not Found\r\n", "Server: origin\r\n", "\r\n",
        ])
        #expect(parser.status == 404)
        #expect(parser.headers["Server"] == "origin")
    }

    @Test("non-UTF-8 bytes are kept as ISO-8859-1")
    func latin1() {
        var parser = ResponseHeaderParser()
        parser.consume(line: "HTTP/1.1 200 OK\r\n")
        let bytes: [UInt8] = Array("X-Name: caf".utf8) + [0xE9] + [0x0D, 0x0A]
        bytes.withUnsafeBytes { parser.consume(line: $0) }
        #expect(parser.headers["X-Name"] == "café")
        let latin = parser.headers.fields(named: "X-Name").map { $0.valueIsUTF8 }
        #expect(latin == [false])
        // A folded continuation that is not UTF-8 marks the field too.
        parser.consume(line: "X-Folded: plain\r\n")
        let continuation: [UInt8] = [0x20, 0xFF, 0x0D, 0x0A]
        continuation.withUnsafeBytes { parser.consume(line: $0) }
        let folded = parser.headers.fields(named: "X-Folded").map { $0.valueIsUTF8 }
        #expect(folded == [false])
    }

    @Test("UTF-8 field bytes decode as UTF-8, ASCII ones as they are")
    func utf8AndASCII() {
        var parser = ResponseHeaderParser()
        parser.consume(line: "HTTP/1.1 200 OK\r\n")
        let bytes: [UInt8] = Array("X-Name: caf".utf8) + [0xC3, 0xA9] + [0x0D, 0x0A]
        bytes.withUnsafeBytes { parser.consume(line: $0) }
        parser.consume(line: "X-Plain: \u{7F}a;b=\"c\"\t~\r\n")
        #expect(parser.headers["X-Name"] == "café")
        #expect(parser.headers["X-Plain"] == "\u{7F}a;b=\"c\"\t~")
        let allUTF8 = parser.headers.fields.allSatisfy { $0.valueIsUTF8 }
        #expect(allUTF8)
    }

    @Test("resolve entries follow curl's HOST:PORT:ADDRESS[,ADDRESS] syntax",
          arguments: [
            ("example.com:443:10.0.0.1", true), ("example.com:443:10.0.0.1,10.0.0.2", true),
            ("example.com:443:[::1]", true), ("+example.com:443:10.0.0.1", true), ("-example.com:443", true),
            ("example.com:443", false), ("example.com:0:10.0.0.1", false), ("example.com:http:10.0.0.1", false),
            (":443:10.0.0.1", false), ("example.com:443:", false), ("example.com:443:not-an-ip", false),
            ("example.com:443:::1", false),
          ])
    func resolveSyntax(entry: String, valid: Bool) {
        #expect((RequestValidation.resolveEntryProblem(entry) == nil) == valid)
    }

    @Test("resolve entries become connect-to pins: later entries replace earlier ones, several addresses an alias")
    func connectPins() {
        let pins = ConnectPins([
            "a.test:443:10.0.0.1", "+B.test:80:10.0.0.2", "a.test:443:10.0.0.3", "c.test:443:10.0.0.4", "-C.TEST:443",
            "d.test:443:10.0.0.5,[2001:db8::1]", "e.test:443:[::1]",
        ])
        #expect(pins.connectTo == [
            "B.test:80:10.0.0.2:80", "a.test:443:10.0.0.3:443", "d.test:443:10.0.0.5_2001-db8--1:443",
            "e.test:443:[::1]:443",
        ])
        #expect(pins.aliases == ["10.0.0.5_2001-db8--1:443:10.0.0.5,[2001:db8::1]"])
        #expect(ConnectPins([]).connectTo.isEmpty)

        let many = Array(repeating: "[2001:db8:1234:5678:9abc:def0:1234:5678]", count: 7).joined(separator: ",")
        #expect(RequestValidation.resolveEntryProblem("a.test:443:\(many)") == "too many addresses for one pin")
    }

    @Test("method and header names must be RFC 9110 tokens; values must not hold CR, LF or NUL")
    func tokens() {
        #expect(RequestValidation.isToken("PURGE"))
        #expect(RequestValidation.isToken("X-Custom_1.2"))
        #expect(!RequestValidation.isToken(""))
        #expect(!RequestValidation.isToken("GET /"))
        #expect(!RequestValidation.isToken("Na:me"))
        #expect(RequestValidation.isFieldValue("a b\tc"))
        #expect(!RequestValidation.isFieldValue("a\r\nb"))
        #expect(!RequestValidation.isFieldValue("a\u{0}b"))
    }

    @Test("the scrubber removes URL secrets, proxy credentials and header values from libcurl's text")
    func scrubber() throws {
        let url = try #require(URL(string: "https://bob:hunter22@example.com/path?token=abcdef"))
        let scrubber = LogScrubber(
            url: url, proxy: "http://proxyuser:proxypass@10.0.0.1:3128", headerValues: ["Bearer tok3n", "on"])
        let text = scrubber.scrub(
            "failed https://bob:hunter22@example.com/path?token=abcdef via http://proxyuser:proxypass@10.0.0.1:3128 "
                + "with Bearer tok3n, token=abcdef, on")
        for secret in ["hunter22", "abcdef", "proxypass", "proxyuser", "tok3n", "bob:"] {
            #expect(!text.contains(secret), "\(text)")
        }
        #expect(text.contains("https://example.com/path?…"))
        #expect(text.contains("10.0.0.1:3128"))
        #expect(text.hasSuffix(", on"), "values shorter than 4 characters are left alone")
    }

    @Test("durations become whole milliseconds, rounded up")
    func milliseconds() {
        #expect(Duration.seconds(30).roundedUpMilliseconds == 30_000)
        #expect(Duration.microseconds(1).roundedUpMilliseconds == 1)
        #expect(Duration.milliseconds(1500).roundedUpMilliseconds == 1500)
    }
}
