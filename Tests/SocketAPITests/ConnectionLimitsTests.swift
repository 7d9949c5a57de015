import Foundation
import Platform
import SocketAPI
import Testing
import TestSupport

/// No peer can starve the others (SPEC section 8): the caps on connections (all peers, one uid), the deadline
/// of each request, the caps on event readers, over the real socket with clients in child processes.
@Suite(.serialized) struct ConnectionLimitsTests {
    /// Opens `count` connections to the socket and holds them idle; once no answer has come for a second, says
    /// how many the server answered 503 ("refused") and how many it holds ("held", no byte answered). With
    /// `trickle`, one more connection sends a `set-cookie` head and then its body a byte every 50 ms. Prints
    /// "ready" and holds everything until its standard input closes.
    static let holder = """
        import selectors, socket, sys, threading, time
        path, count, trickle = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "trickle"
        socks = []
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            socks.append(s)
        selector = selectors.DefaultSelector()
        for s in socks:
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ)
        refused = other = 0
        quiet_since = time.monotonic()
        end = quiet_since + 30
        # Refusals are counted until none came for 3 s: on a loaded machine the 503s may come in bursts.
        while time.monotonic() < end and time.monotonic() - quiet_since < 3.0:
            for key, _ in selector.select(timeout=0.1):
                data = key.fileobj.recv(4096)
                selector.unregister(key.fileobj)
                if data.startswith(b"HTTP/1.1 503 "):
                    refused += 1
                else:
                    other += 1
                quiet_since = time.monotonic()
        held = count - refused - other
        if trickle:
            t = socket.socket(socket.AF_UNIX)
            t.connect(path)
            t.sendall(b"POST /v1/sites/demo/set-cookie?url=http%3A%2F%2F127.0.0.1%2F HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 100000\\r\\n\\r\\n")
            def drip():
                try:
                    while True:
                        t.send(b"a")
                        time.sleep(0.05)
                except OSError:
                    pass
            threading.Thread(target=drip, daemon=True).start()
        print("held", held, "refused", refused, "ready", flush=True)
        sys.stdin.read()
        """

    /// Starts ``holder`` (as nobody with `asNobody`) and waits for its count.
    static func hold(_ world: SocketWorld, count: Int, trickle: Bool, asNobody: Bool) async throws -> (RunningChild, held: Int, refused: Int) {
        var command = ["/usr/bin/python3", "-c", holder, world.socketPath, String(count), trickle ? "trickle" : "-"]
        if asNobody { command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command }
        let child = try await startProgram(command[0], Array(command.dropFirst()))
        let ready = await child.waitForOutput(within: .seconds(60)) { String(decoding: $0, as: UTF8.self).contains("ready") }
        let words = child.outputText.split(separator: " ")
        guard ready, words.count >= 4, let held = Int(words[1]), let refused = Int(words[3]) else {
            _ = await child.kill()
            throw WorldError("the holder did not get ready: \(child.outputText) \(child.errorText.suffix(300))")
        }
        return (child, held, refused)
    }

    /// Longer than any answer of a daemon that is not blocked (curl's own `--max-time` is 10 s), short enough
    /// that one waiting for the held connections' 10-second deadlines fails.
    static let servedBound = 5.0

    /// A cookie fetched by `curl`, with the time curl took from its start to the last byte (`time_total`).
    static func timedCookie(_ world: SocketWorld) async throws -> (status: Int, seconds: Double) {
        let result = try await runProgram("/usr/bin/curl", [
            "-s", "--unix-socket", world.socketPath, "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "--max-time", "10",
            "http://localhost/v1/sites/demo/cookies",
        ])
        let words = result.outputText.split(separator: " ")
        return (Int(words.first ?? "") ?? 0, Double(words.last ?? "") ?? 99)
    }

    /// The acceptance case of issue 27, in both of its shapes. A busy uid whose cap a deployment raised (here
    /// 4,096, and as many in total) holds 2,000 idle connections and trickles a body: the event loop serves
    /// them all without blocking, and a new client still gets its cookie. With the default caps a uid that
    /// tries 2,000 gets 128, the rest a 503 at once, and the other uids never notice. The bound here only
    /// tells "served" from "stuck behind the crowd" on a machine running the whole suite at once; the
    /// latency itself (the 100 ms goal) is measured by Benchmarks/run-socket-crowd.
    @Test func twoThousandIdleConnectionsAndATrickledBodyDoNotDelayAnotherClient() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site(extra: "access: {uids: [65534]}")])
            #expect(try await waitUntil(.seconds(8)) { await world.keeper.snapshot(of: "demo")?.status.phase == .valid })

            var raised = SocketServer.Limits()
            raised.maxConnections = 4096
            raised.maxConnectionsPerUID = 4096
            try await world.serving(world.socketServer(limits: raised)) {
                let (holder, held, refused) = try await Self.hold(world, count: 2000, trickle: true, asNobody: false)
                defer { holder.closeInput() }
                #expect(held == 2000 && refused == 0)
                var slowest = 0.0
                for _ in 0..<5 {
                    let (status, seconds) = try await Self.timedCookie(world)
                    #expect(status == 200)
                    slowest = max(slowest, seconds)
                }
                #expect(slowest < Self.servedBound, "the slowest of five cookies took \(slowest) s")
                holder.closeInput()
                _ = await holder.wait(within: .seconds(10))
            }

            try await world.serving(world.socketServer()) {
                let (holder, held, refused) = try await Self.hold(world, count: 2000, trickle: false, asNobody: true)
                defer { holder.closeInput() }
                #expect(held == SocketServer.Limits().maxConnectionsPerUID)
                #expect(refused == 2000 - held)
                let (status, seconds) = try await Self.timedCookie(world)
                #expect(status == 200)
                #expect(seconds < Self.servedBound, "the cookie took \(seconds) s")
                holder.closeInput()
                _ = await holder.wait(within: .seconds(10))
            }
        }
    }

    @Test func aConnectionOverTheTotalCapGetsA503AndTheEnd() async throws {
        try await SocketWorld.withWorld { world in
            var limits = SocketServer.Limits()
            limits.maxConnections = 4
            try await world.serving(world.socketServer(limits: limits)) {
                let (holder, held, refused) = try await Self.hold(world, count: 6, trickle: false, asNobody: true)
                #expect(held == 4 && refused == 2)
                let full = try await world.curl("/v1/health")
                #expect(full.status == 503)
                #expect(full.errorCode == "too_many")
                #expect(full.json?["error"]?["message"]?.plainText.contains("4 connections") == true, "\(full.body)")
                // Three refusals within the throttle's 10 s: the first is logged, the others wait for the next line.
                let refusals = world.logs.lines(containing: "connections refused over a cap")
                #expect(refusals.count == 1 && refusals.first?.contains("refused=1") == true, "\(refusals)")
                holder.closeInput()
                _ = await holder.wait(within: .seconds(10))
                // Their places are freed when they close.
                #expect(try await waitUntil(.seconds(5)) { try await world.curl("/v1/health").status == 200 })
            }
        }
    }

    /// A request whose head or body trickles in is cut off at its deadline with a 408; a request that arrived
    /// whole and then waits (an event stream, a `wait=`) is not.
    @Test func aTrickledRequestIsCutOffWith408AndALongPollIsNot() async throws {
        try await SocketWorld.withWorld { world in
            await world.keeper.apply([try world.site()])
            #expect(try await waitUntil(.seconds(8)) { await world.keeper.snapshot(of: "demo")?.status.phase == .valid })
            var limits = SocketServer.Limits()
            limits.requestDeadline = .seconds(1)
            try await world.serving(world.socketServer(limits: limits)) {
                let script = """
                    request = sys.argv[2].encode().replace(b"|", b"\\r\\n")
                    start = time.monotonic()
                    s.settimeout(0.05)
                    answer = b""
                    for byte in request:
                        try:
                            s.send(bytes([byte]))
                        except OSError:
                            break
                        try:
                            chunk = s.recv(65536)
                            if not chunk:
                                break
                            answer += chunk
                            break
                        except socket.timeout:
                            pass
                    \(SocketWorld.readUntilClosed())
                    print(round(time.monotonic() - start, 1), answer.split(b"\\r\\n")[0].decode(), answer.split(b"\\r\\n\\r\\n")[-1].decode())
                    """
                // A head a byte every 50 ms (each one would reset an idle timer), then a body likewise.
                for request in [
                    "GET /v1/sites/demo/cookies HTTP/1.1|Host: localhost|X-Padding: " + String(repeating: "p", count: 60) + "||",
                    "POST /v1/sites/demo/set-cookie?url=http%3A%2F%2F127.0.0.1%2F HTTP/1.1|Host: x|Content-Length: 60||" + String(repeating: "a", count: 60),
                ] {
                    let result = try await world.socketClient(script, arguments: [request])
                    let words = result.outputText.split(separator: " ", maxSplits: 3)
                    #expect(words.count >= 3 && words[1] == "HTTP/1.1" && words[2] == "408", "\(result.outputText) \(result.errorText.suffix(300))")
                    let seconds = Double(words.first ?? "") ?? 99
                    #expect(seconds >= 0.9 && seconds < 2.5, "cut off after \(seconds) s")
                    #expect(result.outputText.contains("\"code\":\"request_timeout\""), "\(result.outputText)")
                }
                // The first of the two is logged with its peer; the second, within the throttle's 10 s, waits for
                // the next line.
                let cutOff = world.logs.lines(containing: "requests cut off at the request deadline (408)")
                #expect(cutOff.count == 1, "\(cutOff)")
                #expect(cutOff.first?.contains("uid=\(getuid())") == true && cutOff.first?.contains("cut_off=1") == true, "\(cutOff)")

                // An event stream stays open past the deadline, and so does a request that waits for a login.
                let stream = try await world.socketClient("""
                    s.sendall(b"GET /v1/events HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
                    s.settimeout(0.2)
                    answer = b""
                    end = time.monotonic() + 2.5
                    while time.monotonic() < end:
                        try:
                            chunk = s.recv(65536)
                            if not chunk:
                                print("closed")
                                break
                            answer += chunk
                        except socket.timeout:
                            pass
                    print(answer.split(b"\\r\\n")[0].decode())
                    """)
                #expect(stream.outputText.hasPrefix("HTTP/1.1 200"), "\(stream.outputText)")
                #expect(!stream.outputText.contains("closed"))
                let waited = try await world.curl("/v1/sites/demo/cookies?min_valid=1000h&wait=2s")
                #expect(waited.status == 503 || waited.status == 504, "\(waited.status) \(waited.body)")
                #expect(waited.errorCode != "request_timeout")
            }
        }
    }

    /// On a kept-alive connection each request has its own deadline from its own first byte: a connection idle
    /// past the deadline between two requests is not cut, and a request that starts later than the first is cut
    /// one deadline after its start, not after the first's.
    @Test func eachRequestOfAKeptAliveConnectionHasItsOwnDeadline() async throws {
        try await SocketWorld.withWorld { world in
            var limits = SocketServer.Limits()
            limits.requestDeadline = .seconds(1)
            try await world.serving(world.socketServer(limits: limits)) {
                let script = """
                    def answer():
                        data = b""
                        while b"\\r\\n\\r\\n" not in data:
                            chunk = s.recv(65536)
                            if not chunk:
                                return data.split(b"\\r\\n")[0].decode() or "closed"
                            data += chunk
                        head, _, body = data.partition(b"\\r\\n\\r\\n")
                        length = [int(line.split(b":")[1]) for line in head.split(b"\\r\\n") if line.lower().startswith(b"content-length:")]
                        while length and len(body) < length[0]:
                            body += s.recv(65536)
                        return head.split(b"\\r\\n")[0].decode()
                    request = b"GET /v1/health HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n"
                    start = time.monotonic()
                    s.sendall(request)
                    first = answer()
                    time.sleep(1.5)
                    s.sendall(request)
                    second = answer()
                    time.sleep(0.6)
                    third_start = time.monotonic()
                    for byte in b"GET /v1/health HTTP/1.1\\r\\nHost: localhost\\r\\nX-Padding: " + b"p" * 60:
                        try:
                            s.send(bytes([byte]))
                        except OSError:
                            break
                        time.sleep(0.05)
                        s.setblocking(False)
                        try:
                            if s.recv(1, socket.MSG_PEEK):
                                break
                        except BlockingIOError:
                            pass
                        finally:
                            s.setblocking(True)
                    third = answer()
                    print(first, "|", second, "|", third, "|", round(time.monotonic() - third_start, 1))
                    """
                let result = try await world.socketClient(script)
                let parts = result.outputText.split(separator: "|").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                #expect(parts.count == 4, "\(result.outputText) \(result.errorText.suffix(300))")
                guard parts.count == 4 else { return }
                #expect(parts[0] == "HTTP/1.1 200 OK" && parts[1] == "HTTP/1.1 200 OK", "\(result.outputText)")
                #expect(parts[2].hasPrefix("HTTP/1.1 408"), "\(result.outputText)")
                let seconds = Double(parts[3]) ?? 99
                #expect(seconds >= 0.9 && seconds < 2.5, "the third request was cut off \(seconds) s after its first byte")
            }
        }
    }

    @Test func eventReadersAreCappedInTotalAndPerUID() async throws {
        try await SocketWorld.withWorld { world in
            var limits = SocketServer.Limits()
            limits.maxEventReaders = 3
            limits.maxEventReadersPerUID = 2
            try await world.serving(world.socketServer(limits: limits)) {
                // Each client subscribes, says what it got, and holds its stream until its standard input closes.
                let subscriber = """
                    import socket, sys
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(sys.argv[1])
                    s.sendall(b"GET /v1/events HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
                    print(s.recv(65536).split(b"\\r\\n")[0].decode(), "ready", flush=True)
                    sys.stdin.read()
                    """
                func subscribe(asNobody: Bool) async throws -> RunningChild {
                    var command = ["/usr/bin/python3", "-c", subscriber, world.socketPath]
                    if asNobody { command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command }
                    let child = try await startProgram(command[0], Array(command.dropFirst()))
                    _ = await child.waitForOutput(within: .seconds(20)) { String(decoding: $0, as: UTF8.self).contains("ready") }
                    return child
                }
                var children: [RunningChild] = []
                defer { for child in children { child.closeInput() } }
                for _ in 0..<3 { children.append(try await subscribe(asNobody: false)) }
                let statuses = children.map { $0.outputText.split(separator: " ").dropFirst().first.map(String.init) ?? "" }
                // Two for root, its third refused; nobody gets the last place, then the total is full.
                #expect(statuses == ["200", "200", "503"], "\(children.map(\.outputText))")
                children.append(try await subscribe(asNobody: true))
                children.append(try await subscribe(asNobody: true))
                let others = children.suffix(2).map { $0.outputText.split(separator: " ").dropFirst().first.map(String.init) ?? "" }
                #expect(others == ["200", "503"], "\(children.suffix(2).map(\.outputText))")
                for child in children { child.closeInput() }
                for child in children { _ = await child.wait(within: .seconds(10)) }
            }
        }
    }
}
