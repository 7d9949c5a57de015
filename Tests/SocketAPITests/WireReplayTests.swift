import CookieJar
import Daemon
import Foundation
import HTTPTypes
import Locking
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Platform
import Scheduler
@testable import SocketAPI
import Testing
import TestSupport

/// ``WireReplay``: a repeated cookies request answered from the bytes of its last answer, in an embedded
/// pipeline built as the server builds it (bytes in at the front, HTTP parts out at the back for the router),
/// and the ``HeadScanner`` it finds request heads with.
@Suite struct WireReplayTests {
    private static let request = "GET /v1/sites/demo/cookies HTTP/1.1\r\nHost: localhost\r\nUser-Agent: test\r\n\r\n"

    /// A world whose keeper holds a valid demo session.
    /// The embedded pipelines are made and used on one thread (``onOneEventLoop(_:)``).
    private static func withServedDemo(_ body: (SocketWorld) async throws -> Void) async throws {
        try await onOneEventLoop {
            try await SocketWorld.withWorld { world in
                await world.keeper.apply([try world.site()])
                #expect(try await waitUntil(.seconds(8)) { await world.keeper.snapshot(of: "demo")?.status.phase == .valid })
                try await body(world)
            }
        }
    }

    /// A connection as ``SocketHTTPChannel`` sets it up, short of the router.
    private struct Connection {
        let channel = EmbeddedChannel()
        let replay: WireReplay
        let metrics = DaemonMetrics()

        /// - Parameter replaying: false leaves ``WireReplay`` out of the pipeline, as it was before it (the
        ///   handler is made all the same, and sees nothing).
        /// - Parameter now: the clock cookies are judged by (the `Date` field always follows the real one).
        init(
            _ world: SocketWorld, maxHeadBytes: Int = 16 * 1024, maxHeaderFieldBytes: Int = 8 * 1024, replaying: Bool = true,
            now: @escaping @Sendable () -> Date = { Date() }
        ) throws {
            let parts = CookieFastPathParts(
                keeper: world.keeper, access: AccessControl(daemonUID: 0, allowUIDs: []),
                peer: { _ in PeerCredentials(pid: 1, uid: 0, gid: 0) },
                answered: metrics.requestCounter(route: "/v1/sites/{name}/cookies", status: 200), now: now)
            let ledger = ConnectionLedger()
            replay = WireReplay(parts: parts, ledger: ledger, maxHeadBytes: maxHeadBytes)
            let operations = channel.pipeline.syncOperations
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = maxHeaderFieldBytes
            try operations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
            try operations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try operations.addHandler(CookieFastPath(parts: parts, ledger: ledger))
            try operations.addHandler(ConnectionLifetime(ledger: ledger, idleTimeout: .seconds(60)))
            if replaying { try operations.addHandler(replay, position: .first) }
        }

        /// Sends `bytes` in the pieces given; returns what was written back and what reached the router.
        func send(_ pieces: [String]) throws -> (written: Sealed, routed: [HTTPRequestPart]) {
            for piece in pieces { try channel.writeInbound(ByteBuffer(string: piece)) }
            var written = ""
            while let data = try channel.readOutbound(as: IOData.self) {
                guard case .byteBuffer(let buffer) = data else { continue }
                written += String(buffer: buffer)
            }
            var routed: [HTTPRequestPart] = []
            while let part = try channel.readInbound(as: HTTPRequestPart.self) { routed.append(part) }
            return (Sealed(written), routed)
        }

        func send(_ bytes: String) throws -> (written: Sealed, routed: [HTTPRequestPart]) { try send([bytes]) }

        /// The router's answer to the request it holds, as it goes out through the pipeline.
        func routerAnswers() throws -> Sealed {
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .noContent)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
            var written = ""
            while let data = try channel.readOutbound(as: IOData.self) {
                if case .byteBuffer(let buffer) = data { written += String(buffer: buffer) }
            }
            return Sealed(written)
        }
    }

    /// Waits for the start of a wall-clock second, so that a test's answers share their `Date` field.
    private static func startOfASecond() async throws {
        let now = Date().timeIntervalSince1970
        try await Task.sleep(for: .seconds(now.rounded(.up) - now + 0.01))
    }

    @Test func aRepeatedRequestGetsTheSameBytesWithoutTheDecoder() async throws {
        try await Self.withServedDemo { world in
            let connection = try Connection(world)
            try await Self.startOfASecond()
            let first = try connection.send(Self.request)
            #expect(first.routed.isEmpty)
            #expect(first.written.hasPrefix("HTTP/1.1 200 OK\r\n"))
            let served = try #require(world.keeper.servedNow("demo", minValid: nil))
            #expect(first.written.hasSuffix("\r\n\r\n" + CookieAnswer(served, format: .header, url: nil, now: { Date() }).text))
            #expect(connection.replay.replayed == 0)
            for _ in 0..<3 {
                let again = try connection.send(Self.request)
                #expect(again.written == first.written && again.routed.isEmpty)
            }
            #expect(connection.replay.replayed == 3)
            // Pipelined: two in one read, two answers.
            let two = try connection.send(Self.request + Self.request)
            #expect(two.written == first.written + first.written)
            // A head arriving in pieces, a byte at a time at the end: answered once whole.
            let bytes = Array(Self.request.utf8)
            let cuts = [0, 10, bytes.count - 3, bytes.count - 2, bytes.count - 1, bytes.count]
            let pieces = zip(cuts, cuts.dropFirst()).map { String(decoding: bytes[$0..<$1], as: UTF8.self) }
            #expect(try connection.send(pieces).written == first.written)
            #expect(connection.replay.replayed == 6)
            // After a head that came in pieces, the next one is found from its own start.
            let json = try connection.send("GET /v1/sites/demo/cookies?format=json HTTP/1.1\r\n\r\n")
            #expect(json.written.hasPrefix("HTTP/1.1 200 OK") && json.written.contains("application/json"))
            // Every answer counted as the router counts its own.
            let text = connection.metrics.render([], now: Date())
            #expect(text.contains("sessionkeeper_socket_requests_total{route=\"/v1/sites/{name}/cookies\",status=\"200\"} 8"))
            _ = try connection.channel.finish()
        }
    }

    @Test func anAnswerIsReplayedOnlyWhileItStillHolds() async throws {
        try await Self.withServedDemo { world in
            // The clock cookies are judged by: the real one, held still or moved on below.
            let clock = Locked<Date?>(nil)
            let connection = try Connection(world, now: { clock.withLock { $0 } ?? Date() })
            try await Self.startOfASecond()
            let first = try connection.send(Self.request)
            // Another request (another target): the fast path's own answer, which becomes the kept one.
            let json = try connection.send("GET /v1/sites/demo/cookies?format=json HTTP/1.1\r\n\r\n")
            #expect(json.written.contains("application/json") && json.routed.isEmpty)
            #expect(connection.replay.replayed == 0)
            // A cookie set later: a new publication of the session, so a fresh answer carrying it. The clock stands
            // still from before it is set (a loaded machine has taken seconds between setting it and the next
            // request), then moves past its expiry.
            let base = try #require(URL(string: world.server.baseURL.absoluteString + "/"))
            clock.withLock { $0 = Date() }
            _ = try await world.keeper.setCookies("demo", url: base, values: ["brief=1; Path=/; Max-Age=1"])
            let afterSetting = Date()
            let withBrief = try connection.send(Self.request)
            #expect(withBrief.written.contains("brief=1") && withBrief.written != first.written)
            #expect(connection.replay.replayed == 0)
            // Once that cookie has expired, the answer changes again (the same publication).
            clock.withLock { $0 = afterSetting.addingTimeInterval(2) }
            try await Self.startOfASecond()
            let afterExpiry = try connection.send(Self.request)
            #expect(!afterExpiry.written.contains("brief="))
            #expect(connection.replay.replayed == 0)
            // The next second: a fresh `Date` field, not the kept one.
            #expect(try connection.send(Self.request).written == afterExpiry.written)
            #expect(connection.replay.replayed == 1)
            try await Self.startOfASecond()
            let later = try connection.send(Self.request)
            #expect(later.written != afterExpiry.written && later.written.hasPrefix("HTTP/1.1 200 OK"))
            #expect(connection.replay.replayed == 1)
            _ = try connection.channel.finish()
        }
    }

    @Test func answersWaitBehindARequestTheRouterHolds() async throws {
        try await Self.withServedDemo { world in
            let connection = try Connection(world)
            try await Self.startOfASecond()
            let first = try connection.send(Self.request)
            // /metrics goes to the router; the cookies request behind it goes there too, in order.
            let held = try connection.send("GET /metrics HTTP/1.1\r\n\r\n" + Self.request)
            #expect(held.written.isEmpty && held.routed.count == 4)
            #expect(try connection.routerAnswers().hasPrefix("HTTP/1.1 204"))
            #expect(try connection.routerAnswers().hasPrefix("HTTP/1.1 204"))
            #expect(connection.replay.replayed == 0)
            // Both answered: replayed again.
            #expect(try connection.send(Self.request).written == first.written)
            #expect(connection.replay.replayed == 1)
            _ = try connection.channel.finish()
        }
    }

    @Test func whereTheNextRequestStartsIsUnknownEverythingGoesToTheDecoder() async throws {
        try await Self.withServedDemo { world in
            // A body: the connection is the HTTP handlers' from then on, and they still answer.
            let withBody = try Connection(world)
            #expect(try withBody.send(Self.request).routed.isEmpty)
            let post = try withBody.send("POST /v1/sites/demo/set-cookie HTTP/1.1\r\nContent-Length: 3\r\n\r\na=b")
            #expect(post.routed.count == 3, "head, body, end")
            _ = try withBody.routerAnswers()
            let after = try withBody.send(Self.request)
            #expect(after.written.hasPrefix("HTTP/1.1 200 OK") && after.routed.isEmpty)
            #expect(withBody.replay.replayed == 0)
            _ = try withBody.channel.finish()

            // Lines ended by a bare LF: the decoder's to judge (it refuses them), not held back.
            let bareLF = try Connection(world)
            #expect(throws: (any Error).self) { _ = try bareLF.send("GET /v1/sites/demo/cookies HTTP/1.1\nHost: localhost\n\n") }
            _ = try? bareLF.channel.finish()

            // A head longer than the decoder allows reaches the decoder, which refuses it.
            let long = try Connection(world, maxHeadBytes: 1024, maxHeaderFieldBytes: 1024)
            let field = "X-Filler: " + String(repeating: "a", count: 2000) + "\r\n"
            #expect(throws: (any Error).self) { _ = try long.send("GET /v1/sites/demo/cookies HTTP/1.1\r\n" + field) }
            _ = try? long.channel.finish()

            // Not HTTP at all: the decoder's error, at once, not held back for a head to complete.
            for bytes in ["\u{1}\u{2}\u{3} hello", "HELLO"] {
                let garbage = try Connection(world)
                #expect(throws: (any Error).self) { _ = try garbage.send(bytes) }
                _ = try? garbage.channel.finish()
            }
        }
    }

    @Test func whileTheConnectionTakesNoMoreOutputRequestsWait() async throws {
        try await Self.withServedDemo { world in
            let connection = try Connection(world)
            try await Self.startOfASecond()
            let first = try connection.send(Self.request)
            // The client reads nothing: its requests (a replayed one, a routed one, a new one) wait, unanswered.
            connection.channel.isWritable = false
            let stream = Self.request + "GET /metrics HTTP/1.1\r\n\r\n" + Self.request
            let waiting = try connection.send(Array(stream.utf8).chunks(of: 7))
            #expect(waiting.written.isEmpty && waiting.routed.isEmpty)
            // It reads again: everything is handled, in order (the router holds /metrics, so the request after it
            // goes to the router too).
            connection.channel.isWritable = true
            connection.channel.pipeline.fireChannelWritabilityChanged()
            let resumed = try connection.send([String]())
            #expect(resumed.written == first.written && resumed.routed.count == 4)
            #expect(connection.replay.replayed == 1)
            _ = try connection.channel.finish()
        }
    }

    @Test func aHeadTrickledInIsNoActivity() async throws {
        try await Self.withServedDemo { world in
            let connection = try Connection(world)
            try await connection.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1))
            let loop = try #require(connection.channel.eventLoop as? EmbeddedEventLoop)
            #expect(try connection.send(Self.request).written.hasPrefix("HTTP/1.1 200 OK"))
            // The start of a head, held back for its end, then a byte now and then: the idle timeout still
            // counts from the last answer.
            _ = try connection.send("GET /v1/si")
            for _ in 0..<6 {
                loop.advanceTime(by: .seconds(10))
                _ = try connection.send("t")
            }
            loop.advanceTime(by: .seconds(1))
            #expect(!connection.channel.isActive)
        }
    }

    /// Random streams of requests, cut at random places, give the same bytes back, and the same requests to
    /// the router, with ``WireReplay`` in front of the decoder as without it.
    @Test func withOrWithoutReplayTheSameStreamGetsTheSameAnswers() async throws {
        try await Self.withServedDemo { world in
            let requests = [
                "GET /v1/sites/demo/cookies HTTP/1.1\r\nHost: localhost\r\n\r\n",
                "GET /v1/sites/demo/cookies HTTP/1.1\r\nHost: localhost\r\n\r\n",
                "GET /v1/sites/demo/cookies?format=json HTTP/1.1\r\n\r\n",
                "GET /metrics HTTP/1.1\r\n\r\n",
                "POST /v1/sites/demo/refresh HTTP/1.1\r\n\r\n",
                "POST /v1/sites/demo/set-cookie HTTP/1.1\r\nContent-Length: 3\r\n\r\na=b",
                "GET /v1/sites/demo/cookies HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            ]
            var random = SplitMix64(seed: 20261124)
            var compared = 0
            for _ in 0..<150 {
                let stream = Array((0..<Int.random(in: 1...8, using: &random)).map { _ in requests.randomElement(using: &random)! }.joined().utf8)
                var cuts = Set((0..<Int.random(in: 0...6, using: &random)).map { _ in Int.random(in: 1..<stream.count, using: &random) })
                if Bool.random(using: &random), stream.count < 200 { cuts = Set(1..<stream.count) }
                let edges = [0] + cuts.sorted() + [stream.count]
                let pieces = zip(edges, edges.dropFirst()).map { String(decoding: stream[$0..<$1], as: UTF8.self) }
                let second = Int(Date().timeIntervalSince1970)
                let replayed = try Self.transcript(of: pieces, on: Connection(world))
                let plain = try Self.transcript(of: pieces, on: Connection(world, replaying: false))
                // Answers made in different seconds differ in their Date field: such a pair says nothing.
                guard Int(Date().timeIntervalSince1970) == second else { continue }
                let same = replayed == plain
                #expect(same, "\(pieces.map { $0.debugDescription })")
                compared += 1
            }
            #expect(compared > 100)
        }
    }

    /// What goes out of `connection` for `pieces`: each answer's bytes and, for each request the router gets,
    /// its method and path, the router answering each at once (sealed: a difference prints no cookie value).
    private static func transcript(of pieces: [String], on connection: Connection) throws -> [Sealed] {
        var transcript: [Sealed] = []
        for piece in pieces {
            let (written, routed) = try connection.send(piece)
            if !written.isEmpty { transcript.append(written) }
            for part in routed {
                switch part {
                case .head(let head): transcript.append(Sealed("router: \(head.method) \(head.path ?? "")"))
                case .body(let body): transcript.append(Sealed("router body: \(String(buffer: body))"))
                case .end: transcript.append(try connection.routerAnswers())
                }
            }
        }
        _ = try connection.channel.finish()
        return transcript
    }

    @Test func theScannerFindsTheEndOfAHeadAcrossReads() {
        func scan(_ text: String, pieces: Int) -> HeadScanner.Result {
            var scanner = HeadScanner()
            let bytes = Array(text.utf8)
            var result = HeadScanner.Result.incomplete
            for end in stride(from: 0, through: bytes.count, by: max(1, bytes.count / pieces)) + [bytes.count] {
                result = bytes[..<end].withUnsafeBytes { scanner.scan($0) }
                if result != .incomplete { break }
            }
            return result
        }
        let head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        for pieces in [1, 3, head.utf8.count] {
            #expect(scan(head, pieces: pieces) == .end(head.utf8.count))
            #expect(scan(head + "GET /next", pieces: pieces) == .end(head.utf8.count))
            #expect(scan("GET / HTTP/1.1\r\nHost: x\r\n", pieces: pieces) == .incomplete)
            #expect(scan("GET / HTTP/1.1\r\nHost: x\r", pieces: pieces) == .incomplete)
            #expect(scan("GET / HTTP/1.1\nHost: x\r\n\r\n", pieces: pieces) == .malformed)
            #expect(scan("GET / HTTP/1.1\r\nHost: x\rY\r\n\r\n", pieces: pieces) == .malformed)
            #expect(scan("\r\nGET / HTTP/1.1\r\n\r\n", pieces: pieces) == .malformed)
        }
    }
}

extension Array where Element == UInt8 {
    /// The bytes as text pieces of at most `size` bytes (a request as a client's writes may cut it).
    func chunks(of size: Int) -> [String] {
        stride(from: 0, to: count, by: size).map { String(decoding: self[$0..<Swift.min($0 + size, count)], as: UTF8.self) }
    }
}
