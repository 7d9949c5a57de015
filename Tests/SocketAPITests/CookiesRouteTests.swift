import CookieJar
@testable import Daemon
import Foundation
import Locking
@testable import SocketAPI
import Testing
import TestSupport

/// `GET /v1/sites/NAME/cookies` served from the Keeper's board over the real socket, and what the socket's
/// connections do around it: pipelined requests answered in order, the idle timeout, the `close` option.
@Suite struct CookiesRouteTests {
    private static func valid(_ keeper: Keeper) async throws -> Bool {
        try await waitUntil(.seconds(8)) { await keeper.snapshot(of: "demo")?.status.phase == .valid }
    }

    private static func expected(
        _ world: SocketWorld, format: CookieFormat = .header, url: URL? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> CookieAnswer {
        let served = try #require(world.keeper.servedNow("demo", minValid: nil))
        return CookieAnswer(served, format: format, url: url, now: now)
    }

    @Test func theBoardsSessionIsServedInEveryFormatOnKeptAndClosedConnections() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                let api = world.server.baseURL.absoluteString + "/api/me"
                let cases: [(query: String, format: CookieFormat, url: URL?)] = [
                    ("", .header, nil), ("?format=json", .json, nil), ("?format=netscape", .netscape, nil),
                    ("?format=playwright", .playwright, nil), ("?format=set-cookie", .setCookie, nil),
                    ("?url=" + SocketAPITests.encoded(api), .header, URL(string: api)),
                    ("?min_valid=1s&wait=5s", .header, nil),
                ]
                for (query, format, url) in cases {
                    let expected = try Self.expected(world, format: format, url: url)
                    // curl sends no Connection field; the CLI's client sends `Connection: close`.
                    for close in [false, true] {
                        let answer = try await world.curl("/v1/sites/demo/cookies" + query, headers: close ? ["Connection: close"] : [])
                        #expect(answer.status == 200)
                        // Compared, never printed.
                        #expect(Sealed(answer.body) == Sealed(expected.text), "\(query) close=\(close): not the board's answer")
                    }
                }
                // Served from the board: no login beyond the first one.
                #expect(world.requests.count("POST /login") == 1)
            }
        }
    }

    @Test func eachAnswerFollowsTheSessionAndItsCookies() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            // The clock the route judges cookies by: the real one, held still or moved on below.
            let clock = Locked<Date?>(nil)
            let now: @Sendable () -> Date = { clock.withLock { $0 } ?? Date() }
            try await world.serving(world.socketServer(now: now)) {
                let first = Sealed(try await world.curl("/v1/sites/demo/cookies").body)
                #expect(Sealed(try await world.curl("/v1/sites/demo/cookies").body) == first)
                // A cookie the site set later, living one second: the next answer carries it, and the one after
                // its expiry does not, though the session is the same. The clock stands still from before the
                // cookie is set, then moves past its expiry.
                let base = try #require(URL(string: world.server.baseURL.absoluteString + "/"))
                clock.withLock { $0 = Date() }
                _ = try await world.keeper.setCookies("demo", url: base, values: ["brief=1; Path=/; Max-Age=1"])
                let afterSetting = Date()
                let withBrief = Sealed(try await world.curl("/v1/sites/demo/cookies").body)
                #expect(withBrief.contains("brief=1"))
                #expect(withBrief == Sealed(try Self.expected(world, now: now).text))
                clock.withLock { $0 = afterSetting.addingTimeInterval(2) }
                let afterExpiry = Sealed(try await world.curl("/v1/sites/demo/cookies").body)
                #expect(!afterExpiry.contains("brief="))
                #expect(afterExpiry == first)
                clock.withLock { $0 = nil }
                // A new login is a new session: its answer.
                _ = try await world.keeper.refresh("demo", wait: .seconds(10))
                let renewed = Sealed(try await world.curl("/v1/sites/demo/cookies").body)
                #expect(renewed == Sealed(try Self.expected(world).text))
                #expect(renewed != first)
                let metrics = try await world.curl("/metrics")
                #expect(metrics.body.contains("sessionkeeper_socket_requests_total{route=\"/v1/sites/{name}/cookies\",status=\"200\"} 5"))
            }
        }
    }

    @Test func pipelinedRequestsAreAnsweredInTheOrderTheyCame() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                // Four requests in one write, the slower /metrics first.
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

    @Test func aConnectionInUseIsNotIdle() async throws {
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
                    # Generous, for a loaded machine: the timer must run, late or not.
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

    /// RFC 9112 section 9.6: the answer to a request with the `close` option says `Connection: close`, and the
    /// connection ends after it; a request without it keeps the connection and gets no such field.
    @Test func theAnswerToARequestThatClosesSaysSoAndTheConnectionEnds() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await Self.valid(world.keeper))
            try await world.serving(world.socketServer()) {
                // Each case: one connection, a request with the given Connection field (none for "-"), then what
                // came back until the server closed or the client's patience ran out. Prints the status line, the Connection
                // fields of the answer and whether the connection ended within the client's patience; never the
                // body.
                let script = """
                    target, connection = sys.argv[2], sys.argv[3]
                    field = b"" if connection == "-" else b"Connection: " + connection.encode() + b"\\r\\n"
                    s.settimeout(10)
                    s.sendall(b"GET " + target.encode() + b" HTTP/1.1\\r\\nHost: localhost\\r\\n" + field + b"\\r\\n")
                    data = b""
                    ended = False
                    try:
                        while True:
                            chunk = s.recv(65536)
                            if not chunk:
                                ended = True
                                break
                            data += chunk
                    except socket.timeout:
                        pass
                    head = data.split(b"\\r\\n\\r\\n", 1)[0].decode().split("\\r\\n")
                    fields = [l.split(": ", 1)[1] for l in head[1:] if l.lower().startswith("connection:")]
                    print(head[0], "|", ",".join(fields) or "none", "|", "ended" if ended else "open")
                    """
                for target in ["/v1/sites/demo/cookies", "/v1/health", "/v1/nosuch"] {
                    for option in ["close", "Close", "keep-alive, close"] {
                        let result = try await world.socketClient(script, arguments: [target, option, "10"])
                        let words = result.outputText.trimmingCharacters(in: .whitespacesAndNewlines).components(separatedBy: " | ")
                        #expect(words.count == 3 && words[0].hasPrefix("HTTP/1.1 "), "\(target) \(option): \(result.outputText) \(result.errorText.suffix(300))")
                        #expect(words.dropFirst().first == "close", "\(target) \(option): \(result.outputText)")
                        #expect(words.last == "ended", "\(target) \(option): \(result.outputText)")
                    }
                }
                // Without the option the connection stays (past the second the client waits).
                let kept = try await world.socketClient(script, arguments: ["/v1/health", "-", "1"])
                #expect(kept.outputText.trimmingCharacters(in: .whitespacesAndNewlines) == "HTTP/1.1 200 OK | none | open", "\(kept.outputText)")
            }
        }
    }
}
