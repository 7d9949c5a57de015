import Foundation
import TestSupport
import Testing

/// The loopback server of Fixtures/cookie_echo_server.py, run with python3 and stopped at the end.
///
/// Spawned with posix_spawn rather than Foundation's Process: corelibs-foundation's child monitor stalls other
/// Process instances' waitUntilExit while a long-lived Process child runs.
final class CookieEchoServer {
    let pid: pid_t
    let port: Int

    private init(pid: pid_t, port: Int) {
        self.pid = pid
        self.port = port
    }

    /// Starts the server and waits (on a dedicated thread, at most 10 s) for the port it prints.
    static func start() async throws -> CookieEchoServer {
        let script = try #require(Bundle.module.url(forResource: "cookie_echo_server", withExtension: "py", subdirectory: "Fixtures")).path
        let (pid, port) = try await onDedicatedThread { try spawn(script: script) }
        return CookieEchoServer(pid: pid, port: port)
    }

    /// Blocks until the child printed its port; call only on a dedicated thread.
    private static func spawn(script: String) throws -> (pid: pid_t, port: Int) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ServerError.spawn(errno) }
        // Close-on-exec, so neither end leaks into other children (dup2 clears it on the child's stdout).
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = ["/usr/bin/env", "python3", script]
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, "/usr/bin/env", &actions, nil, argv, environ)
        close(fds[1])
        guard status == 0 else { close(fds[0]); throw ServerError.spawn(status) }
        // The first line is the port; read it on another thread so a silent server fails the test in 10 s.
        let reader = FirstLineReader(FileHandle(fileDescriptor: fds[0], closeOnDealloc: true))
        guard let line = reader.wait(seconds: 10), let port = Int(line) else {
            kill(child, SIGKILL)
            var ignored: Int32 = 0
            waitpid(child, &ignored, 0)
            throw ServerError.noPort
        }
        return (child, port)
    }

    enum ServerError: Error { case spawn(Int32), noPort }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    deinit {
        // SIGKILL: the child inherits the spawning thread's signal mask, which may block SIGTERM.
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

/// Reads up to the first newline of a pipe on a background thread.
final class FirstLineReader: @unchecked Sendable {
    // @unchecked: `line` is written by the reader thread before it signals, and read only after the signal.
    private var line: String?
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                if let newline = buffer.firstIndex(of: 0x0A) {
                    line = String(decoding: buffer[..<newline], as: UTF8.self)
                    break
                }
            }
            done.signal()
        }
    }

    func wait(seconds: Int) -> String? {
        guard done.wait(timeout: .now() + .seconds(seconds)) == .success else { return nil }
        return line
    }
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
        let server = try await CookieEchoServer.start()
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
        let server = try await CookieEchoServer.start()
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
