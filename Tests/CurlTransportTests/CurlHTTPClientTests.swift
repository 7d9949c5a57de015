import CurlTransport
import Foundation
import HTTPTransport
import TestSupport
import Testing

private let fast = TransportOptions(timeout: .seconds(20), connectTimeout: .seconds(5))

@Suite("CurlHTTPClient against a local Python server")
struct CurlHTTPClientTests {
    @Test("a GET carries exactly the request's headers plus Host, User-Agent and Accept-Encoding")
    func getSendsOnlyRequestedHeaders() async throws {
        try await withServer { server, client in
            var options = fast
            options.userAgent = "SessionKeeper-Test/1.0"
            let request = HTTPRequest(url: server.url("/echo?x=1"), headers: ["X-One": "1", "X-Empty": ""])
            let response = try await client.send(request, options: options)
            #expect(response.status == 200)
            #expect(response.httpVersion == "1.1")
            #expect(response.duration > .zero)
            #expect(response.url == request.url)
            let echo = try Echo(response)
            #expect(echo.method == "GET")
            #expect(echo.path == "/echo?x=1")
            #expect(Set(echo.headerNames) == ["host", "user-agent", "accept-encoding", "x-one", "x-empty"])
            #expect(echo.headerNames.firstIndex(of: "x-one")! < echo.headerNames.firstIndex(of: "x-empty")!)
            #expect(echo.header("User-Agent") == "SessionKeeper-Test/1.0")
            #expect(echo.header("X-Empty") == "")
            #expect(echo.header("Host") == "127.0.0.1:\(server.port)")
        }
    }

    @Test("without a user agent none is sent")
    func noUserAgentByDefault() async throws {
        try await withServer { server, client in
            let echo = try Echo(try await client.send(HTTPRequest(url: server.url("/echo")), options: fast))
            #expect(!echo.headerNames.contains("user-agent"))
            #expect(!echo.headerNames.contains("accept"))
            #expect(!echo.headerNames.contains("cookie"))
        }
    }

    @Test("a POST sends its body and Content-Type unchanged, no Expect, no added Content-Type")
    func postBody() async throws {
        try await withServer { server, client in
            let json = Data(#"{"user":"alice"}"#.utf8)
            let request = HTTPRequest(
                method: "POST", url: server.url("/echo"), headers: ["Content-Type": "application/json"], body: json)
            let echo = try Echo(try await client.send(request, options: fast))
            #expect(echo.method == "POST")
            #expect(echo.body == #"{"user":"alice"}"#)
            #expect(echo.header("Content-Type") == "application/json")
            #expect(echo.header("Content-Length") == "\(json.count)")
            #expect(Set(echo.headerNames) == ["host", "accept-encoding", "content-type", "content-length"])

            let bare = try Echo(try await client.send(HTTPRequest(method: "POST", url: server.url("/echo"),
                                                                   body: Data("a=1".utf8)), options: fast))
            #expect(!bare.headerNames.contains("content-type"))
            #expect(bare.body == "a=1")
        }
    }

    @Test("a 2 MiB body goes out at once, without Expect: 100-continue")
    func largeBodyWithoutExpect() async throws {
        try await withServer { server, client in
            let body = Data(repeating: 0x61, count: 2 * 1024 * 1024)
            let echo = try Echo(try await client.send(HTTPRequest(method: "PUT", url: server.url("/echo"), body: body),
                                                      options: fast))
            #expect(echo.method == "PUT")
            #expect(echo.body_length == body.count)
            #expect(!echo.headerNames.contains("expect"))
        }
    }

    @Test("PUT, PATCH, DELETE and any token are sent as given, with and without a body",
          arguments: ["PUT", "PATCH", "DELETE", "OPTIONS", "PURGE"])
    func methods(method: String) async throws {
        try await withServer { server, client in
            let withBody = try Echo(try await client.send(
                HTTPRequest(method: method, url: server.url("/echo"), body: Data("payload".utf8)), options: fast))
            #expect(withBody.method == method)
            #expect(withBody.body == "payload")
            let without = try Echo(try await client.send(HTTPRequest(method: method, url: server.url("/echo")), options: fast))
            #expect(without.method == method)
            #expect(without.body_length == 0)
            // RFC 9110 section 8.6: methods that define a body announce an empty one.
            #expect((without.header("Content-Length") == "0") == ["PUT", "PATCH"].contains(method))
        }
    }

    @Test("HEAD returns the headers and no body")
    func head() async throws {
        try await withServer { server, client in
            let response = try await client.send(HTTPRequest(method: "HEAD", url: server.url("/big?size=1000")), options: fast)
            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(response.headers["Content-Length"] == "1000")
        }
    }

    @Test("a redirect is returned, not followed")
    func redirectNotFollowed() async throws {
        try await withServer { server, client in
            let response = try await client.send(HTTPRequest(url: server.url("/redirect")), options: fast)
            #expect(response.status == 302)
            #expect(response.isRedirect)
            #expect(response.headers["Location"] == "/echo")
            let stats = try JSONDecoder().decode(
                Stats.self, from: try await client.send(HTTPRequest(url: server.url("/stats")), options: fast).body)
            #expect(stats.requests == 2, "only /redirect and /stats reached the server")
        }
    }

    @Test("every Set-Cookie header is kept, in order")
    func setCookieOrder() async throws {
        try await withServer { server, client in
            let response = try await client.send(HTTPRequest(url: server.url("/cookies")), options: fast)
            #expect(response.headers.values(for: "set-cookie") == ["a=1; Path=/", "b=2; Path=/", "a=3; Path=/"])
            // The cookie engine is off: nothing is sent back on the next request.
            let echo = try Echo(try await client.send(HTTPRequest(url: server.url("/echo")), options: fast))
            #expect(echo.header("Cookie") == nil)
        }
    }

    @Test("a 103 interim response is skipped: headers come from the final block")
    func interimResponseIgnored() async throws {
        try await withServer { server, client in
            let response = try await client.send(HTTPRequest(url: server.url("/early-hints")), options: fast)
            #expect(response.status == 200)
            #expect(response.headers["X-Final"] == "yes")
            #expect(response.headers["Link"] == nil)
            #expect(response.bodyText == "final")
        }
    }

    @Test("a gzip body is decoded; the client offers Accept-Encoding")
    func gzipDecoded() async throws {
        try await withServer { server, client in
            let response = try await client.send(HTTPRequest(url: server.url("/gzip")), options: fast)
            #expect(response.bodyText == String(repeating: "compressible text ", count: 200))
            #expect(response.headers["Content-Encoding"] == "gzip")
            let echo = try Echo(try await client.send(HTTPRequest(url: server.url("/echo")), options: fast))
            #expect(echo.header("Accept-Encoding")?.contains("gzip") == true)
        }
    }

    @Test("no response before the timeout is a timeout error, headers late or body late")
    func timeouts() async throws {
        try await withServer { server, client in
            var options = fast
            options.timeout = .milliseconds(300)
            for path in ["/slow?delay=3", "/slow-body?delay=3"] {
                let error = await expectTransportError { () async throws(TransportError) in
                    try await client.send(HTTPRequest(url: server.url(path)), options: options)
                }
                #expect(error?.kind == .timeout, "\(path)")
                #expect(error?.isUnreachable == true)
            }
        }
    }

    @Test("a body over max_body_size aborts with bodyTooLarge, with or without Content-Length")
    func bodyCap() async throws {
        try await withServer { server, client in
            var options = fast
            options.maxBodySize = 1024 * 1024
            for query in ["size=3000000", "size=3000000&chunked=1", "size=1048577"] {
                let error = await expectTransportError { () async throws(TransportError) in
                    try await client.send(HTTPRequest(url: server.url("/big?\(query)")), options: options)
                }
                #expect(error?.kind == .bodyTooLarge, "\(query)")
                #expect(error?.message.contains("larger than 1 MiB") == true)
            }
            let exact = try await client.send(HTTPRequest(url: server.url("/big?size=1048576&chunked=1")), options: options)
            #expect(exact.body.count == 1024 * 1024)
            let defaultCap = try await client.send(HTTPRequest(url: server.url("/big?size=5000000")), options: fast)
            #expect(defaultCap.body.count == 5_000_000)
        }
    }

    @Test("20 sequential requests share one TCP connection")
    func connectionReuse() async throws {
        try await withServer { server, client in
            for index in 0..<20 {
                let response = try await client.send(HTTPRequest(url: server.url("/echo?n=\(index)")), options: fast)
                #expect(response.status == 200)
            }
            let stats = try JSONDecoder().decode(
                Stats.self, from: try await client.send(HTTPRequest(url: server.url("/stats")), options: fast).body)
            #expect(stats.requests == 21)
            #expect(stats.connections == 1)
        }
    }

    @Test("200 concurrent requests from as many tasks all complete")
    func manyConcurrentRequests() async throws {
        try await withServer { server, client in
            let port = server.port
            let statuses = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for index in 0..<200 {
                    group.addTask {
                        let url = URL(string: "http://127.0.0.1:\(port)/echo?n=\(index)")!
                        let response = try await client.send(HTTPRequest(url: url), options: fast)
                        return (response.status, try Echo(response).path)
                    }
                }
                var results: [(Int, String)] = []
                for try await result in group { results.append(result) }
                return results
            }
            #expect(statuses.count == 200)
            #expect(statuses.allSatisfy { $0.0 == 200 })
            #expect(Set(statuses.map(\.1)).count == 200, "each response answered its own request")
        }
    }

    @Test("a closed port is a connect error")
    func connectionRefused() async throws {
        let closed = try ClosedPort()
        let url = URL(string: "http://127.0.0.1:\(closed.port)/echo")!
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let error = await expectTransportError { () async throws(TransportError) in
            try await client.send(HTTPRequest(url: url), options: fast)
        }
        #expect(error?.kind == .connect)
        #expect(error?.isUnreachable == true)
    }

    @Test("an unknown host is a DNS error")
    func unknownHost() async throws {
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let error = await expectTransportError { () async throws(TransportError) in
            try await client.send(HTTPRequest(url: URL(string: "http://nonexistent.invalid/")!), options: fast)
        }
        #expect(error?.kind == .dns)
        #expect(error?.description.contains("nonexistent.invalid") == true)
    }

    @Test("a connection closed without an answer is a protocol error")
    func emptyReply() async throws {
        try await withServer { server, client in
            let error = await expectTransportError { () async throws(TransportError) in
                try await client.send(HTTPRequest(url: server.url("/drop")), options: fast)
            }
            #expect(error?.kind == .protocolError)
        }
    }

    @Test("resolve pins a name to 127.0.0.1; URL and Host keep the name")
    func resolvePinning() async throws {
        try await withServer { server, client in
            var options = fast
            options.resolve = ["pinned.test:\(server.port):127.0.0.1"]
            let response = try await client.send(HTTPRequest(url: server.url("/echo", host: "pinned.test")), options: options)
            #expect(response.url.host == "pinned.test")
            #expect(try Echo(response).header("Host") == "pinned.test:\(server.port)")
        }
    }

    @Test("an HTTP proxy gets the absolute URL; an unreachable proxy is a proxy error")
    func proxy() async throws {
        try await withServer { server, client in
            var options = fast
            options.proxy = "http://127.0.0.1:\(server.port)"
            let response = try await client.send(
                HTTPRequest(url: URL(string: "http://origin.invalid/echo")!), options: options)
            let echo = try Echo(response)
            #expect(echo.proxied)
            #expect(echo.path == "http://origin.invalid/echo")
            #expect(Set(echo.headerNames) == ["host", "accept-encoding"], "no Proxy-Connection or other added header")

            // Like curl, HOST:PORT without a scheme is an HTTP proxy.
            var schemeless = options
            schemeless.proxy = "127.0.0.1:\(server.port)"
            #expect(try Echo(try await client.send(HTTPRequest(url: URL(string: "http://origin.invalid/echo")!),
                                                   options: schemeless)).proxied)

            // HTTPS through an HTTP proxy is a CONNECT tunnel; this proxy refuses it.
            let refused = await expectTransportError { () async throws(TransportError) in
                try await client.send(HTTPRequest(url: URL(string: "https://origin.invalid/")!), options: options)
            }
            #expect(refused?.kind == .proxy)
            #expect(refused?.message.contains("403") == true, "\(refused?.message ?? "")")

            let closed = try ClosedPort()
            options.proxy = "http://user:proxysecret@127.0.0.1:\(closed.port)"
            let error = await expectTransportError { () async throws(TransportError) in
                try await client.send(HTTPRequest(url: server.url("/echo")), options: options)
            }
            #expect(error?.kind == .proxy)
            #expect(error?.description.contains("proxysecret") == false)
        }
    }

    @Test("bad requests and options fail before any I/O with invalidRequest, naming the field, not the value")
    func invalidRequests() async throws {
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let url = URL(string: "http://127.0.0.1:9/")!
        var badResolve = fast
        badResolve.resolve = ["pinned.test:80"]
        var badTimeout = fast
        badTimeout.timeout = .zero
        var missingCA = fast
        missingCA.caFile = "/nonexistent/ca.pem"
        let cases: [(HTTPRequest, TransportOptions, String)] = [
            (HTTPRequest(url: URL(string: "ftp://127.0.0.1/file")!), fast, "http and https"),
            (HTTPRequest(url: url, headers: ["X-Token": "s3cr3t-value\r\nX-Injected: 1"]), fast, "X-Token"),
            (HTTPRequest(method: "GE T", url: url), fast, "token"),
            (HTTPRequest(method: "HEAD", url: url, body: Data("x".utf8)), fast, "HEAD"),
            (HTTPRequest(url: url), badResolve, "resolve entry 1"),
            (HTTPRequest(url: url), badTimeout, "timeout"),
            (HTTPRequest(url: url), missingCA, "ca_file"),
        ]
        for (request, options, fragment) in cases {
            let error = await expectTransportError { () async throws(TransportError) in
                try await client.send(request, options: options)
            }
            #expect(error?.kind == .invalidRequest, "\(fragment)")
            #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "")")
            #expect(error?.description.contains("s3cr3t") == false)
        }
    }

    @Test("HTTP versions libcurl lacks are refused with a clear message")
    func unsupportedHTTPVersion() async throws {
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        #expect(CurlHTTPClient.supportedHTTPVersions.contains(.http1_1))
        for version in TransportOptions.HTTPVersion.allCases where !CurlHTTPClient.supportedHTTPVersions.contains(version) {
            var options = fast
            options.httpVersion = version
            let error = await expectTransportError { () async throws(TransportError) in
                try await client.send(HTTPRequest(url: URL(string: "https://127.0.0.1:9/")!), options: options)
            }
            #expect(error?.kind == .invalidRequest)
            #expect(error?.message.contains("built without HTTP/\(version.rawValue)") == true)
        }
    }

    @Test("HTTP/1.1 asked for is spoken; HTTP/2 asked for over cleartext adds no upgrade headers")
    func explicitHTTP11() async throws {
        try await withServer { server, client in
            var options = fast
            options.httpVersion = .http1_1
            let response = try await client.send(HTTPRequest(url: server.url("/echo")), options: options)
            #expect(response.httpVersion == "1.1")

            // HTTP/2 is negotiated by TLS ALPN; over cleartext no h2c upgrade headers are added.
            options.httpVersion = .http2
            let cleartext = try await client.send(HTTPRequest(url: server.url("/echo")), options: options)
            #expect(cleartext.httpVersion == "1.1")
            #expect(Set(try Echo(cleartext).headerNames) == ["host", "accept-encoding"])

            let old = try await client.send(HTTPRequest(url: server.url("/http10")), options: fast)
            #expect(old.httpVersion == "1.0")
            #expect(old.bodyText == "old")
        }
    }

    @Test("secrets in the URL query, user info and headers never reach an error message")
    func errorsCarryNoSecrets() async throws {
        try await withServer { server, client in
            var options = fast
            options.timeout = .milliseconds(200)
            let url = URL(string: "http://bob:pa55word@127.0.0.1:\(server.port)/slow?delay=2&token=qu3rysecret")!
            let request = HTTPRequest(url: url, headers: ["Authorization": "Bearer h3adersecret", "Cookie": "sid=c00kiesecret"])
            let error = await expectTransportError { () async throws(TransportError) in
                try await client.send(request, options: options)
            }
            let text = try #require(error).description
            for secret in ["qu3rysecret", "h3adersecret", "c00kiesecret", "pa55word", "bob:"] {
                #expect(!text.contains(secret), "error text leaks \(secret.prefix(3))…")
            }
            #expect(text.contains("127.0.0.1:\(server.port)/slow"))
        }
    }

    @Test("cancelling the task aborts its transfer; the client keeps working")
    func cancellation() async throws {
        try await withServer { server, client in
            let url = server.url("/slow?delay=30")
            let task = Task { () async throws(TransportError) -> HTTPResponse in
                try await client.send(HTTPRequest(url: url), options: fast)
            }
            try await Task.sleep(for: .milliseconds(200))
            task.cancel()
            let start = ContinuousClock.now
            let result = await task.result
            guard case .failure(let error) = result else {
                Issue.record("a cancelled request returned a response")
                return
            }
            #expect((error as? TransportError)?.message.contains("cancelled") == true)
            // Half the server's delay: room for a loaded machine (under ThreadSanitizer the cancelled task once
            // took 5 s to be scheduled again), and still far from waiting for the answer.
            #expect(ContinuousClock.now - start < .seconds(15), "aborted, not waited for")
            let after = try await client.send(HTTPRequest(url: server.url("/echo")), options: fast)
            #expect(after.status == 200)
        }
    }

    @Test("cancellations at random moments (queued, running, finished) each end their request exactly once")
    func cancellationStress() async throws {
        try await withServer { server, client in
            let port = server.port
            let outcomes = await withTaskGroup(of: String.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        let url = URL(string: "http://127.0.0.1:\(port)/slow?delay=0.0\(index % 10)")!
                        let task = Task { () async throws(TransportError) -> HTTPResponse in
                            try await client.send(HTTPRequest(url: url), options: fast)
                        }
                        if index % 3 != 0 { try? await Task.sleep(for: .milliseconds(index % 40)) }
                        task.cancel()
                        switch await task.result {
                        case .success(let response): return "status \(response.status)"
                        case .failure(let error): return (error as? TransportError)?.message ?? "\(error)"
                        }
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.count == 100)
            #expect(outcomes.allSatisfy { $0 == "status 200" || $0 == "the request was cancelled" }, "\(Set(outcomes))")
            #expect(outcomes.contains("the request was cancelled"))
            let after = try await client.send(HTTPRequest(url: server.url("/echo")), options: fast)
            #expect(after.status == 200)
        }
    }

    @Test("shutdown fails running and later requests")
    func shutdown() async throws {
        let server = try await FixtureServer.start()
        do {
            try await shutdownFailsRequests(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private func shutdownFailsRequests(_ server: FixtureServer) async throws {
        let client = try CurlHTTPClient()
        let url = server.url("/slow?delay=10")
        let running = Task { () async throws(TransportError) -> HTTPResponse in
            try await client.send(HTTPRequest(url: url), options: fast)
        }
        try await Task.sleep(for: .milliseconds(200))
        client.shutdown()
        guard case .failure(let error) = await running.result else {
            Issue.record("a request running at shutdown returned a response")
            return
        }
        #expect((error as? TransportError)?.message.contains("shut down") == true)
        let later = await expectTransportError { () async throws(TransportError) in
            try await client.send(HTTPRequest(url: server.url("/echo")), options: fast)
        }
        #expect(later?.message.contains("shut down") == true)
        client.shutdown()  // idempotent
    }
}
