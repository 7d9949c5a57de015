import Foundation
import Testing
import TestSupport

/// The egress audit line of a complete answer without a body (issue 40: a `302` with `Content-Length: 0` was logged
/// as `failure=the answer broke off`).
extension EgressRouteTests {
    @Test func aCompleteEmptyRedirectIsAuditedAsAnsweredNotBrokenOff() async throws {
        let binary = try #require(builtProgram("sessionkeeper", override: "SESSIONKEEPER_BINARY"), "the sessionkeeper executable was not built")
        try await Self.withUpstreamSite { world, upstream in
            for path in ["/redirect", "/redirect-close"] {
                let viaCurl = try await Self.curl(world, "/v1/sites/up/proxy" + path)
                #expect(viaCurl.status == 302)
                #expect(viaCurl.values("Content-Length") == ["0"])
                let viaCommand = try await runProgram(binary, ["request", "up", path, "-i", "--socket", world.socketPath])
                #expect(viaCommand.status == 0, "\(viaCommand.errorText)")
                #expect(viaCommand.outputText.hasPrefix("HTTP/1.1 302"))
            }
            // Clients that hang up as soon as they have the head (shutdown: at once, both ways): with Content-Length 0
            // they have the whole answer.
            let script = """
                s.close()
                for _ in range(30):
                    c = socket.socket(socket.AF_UNIX)
                    c.connect(sys.argv[1])
                    c.sendall(b"GET /v1/sites/up/proxy/redirect HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
                    head = b""
                    while b"\\r\\n\\r\\n" not in head:
                        part = c.recv(4096)
                        if not part:
                            break
                        head += part
                    c.shutdown(socket.SHUT_RDWR)
                    c.close()
                print("done")
                """
            let hungUp = try await world.socketClient(script)
            #expect(hungUp.outputText.contains("done"), "\(hungUp.errorText)")
            let lines = { world.logs.all.filter { $0.contains("egress") && $0.contains("/redirect") } }
            #expect(try await waitUntil(.seconds(5)) { lines().count == 34 }, "\(lines().count)")
            for line in lines() {
                #expect(line.contains("status=302"), "\(line)")
                #expect(!line.contains("failure"), "a complete answer: \(line)")
            }
        }
    }
}

extension EgressListenerTests {
    /// The same over the loopback listener, with clients that reset the connection (SO_LINGER 0) once they have the
    /// head, as a browser may after an empty redirect.
    @Test func aCompleteEmptyRedirectOnTheListenerIsAuditedAsAnswered() async throws {
        let port = try await Self.freePort()
        try await EgressRouteTests.withUpstreamSite(extra: "egress: {listen: 127.0.0.1:\(port)}") { world, _ in
            #expect(try await Self.answers("http://127.0.0.1:\(port)/echo", 200), "the listener did not come up")
            let script = """
                import socket, struct, sys
                for _ in range(30):
                    c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
                    c.sendall(b"GET /redirect-close HTTP/1.1\\r\\nHost: 127.0.0.1:" + sys.argv[1].encode() + b"\\r\\n\\r\\n")
                    head = b""
                    while b"\\r\\n\\r\\n" not in head:
                        part = c.recv(4096)
                        if not part:
                            break
                        head += part
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    c.close()
                print("done")
                """
            let ran = try await runProgram("/usr/bin/env", ["python3", "-c", script, String(port)])
            #expect(ran.outputText.contains("done"), "\(ran.errorText)")
            let lines = { world.logs.all.filter { $0.contains("egress") && $0.contains("/redirect-close") } }
            #expect(try await waitUntil(.seconds(5)) { lines().count == 30 }, "\(lines().count)")
            for line in lines() {
                #expect(!line.contains("failure"), "a complete answer: \(line)")
            }
        }
    }
}
