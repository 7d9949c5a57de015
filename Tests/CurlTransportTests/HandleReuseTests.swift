import CurlTransport
import Foundation
import HTTPTransport
import Testing

/// Easy handles are reused with their per-handle settings: nothing of one request (method, body, headers,
/// user agent, pinned addresses) may show in the next one sent on the same handle.
@Suite("CurlHTTPClient reuses easy handles without carrying a request over")
struct HandleReuseTests {
    let fast = TransportOptions(timeout: .seconds(10))

    /// What one request of the sequence sends, and what the server must see.
    struct Case: Sendable {
        var method: String
        var body: String?
        var headers: [(String, String)] = []
        var expectedHeaderNames: Set<String>
    }

    static let sequence: [Case] = [
        Case(method: "POST", body: "user=alice&password=wonderland", headers: [("Content-Type", "application/x-www-form-urlencoded"), ("X-A", "1")],
             expectedHeaderNames: ["host", "accept-encoding", "content-type", "content-length", "x-a"]),
        Case(method: "GET", body: nil, expectedHeaderNames: ["host", "accept-encoding"]),
        Case(method: "HEAD", body: nil, headers: [("X-B", "2")], expectedHeaderNames: ["host", "accept-encoding", "x-b"]),
        Case(method: "GET", body: nil, expectedHeaderNames: ["host", "accept-encoding"]),
        Case(method: "DELETE", body: nil, expectedHeaderNames: ["host", "accept-encoding"]),
        Case(method: "PUT", body: "{}", headers: [("Content-Type", "application/json")],
             expectedHeaderNames: ["host", "accept-encoding", "content-type", "content-length"]),
        Case(method: "GET", body: nil, expectedHeaderNames: ["host", "accept-encoding"]),
        Case(method: "PATCH", body: nil, expectedHeaderNames: ["host", "accept-encoding", "content-length"]),
        Case(method: "PROPFIND", body: "x", expectedHeaderNames: ["host", "accept-encoding", "content-length"]),
        Case(method: "GET", body: nil, expectedHeaderNames: ["host", "accept-encoding"]),
    ]

    @Test("a sequence of different requests on one handle: each is sent exactly as asked")
    func requestsDoNotLeakIntoTheNext() async throws {
        try await withServer { server, client in
            for round in 0..<3 {
                for (index, item) in Self.sequence.enumerated() {
                    let request = HTTPRequest(
                        method: item.method, url: server.url("/echo?i=\(index)"), headers: HTTPHeaders(item.headers),
                        body: item.body.map { Data($0.utf8) })
                    let response = try await client.send(request, options: fast)
                    #expect(response.status == 200, "round \(round) request \(index) \(item.method)")
                    if item.method == "HEAD" {
                        #expect(response.body.isEmpty)
                        continue
                    }
                    let echo = try Echo(response)
                    #expect(echo.method == item.method, "round \(round) request \(index)")
                    #expect(echo.path == "/echo?i=\(index)")
                    #expect(echo.body == (item.body ?? ""), "round \(round) request \(index) \(item.method)")
                    #expect(Set(echo.headerNames) == item.expectedHeaderNames, "round \(round) request \(index) \(item.method)")
                }
            }
        }
    }

    @Test("options change between requests: each request gets its own user agent, or none")
    func optionsDoNotLeakIntoTheNext() async throws {
        try await withServer { server, client in
            var withAgent = fast
            withAgent.userAgent = "Agent/1"
            var otherAgent = fast
            otherAgent.userAgent = "Agent/2"
            for round in 0..<3 {
                for (options, agent) in [(withAgent, "Agent/1"), (fast, nil), (otherAgent, "Agent/2"), (fast, nil)] as [(TransportOptions, String?)] {
                    let echo = try Echo(try await client.send(HTTPRequest(url: server.url("/echo")), options: options))
                    #expect(echo.header("User-Agent") == agent, "round \(round)")
                }
            }
        }
    }

    @Test("a pinned name keeps resolving on a reused handle")
    func resolvePinsSurviveReuse() async throws {
        try await withServer { server, client in
            var pinned = fast
            pinned.resolve = ["pinned.test:\(server.port):127.0.0.1"]
            for _ in 0..<5 {
                let response = try await client.send(
                    HTTPRequest(url: server.url("/echo", host: "pinned.test")), options: pinned)
                #expect(try Echo(response).header("Host") == "pinned.test:\(server.port)")
                _ = try await client.send(HTTPRequest(url: server.url("/echo")), options: fast)
            }
        }
    }

    @Test("a failed request leaves the handle fit for the next one")
    func failureThenSuccess() async throws {
        try await withServer { server, client in
            var capped = fast
            capped.maxBodySize = 10
            for _ in 0..<3 {
                let failed = await expectTransportError { () async throws(TransportError) in
                    try await client.send(HTTPRequest(url: server.url("/big?size=1000")), options: capped)
                }
                #expect(failed?.kind == .bodyTooLarge)
                let response = try await client.send(HTTPRequest(url: server.url("/big?size=1000")), options: fast)
                #expect(response.body.count == 1000)
            }
        }
    }
}
