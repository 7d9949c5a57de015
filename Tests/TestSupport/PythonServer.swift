import Foundation

/// A Python script serving HTTP on 127.0.0.1 that prints its port on its first line. Stopped by `stop()`
/// (SIGTERM, then waited for); `deinit` stops it too, so a failing test never leaves it running.
public final class PythonServer: Sendable {
    public let port: Int
    private let process: Process

    private init(port: Int, process: Process) {
        self.port = port
        self.process = process
    }

    /// Starts the script and waits (on a dedicated thread, at most 30 s) for the port it prints.
    public static func start(
        script: String, arguments: [String] = [], environment: [String: String]? = nil, executable: String = "/usr/bin/python3"
    ) async throws -> PythonServer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-u", script] + arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        process.standardInput = FileHandle.nullDevice
        try launch(process)
        let port = try await onDedicatedThread { () throws(PythonServerError) -> Int in
            let reader = output.fileHandleForReading
            var line = Data()
            let deadline = Date().addingTimeInterval(30)
            while !line.contains(UInt8(ascii: "\n")) && Date() < deadline {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                line.append(chunk)
            }
            guard let text = String(data: line, encoding: .utf8)?.split(separator: "\n").first,
                  let port = Int(text.trimmingCharacters(in: .whitespaces))
            else {
                process.terminate()
                process.waitUntilExit()
                throw PythonServerError(script: script)
            }
            return port
        }
        return PythonServer(port: port, process: process)
    }

    /// Stops the script (see `stopOnThisThread`), waiting on a dedicated thread.
    public func stop() async {
        await onDedicatedThread { self.stopOnThisThread() }
    }

    /// Blocks: only `deinit` calls it directly, for a server a failing test left running.
    private func stopOnThisThread() { stopServerProcess(process) }

    deinit { stopOnThisThread() }
}

public struct PythonServerError: Error, CustomStringConvertible {
    public var script: String
    public var description: String { "\(script) did not print its port" }
}

/// SIGTERM, then SIGKILL when the server has not exited two seconds later (a runner may start children with
/// SIGTERM blocked); returns once it has exited. Blocks the calling thread.
func stopServerProcess(_ process: Process) {
    guard process.isRunning else { return }
    process.terminate()
    let deadline = Date().addingTimeInterval(2)
    while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
}
