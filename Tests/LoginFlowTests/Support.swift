import CookieJar
import Foundation
import HTTPTransport
import Locking
import LoginFlow
import SiteConfig

/// An HTTPClient that answers from a script and records every request it was sent.
final class FakeHTTPClient: HTTPClient {
    typealias Responder = @Sendable (HTTPRequest) throws(TransportError) -> HTTPResponse

    private let responder: Responder
    private let recorded = Locked<[HTTPRequest]>([])
    private let recordedOptions = Locked<[TransportOptions]>([])
    let preferredTaskExecutor: (any TaskExecutor)?

    init(executor: (any TaskExecutor)? = nil, _ responder: @escaping Responder) {
        self.responder = responder
        preferredTaskExecutor = executor
    }

    /// Answers by `METHOD path` (`GET /login`); anything else gets a 404.
    convenience init(routes: [String: @Sendable (HTTPRequest) -> HTTPResponse]) {
        self.init { request in
            let key = "\(request.method) \(request.url.path)"
            if let route = routes[key] { return route(request) }
            return HTTPResponse(status: 404, url: request.url, body: Data("no route \(key)".utf8))
        }
    }

    func send(_ request: HTTPRequest, options: TransportOptions) async throws(TransportError) -> HTTPResponse {
        recorded.withLock { $0.append(request) }
        recordedOptions.withLock { $0.append(options) }
        return try responder(request)
    }

    var requests: [HTTPRequest] { recorded.withLock { $0 } }
    var options: [TransportOptions] { recordedOptions.withLock { $0 } }
}

/// Credentials from a dictionary; unknown names fail like a missing vault item.
struct DictionaryCredentials: CredentialProvider {
    struct Missing: Error, CustomStringConvertible {
        var name: String
        var description: String { "no credential named \(name)" }
    }

    var values: [String: String]

    func value(of name: String, site: String) async throws -> String {
        guard let value = values[name] else { throw Missing(name: name) }
        return value
    }
}

/// Records the `FlowEvent`s a flow reports through its observer, for the tests to inspect.
final class EventLog: Sendable {
    private let events = Locked<[FlowEvent]>([])
    var observer: FlowObserver { { [self] event in events.withLock { $0.append(event) } } }
    var all: [FlowEvent] { events.withLock { $0 } }

    var exchanges: [FlowEvent.Exchange] {
        all.compactMap { if case .exchange(let exchange) = $0 { exchange } else { nil } }
    }
    var warnings: [String] {
        all.compactMap { if case .warning(_, let message) = $0 { message } else { nil } }
    }
    var pluginLines: [String] {
        all.compactMap { if case .pluginOutput(_, _, let line) = $0 { line } else { nil } }
    }
}

enum Fixture {
    static let base = URL(string: "https://app.example.com/")!
    static let mark = SourceMark(file: "/sites/test.yaml", line: 3, column: 5)
    static var directory: URL {
        URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("Fixtures")
    }

    static func template(_ text: String) -> Template { try! Template(parsing: text) }

    static func named(_ pairs: KeyValuePairs<String, String>) -> [NamedTemplate] {
        pairs.map { NamedTemplate(name: $0.key, value: template($0.value)) }
    }

    static func step(_ name: String, _ request: RequestStep) -> Step {
        Step(name: name, mark: mark, action: .request(request))
    }

    static func get(_ url: String, extract: [NamedExtraction] = [], expect: [Expectation] = []) -> RequestStep {
        RequestStep(method: "GET", url: template(url), extract: extract, expect: expect)
    }

    static func site(
        _ steps: [Step], credentials: [String] = [], essential: [CookieSelector] = [], accept: CookiePolicy.Accept = .always,
        http: HTTPSettings = HTTPSettings(), allowEnv: [String] = [], check: RequestStep? = nil, keepalive: RequestStep? = nil
    ) -> SiteDefinition {
        SiteDefinition(
            name: "test", file: "/sites/test.yaml", baseURL: base, http: http,
            credentials: credentials.map { CredentialEntry(name: $0, source: .secret("test/\($0)")) },
            login: .steps(steps),
            check: check.map { Probe(request: $0, every: .seconds(60), mark: mark) },
            keepalive: keepalive.map { Probe(request: $0, every: .seconds(60), mark: mark) },
            cookies: CookiePolicy(essential: essential, accept: accept), allowEnv: allowEnv)
    }

    static func engine(
        _ client: FakeHTTPClient, credentials: [String: String] = [:], environment: [String: String] = [:],
        plugins: any PluginRunner = ProcessPluginRunner()
    ) -> FlowEngine {
        FlowEngine(client: client, credentials: DictionaryCredentials(values: credentials), plugins: plugins, environment: environment)
    }

    static func response(
        _ request: HTTPRequest, _ status: Int = 200, headers: [(String, String)] = [], body: String = ""
    ) -> HTTPResponse {
        HTTPResponse(status: status, url: request.url, headers: HTTPHeaders(headers), body: Data(body.utf8))
    }
}

extension Result where Failure == FlowError {
    var flowError: FlowError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// Runs a login and returns the error it threw (nil on success).
func loginError(_ engine: FlowEngine, _ site: SiteDefinition, storage: CookieStorage = CookieStorage()) async -> FlowError? {
    do {
        _ = try await engine.login(site, storage: storage)
        return nil
    } catch {
        return error
    }
}
