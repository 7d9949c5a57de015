import Foundation
import Platform
import TestSupport
import Testing

/// The socket's managers as the running daemon keeps them (SPEC section 8): `socket.allow_uids` follows
/// config.yaml on SIGHUP and on `POST /v1/reload`, without a restart, and without the warning a socket change
/// that needs one gives.
@Suite struct SocketTrustCLITests {
    @Test func allowUIDsApplyOnSIGHUPAndOnReload() async throws {
        try await LoginCLIWorld.with { world in
            try FileManager.default.removeItem(atPath: world.folder.path("sites/demo-bad.yaml"))
            // A socket nobody (uid 65534, group nogroup) can reach: its folder traversable, the file its group's.
            let run = world.folder.path("run")
            try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
            try Syscall.chmod(world.folder.path, 0o755)
            try Syscall.chmod(run, 0o755)
            let socket = run + "/sk.sock"
            func writeConfig(allowUIDs: [UInt32]) throws {
                try """
                    state_dir: state
                    vault: {key: {file: state/master.key}}
                    socket: {path: \(socket), mode: "0660", group: nogroup, allow_uids: [\(allowUIDs.map(String.init).joined(separator: ", "))]}
                    """.write(toFile: world.configPath, atomically: true, encoding: .utf8)
            }
            try writeConfig(allowUIDs: [])
            let daemon = try await RunCLITests.startDaemon(world)
            #expect(await RunCLITests.eventually { daemon.outputText.contains("outcome=ok run=login site=demo") }, "log: \(daemon.outputText)")

            #expect(try await Self.curl(socket, "GET", "/v1/sites/demo", asNobody: true) == 404)
            #expect(try await Self.curl(socket, "POST", "/v1/reload", asNobody: true) == 403)

            // SIGHUP with nobody among the managers: it reads the site and may reload.
            try writeConfig(allowUIDs: [65534])
            daemon.send(SIGHUP)
            #expect(await RunCLITests.eventually(within: .seconds(10)) {
                (try? Self.curlNow(socket, "GET", "/v1/sites/demo", asNobody: true)) == 200
            })
            #expect(try await Self.curl(socket, "GET", "/metrics", asNobody: true) == 200)

            // Taken out again, by a reload over the socket this time.
            try writeConfig(allowUIDs: [])
            #expect(try await Self.curl(socket, "POST", "/v1/reload", asNobody: false) == 202)
            #expect(await RunCLITests.eventually(within: .seconds(10)) {
                (try? Self.curlNow(socket, "GET", "/v1/sites/demo", asNobody: true)) == 404
            })
            #expect(try await Self.curl(socket, "GET", "/metrics", asNobody: true) == 403)
            // allow_uids is applied, so no "needs a restart" warning names the socket.
            #expect(!daemon.outputText.contains("config.yaml: socket changed"), "log: \(daemon.outputText)")
            #expect(await RunCLITests.stop(daemon) == 0)
        }
    }

    /// config.yaml's `socket:` caps reach the running socket: with two connections a uid, the third is refused
    /// at once with the reason, and with `request_timeout: 1s` a head that stops arriving is answered 408.
    @Test func socketCapsFromConfigApply() async throws {
        try await LoginCLIWorld.with { world in
            try FileManager.default.removeItem(atPath: world.folder.path("sites/demo-bad.yaml"))
            let socket = world.folder.path("state/sk.sock")
            try """
                state_dir: state
                vault: {key: {file: state/master.key}}
                socket: {path: \(socket), max_connections_per_uid: 2, request_timeout: 1s}
                """.write(toFile: world.configPath, atomically: true, encoding: .utf8)
            let daemon = try await RunCLITests.startDaemon(world)
            #expect(await RunCLITests.eventually { daemon.outputText.contains("outcome=ok run=login site=demo") }, "log: \(daemon.outputText)")
            let crowd = """
                import socket, sys, time
                def connect():
                    c = socket.socket(socket.AF_UNIX); c.settimeout(5); c.connect(sys.argv[1]); return c
                held = [connect(), connect()]
                for c in held: c.sendall(b"GET /v1/health HTTP/1.1\\r\\nHo")
                time.sleep(0.2)
                third = connect(); third.sendall(b"GET /v1/health HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
                print("third:", third.recv(4096).decode(errors="replace").replace("\\r\\n", " "))
                print("held:", held[0].recv(4096).decode(errors="replace").split("\\r\\n")[0])
                """
            let result = try await runProgram("/usr/bin/python3", ["-c", crowd, socket])
            #expect(result.outputText.contains("third: HTTP/1.1 503"), "\(result.outputText) \(result.errorText)")
            #expect(result.outputText.contains("(the cap per uid)"), "\(result.outputText)")
            #expect(result.outputText.contains("held: HTTP/1.1 408"), "\(result.outputText) \(result.errorText)")
            #expect(await RunCLITests.stop(daemon) == 0)
        }
    }

    static func arguments(_ socket: String, _ method: String, _ path: String, asNobody: Bool) -> (String, [String]) {
        let curl = ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "--unix-socket", socket, "-X", method,
                    "http://localhost" + path]
        guard asNobody else { return ("/usr/bin/curl", curl) }
        return ("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/curl"] + curl)
    }

    /// The status `curl` got, as root or as nobody.
    static func curl(_ socket: String, _ method: String, _ path: String, asNobody: Bool) async throws -> Int? {
        let (executable, arguments) = arguments(socket, method, path, asNobody: asNobody)
        return Int(try await runProgram(executable, arguments).outputText)
    }

    /// The same, blocking the calling thread (for ``RunCLITests/eventually(within:_:)``'s polling thread).
    @Sendable static func curlNow(_ socket: String, _ method: String, _ path: String, asNobody: Bool) throws -> Int? {
        let (executable, arguments) = arguments(socket, method, path, asNobody: asNobody)
        return Int(try runProgramOnThisThread(executable, arguments).outputText)
    }
}
