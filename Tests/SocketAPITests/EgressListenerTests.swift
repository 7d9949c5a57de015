@testable import Daemon
import Foundation
import JSON
@testable import SocketAPI
import Testing
import TestSupport

/// `egress.listen`: the egress route as a plain-HTTP reverse proxy on a loopback port, the peer's user found
/// through the kernel's socket diagnostics and judged by the site's access rules.
@Suite(.serialized) struct EgressListenerTests {
    /// A port free now on 127.0.0.1 (the kernel's choice, released at once).
    static func freePort() async throws -> Int {
        let result = try await runProgram("/usr/bin/python3", [
            "-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])",
        ])
        return try #require(Int(result.outputText.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// `curl` to the listener, as root or as nobody: the status and the body.
    static func curl(
        _ url: String, asNobody: Bool = false, groups: [UInt32]? = nil, headers: [String] = []
    ) async throws -> (status: Int, body: String) {
        var executable = "/usr/bin/curl"
        var arguments = ["-sS", "-o", "-", "-w", "\n%{http_code}", "--max-time", "30"] + headers.flatMap { ["-H", $0] } + [url]
        if asNobody {
            let groupOption = groups.map { "--groups=" + $0.map(String.init).joined(separator: ",") } ?? "--clear-groups"
            arguments = ["--reuid=65534", "--regid=65534", groupOption, executable] + arguments
            executable = "/usr/bin/setpriv"
        }
        let text = try await runProgram(executable, arguments).outputText
        guard let newline = text.lastIndex(of: "\n") else { return (0, text) }
        return (Int(text[text.index(after: newline)...]) ?? 0, String(text[..<newline]))
    }

    static func answers(_ url: String, _ status: Int) async throws -> Bool {
        try await waitUntil(.seconds(15)) { (try? await curl(url).status) == status }
    }

    @Test func theListenerProxiesForItsUsersAndFollowsTheSiteFile() async throws {
        let port = try await Self.freePort()
        try await EgressRouteTests.withUpstreamSite(extra: "egress: {listen: 127.0.0.1:\(port)}") { world, upstream in
            let url = "http://127.0.0.1:\(port)/echo?a=1"
            #expect(try await Self.answers(url, 200), "the listener did not come up")
            let detail = try await world.curl("/v1/sites/up").json?["egress"]
            #expect(detail?["listen"]?.plainText == "127.0.0.1:\(port)")
            #expect(detail?["listen_error"] == .null)
            let echo = try JSONValue.parse(try await Self.curl(url).body)
            #expect(echo["target"]?.plainText == "/echo?a=1", "the site's own path")
            let sessionSent = echo["headers"]?.serialized.contains("sid=") == true
            #expect(sessionSent, "the session's cookie went to the site")
            // nobody may not read the site: the 404 of a site that does not exist.
            let refused = try await Self.curl(url, asNobody: true)
            #expect(refused.status == 404)
            #expect(try JSONValue.parse(refused.body)["error"]?["code"]?.plainText == "unknown_site")
            // A uid in access.uids may.
            await world.keeper.apply([try world.site("up", yaml: upstream.yaml(extra: "egress: {listen: 127.0.0.1:\(port)}\naccess: {uids: [65534]}"))])
            #expect(try await waitUntil(.seconds(10)) { (try? await Self.curl(url, asNobody: true).status) == 200 })
            // The audit line is written once the answer has ended, which the client may see first.
            #expect(try await waitUntil(.seconds(5)) {
                world.logs.all.contains { $0.contains("egress") && $0.contains("uid=65534") && $0.contains("path=/echo ") }
            })

            // A new address: the old port closes, the new one serves.
            let moved = try await Self.freePort()
            await world.keeper.apply([try world.site("up", yaml: upstream.yaml(extra: "egress: {listen: 127.0.0.1:\(moved)}"))])
            #expect(try await Self.answers("http://127.0.0.1:\(moved)/echo", 200))
            #expect(try await Self.answers(url, 0), "the old port still answers")
            // The site goes: so does its listener.
            await world.keeper.apply([])
            #expect(try await Self.answers("http://127.0.0.1:\(moved)/echo", 0))
        }
    }

    /// Any local user can connect to a loopback port, so the listener's connections are held to the socket's
    /// caps and deadlines: without them one user's idle or trickling connections would use up the daemon's file
    /// descriptors, and with them its socket.
    @Test func theListenersConnectionsHaveTheSocketsCapsAndDeadlines() async throws {
        let port = try await Self.freePort()
        var limits = SocketServer.Limits()
        limits.maxConnectionsPerUID = 3
        limits.requestDeadline = .seconds(1)
        try await EgressRouteTests.withUpstreamSite(extra: "egress: {listen: 127.0.0.1:\(port)}", limits: limits) { world, _ in
            #expect(try await Self.answers("http://127.0.0.1:\(port)/echo", 200), "the listener did not come up")
            // Three connections hold half a head each; a fourth of the same uid is refused at once, and a
            // socket client of another uid is not affected. The held heads are answered 408 at the deadline.
            let script = """
                import socket, time
                def connect():
                    s = socket.create_connection(("127.0.0.1", \(port)))
                    s.settimeout(10)
                    return s
                held = [connect() for _ in range(3)]
                for s in held:
                    s.sendall(b"GET /echo HTTP/1.1\\r\\nHost: x\\r\\n")
                time.sleep(0.3)
                fourth = connect()
                print("fourth", fourth.recv(4096).split(b"\\r\\n")[0].decode())
                start = time.monotonic()
                for s in held:
                    answer = b""
                    s.settimeout(30)
                    while True:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        answer += chunk
                    print("held", round(time.monotonic() - start, 1), answer.split(b"\\r\\n")[0].decode())
                """
            let run = try await runProgram("/usr/bin/python3", ["-c", script])
            let lines = run.outputText.split(separator: "\n").map(String.init)
            #expect(lines.first == "fourth HTTP/1.1 503 Service Unavailable", "\(run.outputText) \(run.errorText.suffix(300))")
            let held = lines.filter { $0.hasPrefix("held ") }
            #expect(held.count == 3 && held.allSatisfy { $0.hasSuffix("408 Request Timeout") }, "\(run.outputText)")
            #expect(held.allSatisfy { (Double($0.split(separator: " ")[1]) ?? 99) < 20 }, "\(run.outputText)")
            #expect(try await world.curl("/v1/health").status == 200)

            // The deadline holds a request's head only: an upload longer than it streams on to the site.
            let upload = world.folder.path("paced.bin")
            try #require(FileManager.default.createFile(atPath: upload, contents: Data(repeating: 0x61, count: 2 << 20)))
            let paced = try await runProgram("/usr/bin/curl", [
                "-sS", "-X", "POST", "--data-binary", "@" + upload, "-H", "Expect:", "--limit-rate", "1M", "--max-time", "60",
                "http://127.0.0.1:\(port)/upload",
            ])
            #expect(try JSONValue.parse(paced.outputText)["length"]?.plainText == String(2 << 20), "\(paced.outputText.prefix(300))")
        }
    }

    /// A page on evil.example whose name rebinds to 127.0.0.1, or that posts a form across sites, is refused
    /// before anything is sent to the site: 403 with the reason, one throttled log line with the peer's uid.
    @Test func theListenerRefusesWebPagesRequests() async throws {
        let port = try await Self.freePort()
        try await EgressRouteTests.withUpstreamSite(extra: "egress: {listen: 127.0.0.1:\(port)}") { world, upstream in
            let url = "http://127.0.0.1:\(port)/echo"
            #expect(try await Self.answers(url, 200), "the listener did not come up")
            #expect(try await Self.curl(url, headers: ["Host: localhost:\(port)"]).status == 200)
            #expect(try await Self.curl(url, headers: ["Origin: http://127.0.0.1:\(port)", "Sec-Fetch-Site: same-origin"]).status == 200)
            let sentBefore = try await upstream.stats().requests["GET /echo"] ?? 0

            let refusals: [(headers: [String], reason: String)] = [
                (["Host: evil.example"], "Host \"evil.example\" is not this listener's address"),
                (["Host: evil.example:\(port)"], "Host \"evil.example:\(port)\" is not this listener's address"),
                (["Origin: http://evil.example"], "Origin \"http://evil.example\""),
                (["Sec-Fetch-Site: cross-site"], "Sec-Fetch-Site \"cross-site\""),
                (["Origin: http://evil.example", "Sec-Fetch-Site: cross-site"], "Origin \"http://evil.example\""),
            ]
            for (headers, reason) in refusals {
                let answer = try await Self.curl(url, headers: headers)
                #expect(answer.status == 403, "\(headers)")
                let error = try JSONValue.parse(answer.body)["error"]
                #expect(error?["code"]?.plainText == "forbidden")
                let message = error?["message"]?.plainText ?? ""
                #expect(message.contains(reason) && !message.contains("\n"), "\(headers): \(message)")
            }
            // A cross-site form post: refused, and its body never reaches the site.
            let post = try await runProgram("/usr/bin/curl", [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Origin: http://evil.example",
                "-H", "Content-Type: application/x-www-form-urlencoded", "--data", "to=mallory&amount=100", "http://127.0.0.1:\(port)/upload",
            ])
            #expect(post.outputText == "403")
            let stats = try await upstream.stats().requests
            #expect((stats["GET /echo"] ?? 0) == sentBefore, "a refused request went to the site: \(stats)")
            #expect(stats["POST /upload"] == nil, "\(stats)")

            // Six refusals, one log line (the throttle's interval is 10 s), with the peer's uid and the reason.
            let lines = world.logs.all.filter { $0.contains("egress listener: a request refused (403)") }
            #expect(lines.count == 1, "\(lines)")
            #expect(lines.first?.contains("uid=0") == true && lines.first?.contains("site=up") == true, "\(lines)")
            #expect(lines.first?.contains("evil.example") == true, "\(lines)")
        }
    }

    /// The uid the kernel names at accept is judged first: a uid in `access.uids` is served without a look for
    /// its process (the audit line's pid is `-`); only `access.groups` makes the daemon look for the process
    /// that holds the connection, for its groups.
    @Test func theUidIsJudgedBeforeAnyProcessLookup() async throws {
        let port = try await Self.freePort()
        try await EgressRouteTests.withUpstreamSite(extra: "egress: {listen: 127.0.0.1:\(port)}\naccess: {uids: [65534]}") { world, upstream in
            let url = "http://127.0.0.1:\(port)/echo"
            #expect(try await waitUntil(.seconds(15)) { (try? await Self.curl(url, asNobody: true).status) == 200 })
            #expect(try await waitUntil(.seconds(5)) {
                world.logs.all.contains { $0.contains("egress") && $0.contains("uid=65534") && $0.contains("pid=- ") }
            }, "\(world.logs.all.filter { $0.contains("egress") })")

            // Groups need the process: nobody with the supplementary group nogroup (65534) is let in, and its
            // process was found; nobody without it is not.
            await world.keeper.apply([try world.site("up", yaml: upstream.yaml(extra: "egress: {listen: 127.0.0.1:\(port)}\naccess: {groups: [nogroup]}"))])
            #expect(try await waitUntil(.seconds(10)) { (try? await Self.curl(url, asNobody: true, groups: [65534]).status) == 200 })
            #expect(try await waitUntil(.seconds(5)) {
                world.logs.all.contains { line in
                    line.contains("egress") && line.contains("uid=65534") && !line.contains("pid=- ") && line.contains("pid=")
                }
            })
            #expect(try await Self.curl(url, asNobody: true).status == 404)
        }
    }

    @Test func aPortThatCannotBeBoundIsAnErrorForThatSiteOnly() async throws {
        let upstream = try await EgressRouteTests.Upstream.start()
        defer { Task { await upstream.server.stop() } }
        try await SocketWorld.withWorld { world in
            // The upstream's own port is taken.
            let site = try world.site("up", yaml: upstream.yaml(extra: "egress: {listen: 127.0.0.1:\(upstream.server.port)}"))
            await world.keeper.apply([site])
            try await EgressRouteTests.waitValid(world, "up")
            try await world.serving(world.socketServer()) {
                #expect(try await waitUntil(.seconds(10)) { world.logs.all.contains { $0.contains("egress listener failed") && $0.contains("site=up") } })
                // The site's detail says so.
                let detail = try await world.curl("/v1/sites/up").json?["egress"]
                #expect(detail?["listen_error"]?.plainText.contains("cannot listen on 127.0.0.1:\(upstream.server.port)") == true)
                // And the list, which `status` shows.
                guard case .array(let listed)? = try await world.curl("/v1/sites").json?["sites"] else {
                    Issue.record("no sites list")
                    return
                }
                #expect(listed.first?["listen_error"]?.plainText.contains("cannot listen on 127.0.0.1:\(upstream.server.port)") == true)
                // The socket serves on, the route too.
                let proxied = try await EgressRouteTests.curl(world, "/v1/sites/up/proxy/echo")
                #expect(proxied.status == 200)
            }
        }
    }
}
