import CookieJar
import CoreMetrics
@testable import Daemon
import Foundation
import HTTPTypes
import Locking
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Platform
@testable import SocketAPI
import SocketClient
import Testing
import TestSupport

/// The socket's fast path for `GET /v1/sites/NAME/cookies` (``CookieFastPath``): alone in an embedded pipeline,
/// where what it answers and what it passes on can be told apart, and behind the real server.
@Suite struct CookieFastPathTests {
    private static let root = PeerCredentials(pid: 1, uid: 0, gid: 0)
    private static let nobody = PeerCredentials(pid: 1, uid: 65534, gid: 65534)
    private static let cookiesRoute = "/v1/sites/{name}/cookies"

    private static func valid(_ keeper: Keeper) async throws -> Bool {
        try await waitUntil(.seconds(8)) { await keeper.snapshot(of: "demo")?.status.phase == .valid }
    }

    /// A world for the tests of an embedded pipeline, made and used on one thread (``onOneEventLoop(_:)``).
    private static func withEmbeddedWorld(_ body: (SocketWorld) async throws -> Void) async throws {
        try await onOneEventLoop { try await SocketWorld.withWorld(body) }
    }

    /// A connection whose pipeline holds the fast path and, after it, the handler that counts the router's
    /// requests, with `peer` at the other end. Cookies are judged by `now`.
    private static func connection(
        _ world: SocketWorld, peer: PeerCredentials? = root, metrics: DaemonMetrics = DaemonMetrics(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> EmbeddedChannel {
        let parts = CookieFastPathParts(
            keeper: world.keeper, access: AccessControl(daemonUID: 0, allowUIDs: []), peer: { _ in peer },
            answered: metrics.requestCounter(route: cookiesRoute, status: 200), now: now)
        let channel = EmbeddedChannel()
        let ledger = ConnectionLedger()
        try channel.pipeline.syncOperations.addHandler(CookieFastPath(parts: parts, ledger: ledger))
        try channel.pipeline.syncOperations.addHandler(ConnectionLifetime(ledger: ledger, idleTimeout: .seconds(60)))
        return channel
    }

    private struct Exchange {
        /// What the fast path wrote back.
        var written: [HTTPResponsePart] = []
        /// What it passed on to the router.
        var passed: [HTTPRequestPart] = []

        var status: HTTPResponse.Status? {
            guard case .head(let head)? = written.first else { return nil }
            return head.status
        }
        var headerFields: HTTPFields? {
            guard case .head(let head)? = written.first else { return nil }
            return head.headerFields
        }
        var body: Sealed? {
            guard written.count == 3, case .body(let buffer) = written[1] else { return nil }
            return Sealed(String(buffer: buffer))
        }
    }

    /// Sends one request (its head and its end) and collects what came out on either side.
    private static func send(
        _ channel: EmbeddedChannel, _ target: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:]
    ) throws -> Exchange {
        try channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: method, scheme: nil, authority: "localhost", path: target, headerFields: headers)))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        var exchange = Exchange()
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) { exchange.written.append(part) }
        while let part = try channel.readInbound(as: HTTPRequestPart.self) { exchange.passed.append(part) }
        return exchange
    }

    /// The router's answer to a request, as it comes back through the pipeline.
    private static func routerAnswers(_ channel: EmbeddedChannel) throws {
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        while try channel.readOutbound(as: HTTPResponsePart.self) != nil {}
    }

    private static func expected(
        _ world: SocketWorld, format: CookieFormat = .header, url: URL? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> CookieAnswer {
        let served = try #require(world.keeper.servedNow("demo", minValid: nil))
        return CookieAnswer(served, format: format, url: url, now: now)
    }

    @Test func answersAFitSessionItselfWithTheRoutersAnswer() async throws {
        try await Self.withEmbeddedWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            let channel = try Self.connection(world)
            let api = world.server.baseURL.absoluteString + "/api/me"
            let cases: [(query: String, format: CookieFormat, url: URL?)] = [
                ("", .header, nil), ("?format=json", .json, nil), ("?format=netscape", .netscape, nil),
                ("?format=playwright", .playwright, nil), ("?format=set-cookie", .setCookie, nil),
                ("?url=" + SocketAPITests.encoded(api), .header, URL(string: api)),
                ("?min_valid=1s&wait=5s", .header, nil),
            ]
            for (query, format, url) in cases {
                let exchange = try Self.send(channel, "/v1/sites/demo/cookies" + query)
                let expected = try Self.expected(world, format: format, url: url)
                #expect(exchange.passed.isEmpty, "\(query) went to the router")
                #expect(exchange.status == .ok)
                #expect(exchange.body == Sealed(expected.text), "\(query): not the router's body")
                #expect(exchange.headerFields?[.contentType] == expected.contentType)
                #expect(exchange.headerFields?[.contentLength] == String(expected.text.utf8.count))
                #expect(exchange.headerFields?[.date]?.hasSuffix(" GMT") == true)
            }
            _ = try channel.finish()
        }
    }

    @Test func leavesEverythingElseToTheRouter() async throws {
        try await Self.withEmbeddedWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            let routed = [
                "/v1/health", "/v1/sites/demo", "/v1/sites/nosuch/cookies", "/v1/sites/demo/cookies/", "/v1/sites//cookies",
                "/v1/sites/de%6Do/cookies", "/v1/sites/demo/cookies?format=bogus", "/v1/sites/demo/cookies?url=notaurl",
                "/v1/sites/demo/cookies?min_valid=2h", "/v1/sites/demo/cookies?extra=1",
                "/v1/sites/demo/cookies?format=json&format=json", "http://localhost/v1/sites/demo/cookies",
            ]
            let channel = try Self.connection(world)
            for target in routed {
                let exchange = try Self.send(channel, target)
                #expect(exchange.written.isEmpty, "\(target) was answered by the fast path")
                #expect(exchange.passed.count == 2, "\(target) was not passed on whole")
                try Self.routerAnswers(channel)
            }
            // Another method, `Connection: close`, a peer not allowed to read the site, a peer not known yet.
            #expect(try Self.send(channel, "/v1/sites/demo/cookies", method: .post).passed.count == 2)
            try Self.routerAnswers(channel)
            #expect(try Self.send(channel, "/v1/sites/demo/cookies", headers: [.connection: "close"]).passed.count == 2)
            try Self.routerAnswers(channel)
            #expect(try Self.send(channel, "/v1/sites/demo/cookies", headers: [.connection: "close, keep-alive"]).passed.count == 2)
            try Self.routerAnswers(channel)
            // `keep-alive` changes nothing the router would do: answered here.
            let keepAlive = try Self.send(channel, "/v1/sites/demo/cookies", headers: [.connection: "Keep-Alive"])
            #expect(keepAlive.passed.isEmpty && keepAlive.status == .ok)
            for peer in [Self.nobody, nil] {
                let other = try Self.connection(world, peer: peer)
                let exchange = try Self.send(other, "/v1/sites/demo/cookies")
                #expect(exchange.written.isEmpty && exchange.passed.count == 2)
                _ = try other.finish()
            }
            _ = try channel.finish()
        }
    }

    @Test func answersStayInOrderBehindARequestTheRouterHolds() async throws {
        try await Self.withEmbeddedWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            let channel = try Self.connection(world)
            #expect(try Self.send(channel, "/metrics").passed.count == 2)
            // The router has not answered /metrics yet: the next request waits behind it, in the router.
            let behind = try Self.send(channel, "/v1/sites/demo/cookies")
            #expect(behind.written.isEmpty && behind.passed.count == 2)
            try Self.routerAnswers(channel)
            try Self.routerAnswers(channel)
            // Both answered: the fast path answers again.
            let after = try Self.send(channel, "/v1/sites/demo/cookies")
            #expect(after.passed.isEmpty && after.status == .ok)
            _ = try channel.finish()
        }
    }

    @Test func eachAnswerFollowsTheSessionAndItsCookies() async throws {
        try await Self.withEmbeddedWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            let metrics = DaemonMetrics()
            // The clock the fast path judges cookies by: the real one, held still or moved on below.
            let clock = Locked<Date?>(nil)
            let now: @Sendable () -> Date = { clock.withLock { $0 } ?? Date() }
            let channel = try Self.connection(world, metrics: metrics, now: now)
            let first = try Self.send(channel, "/v1/sites/demo/cookies")
            #expect(try Self.send(channel, "/v1/sites/demo/cookies").body == first.body)
            // A cookie the site set later, living one second: the next answer carries it, and the one after its
            // expiry does not, though the session is the same publication. The clock stands still from before
            // the cookie is set (a loaded machine has taken seconds between setting it and the next answer),
            // then moves past its expiry.
            let base = try #require(URL(string: world.server.baseURL.absoluteString + "/"))
            clock.withLock { $0 = Date() }
            _ = try await world.keeper.setCookies("demo", url: base, values: ["brief=1; Path=/; Max-Age=1"])
            let afterSetting = Date()
            let withBrief = try Self.send(channel, "/v1/sites/demo/cookies")
            #expect(withBrief.body?.contains("brief=1") == true)
            #expect(withBrief.body == Sealed(try Self.expected(world, now: now).text))
            clock.withLock { $0 = afterSetting.addingTimeInterval(2) }
            let afterExpiry = try Self.send(channel, "/v1/sites/demo/cookies")
            #expect(afterExpiry.body?.contains("brief=") == false)
            #expect(afterExpiry.body == first.body)
            clock.withLock { $0 = nil }
            // A new login is a new session: its answer, not the kept one.
            _ = try await world.keeper.refresh("demo", wait: .seconds(10))
            let renewed = try Self.send(channel, "/v1/sites/demo/cookies")
            #expect(renewed.body == Sealed(try Self.expected(world).text))
            #expect(renewed.body != first.body)
            // Every answer counted as the router counts its own.
            let text = metrics.render([], now: Date())
            #expect(text.contains("sessionkeeper_socket_requests_total{route=\"/v1/sites/{name}/cookies\",status=\"200\"} 5"))
            _ = try channel.finish()
        }
    }

    @Test func overTheSocketTheFastPathAndTheRouterGiveTheSameAnswers() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                // curl sends no Connection header (the fast path answers); the client of the CLI sends
                // `Connection: close` (the router answers).
                let router = UnixSocketHTTPClient(socketPath: world.socketPath, timeout: .seconds(10))
                let api = SocketAPITests.encoded(world.server.baseURL.absoluteString + "/api/me")
                for query in ["", "?format=json", "?format=netscape", "?format=playwright", "?url=" + api, "?min_valid=1s"] {
                    let fast = try await world.curl("/v1/sites/demo/cookies" + query)
                    // A blocking client: on its own thread, never on one of the two the concurrency pool has here.
                    let routed = try await onDedicatedThread { try router.send("GET", "/v1/sites/demo/cookies" + query) }
                    #expect(fast.status == 200 && routed.status == 200)
                    // curl's -w adds a newline of its own after the body. Compared, never printed.
                    let routedBody = String(decoding: routed.body, as: UTF8.self)
                    let same = fast.body + "\n" == routedBody || fast.body == routedBody
                    #expect(same, "\(query): the two paths differ")
                }
            }
        }
    }

    @Test func pipelinedRequestsAreAnsweredInTheOrderTheyCame() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                // Four requests in one write: the router's, the fast path's, the router's, the fast path's.
                let script = """
                    s.settimeout(10)
                    targets = ["/metrics", "/v1/sites/demo/cookies", "/v1/health", "/v1/sites/demo/cookies?format=json"]
                    s.sendall(b"".join(b"GET " + t.encode() + b" HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n" for t in targets))
                    data = b""
                    answers = []
                    while len(answers) < len(targets):
                        end = data.find(b"\\r\\n\\r\\n")
                        if end >= 0:
                            head = data[:end].decode()
                            fields = dict(l.split(": ", 1) for l in head.split("\\r\\n")[1:])
                            size = int(fields["Content-Length"])
                            if len(data) >= end + 4 + size:
                                answers.append(head.split(" ")[1] + " " + fields["Content-Type"].split(";")[0])
                                data = data[end + 4 + size:]
                                continue
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    print("|".join(answers))
                    """
                let result = try await world.socketClient(script)
                #expect(result.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
                    == "200 text/plain|200 text/plain|200 application/json|200 application/json", "\(result.errorText.suffix(300))")
            }
        }
    }

    @Test func aConnectionTheFastPathAnswersIsNotIdle() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            var limits = SocketServer.Limits()
            limits.idleTimeout = .seconds(1)
            try await world.serving(world.socketServer(limits: limits)) {
                // A request every 0.3 s for 2.4 s on one connection (longer than the idle timeout), then silence.
                let script = """
                    s.settimeout(5)
                    answered = 0
                    for _ in range(8):
                        sent = time.monotonic()
                        s.sendall(b"GET /v1/sites/demo/cookies HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
                        data = s.recv(65536)
                        if data.startswith(b"HTTP/1.1 200"):
                            answered += 1
                        # What each answer was and how long it took, for a failure's report.
                        print(data[:12], len(data), round(time.monotonic() - sent, 3), file=sys.stderr)
                        time.sleep(0.3)
                    start = time.monotonic()
                    # Generous, for a loaded machine: the timer must run, late or not. (This once waited in vain
                    # in parallel runs: a Python server another test started inherited the accepted socket, so
                    # the server's close did not end the stream. TestSupport's spawner now closes inherited
                    # descriptors.)
                    s.settimeout(60)
                    closed = s.recv(65536) == b""
                    print(answered, "closed" if closed else "open", round(time.monotonic() - start, 1))
                    """
                let result = try await world.socketClient(script)
                let words = result.outputText.split(separator: " ")
                #expect(words.first == "8", "\(result.outputText) \(result.errorText.suffix(300))")
                #expect(words.dropFirst().first == "closed", "\(result.outputText) \(result.errorText.suffix(600))")
                // Closed for idleness about a second after the last answer, not before.
                let waited = Double(words.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
                #expect(waited >= 0.5, "\(result.outputText)")
            }
        }
    }
}
