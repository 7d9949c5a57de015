import Foundation
import TestSupport
import Testing

@testable import SocketClient

/// ``UnixSocketHTTPClient`` against Fixtures/unix_http_server.py, a real server on a real Unix socket.
@Suite(.serialized) struct UnixSocketHTTPClientTests {
    /// Runs `body` with the fixture server listening in a fresh private folder.
    static func withServer(_ body: (UnixSocketPythonServer) async throws -> Void) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let script = try #require(Bundle.module.url(forResource: "unix_http_server", withExtension: "py", subdirectory: "Fixtures")).path
        let server = try await UnixSocketPythonServer.start(script: script, socketPath: folder.path("api.sock"))
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    static func get(_ socket: String, _ target: String, timeout: Duration = .seconds(10)) async throws(UnixSocketHTTPError) -> UnixSocketHTTPResponse {
        try await onDedicatedThread { () throws(UnixSocketHTTPError) -> UnixSocketHTTPResponse in
            try UnixSocketHTTPClient(socketPath: socket, timeout: timeout).send("GET", target)
        }
    }

    static func text(_ response: UnixSocketHTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test func readsContentLengthChunkedAndUntilCloseBodies() async throws {
        try await Self.withServer { server in
            let length = try await Self.get(server.socketPath, "/length")
            #expect(length.status == 200)
            #expect(length.head.value(of: "content-type") == "text/plain")
            #expect(Self.text(length) == "hello over a unix socket")

            // Pieces split inside a size line, a chunk extension, a trailer.
            let chunked = try await Self.get(server.socketPath, "/chunked")
            #expect(Self.text(chunked) == "hello chunked world!!")

            let untilClose = try await Self.get(server.socketPath, "/close")
            #expect(Self.text(untilClose) == "until the end")

            let afterContinue = try await Self.get(server.socketPath, "/continue")
            #expect(afterContinue.status == 204)
            #expect(afterContinue.head.value(of: "X-After") == "continue")
            #expect(afterContinue.body.isEmpty)

            let missing = try await Self.get(server.socketPath, "/nothing-here")
            #expect(missing.status == 404)
        }
    }

    @Test func sendsOneRequestPerConnectionWithHostAndBodyLength() async throws {
        try await Self.withServer { server in
            let socket = server.socketPath
            let echo = try await onDedicatedThread { () throws(UnixSocketHTTPError) -> UnixSocketHTTPResponse in
                try UnixSocketHTTPClient(socketPath: socket).send(
                    "POST", "/echo?wait=30s", headers: [.init(name: "X-Test", value: "1")], body: Array("body".utf8))
            }
            let lines = Self.text(echo).components(separatedBy: "\r\n")
            #expect(lines.first == "POST /echo?wait=30s HTTP/1.1")
            #expect(lines.contains("Host: localhost"))
            #expect(lines.contains("Connection: close"))
            #expect(lines.contains("Content-Length: 4"))
            #expect(lines.contains("X-Test: 1"))
        }
    }

    @Test func oversizedAnswersAreRefusedAtTheLimit() async throws {
        try await Self.withServer { server in
            for target in ["/large", "/large-chunked"] {
                await #expect(throws: UnixSocketHTTPError.responseTooLarge(socket: server.socketPath, limit: UnixSocketHTTPClient.defaultResponseLimit)) {
                    _ = try await Self.get(server.socketPath, target)
                }
            }
        }
    }

    @Test func slowMalformedAndTruncatedAnswersAreTypedErrors() async throws {
        try await Self.withServer { server in
            let started = ContinuousClock.now
            await #expect(throws: UnixSocketHTTPError.timedOut(socket: server.socketPath, after: .milliseconds(300))) {
                _ = try await Self.get(server.socketPath, "/slow", timeout: .milliseconds(300))
            }
            #expect(ContinuousClock.now - started < .seconds(5))

            for target in ["/garbage", "/truncated"] {
                do throws(UnixSocketHTTPError) {
                    _ = try await Self.get(server.socketPath, target)
                    Issue.record("\(target) was accepted")
                } catch {
                    guard case .malformedResponse(let socket, let reason) = error else {
                        Issue.record("\(target): \(error)")
                        continue
                    }
                    #expect(socket == server.socketPath)
                    #expect(!reason.isEmpty)
                }
            }
        }
    }

    @Test func noServerIsNotReachableWithTheErrno() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let missing = folder.path("none.sock")
        await #expect(throws: UnixSocketHTTPError.notReachable(socket: missing, errno: ENOENT)) {
            _ = try await Self.get(missing, "/v1/health")
        }
        // A socket file nobody listens on (left by a crash): refused.
        let stale = folder.path("stale.sock")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(stale.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(fd)
        #expect(bound == 0)
        await #expect(throws: UnixSocketHTTPError.notReachable(socket: stale, errno: ECONNREFUSED)) {
            _ = try await Self.get(stale, "/v1/health")
        }
        let message = UnixSocketHTTPError.notReachable(socket: stale, errno: ECONNREFUSED).description
        #expect(message == "cannot connect to \(stale): nothing listens on it")
    }

    @Test func serverSentEventsArriveInOrderAcrossChunks() async throws {
        try await Self.withServer { server in
            let socket = server.socketPath
            let events = try await onDedicatedThread { () throws(UnixSocketHTTPError) -> [ServerSentEvent] in
                guard case .opened(let stream) = try UnixSocketHTTPClient(socketPath: socket).openEventStream("/events") else { return [] }
                var received: [ServerSentEvent] = []
                while let event = try stream.next() { received.append(event) }
                return received
            }
            #expect(events == [
                ServerSentEvent(event: "state", data: #"{"site":"demo","from":"logging-in","to":"valid"}"#, id: "1"),
                ServerSentEvent(event: "cookies", data: "first line\nsecond line", id: "2"),
                ServerSentEvent(event: "cookies", data: "no space", id: "3"),
            ])

            let refused = try await onDedicatedThread { () throws(UnixSocketHTTPError) -> UnixSocketHTTPResponse? in
                if case .refused(let answer) = try UnixSocketHTTPClient(socketPath: socket).openEventStream("/events-error") { return answer }
                return nil
            }
            #expect(refused?.status == 404)
            #expect(refused.map(Self.text)?.contains("not_found") == true)
        }
    }

    @Test func closingAStreamWakesABlockedReader() async throws {
        try await Self.withServer { server in
            let socket = server.socketPath
            // The server keeps the stream open and silent for 30 seconds.
            let opening = try await onDedicatedThread { () throws(UnixSocketHTTPError) -> EventStreamOpening in
                try UnixSocketHTTPClient(socketPath: socket).openEventStream("/events-idle")
            }
            guard case .opened(let stream) = opening else {
                Issue.record("not opened")
                return
            }
            let started = ContinuousClock.now
            async let drained = onDedicatedThread { () -> Int in
                var count = 0
                while (try? stream.next()) != nil { count += 1 }
                return count
            }
            try await Task.sleep(for: .milliseconds(200))
            stream.close()
            let count = await drained
            #expect(count == 0)
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(try stream.next() == nil)
        }
    }

    @Test func chunkedDecoderAndEventParserTakeBytesOneAtATime() throws {
        var decoder = ChunkedBodyDecoder()
        var body: [UInt8] = []
        let wire = Array("4\r\nWiki\r\n5;x=y\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\nafter".utf8)
        var used = 0
        for index in wire.indices where !decoder.isDone {
            used += try decoder.decode(wire[index...index], into: &body)
        }
        #expect(String(decoding: body, as: UTF8.self) == "Wikipedia in\r\n\r\nchunks.")
        #expect(used == wire.count - "after".count)

        var bad = ChunkedBodyDecoder()
        #expect(throws: HTTPResponseParseError.self) { try bad.decode(Array("zz\r\n".utf8)[...], into: &body) }

        var parser = ServerSentEventParser()
        var events: [ServerSentEvent] = []
        for byte in Array("retry: 5\nid: 7\ndata: a\n\n: comment\n\ndata\n\n".utf8) { events += try parser.feed([byte]) }
        #expect(events == [ServerSentEvent(event: "message", data: "a", id: "7"), ServerSentEvent(event: "message", data: "", id: "7")])
    }
}
