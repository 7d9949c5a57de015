import CookieJar
import CurlTransport
import Foundation
import HTTPTransport
import LoginFlow
import SiteConfig
import TestSupport
import Testing

/// The odd cases, over the wire, against `Fixtures/integration/odd_server.py` (Python's http.server on
/// 127.0.0.1, port 0): every extractor and expectation, redirect method rewriting, cross-host
/// Authorization dropping, the accept policies, the body cap, timeouts and TLS verification.
@Suite(.serialized) struct OddServerIntegrationTests {
    @Test func everyExtractorFeedsTheNextRequest() async throws {
        try await Integration.withOddServer { port, client in
            // Each step extracts with one kind; the last step posts every variable back to /echo and expects
            // the exact form body, so a wrong extraction fails the flow with the body it saw.
            let formSafe = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._*")
            let finalURL = "http://127.0.0.1:\(port)/final?code=abc123&state=xyz"
            let expectedBody = [
                "nonce=n-123", "inputs=4", "motd=Hello+%26amp%3B+welcome", "rid=rid-42", "pc=pc-value", "code=200",
                "name=alice", "id=7", "list=%5B1%2C2%5D", "ok=true", "slash=slash", "tilde=tilde", "title=Second",
                "qcode=abc123", "final=" + finalURL.addingPercentEncoding(withAllowedCharacters: formSafe)!,
            ].joined(separator: "&")
            let yaml = """
                base_url: http://127.0.0.1:\(port)
                login:
                  steps:
                    - name: html
                      get: /page
                      extract:
                        nonce: {xpath: "//form[@id='login']//input[@name='nonce']/@value"}
                        inputs: {xpath: "count(//input)"}
                        motd: {regex: "<p class=\\"motd\\">([^<]*)</p>"}
                        rid: {header: X-Request-Id}
                        pc: {cookie: pagecookie}
                        code: {status: true}
                    - name: json
                      get: /data.json
                      extract:
                        name: {json: /user/name}
                        id: {json: /user/id}
                        list: {json: /list}
                        ok: {json: /ok}
                        slash: {json: /a~1b}
                        tilde: {json: /m~0n}
                    - name: xml
                      get: /feed.xml
                      extract:
                        title: {xpath: "string(/feed/entry[@id='e2']/title)"}
                    - name: url
                      get: /start-url
                      extract:
                        qcode: {url: {query: code}}
                        final: {url: true}
                    - name: echo
                      post: /echo
                      form:
                        nonce: "{{ nonce }}"
                        inputs: "{{ inputs }}"
                        motd: "{{ motd }}"
                        rid: "{{ rid }}"
                        pc: "{{ pc }}"
                        code: "{{ code }}"
                        name: "{{ name }}"
                        id: "{{ id }}"
                        list: "{{ list }}"
                        ok: "{{ ok }}"
                        slash: "{{ slash }}"
                        tilde: "{{ tilde }}"
                        title: "{{ title }}"
                        qcode: "{{ qcode }}"
                        final: "{{ final }}"
                      expect:
                        status: 200
                        json:
                          - {path: /method, equals: POST}
                          - {path: /content_type, equals: application/x-www-form-urlencoded}
                          - {path: /cookie, equals: pagecookie=pc-value}
                          - {path: /body, equals: "\(expectedBody)"}
                """
            let events = EventLog()
            _ = try await Integration.engine(client).login(try Integration.site(yaml), storage: CookieStorage(), observer: events.observer)
            #expect(events.exchanges.map(\.status) == [200, 200, 200, 302, 200, 200])
        }
    }

    @Test func formFromTakesEveryFieldActionAndMethod() async throws {
        try await Integration.withOddServer { port, client in
            let yaml = """
                base_url: http://127.0.0.1:\(port)
                login:
                  steps:
                    - name: page
                      get: /page
                    - name: submit
                      form_from: {xpath: "//form[@id='login']"}
                      form: {user: alice}
                      expect:
                        json:
                          - {path: /method, equals: POST}
                          - {path: /path, equals: /echo}
                          - {path: /body, equals: "nonce=n-123&user=alice&remember=yes"}
                """
            let result = try await Integration.engine(client).login(try Integration.site(yaml), storage: CookieStorage())
            #expect(result.steps.map(\.status) == [200, 200])
        }
    }

    /// Each expectation kind, failing over the wire: the error names the step and says what was expected
    /// and what was found.
    @Test(arguments: [
        ("status: 201", "status 201", "status 200"),
        ("url_matches: \"/elsewhere$\"", "URL matching", "/page"),
        ("body_contains: \"Not there\"", "Not there", nil),
        ("not_body_contains: \"Odd page\"", "Odd page", nil),
        ("cookie: missing_cookie", "missing_cookie", nil),
        ("header: X-Absent", "X-Absent", nil),
        ("header: {name: X-Request-Id, matches: \"^zzz\"}", "X-Request-Id", nil),
    ] as [(String, String, String?)])
    func failingExpectationNamesStepExpectedAndFound(expectation: String, expected: String, found: String?) async throws {
        try await Integration.withOddServer { port, client in
            let yaml = """
                base_url: http://127.0.0.1:\(port)
                login:
                  steps:
                    - name: the page
                      get: /page
                      expect: {\(expectation)}
                """
            let error = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client).login(try Integration.site(yaml), storage: CookieStorage())
            }
            #expect(error?.kind == .expectationFailed)
            #expect(error?.step == "the page")
            #expect(error?.expected?.contains(expected) == true, "expected: \(error?.expected ?? "nil")")
            if let found { #expect(error?.found?.contains(found) == true, "found: \(error?.found ?? "nil")") }
            #expect(error?.response?.status == 200)
        }
    }

    @Test(arguments: [
        ("{path: /user/name, equals: bob}", "\"bob\""),
        ("{path: /user/id, equals: 8}", "8"),
        ("{path: /nothing/here}", "/nothing/here"),
    ])
    func failingJSONExpectation(expectation: String, expected: String) async throws {
        try await Integration.withOddServer { port, client in
            let yaml = """
                base_url: http://127.0.0.1:\(port)
                login:
                  steps:
                    - name: api
                      get: /data.json
                      expect: {json: \(expectation)}
                """
            let error = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client).login(try Integration.site(yaml), storage: CookieStorage())
            }
            #expect(error?.kind == .expectationFailed)
            #expect(error?.step == "api")
            #expect(error.map { "\($0)".contains(expected) } == true, "error: \(error.map { "\($0)" } ?? "nil")")
        }
    }

    /// 301, 302 and 303 turn a POST into a GET without body; 307 and 308 keep method and body. Every hop
    /// stores its Set-Cookie and the next hop sends it.
    @Test(arguments: [(301, "GET"), (302, "GET"), (303, "GET"), (307, "POST"), (308, "POST")])
    func redirectMethodRewriting(status: Int, method: String) async throws {
        try await Integration.withOddServer { port, client in
            let keepsBody = method == "POST"
            let yaml = """
                base_url: http://127.0.0.1:\(port)
                login:
                  steps:
                    - name: post
                      post: /redirect/\(status)
                      form: {field: value}
                      expect:
                        status: 200
                        url_matches: "/echo$"
                        json:
                          - {path: /method, equals: \(method)}
                          - {path: /body, equals: "\(keepsBody ? "field=value" : "")"}
                          - {path: /content_type, equals: \(keepsBody ? "application/x-www-form-urlencoded" : "null")}
                          - {path: /cookie, equals: hop\(status)=seen}
                """
            let events = EventLog()
            _ = try await Integration.engine(client).login(try Integration.site(yaml), storage: CookieStorage(), observer: events.observer)
            #expect(events.exchanges.map { "\($0.method) \($0.status)" } == ["POST \(status)", "\(method) 200"])
        }
    }

    @Test func authorizationIsDroppedOnACrossHostRedirectAndKeptOnTheSameHost() async throws {
        try await Integration.withOddServer { port, client in
            let yaml = """
                base_url: http://main.test:\(port)
                http: {resolve: ["main.test:\(port):127.0.0.1", "other.test:\(port):127.0.0.1"]}
                login:
                  steps:
                    - name: same host
                      post: /redirect/307
                      headers: {Authorization: "Bearer same-host-token"}
                      body: payload
                      expect:
                        json:
                          - {path: /authorization, equals: "Bearer same-host-token"}
                          - {path: /host, equals: "main.test:\(port)"}
                    - name: other host
                      post: /cross
                      headers: {Authorization: "Bearer cross-host-token"}
                      body: payload
                      expect:
                        url_matches: "^http://other\\\\.test:\(port)/echo$"
                        json:
                          - {path: /authorization, equals: null}
                          - {path: /method, equals: POST}
                          - {path: /body, equals: payload}
                          - {path: /host, equals: "other.test:\(port)"}
                """
            let result = try await Integration.engine(client).login(try Integration.site(yaml), storage: CookieStorage())
            #expect(result.finalURL == "http://other.test:\(port)/echo")
        }
    }

    /// The three accept policies on a chain main.test → other.test → main.test, with main.test the
    /// main document (base_url).
    @Test(arguments: [
        ("always", ["own@main.test", "tp@other.test"], "own=1"),
        ("main-document-domain", ["own@main.test"], "own=1"),
        ("never", [], "null"),
    ])
    func acceptPolicies(policy: String, stored: [String], cookieSent: String) async throws {
        try await Integration.withOddServer { port, client in
            let yaml = """
                base_url: http://main.test:\(port)
                http: {resolve: ["main.test:\(port):127.0.0.1", "other.test:\(port):127.0.0.1"]}
                login:
                  steps:
                    - name: chain
                      get: /third-party
                      expect: {json: {path: /cookie, equals: \(cookieSent)}}
                cookies: {accept: \(policy)}
                """
            let site = try Integration.site(yaml)
            let policyValue = try #require(CookieAcceptPolicy(rawValue: policy))
            let storage = CookieStorage(acceptPolicy: policyValue)
            _ = try await Integration.engine(client).login(site, storage: storage)
            #expect(storage.allCookies.map { "\($0.name)@\($0.domain)" }.sorted() == stored)
            #expect(storage.allCookies.allSatisfy { $0.hostOnly })
        }
    }

    @Test func bodyLargerThanTheCapIsATypedError() async throws {
        try await Integration.withOddServer { port, client in
            let yaml = """
                base_url: http://127.0.0.1:\(port)
                login: {steps: [{name: big, get: /big}]}
                """
            let error = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client).login(try Integration.site(yaml), storage: CookieStorage())
            }
            #expect(error?.kind == .transport(.bodyTooLarge))
            #expect(error?.step == "big")
        }
    }

    @Test func slowAnswerTimesOutAsUnreachable() async throws {
        try await Integration.withOddServer { port, client in
            let yaml = """
                base_url: http://127.0.0.1:\(port)
                http: {timeout: 500ms}
                login: {steps: [{name: slow, get: "/slow?seconds=4"}]}
                """
            let started = ContinuousClock.now
            let error = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client).login(try Integration.site(yaml), storage: CookieStorage())
            }
            #expect(error?.kind == .transport(.timeout))
            #expect(error?.isUnreachable == true)
            #expect(ContinuousClock.now - started < .seconds(3))
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs the openssl command to make a certificate"))
    func selfSignedTLSIsRefusedByDefaultAndAcceptedWithCAFile() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (cert, key) = try await Integration.selfSignedCertificate(in: folder)
        try await Integration.withOddServer(["--cert", cert, "--key", key]) { port, client in
            let base = """
                base_url: https://127.0.0.1:\(port)
                login: {steps: [{name: page, get: /page, expect: {body_contains: Odd page}}]}
                """
            let refused = await #expect(throws: FlowError.self) {
                _ = try await Integration.engine(client).login(try Integration.site(base), storage: CookieStorage())
            }
            #expect(refused?.kind == .transport(.tls))
            #expect(refused?.isUnreachable == true)

            let trusted = try Integration.site(base + "\nhttp: {ca_file: \(cert)}\n")
            let result = try await Integration.engine(client).login(trusted, storage: CookieStorage())
            #expect(result.steps.map(\.status) == [200])

            let events = EventLog()
            let insecure = try Integration.site(base + "\nhttp: {insecure: true}\n")
            _ = try await Integration.engine(client).login(insecure, storage: CookieStorage(), observer: events.observer)
            #expect(events.warnings.count == 1)
            #expect(events.warnings.first?.contains("TLS certificate verification is disabled") == true)
        }
    }
}
