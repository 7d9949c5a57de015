import Foundation
import Platform

/// A long-lived helper program a test starts (a Python server, a script holding a lock) that prints one
/// line when it is ready. Stopped by `stop()` (SIGTERM, then SIGKILL) or `kill()`; letting go of it kills it too, so
/// a failing test never leaves it running. Standard error is discarded.
public final class SpawnedProgram: Sendable {
    /// The child's process id.
    public let pid: Int32
    /// The first line it printed, without its line end.
    public let firstLine: String
    private let child: RunningChild

    private init(child: RunningChild, firstLine: String) {
        self.pid = child.pid
        self.child = child
        self.firstLine = firstLine
    }

    /// Starts `executable` and waits (at most `readyWithin`) for its first line.
    ///
    /// - Parameter environment: the child's whole environment; nil passes the test process's.
    public static func start(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, readyWithin: Duration = .seconds(30)
    ) async throws -> SpawnedProgram {
        let child: RunningChild
        do {
            child = try await startProgram(executable, arguments, environment: environment, standardError: .discarded)
        } catch {
            throw SpawnedProgramError.cannotStart(executable, "\(error)")
        }
        // Standard input stays open (a pipe nobody writes to): a script that exits at its end never outlives the
        // test process.
        guard await child.waitForOutput(within: readyWithin, until: { $0.contains(0x0A) }) else {
            _ = await child.kill()
            throw SpawnedProgramError.notReady(executable, arguments.last ?? "")
        }
        let line = child.standardOutput.prefix { $0 != 0x0A }
        return SpawnedProgram(child: child, firstLine: String(decoding: line, as: UTF8.self))
    }

    /// Whether the child has not ended yet.
    public var isRunning: Bool { child.isRunning }

    /// SIGTERM, then SIGKILL when the program has not exited two seconds later; returns once it has ended.
    public func stop() async {
        _ = await child.stop(grace: .seconds(2))
    }

    /// SIGKILL at once, as a crash would end it; returns once it has ended.
    public func kill() async {
        _ = await child.kill()
    }
}

/// Why a ``SpawnedProgram`` did not start.
public enum SpawnedProgramError: Error, CustomStringConvertible {
    case cannotStart(String, String)
    case notReady(String, String)

    public var description: String {
        switch self {
        case .cannotStart(let program, let reason): "cannot start \(program): \(reason)"
        case .notReady(let program, let script): "\(program) \(script) printed no first line"
        }
    }
}

/// A Python script serving HTTP on 127.0.0.1 that prints its port on its first line.
public final class PythonServer: Sendable {
    public let port: Int
    private let program: SpawnedProgram

    private init(port: Int, program: SpawnedProgram) {
        self.port = port
        self.program = program
    }

    /// Starts the script and waits (at most `readyWithin`) for the port it prints.
    public static func start(
        script: String, arguments: [String] = [], environment: [String: String]? = nil, executable: String = "/usr/bin/python3",
        readyWithin: Duration = .seconds(30)
    ) async throws -> PythonServer {
        let program = try await SpawnedProgram.start(
            executable, ["-u", script] + arguments, environment: environment, readyWithin: readyWithin)
        guard let port = Int(program.firstLine.trimmingCharacters(in: .whitespaces)) else {
            await program.stop()
            throw PythonServerError(script: script)
        }
        return PythonServer(port: port, program: program)
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Stops the script: SIGTERM, then SIGKILL after two seconds.
    public func stop() async {
        await program.stop()
    }
}

public struct PythonServerError: Error, CustomStringConvertible {
    public var script: String
    public var description: String { "\(script) did not print its port" }
}
