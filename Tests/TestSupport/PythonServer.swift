import Foundation
import Locking

/// A long-lived helper program a test starts (a Python server, a script holding a lock) that prints one
/// line when it is ready. Stopped by `stop()` (SIGTERM, then SIGKILL); `deinit` stops it too, so a failing
/// test never leaves it running.
///
/// Spawned with posix_spawn rather than Foundation's `Process`: corelibs-foundation's child monitor waits
/// for a long-lived `Process` child in a way that stalls every other `Process`'s `waitUntilExit` (a
/// `runProgram` of the CLI beside a server never returned). The child gets an empty signal mask and
/// default dispositions (the spawning thread may block SIGTERM), standard input and error on /dev/null,
/// and standard output on a close-on-exec pipe that only it holds.
public final class SpawnedProgram: Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// The first line it printed, without its line end.
    public let firstLine: String

    private init(pid: pid_t, firstLine: String) {
        self.pid = pid
        self.firstLine = firstLine
    }

    /// Starts `executable` and waits (on a dedicated thread, at most `readyWithin`) for its first line.
    ///
    /// - Parameter environment: the child's whole environment; nil passes the test process's.
    public static func start(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, readyWithin: Duration = .seconds(30)
    ) async throws -> SpawnedProgram {
        try await onDedicatedThread { () throws(SpawnedProgramError) -> SpawnedProgram in
            try startOnThisThread(executable, arguments, environment: environment, readyWithin: readyWithin)
        }
    }

    private static func startOnThisThread(
        _ executable: String, _ arguments: [String], environment: [String: String]?, readyWithin: Duration
    ) throws(SpawnedProgramError) -> SpawnedProgram {
        let output = makePipe()
        let readEnd = output.fileHandleForReading
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, output.fileHandleForWriting.fileDescriptor, 1)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else of the test process reaches the server: a socket another test's server accepted
        // (SwiftNIO accepts without SOCK_CLOEXEC) would stay open in this child after that server closed it, and
        // its client would wait for an end of stream that comes only when this child exits.
        // (glibc 2.34's posix_spawn_file_actions_addclosefrom_np, which the Glibc module does not import.)
        guard let addCloseFrom = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            throw .cannotStart(executable, "this C library cannot close a child's inherited descriptors")
        }
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        _ = unsafeBitCast(addCloseFrom, to: AddCloseFrom.self)(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let environmentLines = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environmentLines.map { $0.map { strdup($0) } + [nil] }
        defer { envp?.forEach { free($0) } }
        var child: pid_t = 0
        // Under the launch lock, like every `Process` launch, so no pipe is half made while this child starts.
        let status = launchLock.withLock {
            if let envp { return posix_spawn(&child, executable, &actions, &attributes, argv, envp) }
            return posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        }
        try? output.fileHandleForWriting.close()
        guard status == 0 else { throw .cannotStart(executable, String(cString: strerror(status))) }

        let reader = FirstLineReader(readEnd)
        guard let line = reader.wait(for: readyWithin) else {
            _ = Foundation.kill(child, SIGKILL)
            var ignored: Int32 = 0
            waitpid(child, &ignored, 0)
            throw .notReady(executable, arguments.last ?? "")
        }
        return SpawnedProgram(pid: child, firstLine: line)
    }

    /// Whether the child has not been stopped or reaped yet.
    public var isRunning: Bool { state.withLock { !$0 } }

    /// SIGTERM, then SIGKILL when the program has not exited two seconds later; waits on a dedicated thread.
    public func stop() async {
        await onDedicatedThread { self.stopOnThisThread(signal: SIGTERM) }
    }

    /// SIGKILL at once, and waits for the child (a test simulating a crash).
    public func kill() {
        stopOnThisThread(signal: SIGKILL)
    }

    private let state = Locked(false)  // true once reaped

    private func stopOnThisThread(signal: Int32) {
        state.withLock { reaped in
            guard !reaped else { return }
            _ = Foundation.kill(pid, signal)
            var status: Int32 = 0
            let deadline = Date().addingTimeInterval(2)
            while waitpid(pid, &status, WNOHANG) == 0 {
                if Date() >= deadline {
                    _ = Foundation.kill(pid, SIGKILL)
                    waitpid(pid, &status, 0)
                    break
                }
                Thread.sleep(forTimeInterval: 0.02)
            }
            reaped = true
        }
    }

    deinit { stopOnThisThread(signal: SIGTERM) }
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

    /// Starts the script and waits (at most 30 s) for the port it prints.
    public static func start(
        script: String, arguments: [String] = [], environment: [String: String]? = nil, executable: String = "/usr/bin/python3"
    ) async throws -> PythonServer {
        let program = try await SpawnedProgram.start(executable, ["-u", script] + arguments, environment: environment)
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

/// Reads up to the first newline of a pipe on a thread of its own, then drains the rest until the writer
/// closes it, so a program that keeps printing neither blocks on a full pipe nor dies of a broken one.
final class FirstLineReader: Sendable {
    private let line = Locked<String?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            var buffer = Data()
            var signalled = false
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                guard !signalled else { continue }
                buffer.append(chunk)
                if let newline = buffer.firstIndex(of: 0x0A) {
                    line.withLock { $0 = String(decoding: buffer[..<newline], as: UTF8.self) }
                    signalled = true
                    done.signal()
                    buffer = Data()
                }
            }
            try? handle.close()
            if !signalled { done.signal() }
        }
    }

    /// The line, or nil when the program printed none within `timeout` (or closed its output first).
    func wait(for timeout: Duration) -> String? {
        guard done.wait(timeout: .now() + timeout / .seconds(1)) == .success else { return nil }
        return line.withLock { $0 }
    }
}
