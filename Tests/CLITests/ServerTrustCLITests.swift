import Foundation
import Platform
import TestSupport
import Testing

/// The CLI believes only root, the caller, or the daemon's user at the socket path (SPEC section 9,
/// `SocketClient.ServerTrust`): a program of another user that holds the path (the daemon is not running, the
/// path is in a folder others may write) gets no request, and the command exits 2 naming the uid it found. A
/// `./config.yaml` that another user owns is not read.
@Suite(.serialized) struct ServerTrustCLITests {
    /// `sessionkeeper ARGS` as root (the test's user) or as nobody (uid 65534), in `folder`.
    static func sessionkeeper(_ arguments: [String], asNobody: Bool = false, in folder: TemporaryFolder) async throws -> ProgramResult {
        let binary = try #require(CLIRunner.executable).path
        let environment = ["PATH": "/usr/bin:/bin", "HOME": folder.path("home")]
        if asNobody {
            return try await runProgram(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", binary] + arguments, environment: environment,
                directory: folder.path)
        }
        return try await runProgram(binary, arguments, environment: environment, directory: folder.path)
    }

    /// A folder others may enter, with `run/` where uid 1 (`daemon`) may create a socket, and the fake socket API
    /// listening there as uid 1 while `body` runs.
    static func withFakeOfUID1(_ body: (TemporaryFolder, _ socket: String, _ log: String) async throws -> Void) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try Syscall.chmod(folder.path, 0o755)
        for name in ["run", "home"] {
            try FileManager.default.createDirectory(atPath: folder.path(name), withIntermediateDirectories: true)
            try Syscall.chmod(folder.path(name), 0o777)
        }
        let socket = folder.path("run/sk.sock")
        let log = folder.path("run/requests.log")
        let script = try #require(Bundle.module.url(forResource: "fake_socket_api", withExtension: "py", subdirectory: "Fixtures")).path
        let fake = try await SpawnedProgram.start(
            "/usr/bin/setpriv", ["--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-u", script, socket, log])
        // Any user may connect to it, as to a socket planted for them.
        try Syscall.chmod(socket, 0o777)
        do {
            try await body(folder, socket, log)
        } catch {
            await fake.stop()
            throw error
        }
        await fake.stop()
    }

    @Test func aServerOfAnotherUserIsRefusedWithItsUIDAndExitTwo() async throws {
        try await Self.withFakeOfUID1 { folder, socket, log in
            for asNobody in [false, true] {
                for arguments in [["status", "--socket", socket], ["refresh", "demo", "--socket", socket],
                                  ["request", "demo", "/", "--socket", socket]] {
                    let run = try await Self.sessionkeeper(arguments, asNobody: asNobody, in: folder)
                    let who = asNobody ? "nobody" : "root"
                    #expect(run.status == 2, "\(who) \(arguments): \(run.errorText)")
                    #expect(run.errorText.contains("the server on \(socket) runs as uid 1, which is neither root nor you (uid \(asNobody ? 65534 : 0))"),
                            "\(who) \(arguments): \(run.errorText)")
                    #expect(run.outputText.isEmpty)
                }
            }
            // Nothing was sent to it: not one request line.
            let logged = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(!logged.contains("/v1/"), "\(logged)")
        }
    }

    /// The daemon's user, as config.yaml says it (the owner of its state_dir), is believed when it also owns the
    /// socket file.
    @Test func theConfiguredDaemonsUserIsBelieved() async throws {
        try await Self.withFakeOfUID1 { folder, socket, _ in
            let state = folder.path("state")
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            _ = try await runProgram("/bin/chown", ["1:1", state])
            _ = try folder.write("state_dir: state\nsocket: {path: \(socket)}\n", to: "config.yaml", mode: 0o644)
            let run = try await Self.sessionkeeper(["status", "--config", folder.path("config.yaml")], asNobody: true, in: folder)
            // Believed: the fake's answer is shown (1, not 2: some of its sites need attention, SPEC section 9).
            #expect(run.status == 1, "\(run.errorText)")
            #expect(run.outputText.contains("demo"), "\(run.outputText)")
            // The same server, with a state folder of another owner: refused.
            _ = try await runProgram("/bin/chown", ["0:0", state])
            let refused = try await Self.sessionkeeper(["status", "--config", folder.path("config.yaml")], asNobody: true, in: folder)
            #expect(refused.status == 2, "\(refused.errorText)")
            #expect(refused.errorText.contains("runs as uid 1,"), "\(refused.errorText)")
        }
    }

    /// A config.yaml in the current folder that another user owns would choose the socket: it is passed over.
    @Test func aConfigInTheCurrentFolderOfAnotherUserIsIgnored() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try FileManager.default.createDirectory(atPath: folder.path("home"), withIntermediateDirectories: true)
        let config = try folder.write("state_dir: state\nsocket: {path: /tmp/planted.sock}\n", to: "config.yaml", mode: 0o644)
        _ = try await runProgram("/bin/chown", ["1:1", config])
        let run = try await Self.sessionkeeper(["status"], in: folder)
        #expect(run.status == 2, "\(run.errorText)")
        #expect(run.errorText.contains("\(folder.path("config.yaml")) belongs to another user and was ignored"), "\(run.errorText)")
        #expect(!run.errorText.contains("planted"), "\(run.errorText)")
        // Its own user's is read.
        _ = try await runProgram("/bin/chown", ["0:0", config])
        let own = try await Self.sessionkeeper(["status"], in: folder)
        #expect(own.errorText.contains("/tmp/planted.sock"), "\(own.errorText)")
    }
}
