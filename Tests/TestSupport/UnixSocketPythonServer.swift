import Foundation

/// A Python script serving on a Unix socket: started as `python3 -u SCRIPT SOCKET ARGS...`, ready once the
/// socket file exists. Stopped by `stop()` (SIGTERM, then SIGKILL) or, for a test that failed, by `deinit`.
public final class UnixSocketPythonServer: Sendable {
    /// The socket the script listens on.
    public let socketPath: String
    private let process: Process

    private init(socketPath: String, process: Process) {
        self.socketPath = socketPath
        self.process = process
    }

    /// Starts the script and waits (on a dedicated thread, at most 30 s) for its socket file.
    public static func start(script: String, socketPath: String, arguments: [String] = []) async throws -> UnixSocketPythonServer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-u", script, socketPath] + arguments
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        process.standardInput = FileHandle.nullDevice
        try launch(process)
        let ready = await onDedicatedThread { () -> Bool in
            for _ in 0..<600 {
                if FileManager.default.fileExists(atPath: socketPath) { return true }
                guard process.isRunning else { return false }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return false
        }
        let server = UnixSocketPythonServer(socketPath: socketPath, process: process)
        guard ready else { throw PythonServerError(script: script) }
        return server
    }

    /// Stops the script, waiting on a dedicated thread.
    public func stop() async {
        await onDedicatedThread { stopServerProcess(self.process) }
    }

    deinit { stopServerProcess(process) }
}
