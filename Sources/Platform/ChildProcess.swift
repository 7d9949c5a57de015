#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a child process ended.
public enum ExitStatus: Sendable, Hashable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public var description: String {
        switch self {
        case let .exited(code): return "exit status \(code)"
        case let .signaled(signal): return "killed by signal \(signal)"
        }
    }
}

/// What a finished child process left: its status and the bytes it wrote.
public struct ProcessOutput: Sendable {
    public var status: ExitStatus
    public var standardOutput: [UInt8]
    public var standardError: [UInt8]
}

/// Why running a child process failed.
public enum ChildProcessError: Error, Sendable, CustomStringConvertible {
    /// The program could not be started (not found, not executable).
    case spawnFailed(program: String, errno: Int32)
    /// It ran longer than the timeout; its whole process group was killed.
    case timedOut(program: String, timeout: Duration, standardError: [UInt8])
    /// It wrote more than the limit to standard output or standard error; it was killed.
    case outputTooLarge(program: String, limit: Int)
    case system(SystemError)

    public var description: String {
        switch self {
        case let .spawnFailed(program, code):
            return "cannot run \(program): \(String(cString: strerror(code)))"
        case let .timedOut(program, timeout, _):
            return "\(program) did not finish within \(timeout) and was killed"
        case let .outputTooLarge(program, limit):
            return "\(program) wrote more than \(limit) bytes and was killed"
        case let .system(error):
            return error.description
        }
    }
}

/// Runs a program without a shell (posix_spawnp: PATH lookup, argv as given), standard input from
/// /dev/null, standard output and error captured, in its own process group so a timeout kills the
/// program and everything it started.
public enum ChildProcess {
    /// Runs `argv` to completion or until `timeout`.
    /// - Parameters:
    ///   - environment: the child's whole environment; nil passes this process's environment.
    ///   - outputLimit: the most bytes kept from each of standard output and standard error.
    public static func run(
        _ argv: [String], environment: [String: String]? = nil, timeout: Duration, outputLimit: Int = 1 << 20
    ) throws(ChildProcessError) -> ProcessOutput {
        guard let program = argv.first else { throw .spawnFailed(program: "(empty command)", errno: ENOENT) }
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0 else { throw .system(SystemError(call: "pipe", errno: errno)) }
        guard pipe(&errPipe) == 0 else {
            let code = errno
            Glibc.close(outPipe[0]); Glibc.close(outPipe[1])
            throw .system(SystemError(call: "pipe", errno: code))
        }
        // pipe2(O_CLOEXEC) is not exported to Swift; other spawns must not inherit these ends.
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var defaultSignals = sigset_t()
        sigemptyset(&defaultSignals)
        sigaddset(&defaultSignals, SIGPIPE)
        sigaddset(&defaultSignals, SIGINT)
        sigaddset(&defaultSignals, SIGTERM)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let environmentStrings = environment.map { $0.map { "\($0.key)=\($0.value)" } }
        let cEnvironment: [UnsafeMutablePointer<CChar>?]? = environmentStrings.map { $0.map { strdup($0) } + [nil] }
        defer { cEnvironment?.forEach { free($0) } }

        var pid: pid_t = 0
        let spawnResult = cArguments.withUnsafeBufferPointer { argvBuffer in
            if let cEnvironment {
                return cEnvironment.withUnsafeBufferPointer { envBuffer in
                    posix_spawnp(&pid, program, &actions, &attributes, argvBuffer.baseAddress!, envBuffer.baseAddress!)
                }
            }
            return posix_spawnp(&pid, program, &actions, &attributes, argvBuffer.baseAddress!, environ)
        }
        Glibc.close(outPipe[1])
        Glibc.close(errPipe[1])
        guard spawnResult == 0 else {
            Glibc.close(outPipe[0]); Glibc.close(errPipe[0])
            throw .spawnFailed(program: program, errno: spawnResult)
        }
        defer { Glibc.close(outPipe[0]); Glibc.close(errPipe[0]) }

        let deadline = ContinuousClock.now.advanced(by: timeout)
        var output: [UInt8] = []
        var errors: [UInt8] = []
        var open = [outPipe[0], errPipe[0]]
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var failure: ChildProcessError?
        while !open.isEmpty {
            let remaining = ContinuousClock.now.duration(to: deadline)
            if remaining <= .zero {
                failure = .timedOut(program: program, timeout: timeout, standardError: errors)
                break
            }
            var polls = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000
                + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            let ready = poll(&polls, nfds_t(polls.count), milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                failure = .system(SystemError(call: "poll", errno: errno))
                break
            }
            for entry in polls where entry.revents != 0 {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(entry.fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 {
                    open.removeAll { $0 == entry.fd }
                    continue
                }
                if entry.fd == outPipe[0] { output.append(contentsOf: chunk[0..<count]) } else { errors.append(contentsOf: chunk[0..<count]) }
                if output.count > outputLimit || errors.count > outputLimit {
                    failure = .outputTooLarge(program: program, limit: outputLimit)
                }
            }
            if failure != nil { break }
        }
        if failure == nil {
            // Both pipes closed; the program may still run (it closed its output early): wait for it
            // until the deadline.
            while true {
                var status: Int32 = 0
                let waited = waitpid(pid, &status, WNOHANG)
                if waited == pid {
                    return ProcessOutput(status: exitStatus(status), standardOutput: output, standardError: errors)
                }
                if waited < 0 && errno != EINTR {
                    throw .system(SystemError(call: "waitpid", errno: errno))
                }
                if ContinuousClock.now >= deadline {
                    failure = .timedOut(program: program, timeout: timeout, standardError: errors)
                    break
                }
                usleep(2_000)
            }
        }
        // Kill the whole group: the program and anything it started.
        _ = Glibc.kill(-pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        throw failure!
    }

    static func exitStatus(_ status: Int32) -> ExitStatus {
        // The WIFEXITED / WEXITSTATUS / WTERMSIG macros, which Swift does not import.
        let signal = status & 0x7f
        if signal == 0 { return .exited((status >> 8) & 0xff) }
        return .signaled(signal)
    }
}
