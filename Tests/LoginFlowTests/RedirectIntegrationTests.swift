import CookieJar
import CurlTransport
import Foundation
import HTTPTransport
import SiteConfig
import Synchronization
import Testing

@testable import LoginFlow

/// Redirect rules over the real libcurl client against a small Python server on 127.0.0.1, reached
/// under two host names with `resolve`.
@Suite(.serialized) struct RedirectIntegrationTests {
    final class PythonServer {
        let process = Process()
        let port: Int

        init() throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [Fixture.directory.appendingPathComponent("redirect-server.py").path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            var line = Data()
            while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
                line.append(byte)
            }
            guard let port = Int(String(decoding: line, as: UTF8.self)) else {
                kill(process.processIdentifier, SIGKILL)
                throw CocoaError(.fileReadCorruptFile)
            }
            self.port = port
        }

        deinit {
            // SIGKILL, not terminate(): a child spawned from a dispatch worker thread inherits its blocked
            // signal mask, SIGTERM included.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Passes requests to the real client and keeps the responses.
    final class Recording: HTTPClient {
        let inner: CurlHTTPClient
        let responses = Mutex<[HTTPResponse]>([])
        init(_ inner: CurlHTTPClient) { self.inner = inner }
        func send(_ request: HTTPRequest, options: TransportOptions) async throws(TransportError) -> HTTPResponse {
            let response = try await inner.send(request, options: options)
            responses.withLock { $0.append(response) }
            return response
        }
    }

    static func site(port: Int, path: String, method: String) throws -> SiteDefinition {
        let loader = ConfigurationLoader(environment: [:])
        let yaml = """
            base_url: http://main.test:\(port)
            http:
              resolve: ["main.test:\(port):127.0.0.1", "other.test:\(port):127.0.0.1"]
            login:
              steps:
                - name: hop
                  \(method.lowercased()): \(path)
                  headers: {Authorization: "Bearer auth-secret-token"}
                  body: "payload"
                  expect: {status: 200}
            """
        return try loader.loadSite(
            text: yaml, file: Fixture.directory.appendingPathComponent("redirects.yaml").path,
            config: loader.defaultConfig(directory: Fixture.directory.path))
    }

    /// What the echo endpoint saw at the end of the chain, and the stored cookies.
    static func observe(
        _ path: String, method: String, accept: CookieAcceptPolicy = .always
    ) async throws -> (echo: JSONValue, cookies: [Cookie], hops: Int) {
        let server = try PythonServer()
        let curl = try CurlHTTPClient()
        defer { curl.shutdown() }
        let client = Recording(curl)
        let engine = FlowEngine(client: client, credentials: DictionaryCredentials(values: [:]), environment: [:])
        let storage = CookieStorage(acceptPolicy: accept)
        let result = try await engine.login(try site(port: server.port, path: path, method: method), storage: storage)
        let last = try #require(client.responses.withLock { $0.last })
        withExtendedLifetime(server) {}
        return (try JSONText.parse(Array(last.body)), storage.allCookies, result.steps.first?.requests ?? 0)
    }

    static func field(_ echo: JSONValue, _ name: String) -> JSONValue? { JSONPointer.resolve("/\(name)", in: echo) }

    @Test func status307KeepsMethodBodyAuthorizationAndSendsTheHopCookie() async throws {
        let (echo, _, hops) = try await Self.observe("/start307", method: "POST")
        #expect(hops == 2)
        #expect(Self.field(echo, "method") == .string("POST"))
        #expect(Self.field(echo, "body") == .string("payload"))
        #expect(Self.field(echo, "authorization") == .string("Bearer auth-secret-token"))
        #expect(Self.field(echo, "cookie") == .string("hop1=first-hop-value"))
    }

    @Test(arguments: ["/start302", "/start303"])
    func status302And303TurnAPostIntoAGetWithoutBody(path: String) async throws {
        let (echo, _, _) = try await Self.observe(path, method: "POST")
        #expect(Self.field(echo, "method") == .string("GET"))
        #expect(Self.field(echo, "body") == .string(""))
        #expect(Self.field(echo, "authorization") == .string("Bearer auth-secret-token"), "same origin keeps it")
    }

    @Test func putThrough303BecomesGet() async throws {
        let (echo, _, _) = try await Self.observe("/start303", method: "PUT")
        #expect(Self.field(echo, "method") == .string("GET"))
    }

    @Test func crossHostRedirectDropsAuthorizationAndKeepsCookiesPerHost() async throws {
        let (echo, cookies, hops) = try await Self.observe("/cross", method: "POST")
        #expect(hops == 2)
        guard case .string(let host)? = Self.field(echo, "host") else {
            Issue.record("no Host in the echo")
            return
        }
        #expect(host.hasPrefix("other.test:"))
        #expect(Self.field(echo, "method") == .string("POST"))
        #expect(Self.field(echo, "authorization") == .null)
        #expect(Self.field(echo, "cookie") == .null, "main.test's cookie must not reach other.test")
        #expect(cookies.map { "\($0.name)@\($0.domain)" } == ["hop1@main.test"])
    }

    @Test func neverPolicyStoresNothingOnAnyHop() async throws {
        let (echo, cookies, _) = try await Self.observe("/start307", method: "POST", accept: .never)
        #expect(cookies.isEmpty)
        #expect(Self.field(echo, "cookie") == .null)
    }
}
