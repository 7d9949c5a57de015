import Crypto
import CurlTransport
import Foundation
import HTTPTransport
import TestSupport
import Testing

private let fast = TransportOptions(timeout: .seconds(20), connectTimeout: .seconds(5))
private let mebibyte = 1024 * 1024

/// `CurlHTTPClient.stream` against the fixture server: heads before bodies, bodies with backpressure both ways,
/// bytes passed as sent, and every way a stream can end.
@Suite("Streaming through libcurl")
struct StreamingTests {
    // MARK: Heads and bodies

    @Test("the head arrives while the server still holds the body back")
    func headBeforeBody() async throws {
        try await withServer { server, client in
            // The server sends the body only after /release, which this test asks for after the head came:
            // a head held back until the body's end would never arrive (and the transfer would time out).
            let response = try await client.stream(StreamingRequest(url: server.url("/held-body")), options: fast)
            #expect(response.status == 200)
            #expect(response.headers["Content-Length"] == "4")
            #expect(response.httpVersion == "1.1")
            #expect(response.url == server.url("/held-body"))
            let released = try await client.send(HTTPRequest(url: server.url("/release")), options: fast)
            #expect(released.status == 200)
            #expect(String(decoding: try await response.body.collect(upTo: 100), as: UTF8.self) == "late")
        }
    }

    @Test("a chunked body arrives in its parts, then its trailers")
    func trailers() async throws {
        try await withServer { server, client in
            let response = try await client.stream(StreamingRequest(url: server.url("/trailers")), options: fast)
            #expect(response.headers["Transfer-Encoding"] == "chunked")
            #expect(response.headers["Trailer"] == "X-Checksum, Server-Timing")
            #expect(response.body.trailers.isEmpty, "no trailers before the body's end")
            var text = ""
            for try await part in response.body { text += String(decoding: part, as: UTF8.self) }
            #expect(text == "first,second,third")
            #expect(response.body.trailers["X-Checksum"] == "sum-123")
            #expect(response.body.trailers["Server-Timing"] == "total;dur=7")
            #expect(response.body.trailers.count == 2)
            #expect(response.headers["X-Checksum"] == nil)
        }
    }

    @Test("HEAD, 204 and 304 have a head and an empty body", arguments: [
        ("HEAD", "/echo", 200), ("GET", "/status?code=204", 204), ("GET", "/status?code=304", 304),
    ])
    func answersWithoutBody(method: String, path: String, status: Int) async throws {
        try await withServer { server, client in
            let response = try await client.stream(StreamingRequest(method: method, url: server.url(path)), options: fast)
            #expect(response.status == status)
            var parts = 0
            for try await _ in response.body { parts += 1 }
            #expect(parts == 0)
            if method == "HEAD" { #expect(Int(response.headers["Content-Length"] ?? "") ?? 0 > 0, "what GET would send") }
            // The connection stays usable: a body-less answer left nothing unread on it.
            let next = try await client.stream(StreamingRequest(url: server.url("/echo")), options: fast)
            #expect(try await streamedEcho(next).method == "GET")
        }
    }

    // MARK: Request bodies (backpressure and memory: StreamingMemoryTests)

    @Test("a body in memory goes out with its length, for any method", arguments: ["POST", "PUT", "PATCH", "DELETE"])
    func uploadFromMemory(method: String) async throws {
        try await withServer { server, client in
            var data = Data(count: 300_000)
            data.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
                for index in raw.indices { raw[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 8) }
            }
            let response = try await client.stream(
                StreamingRequest(method: method, url: server.url("/upload-hash"), body: .data(data)), options: fast)
            let answer = try JSONDecoder().decode(UploadAnswer.self, from: try await response.body.collect(upTo: mebibyte))
            #expect(answer.method == method)
            #expect(answer.length == data.count)
            #expect(answer.content_length == String(data.count))
            #expect(answer.sha256 == SHA256.hash(data: data).hex)
        }
    }

    @Test("a streamed body goes out chunked, or with its Content-Length when it has one, intact either way",
          arguments: [Int64?.none, 2_500_000])
    func streamedBody(length: Int64?) async throws {
        try await withServer { server, client in
            // Each part its own byte: a lost, repeated or reordered part changes the hash.
            let parts = (0..<10).map { index in Data(repeating: UInt8(index + 1), count: 250_000) }
            let request = StreamingRequest(
                method: "PUT", url: server.url("/upload-hash"), body: .stream(length: length, chunks: Chunks(parts)))
            let response = try await client.stream(request, options: fast)
            let answer = try JSONDecoder().decode(UploadAnswer.self, from: try await response.body.collect(upTo: mebibyte))
            #expect(answer.method == "PUT")
            #expect(answer.length == 2_500_000)
            var hasher = SHA256()
            for part in parts { hasher.update(data: part) }
            #expect(answer.sha256 == hasher.finalize().hex)
            #expect(answer.content_length == length.map(String.init))
            #expect(answer.transfer_encoding == (length == nil ? "chunked" : nil))
        }
    }

    @Test("no body: POST, PUT and PATCH announce an empty one, others none; only asked-for headers go out")
    func requestWithoutBody() async throws {
        try await withServer { server, client in
            for method in ["GET", "POST", "PUT", "DELETE", "OPTIONS"] {
                let request = StreamingRequest(method: method, url: server.url("/echo"), headers: ["X-One": "1"])
                let echo = try await streamedEcho(try await client.stream(request, options: fast))
                #expect(echo.method == method)
                #expect(echo.body_length == 0)
                #expect((echo.header("Content-Length") == "0") == ["POST", "PUT"].contains(method), "\(method)")
                let expected = Set(["host", "x-one"]).union(["POST", "PUT"].contains(method) ? ["content-length"] : [])
                #expect(Set(echo.headerNames) == expected, "\(method): \(echo.headerNames)")
            }
        }
    }

    @Test("a body that does not match its length, or whose source throws, is a requestBody error")
    func badRequestBodies() async throws {
        try await withServer { server, client in
            let cases: [(String, RequestBody)] = [
                ("shorter", .stream(length: 100, chunks: Chunks([Data(count: 50)]))),
                ("longer", .stream(length: 100, chunks: Chunks([Data(count: 60), Data(count: 60)]))),
                ("throwing", .stream(length: nil, chunks: Chunks([Data(count: 10)], thenFail: true))),
            ]
            for (name, body) in cases {
                let error = await expectStreamError {
                    () async throws(TransportError) in
                    let response = try await client.stream(
                        StreamingRequest(method: "PUT", url: server.url("/upload-hash"), body: body), options: fast)
                    _ = try await response.body.collect(upTo: mebibyte)
                }
                #expect(error?.kind == .requestBody, "\(name): \(String(describing: error))")
            }
            // The client still works afterwards.
            let answer = try await client.stream(StreamingRequest(url: server.url("/echo")), options: fast)
            #expect(try await streamedEcho(answer).method == "GET")
        }
    }

    @Test("a reader that pauses longer than the timeout is not timed out; a silent server is")
    func timeoutMeansSilence() async throws {
        try await withServer { server, client in
            var options = fast
            options.timeout = .seconds(1)
            let response = try await client.stream(StreamingRequest(url: server.url("/big?size=8000000")), options: options)
            var iterator = response.body.makeAsyncIterator()
            let first = try await iterator.next()
            #expect(first?.isEmpty == false)
            // The transfer pauses once the stream is full; paused, it is not silent.
            try await Task.sleep(for: .milliseconds(2500))
            var received = first?.count ?? 0
            while let part = try await iterator.next() { received += part.count }
            #expect(received == 8_000_000)

            for path in ["/slow?delay=4", "/slow-body?delay=4"] {
                let error = await expectStreamError { () async throws(TransportError) in
                    let response = try await client.stream(StreamingRequest(url: server.url(path)), options: options)
                    _ = try await response.body.collect(upTo: mebibyte)
                }
                #expect(error?.kind == .timeout, "\(path): \(String(describing: error))")
            }
        }
    }

    // MARK: Ends

    @Test("cancelling the body, its reader's task, or dropping it aborts the server's connection",
          arguments: [StreamEnding.cancelBody, .cancelReadingTask, .dropBody])
    func cancellationAbortsConnection(ending: StreamEnding) async throws {
        try await withServer { server, client in
            // The first parts are read in a function of their own, so that a dropped body is gone when it returns.
            func startReading() async throws -> ResponseBody? {
                let response = try await client.stream(StreamingRequest(url: server.url("/big?size=1073741824")), options: fast)
                var iterator = response.body.makeAsyncIterator()
                for _ in 0..<10 { _ = try await iterator.next() }
                return ending == .dropBody ? nil : response.body
            }
            let body = try await startReading()
            switch (ending, body) {
            case (.cancelBody, let body?):
                body.cancel()
                let error = await expectStreamError { () async throws(TransportError) in
                    for try await _ in body {}
                }
                #expect(error?.kind == .cancelled)
            case (.cancelReadingTask, let body?):
                let reader = Task { () async -> TransportError? in
                    do throws(TransportError) {
                        for try await _ in body {}
                        return nil
                    } catch {
                        return error
                    }
                }
                try await Task.sleep(for: .milliseconds(100))
                reader.cancel()
                #expect(await reader.value?.kind == .cancelled)
            default:
                #expect(body == nil, "the body was dropped")
            }
            let aborted = try await waitUntil(.seconds(10)) {
                let stats = try JSONDecoder().decode(
                    Stats.self, from: try await client.send(HTTPRequest(url: server.url("/stats")), options: fast).body)
                return stats.aborted == 1
            }
            #expect(aborted, "the server saw its client go away")
        }
    }

    @Test("cancelling the task waiting for the head aborts the transfer")
    func cancelBeforeHead() async throws {
        try await withServer { server, client in
            let url = server.url("/slow?delay=10")
            let waiting = Task { () async -> TransportError? in
                do throws(TransportError) {
                    _ = try await client.stream(StreamingRequest(url: url), options: fast)
                    return nil
                } catch {
                    return error
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            waiting.cancel()
            #expect(await waiting.value?.kind == .cancelled)
        }
    }

    @Test("a server that dies in the middle of the body gives an interrupted error after the bytes it sent")
    func serverDiesMidBody() async throws {
        try await withServer { server, client in
            let response = try await client.stream(
                StreamingRequest(url: server.url("/die?after=100000&length=1000000")), options: fast)
            #expect(response.status == 200)
            var received = 0
            let error = await expectStreamError { () async throws(TransportError) in
                for try await part in response.body { received += part.count }
            }
            #expect(error?.kind == .interrupted, "\(String(describing: error))")
            #expect(error?.isUnreachable == false)
            #expect(received == 100_000)
        }
    }

    @Test("a server that is not there fails the head with a connect error")
    func connectionRefused() async throws {
        let server = try await FixtureServer.start()
        let url = server.url("/echo")
        await server.stop()
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let error = await expectStreamError { () async throws(TransportError) in
            _ = try await client.stream(StreamingRequest(url: url), options: fast)
        }
        #expect(error?.kind == .connect)
    }

    // MARK: What goes on the wire

    @Test("bytes pass as sent: no Accept-Encoding added, an encoded body is not decoded")
    func noDecoding() async throws {
        try await withServer { server, client in
            var options = fast
            options.userAgent = "SessionKeeper-Test/1.0"
            let plain = try await streamedEcho(try await client.stream(StreamingRequest(url: server.url("/echo")), options: options))
            #expect(!plain.headerNames.contains("accept-encoding"))
            #expect(!plain.headerNames.contains("accept"))
            #expect(plain.header("User-Agent") == "SessionKeeper-Test/1.0")

            let request = StreamingRequest(url: server.url("/gzip"), headers: ["Accept-Encoding": "gzip", "User-Agent": "client/2"])
            let response = try await client.stream(request, options: options)
            #expect(response.headers["Content-Encoding"] == "gzip")
            let bytes = try await response.body.collect(upTo: mebibyte)
            #expect(bytes.prefix(2) == Data([0x1F, 0x8B]), "the gzip stream itself")
            #expect(bytes.count == Int(response.headers["Content-Length"] ?? "") ?? -1)
            let echo = try await streamedEcho(try await client.stream(
                StreamingRequest(url: server.url("/echo"), headers: ["Accept-Encoding": "br", "User-Agent": "client/2"]),
                options: options))
            #expect(echo.header("Accept-Encoding") == "br")
            #expect(echo.header("User-Agent") == "client/2", "the request's own User-Agent wins")
        }
    }

    @Test("redirects are not followed, cookies neither stored nor sent, framing headers of the request ignored")
    func noRedirectsNoCookies() async throws {
        try await withServer { server, client in
            let redirect = try await client.stream(StreamingRequest(url: server.url("/redirect")), options: fast)
            #expect(redirect.status == 302)
            #expect(redirect.headers["Location"] == "/echo")
            let cookies = try await client.stream(StreamingRequest(url: server.url("/cookies")), options: fast)
            #expect(cookies.headers.values(for: "Set-Cookie").count == 3)
            _ = try await cookies.body.collect(upTo: 100)
            let request = StreamingRequest(
                method: "POST", url: server.url("/echo"), headers: ["Content-Length": "999", "Transfer-Encoding": "gzip"],
                body: .data(Data("abc".utf8)))
            let echo = try await streamedEcho(try await client.stream(request, options: fast))
            #expect(echo.header("Cookie") == nil)
            #expect(echo.header("Content-Length") == "3")
            #expect(echo.header("Transfer-Encoding") == nil)
            #expect(echo.body == "abc")
        }
    }

    @Test("the site's resolve pin and CA file apply as for logins")
    func transportOptionsApply() async throws {
        let material = try await TLSMaterial.generate()
        defer { material.remove() }
        try await withServer(arguments: ["--tls-cert", material.serverCertificate, "--tls-key", material.serverKey]) { server, client in
            var options = fast
            options.resolve = ["secure.test:\(server.port):127.0.0.1"]
            let url = server.url("/echo", scheme: "https", host: "secure.test")
            let refused = await expectStreamError { () async throws(TransportError) in
                _ = try await client.stream(StreamingRequest(url: url), options: options)
            }
            #expect(refused?.kind == .tls)
            options.caFile = material.serverCertificate
            let echo = try await streamedEcho(try await client.stream(StreamingRequest(url: url), options: options))
            #expect(echo.header("Host") == "secure.test:\(server.port)")
        }
    }

    @Test("40 concurrent streams each get their own body, and buffered requests on the same client still work")
    func concurrentStreams() async throws {
        try await withServer { server, client in
            let port = server.port
            let sizes = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let size = 100_000 + index * 7_919
                        let url = URL(string: "http://127.0.0.1:\(port)/big?size=\(size)&chunked=\(index % 2)")!
                        let response = try await client.stream(StreamingRequest(url: url), options: fast)
                        return (size, try await response.body.collect(upTo: mebibyte).count)
                    }
                }
                group.addTask {
                    let url = URL(string: "http://127.0.0.1:\(port)/echo")!
                    return (1, try await client.send(HTTPRequest(url: url), options: fast).status == 200 ? 1 : 0)
                }
                var results: [(Int, Int)] = []
                for try await result in group { results.append(result) }
                return results
            }
            #expect(sizes.count == 41)
            #expect(sizes.allSatisfy { $0.0 == $0.1 })
        }
    }
}

/// How a test ends a stream early.
enum StreamEnding: Sendable, CustomStringConvertible {
    case cancelBody, cancelReadingTask, dropBody

    var description: String {
        switch self {
        case .cancelBody: "ResponseBody.cancel()"
        case .cancelReadingTask: "the reading task cancelled"
        case .dropBody: "the body dropped"
        }
    }
}

/// What `/upload-hash` answers.
struct UploadAnswer: Decodable {
    var length: Int
    var sha256: String
    var content_length: String?
    var transfer_encoding: String?
    var method: String
}

/// The `/echo` answer of a streamed request.
func streamedEcho(_ response: StreamingResponse) async throws -> Echo {
    let body = try await response.body.collect(upTo: 64 * mebibyte)
    return try Echo(HTTPResponse(status: response.status, url: response.url, headers: response.headers, body: body))
}

/// Throws unless `operation` fails with a TransportError; returns that error.
func expectStreamError(
    _ operation: () async throws(TransportError) -> Void, sourceLocation: SourceLocation = #_sourceLocation
) async -> TransportError? {
    do {
        try await operation()
        Issue.record("expected a TransportError", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// A request body of fixed chunks, optionally failing after them.
struct Chunks: AsyncSequence, Sendable {
    struct SourceFailure: Error {}

    let parts: [Data]
    var thenFail = false

    init(_ parts: [Data], thenFail: Bool = false) {
        self.parts = parts
        self.thenFail = thenFail
    }

    func makeAsyncIterator() -> Iterator { Iterator(parts: parts[...], thenFail: thenFail) }

    struct Iterator: AsyncIteratorProtocol {
        var parts: ArraySlice<Data>
        let thenFail: Bool

        mutating func next() async throws -> Data? {
            if let part = parts.popFirst() { return part }
            if thenFail { throw SourceFailure() }
            return nil
        }
    }
}

extension Sequence where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

extension SHA256.Digest {
    var hex: String { Array(self).hex }
}
