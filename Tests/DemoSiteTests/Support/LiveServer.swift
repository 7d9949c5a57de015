import CurlTransport
import Foundation
import HTTPTransport
import HTTPTypes
import DemoSite
import Logging
import NIOCore
import ServiceLifecycle

/// The site's answer to one request, as the tests read it.
struct TestResponse: Sendable {
    let status: HTTPTypes.HTTPResponse.Status
    let headers: HTTPFields
    let body: ByteBuffer
}

/// Sends requests to a demo site listening on 127.0.0.1 through libcurl, as a login flow does: no redirect
/// followed, no cookie kept, the header fields exactly as given (a `Host` field included).
struct SiteClient: Sendable {
    let baseURL: URL
    let transport: CurlHTTPClient

    /// `uri` sent to the server, with `authority` as its `Host` when given (the site's other host names, which
    /// all lead to 127.0.0.1 here).
    func execute(
        uri: String, method: HTTPTypes.HTTPRequest.Method, authority: String? = nil, headers: HTTPFields = [:], body: ByteBuffer? = nil
    ) async throws -> TestResponse {
        guard let url = URL(string: uri, relativeTo: baseURL)?.absoluteURL else { throw SiteClientError.badURI(uri) }
        var fields = HTTPHeaders()
        if let authority { fields.add(name: "Host", value: authority) }
        for field in headers { fields.add(name: field.name.rawName, value: field.value) }
        let request = HTTPTransport.HTTPRequest(method: method.rawValue, url: url, headers: fields, body: body.map { Data($0.readableBytesView) })
        let answer = try await transport.send(request, options: TransportOptions())
        var answerFields = HTTPFields()
        for field in answer.headers {
            guard let name = HTTPField.Name(field.name) else { continue }
            answerFields.append(HTTPField(name: name, value: field.value))
        }
        return TestResponse(status: .init(code: answer.status), headers: answerFields, body: ByteBuffer(bytes: answer.body))
    }

    func get(_ uri: String, headers: HTTPFields = [:]) async throws -> TestResponse {
        try await execute(uri: uri, method: .get, headers: headers)
    }

    func post(_ uri: String, headers: HTTPFields = [:], body: ByteBuffer? = nil) async throws -> TestResponse {
        try await execute(uri: uri, method: .post, headers: headers, body: body)
    }

    /// A client of the server at 127.0.0.1:`port` for the length of `body`.
    static func with<Result>(port: Int, _ body: (SiteClient) async throws -> Result) async throws -> Result {
        let transport = try CurlHTTPClient()
        defer { transport.shutdown() }
        guard let baseURL = URL(string: "http://127.0.0.1:\(port)") else { throw SiteClientError.badURI("port \(port)") }
        return try await body(SiteClient(baseURL: baseURL, transport: transport))
    }
}

enum SiteClientError: Error, CustomStringConvertible {
    case badURI(String)
    case notListening

    var description: String {
        switch self {
        case .badURI(let uri): "not a request target: \(uri)"
        case .notListening: "the application stopped before it listened"
        }
    }
}

extension DemoSite.Listener {
    /// Runs the site on a real socket on 127.0.0.1 (a port the kernel picks) for the length of `body`, which talks
    /// to it through libcurl; the server is stopped, its requests finished, before this returns.
    func withLiveServer<Result: Sendable>(_ body: (SiteClient) async throws -> Result) async throws -> Result {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let listener = listening(host: "127.0.0.1", port: 0) { port in
            continuation.yield(port)
            continuation.finish()
        }
        let group = ServiceGroup(configuration: .init(services: [listener], gracefulShutdownSignals: [], logger: Logger(label: "demo-site-test")))
        let running = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        defer { running.cancel() }
        guard let port = await ports.first(where: { _ in true }), port > 0 else {
            _ = await running.result
            throw SiteClientError.notListening
        }
        let outcome: Swift.Result<Result, any Error>
        do {
            outcome = .success(try await SiteClient.with(port: port, body))
        } catch {
            outcome = .failure(error)
        }
        await group.triggerGracefulShutdown()
        _ = await running.result
        return try outcome.get()
    }
}
