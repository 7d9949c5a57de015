import CookieJar
import Foundation
import TestSupport
import Testing

/// One enabled case of the http-state parser suite (shared/conformance/http-state/README.md).
struct SuiteCase: Decodable, Sendable, CustomTestStringConvertible {
    struct Sent: Decodable, Sendable { var name: String, value: String }
    var test: String
    var received: [String]
    var sentTo: String?
    var sent: [Sent]
    enum CodingKeys: String, CodingKey { case test, received, sentTo = "sent-to", sent }

    var testDescription: String { test }
    var setURL: URL { URL(string: "http://home.example.org:8888/cookie-parser?\(test.lowercased())")! }
    var readURL: URL {
        if let sentTo { return URL(string: sentTo, relativeTo: setURL)!.absoluteURL }
        return URL(string: "http://home.example.org:8888/cookie-parser-result?\(test.lowercased())")!
    }

    static func all() -> [SuiteCase] {
        guard let url = Bundle.module.url(forResource: "parser", withExtension: "json", subdirectory: "Fixtures"),
              let data = try? Data(contentsOf: url),
              let cases = try? JSONDecoder().decode([SuiteCase].self, from: data)
        else { return [] }
        return cases.filter { !$0.test.hasPrefix("DISABLED_") }
    }
}

let suiteNow = "2015-01-01T00:00:00Z"

@Suite("sessionkeeper jar, run as a process")
struct JarCLITests {
    @Test("the suite fixture holds the 218 enabled cases")
    func fixture() {
        #expect(SuiteCase.all().count == 218)
    }

    @Test("http-state through jar store + jar header (json jar)", arguments: SuiteCase.all())
    func suiteThroughJSONJar(_ testCase: SuiteCase) async throws {
        try await runSuiteCase(testCase, jarName: "jar.json")
    }

    @Test("http-state through jar store + jar header (Netscape jar)", arguments: SuiteCase.all())
    func suiteThroughNetscapeJar(_ testCase: SuiteCase) async throws {
        try await runSuiteCase(testCase, jarName: "cookies.txt")
    }

    private func runSuiteCase(_ testCase: SuiteCase, jarName: String) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path(jarName)
        let store = try await CLIRunner.run(["jar", "store", jar, "--url", testCase.setURL.absoluteString, "--now", suiteNow, "--"] + testCase.received)
        #expect(store.status == 0, "store: \(store.stderr)")
        let header = try await CLIRunner.run(["jar", "header", jar, "--url", testCase.readURL.absoluteString, "--now", suiteNow])
        #expect(header.status == 0, "header: \(header.stderr)")
        let expected = testCase.sent.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
        #expect(header.stdout == (expected.isEmpty ? "" : expected + "\n"))
    }

    @Test("jar files are written with mode 0600 and list honours --now")
    func fileModeAndList() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("jar.json")
        let store = try await CLIRunner.run(["jar", "store", jar, "--url", "https://example.com/a/b", "--now", suiteNow,
                                       "--", "short=1; Max-Age=60", "long=2; Max-Age=3600; Secure; SameSite=Lax", "sess=3"])
        #expect(store.status == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: jar)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let now = try await CLIRunner.run(["jar", "list", jar, "--format", "header", "--now", suiteNow])
        #expect(now.stdout == "short=1; long=2; sess=3\n")
        let later = try await CLIRunner.run(["jar", "list", jar, "--format", "header", "--now", "2015-01-01T00:10:00Z"])
        #expect(later.stdout == "long=2; sess=3\n")
        let json = try await CLIRunner.run(["jar", "list", jar, "--format", "json", "--now", suiteNow])
        let decoded = try CookieCodec.decode(json.stdout, as: .json, url: nil, now: Date())
        #expect(decoded.map(\.name) == ["short", "long", "sess"])
        #expect(decoded[1].secure && decoded[1].sameSite == .lax && decoded[0].path == "/a")
    }

    @Test("jar convert between every format keeps what the target format holds")
    func convert() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("jar.json")
        _ = try await CLIRunner.run(["jar", "store", jar, "--url", "https://www.example.com/", "--now", suiteNow,
                               "--", "a=1; Domain=example.com; HttpOnly", "b=2; Max-Age=600; Secure"])
        let netscape = folder.path("cookies.txt")
        let toNetscape = try await CLIRunner.run(["jar", "convert", jar, netscape])
        #expect(toNetscape.status == 0, "\(toNetscape.stderr)")
        let text = try String(contentsOfFile: netscape, encoding: .utf8)
        #expect(text.contains("#HttpOnly_.example.com\tTRUE\t/\tFALSE\t0\ta\t1"))
        #expect(text.contains("www.example.com\tFALSE\t/\tTRUE\t1420071000\tb\t2"))
        for format in CookieFormat.allCases where format != .header {
            let out = try await CLIRunner.run(["jar", "convert", netscape, "-", "--format", format.rawValue])
            #expect(out.status == 0)
            #expect(CookieFormat.guess(from: out.stdout) == format)
            let back = try await CLIRunner.run(["jar", "list", jar, "--format", format.rawValue, "--now", suiteNow])
            #expect(back.status == 0)
        }
        let playwright = folder.path("state.pw")
        _ = try await CLIRunner.run(["jar", "convert", netscape, playwright, "--format", "playwright"])
        let roundTrip = try await CLIRunner.run(["jar", "convert", playwright, "-", "--format", "header"])
        #expect(roundTrip.stdout == "a=1; b=2\n")
    }

    @Test("bad input: one line on stderr, exit 2", arguments: [
        ["jar", "header", "/nonexistent/jar.json", "--url", "http://example.com/"],
        ["jar", "header", "JAR", "--url", "not a url"],
        ["jar", "header", "JAR", "--url", "ftp://example.com/"],
        ["jar", "header", "JAR", "--url", "http://example.com/", "--now", "yesterday"],
        ["jar", "store", "JAR", "--url", "http://example.com/", "--now", "2015-13-01T00:00:00Z", "--", "a=1"],
        ["jar", "list", "JAR", "--format", "yaml"],
        ["jar", "list", "BROKEN"],
        ["jar", "convert", "JAR", "-", "--format", "xml"],
        ["jar", "convert", "BROKEN", "-"],
    ])
    func badInput(_ arguments: [String]) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("jar.json")
        try "[]\n".write(toFile: jar, atomically: true, encoding: .utf8)
        let broken = folder.path("broken.txt")
        try "example.com\tFALSE\t/\tFALSE\tsoon\tsid\tSECRET-VALUE\n".write(toFile: broken, atomically: true, encoding: .utf8)
        let resolved = arguments.map { $0 == "JAR" ? jar : $0 == "BROKEN" ? broken : $0 }
        let result = try await CLIRunner.run(resolved)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("sessionkeeper: "))
        #expect(!result.stderr.contains("SECRET-VALUE"))
    }

    @Test("a rejected Set-Cookie is no error; --verbose says why without the value")
    func verboseRejections() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("cookies.txt")
        let secrets = (1...8).map { "SECRET\($0)x" }
        let headers = [
            "a=\(secrets[0]); Domain=co.uk", "b=\(secrets[1]); Secure", "__Host-c=\(secrets[2]); Path=/",
            "d=\(secrets[3]); Domain=other.org", "\(secrets[4])", "=\(secrets[5])",
            "e=\(String(repeating: "x", count: 4100))\(secrets[6])", "kept=\(secrets[7])",
        ]
        let result = try await CLIRunner.run(["jar", "store", jar, "--url", "http://www.example.co.uk/", "--now", suiteNow, "--verbose", "--"] + headers)
        #expect(result.status == 0)
        for secret in secrets { #expect(!result.stderr.contains(secret)) }
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == headers.count)
        #expect(lines.filter { $0.hasPrefix("rejected") }.count == 7)
        #expect(lines.contains("rejected cookie a: Domain=co.uk is a public suffix"))
        #expect(lines.contains("rejected cookie b: Secure cookie from an insecure origin"))
        #expect(lines.contains { $0.hasPrefix("rejected cookie e: name and value exceed 4096 bytes") })
        #expect(lines.contains { $0.hasPrefix("stored kept for www.example.co.uk/") })
        let header = try await CLIRunner.run(["jar", "header", jar, "--url", "http://www.example.co.uk/", "--now", suiteNow])
        #expect(header.stdout == "kept=\(secrets[7])\n")
    }
}
