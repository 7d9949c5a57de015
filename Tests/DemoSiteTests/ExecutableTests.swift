import Foundation
import HTTPTypes
import HTTPTypes
import NIOCore
import Platform
import TestSupport
import Testing

/// Runs the real `demo-site` binary that `swift build` put beside this test bundle.
@Suite("demo-site executable")
struct ExecutableTests {
    static func binary() throws -> URL {
        URL(fileURLWithPath: try #require(builtProgram("demo-site"), "demo-site binary not found beside the tests"))
    }

    @Test("--port 0 --port-file, one log line per request without secrets, SIGTERM stops it with status 0")
    func runsAndStops() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let directory = folder.url
        let portFile = directory.appendingPathComponent("port")
        let password = "exec-Passw0rd-5521"

        let process = try await startProgram(
            try Self.binary().path, ["--port", "0", "--port-file", portFile.path, "--password-env", "DEMO_TEST_PASSWORD", "--sliding"],
            environment: ["DEMO_TEST_PASSWORD": password])
        process.closeInput()

        var port: Int?
        // Generous: CI builds and tests other modules in parallel on two cores.
        for _ in 0..<400 where port == nil {
            port = (try? String(contentsOf: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if port == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let boundPort = try #require(port, "no port file within 20 s")

        let secrets = try await SiteClient.with(port: boundPort) { client in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            let login = try await client.post(
                "/api/login",
                headers: headers,
                body: ByteBuffer(string: #"{"username":"alice","password":"\#(password)"}"#)
            )
            #expect(login.status == .ok)
            let session = try #require(login.cookie("demo_session")).value
            var cookie = HTTPFields()
            cookie[.cookie] = "demo_session=\(session)"
            let ping = try await client.get("/ping", headers: cookie)
            #expect(ping.status == .noContent)
            #expect(ping.cookie("demo_session")?.attributes.last == "Max-Age=3600", "--sliding re-issues the cookie")
            return [password, session]
        }

        // SIGTERM; after 20 s a SIGKILL would show as a signal below.
        #expect(await process.stop(grace: .seconds(20)) == .exited(0))
        #expect(!FileManager.default.fileExists(atPath: portFile.path), "the port file is removed on exit")

        let output = process.outputText
        let lines = output.split(separator: "\n")
        #expect(lines.first?.contains("listening on http://127.0.0.1:\(boundPort)") == true)
        #expect(lines.contains { $0.contains(" POST /api/login 200 ") })
        #expect(lines.contains { $0.contains(" GET /ping 204 ") })
        let diagnostics = process.errorText
        for secret in secrets {
            #expect(!output.contains(secret), "the request log holds a secret")
            #expect(!diagnostics.contains(secret), "the diagnostics hold a secret")
        }
    }

    @Test("An invalid flag value exits with a usage error naming the flag")
    func invalidFlag() async throws {
        let result = try await runProgram(try Self.binary().path, ["--totp-secret", "1!", "--port", "0"])
        let message = result.errorText
        #expect(result.status == 64)
        #expect(message.contains("--totp-secret"))
        #expect(!message.contains("1!"), "the secret is not echoed")
    }
}
