import CookieJar
import CurlTransport
import Foundation
import HTTPTransport
import LoginFlow
import SiteConfig
import TestSupport
import Testing

/// SPEC section 3: headers built from credentials stay with their origin. Two `odd_server.py` processes on two
/// loopback ports (two origins), the real libcurl client, site files as a user writes them: a redirect from
/// one to the other delivers none of the step's credential headers nor its credential body, and a request
/// carrying a credential never follows a redirect from https to http.
@Suite(.serialized) struct CredentialRedirectIntegrationTests {
    static let apiKey = "api-key-7f3c9e"
    static let totpCode = "492817"
    static let password = "pw-Lantern-55"

    /// Credentials of every kind a template can name: a value (env here), a TOTP code and a password.
    static let credentials = """
        credentials:
          api: {env: REDIRECT_TEST_API_KEY}
          otp: {totp: {secret: redirect/seed}}
          password: {env: REDIRECT_TEST_PASSWORD}
        """

    static func engine(_ client: CurlHTTPClient) -> FlowEngine {
        Integration.engine(client, credentials: ["api": apiKey, "otp": totpCode, "password": password])
    }

    /// Runs `body` with two odd servers (the first with `firstArguments`, such as a certificate) and a client.
    static func withTwoServers(_ firstArguments: [String] = [], _ body: (Int, Int, CurlHTTPClient) async throws -> Void) async throws {
        let other = try await PythonServer.start(script: Integration.fixtures.appendingPathComponent("odd_server.py").path, arguments: [])
        do {
            try await Integration.withOddServer(firstArguments) { port, client in try await body(port, other.port, client) }
        } catch {
            await other.stop()
            throw error
        }
        await other.stop()
    }

    @Test func aRedirectToAnotherPortCarriesNoneOfTheStepsCredentialHeaders() async throws {
        try await Self.withTwoServers { port, otherPort, client in
            let yaml = """
                base_url: http://127.0.0.1:\(port)
                \(Self.credentials)
                login:
                  steps:
                    - name: same origin
                      post: /redirect/307?to=/echo
                      headers: {X-Api-Key: "{{ credentials.api }}", X-Otp: "code {{ credentials.otp }}", X-Plain: visible}
                      form: {user: alice}
                      expect:
                        json:
                          - {path: /headers/x-api-key, equals: \(Self.apiKey)}
                          - {path: /headers/x-otp, equals: "code \(Self.totpCode)"}
                          - {path: /body, equals: user=alice}
                    - name: other origin
                      post: /redirect/302?to=http://127.0.0.1:\(otherPort)/echo
                      headers: {X-Api-Key: "{{ credentials.api }}", X-Otp: "code {{ credentials.otp }}", X-Plain: visible,
                                Authorization: "Bearer {{ credentials.api }}"}
                      form: {password: "{{ credentials.password }}"}
                      expect:
                        json:
                          - {path: /host, equals: "127.0.0.1:\(otherPort)"}
                          - {path: /headers/x-plain, equals: visible}
                          - {path: /method, equals: GET}
                          - {path: /body, equals: ""}
                          - {path: /authorization, equals: null}
                        not_body_contains: ["x-api-key", "x-otp", "\(Self.apiKey)", "\(Self.totpCode)", "\(Self.password)"]
                """
            let events = EventLog()
            let result = try await Self.engine(client).login(try Integration.site(yaml), storage: CookieStorage(), observer: events.observer)
            #expect(result.steps.map(\.status) == [200, 200])
            #expect(events.exchanges.map(\.redirectHop) == [0, 1, 0, 1])
        }
    }

    @Test func aCredentialBodyIsNotSentAgainToAnotherOrigin() async throws {
        try await Self.withTwoServers { port, otherPort, client in
            for status in [307, 308] {
                let yaml = """
                    base_url: http://127.0.0.1:\(port)
                    \(Self.credentials)
                    login:
                      steps:
                        - name: sign in
                          post: /redirect/\(status)?to=http://127.0.0.1:\(otherPort)/echo
                          form: {user: alice, password: "{{ credentials.password }}"}
                    """
                let events = EventLog()
                let error = await #expect(throws: FlowError.self) {
                    _ = try await Self.engine(client).login(try Integration.site(yaml), storage: CookieStorage(), observer: events.observer)
                }
                #expect(error?.kind == .redirect)
                #expect(error?.step == "sign in")
                let message = error.map { "\($0)" } ?? ""
                #expect(message.contains("a redirect \(status) to another origin (http://127.0.0.1:\(otherPort)/echo) is not followed"), "\(message)")
                #expect(message.contains("the body carries a credential"))
                #expect(!message.contains(Self.password))
                // The other origin was never asked: one exchange, the redirect itself.
                #expect(events.exchanges.count == 1)

                // The same 307 within the origin keeps the body.
                let same = yaml.replacingOccurrences(of: "http://127.0.0.1:\(otherPort)/echo", with: "/echo")
                    + "\n      expect: {json: {path: /body, equals: \"user=alice&password=\(Self.password)\"}}\n"
                let result = try await Self.engine(client).login(try Integration.site(same), storage: CookieStorage())
                #expect(result.steps.map(\.requests) == [2])
            }
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs the openssl command to make a certificate"))
    func httpsToHTTPWithCredentialsIsRefused() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (cert, key) = try await Integration.selfSignedCertificate(in: folder)
        try await Self.withTwoServers(["--cert", cert, "--key", key]) { port, otherPort, client in
            func site(_ headers: String) -> String {
                """
                base_url: https://127.0.0.1:\(port)
                http: {ca_file: \(cert)}
                \(Self.credentials)
                login:
                  steps:
                    - name: down
                      get: /redirect/302?to=http://127.0.0.1:\(otherPort)/echo
                      headers: \(headers)
                      expect: {json: {path: /headers/x-plain, equals: visible}}
                """
            }
            let events = EventLog()
            let error = await #expect(throws: FlowError.self) {
                _ = try await Self.engine(client).login(
                    try Integration.site(site(#"{X-Api-Key: "{{ credentials.api }}"}"#)), storage: CookieStorage(), observer: events.observer)
            }
            #expect(error?.kind == .redirect)
            #expect(error?.step == "down")
            let message = error.map { "\($0)" } ?? ""
            #expect(message.contains("a redirect 302 from https to http (http://127.0.0.1:\(otherPort)/echo) is not followed"), "\(message)")
            #expect(message.contains("carries a credential in its header X-Api-Key"))
            #expect(!message.contains(Self.apiKey))
            #expect(events.exchanges.count == 1)

            // Without a credential in the request the same redirect is followed.
            let plain = try await Self.engine(client).login(try Integration.site(site("{X-Plain: visible}")), storage: CookieStorage())
            #expect(plain.steps.map(\.requests) == [2])
        }
    }
}
