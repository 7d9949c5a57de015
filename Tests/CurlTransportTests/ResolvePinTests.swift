import CurlTransport
import Foundation
import HTTPTransport
import Testing

/// `resolve` pins belong to the requests sent with them: two sites on one client may pin the same name to
/// different servers, and neither the DNS cache nor an idle connection carries one site's pin to the other.
@Suite("CurlHTTPClient applies resolve pins per request")
struct ResolvePinTests {
    let fast = TransportOptions(timeout: .seconds(10), connectTimeout: .seconds(5))

    /// Two fixture servers on one port, one on 127.0.0.1 and one on 127.0.0.2, so `shared.test:PORT` can be
    /// pinned to either; stopped after `body`, whatever it did.
    private func withTwoServers(_ body: (_ port: Int, CurlHTTPClient) async throws -> Void) async throws {
        let first = try await FixtureServer.start()
        let second: FixtureServer
        do {
            second = try await FixtureServer.start(arguments: ["--host", "127.0.0.2", "--port", String(first.port)])
        } catch {
            await first.stop()
            throw error
        }
        do {
            let client = try CurlHTTPClient()
            defer { client.shutdown() }
            try await body(first.port, client)
        } catch {
            await first.stop()
            await second.stop()
            throw error
        }
        await first.stop()
        await second.stop()
    }

    private func options(_ resolve: [String]) -> TransportOptions {
        var options = fast
        options.resolve = resolve
        return options
    }

    private func url(_ port: Int, _ path: String = "/echo") -> URL {
        URL(string: "http://shared.test:\(port)\(path)")!
    }

    /// The address of the server that answered `/echo` for `shared.test` with `options`.
    private func answeringServer(_ client: CurlHTTPClient, _ port: Int, _ options: TransportOptions) async throws -> String {
        try Echo(try await client.send(HTTPRequest(url: url(port)), options: options)).server
    }

    @Test("two sites pin one name to two servers and each reaches its own, in turns and concurrently")
    func twoSitesOneName() async throws {
        try await withTwoServers { port, client in
            let siteA = options(["shared.test:\(port):127.0.0.1"])
            let siteB = options(["shared.test:\(port):127.0.0.2"])

            // In turns: each request finds the other site's connection idle in the cache and must not take it.
            for round in 0..<10 {
                for (options, address) in [(siteA, "127.0.0.1"), (siteB, "127.0.0.2")] {
                    let response = try await client.send(HTTPRequest(url: url(port)), options: options)
                    let echo = try Echo(response)
                    #expect(echo.server == address, "round \(round)")
                    #expect(echo.header("Host") == "shared.test:\(port)")
                    #expect(response.url.host == "shared.test")
                }
            }
            // Each site reused its own one connection for its ten requests (and this one).
            for options in [siteA, siteB] {
                let stats = try JSONDecoder().decode(
                    Stats.self, from: try await client.send(HTTPRequest(url: url(port, "/stats")), options: options).body)
                #expect(stats.connections == 1)
                #expect(stats.requests == 11)
            }

            // Concurrently, interleaved: 200 requests, half per site.
            let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<200 {
                    let (options, address) = index % 2 == 0 ? (siteA, "127.0.0.1") : (siteB, "127.0.0.2")
                    group.addTask {
                        let echo = try Echo(try await client.send(HTTPRequest(url: url(port, "/echo?i=\(index)")), options: options))
                        return echo.server == address && echo.path == "/echo?i=\(index)" ? 0 : 1
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(mismatches == 0)
        }
    }

    @Test("new options replace the old pins at once, and a request without pins gets none of them")
    func reloadDropsOldPins() async throws {
        try await withTwoServers { port, client in
            let before = options(["shared.test:\(port):127.0.0.2"])
            let first = try await answeringServer(client, port, before)
            #expect(first == "127.0.0.2")

            // The reloaded site pins the name elsewhere; the idle connection to 127.0.0.2 must not serve it.
            let after = options(["shared.test:\(port):127.0.0.1"])
            for _ in 0..<3 {
                let server = try await answeringServer(client, port, after)
                #expect(server == "127.0.0.1")
            }

            // Unpinned, the name goes to DNS (shared.test is reserved and never resolves to these servers):
            // neither pin nor either idle connection may answer.
            await #expect(throws: TransportError.self) {
                _ = try await client.send(HTTPRequest(url: url(port)), options: fast)
            }
        }
    }

    @Test("a pin with several addresses tries them in turn, separately for each site")
    func severalAddresses() async throws {
        try await withTwoServers { port, client in
            // Nothing listens on 127.0.0.3 at this port: the connection is refused and the next address taken.
            let siteA = options(["shared.test:\(port):127.0.0.3,127.0.0.1"])
            let siteB = options(["shared.test:\(port):127.0.0.3,127.0.0.2"])
            for round in 0..<3 {
                let serverA = try await answeringServer(client, port, siteA)
                let serverB = try await answeringServer(client, port, siteB)
                #expect(serverA == "127.0.0.1", "round \(round)")
                #expect(serverB == "127.0.0.2", "round \(round)")
            }
        }
    }
}
