import Foundation

/// A Python script serving on a Unix socket: started as `python3 -u SCRIPT SOCKET ARGS...`, ready once it
/// prints its first line (after binding the socket). Stopped by `stop()` (SIGTERM, then SIGKILL) or, for a
/// test that failed, when the test lets go of it.
public final class UnixSocketPythonServer: Sendable {
    /// The socket the script listens on.
    public let socketPath: String
    private let program: SpawnedProgram

    private init(socketPath: String, program: SpawnedProgram) {
        self.socketPath = socketPath
        self.program = program
    }

    /// Starts the script and waits (at most 30 s) for its first line.
    public static func start(script: String, socketPath: String, arguments: [String] = []) async throws -> UnixSocketPythonServer {
        let program = try await SpawnedProgram.start("/usr/bin/python3", ["-u", script, socketPath] + arguments)
        return UnixSocketPythonServer(socketPath: socketPath, program: program)
    }

    /// Stops the script: SIGTERM, then SIGKILL after two seconds.
    public func stop() async {
        await program.stop()
    }
}
