import Foundation
import TestSupport
import Testing

/// The loopback server of Fixtures/cookie_echo_server.py, stopped when the test lets go of it.
func startCookieEchoServer() async throws -> PythonServer {
    let script = try #require(Bundle.module.url(forResource: "cookie_echo_server", withExtension: "py", subdirectory: "Fixtures")).path
    return try await PythonServer.start(script: script)
}

/// Runs the curl command-line tool (libcurl's own cookie engine); its errors go to the test log.
func runCurl(_ arguments: [String]) async throws -> String {
    let result = try await runProgram(
        "/usr/bin/env", ["curl", "--silent", "--show-error", "--max-time", "10"] + arguments, standardError: .inherited)
    #expect(result.status == 0, "curl \(arguments.joined(separator: " ")) failed")
    return result.outputText
}

let curlAndPythonInstalled = ["/usr/bin/curl", "/usr/local/bin/curl"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    && ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").contains {
        FileManager.default.isExecutableFile(atPath: "\($0)/python3")
    } == true

@Suite("Netscape jars shared with curl", .serialized, .enabled(if: curlAndPythonInstalled, "needs curl and python3"))
struct CurlInteropTests {
    @Test("curl -b sends what jar store wrote, as jar header says")
    func curlReadsOurJar() async throws {
        let server = try await startCookieEchoServer()
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("cookies.txt")
        let store = try await CLIRunner.run(["jar", "store", jar, "--url", server.url("/app/login"), "--",
                                       "root=1; Path=/", "app=2; HttpOnly", "deep=3; Path=/app/x; Max-Age=600", "other=4; Path=/other"])
        #expect(store.status == 0)
        let target = server.url("/app/x/page")
        let ours = try await CLIRunner.run(["jar", "header", jar, "--url", target])
        #expect(ours.stdout == "deep=3; app=2; root=1\n")
        let sentByCurl = try await runCurl(["--cookie", jar, target])
        #expect(Set(sentByCurl.components(separatedBy: "; ")) == Set(["deep=3", "app=2", "root=1"]))
    }

    @Test("a jar curl -c wrote gives the header curl itself would send")
    func weReadCurlsJar() async throws {
        let server = try await startCookieEchoServer()
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let jar = folder.path("curl-jar.txt")
        let setters = ["x=1; HttpOnly", "y=2; Path=/p; Max-Age=3600", "z=3; Path=/elsewhere"]
        let query = setters.map { "c=" + $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }.joined(separator: "&")
        _ = try await runCurl(["--cookie-jar", jar, server.url("/set?\(query)")])
        let text = try String(contentsOfFile: jar, encoding: .utf8)
        #expect(text.contains("#HttpOnly_127.0.0.1"))
        let target = server.url("/p/q")
        let ours = try await CLIRunner.run(["jar", "header", jar, "--url", target])
        #expect(ours.status == 0)
        #expect(ours.stdout == "y=2; x=1\n")
        let sentByCurl = try await runCurl(["--cookie", jar, target])
        #expect(Set(sentByCurl.components(separatedBy: "; ")) == Set(["y=2", "x=1"]))
    }
}
