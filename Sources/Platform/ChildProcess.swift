#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
internal import Subprocess
internal import SystemPackage

/// One program to run as a child process: the project's only way to start one (plugins, credential
/// commands, passphrase commands, a user's command under `exec`, and every program the tests start), built on
/// swift-subprocess. ``run(standardErrorLine:)`` runs it to its end; ``start(standardError:)`` returns while it runs.
///
/// What every run guarantees:
/// - no shell: `executable` and `arguments` are passed to execve as given (a name without `/` is looked
///   up on the child's PATH);
/// - the child leads a process group of its own, starts with default signal dispositions and an empty
///   signal mask, and inherits no descriptor besides its standard input, output and error;
/// - its environment is exactly ``environment`` (see ``ChildEnvironment``);
/// - on timeout and on cancellation of the calling task the whole group gets SIGTERM, then SIGKILL after
///   ``terminationGrace``; when the program ends, anything it left running in its group is killed;
/// - standard output is kept up to ``outputLimit`` bytes; standard error is delivered line by line while
///   the program runs.
///
/// The waits are asynchronous (swift-subprocess watches the child and its pipes with epoll on one thread
/// it shares among all runs), so a run holds no thread of Swift's cooperative pool while the child works, and
/// what a run does between those waits happens on one thread of its own (``ChildProcessExecutor``), so a child's
/// exit is seen at once however busy the cooperative pool is.
public struct ChildProcess: Sendable {
    /// What to do when standard output goes past ``ChildProcess/outputLimit``.
    public enum OutputOverflow: Sendable, Hashable {
        /// Keep the first bytes, discard the rest and let the program finish;
        /// ``ChildProcessResult/outputTruncated`` says it happened.
        case truncate
        /// Kill the program's group at once and throw ``ChildProcessError/outputTooLarge(program:limit:)``.
        case terminate
    }

    /// A standard error line longer than this is delivered in pieces of this size.
    public static let maximumLineLength = 4096
    /// Time between SIGTERM and SIGKILL when a run is stopped.
    public static let defaultTerminationGrace: Duration = .seconds(1)

    /// A path (anything with a `/`), or a name looked up on the PATH of ``environment``.
    public var executable: String
    public var arguments: [String]
    public var environment: ChildEnvironment
    /// Written to the program's standard input, which is then closed; a program need not read it.
    public var input: [UInt8]
    /// How long the program may run before its group is stopped.
    public var timeout: Duration
    public var terminationGrace: Duration
    /// The most bytes of standard output kept.
    public var outputLimit: Int
    public var outputOverflow: OutputOverflow
    /// The folder the program starts in; nil: the caller's.
    public var workingDirectory: String?

    public init(
        executable: String, arguments: [String] = [], environment: ChildEnvironment, input: [UInt8] = [],
        timeout: Duration, terminationGrace: Duration = ChildProcess.defaultTerminationGrace,
        outputLimit: Int, outputOverflow: OutputOverflow, workingDirectory: String? = nil
    ) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.input = input
        self.timeout = timeout
        self.terminationGrace = terminationGrace
        self.outputLimit = outputLimit
        self.outputOverflow = outputOverflow
        self.workingDirectory = workingDirectory
    }

    /// Runs the program to its end, its timeout, or the cancellation of the calling task.
    ///
    /// - Parameter standardErrorLine: receives each standard error line as it arrives (without its line
    ///   end; invalid UTF-8 replaced); nil discards standard error.
    /// - Throws: ``ChildProcessError`` when the program cannot be started, overflows with
    ///   ``OutputOverflow/terminate``, or the system fails while it runs. Exit statuses, signals, timeouts
    ///   and cancellation are results, not errors.
    public func run(
        standardErrorLine: (@Sendable (String) -> Void)? = nil
    ) async throws(ChildProcessError) -> ChildProcessResult {
        // The whole run happens on the watcher thread; the caller is resumed once, with the result.
        try await withTaskExecutorPreference(ChildProcessExecutor.shared) { () async throws(ChildProcessError) in
            try await runWatched(standardErrorLine: standardErrorLine)
        }
    }

    /// ``run(standardErrorLine:)``'s work, on ``ChildProcessExecutor``: the child tasks of its task groups (and of
    /// swift-subprocess's) inherit the preference, so every resumption while the program runs stays on that thread.
    private func runWatched(
        standardErrorLine: (@Sendable (String) -> Void)?
    ) async throws(ChildProcessError) -> ChildProcessResult {
        guard !executable.isEmpty else { throw .launchFailed(program: "(empty command)", reason: "no program named") }
        _ = Self.brokenPipesIgnored
        let group = ProcessGroup()
        let ran: Result<Captured, any Error>
        let stop: Stop?
        (ran, stop) = await withTaskGroup(of: RaceEvent.self) { race in
            race.addTask { .ran(await self.spawnAndCapture(group: group, standardErrorLine: standardErrorLine)) }
            race.addTask {
                do {
                    try await Task.sleep(for: self.timeout)
                    return .deadline
                } catch {
                    return .cancelled
                }
            }
            var stop: Stop?
            while let event = await race.next() {
                switch event {
                case let .ran(result):
                    // The timer has nothing left to do; cancelling it does not touch the finished run.
                    race.cancelAll()
                    return (result, stop)
                case .deadline:
                    guard let leader = group.leader else {
                        // Not started yet: cancelling the run stops it (teardownSequence below).
                        stop = .timedOut
                        race.cancelAll()
                        continue
                    }
                    // A program that has already exited did not run out of time, however late the run's last
                    // steps come (swift-subprocess finishes a run on Swift's cooperative pool, which a busy
                    // process may keep waiting): the run ends by itself, with the program's own status.
                    if Syscall.childHasExited(leader) { continue }
                    stop = .timedOut
                    // Stopped from here rather than by cancelling the run: swift-subprocess's teardown waits its
                    // turn on the cooperative pool (an unstructured task), and a busy pool held a stubborn program
                    // 30 s past its SIGTERM. Once the group is gone the run ends by itself.
                    _ = kill(-leader, SIGTERM)
                    race.addTask {
                        do {
                            try await Task.sleep(for: self.terminationGrace)
                            return .graceOver
                        } catch {
                            return .cancelled
                        }
                    }
                case .graceOver:
                    if let leader = group.leader, !Syscall.childHasExited(leader) { _ = kill(-leader, SIGKILL) }
                case .cancelled:
                    // The calling task was cancelled, which reaches the run as well.
                    stop = .cancelled
                }
            }
            preconditionFailure("the run task always reports")
        }
        // Whatever the program left in its group (a background job that kept running, a child that
        // ignored SIGTERM while the program obeyed it) goes with it. The group keeps the leader's pid as
        // long as any member lives, so this signal cannot reach another program's group unless the group
        // is already empty and the pid was handed out again within these microseconds.
        if let leader = group.leader { _ = kill(-leader, SIGKILL) }

        let program = executable
        switch ran {
        case let .success(captured):
            if captured.overflowed { throw .outputTooLarge(program: program, limit: outputLimit) }
            let termination: ProcessTermination
            switch stop {
            case .timedOut?: termination = .timedOut
            case .cancelled?: termination = .cancelled
            case nil: termination = ProcessTermination(captured.status)
            }
            return ChildProcessResult(
                termination: termination, standardOutput: captured.output, outputTruncated: captured.truncated)
        case let .failure(error):
            // A run stopped early may end in an error (cancelled before the program even started); what
            // the caller asked about is that it was stopped.
            switch stop {
            case .timedOut?: return ChildProcessResult(termination: .timedOut, standardOutput: [], outputTruncated: false)
            case .cancelled?: return ChildProcessResult(termination: .cancelled, standardOutput: [], outputTruncated: false)
            case nil:
                if group.leader == nil { throw ChildProcessError(launching: program, error) }
                throw .failed(program: program, reason: "\(error)")
            }
        }
    }

    private enum Stop { case timedOut, cancelled }

    private enum RaceEvent: Sendable {
        case ran(Result<Captured, any Error>)
        case deadline
        /// The grace between SIGTERM and SIGKILL of a timed-out program is over.
        case graceOver
        case cancelled
    }

    /// What one run collected before the program ended.
    private struct Captured: Sendable {
        var status: TerminationStatus
        var output: [UInt8]
        var truncated: Bool
        var overflowed: Bool
    }

    /// What the pipes gave while the program ran.
    private struct Piped: Sendable {
        var output: [UInt8]
        var truncated: Bool
        var overflowed: Bool
    }

    /// The program's group leader, noted once it runs.
    private final class ProcessGroup: Sendable {
        private let leaderPID = Atomic<Int32>(0)
        func started(_ pid: Int32) { leaderPID.store(pid, ordering: .releasing) }
        var leader: Int32? {
            let pid = leaderPID.load(ordering: .acquiring)
            return pid > 0 ? pid : nil
        }
    }

    /// Starts the program and pumps its pipes until it ends (or its pipes are cancelled because it ended
    /// while something else held them open).
    private func spawnAndCapture(
        group: ProcessGroup, standardErrorLine: (@Sendable (String) -> Void)?
    ) async -> Result<Captured, any Error> {
        var options = PlatformOptions()
        // 0: the child's own pid becomes its group, so one signal reaches everything it starts.
        options.processGroupID = 0
        // Used when this task is cancelled (timeout or caller): SIGTERM to the group, then SIGKILL to the
        // group after the grace period if the program is still there.
        options.teardownSequence = [.gracefulShutDown(toProcessGroup: true, allowedDurationToNextStep: terminationGrace)]
        let input = self.input
        let limit = outputLimit
        let overflow = outputOverflow
        do {
            let outcome = try await Subprocess.run(
                Self.subprocessExecutable(executable), arguments: Arguments(arguments), environment: environment.subprocessEnvironment,
                workingDirectory: workingDirectory.map { FilePath($0) }, platformOptions: options,
                input: .inputWriter, output: .sequence, error: .sequence
            ) { execution in
                group.started(execution.processIdentifier.value)
                return await withTaskGroup(of: Void.self, returning: Piped.self) { pipes in
                    pipes.addTask {
                        // A program that exits without reading its input makes this fail (EPIPE): fine.
                        if !input.isEmpty { _ = try? await execution.standardInputWriter.write(input) }
                        try? await execution.standardInputWriter.finish()
                    }
                    pipes.addTask {
                        var lines = LineSplitter(maximumLength: Self.maximumLineLength)
                        do {
                            for try await buffer in execution.standardError {
                                buffer.withUnsafeBytes { bytes in
                                    lines.append(bytes) { standardErrorLine?($0) }
                                }
                            }
                        } catch {
                            // A read error ends the stream like an end of file: the status still tells.
                        }
                        lines.finish { standardErrorLine?($0) }
                    }
                    var output = OutputBuffer(limit: limit)
                    do {
                        for try await buffer in execution.standardOutput {
                            buffer.withUnsafeBytes { output.append($0) }
                            if output.truncated, overflow == .terminate {
                                try? execution.send(signal: .kill, toProcessGroup: true)
                                break
                            }
                        }
                    } catch {
                        // As for standard error.
                    }
                    await pipes.waitForAll()
                    return Piped(output: output.bytes, truncated: output.truncated, overflowed: output.truncated && overflow == .terminate)
                }
            }
            let captured = outcome.closureResult
            return .success(Captured(
                status: outcome.terminationStatus, output: captured.output, truncated: captured.truncated,
                overflowed: captured.overflowed))
        } catch {
            return .failure(error)
        }
    }

    /// Writing to a pipe whose reader is gone (a plugin that exits without reading its input) raises
    /// SIGPIPE, whose default action would end the daemon. Ignored once, process-wide, before the first
    /// child starts, as daemons do; the write then fails with EPIPE instead. Children start with default
    /// dispositions again (swift-subprocess resets every signal in the child).
    static let brokenPipesIgnored: Void = {
        _ = signal(SIGPIPE, SIG_IGN)
    }()
}

extension ChildProcess {
    /// `executable` as swift-subprocess takes it: a path when it holds a `/`, else a name looked up on the child's
    /// PATH.
    static func subprocessExecutable(_ executable: String) -> Executable {
        executable.contains("/") ? .path(FilePath(executable)) : .name(executable)
    }
}

extension ChildEnvironment {
    /// Exactly these variables, as swift-subprocess takes them (a name it cannot take is left out).
    var subprocessEnvironment: Environment {
        var variables: [Environment.Key: String] = [:]
        for (name, value) in self.variables {
            guard let key = Environment.Key(rawValue: name) else { continue }
            variables[key] = value
        }
        return .custom(variables)
    }
}

/// How a child process ended.
public enum ProcessTermination: Sendable, Hashable, CustomStringConvertible {
    /// It exited on its own with this status.
    case exited(Int32)
    /// A signal it did not get from ``ChildProcess`` ended it.
    case signaled(Int32)
    /// Its timeout ran out; its group was stopped.
    case timedOut
    /// The calling task was cancelled; its group was stopped.
    case cancelled

    init(_ status: TerminationStatus) {
        switch status {
        case let .exited(code): self = .exited(code)
        case let .signaled(signal): self = .signaled(signal)
        }
    }

    public var description: String {
        switch self {
        case let .exited(code): return "exit status \(code)"
        case let .signaled(signal): return "killed by signal \(signal)"
        case .timedOut: return "stopped at its timeout"
        case .cancelled: return "stopped by cancellation"
        }
    }
}

/// What a finished child left: how it ended and its standard output.
public struct ChildProcessResult: Sendable, Hashable {
    public var termination: ProcessTermination
    /// At most ``ChildProcess/outputLimit`` bytes.
    public var standardOutput: [UInt8]
    /// True when the program wrote more than ``ChildProcess/outputLimit`` bytes (the rest was discarded).
    public var outputTruncated: Bool

    public init(termination: ProcessTermination, standardOutput: [UInt8], outputTruncated: Bool) {
        self.termination = termination
        self.standardOutput = standardOutput
        self.outputTruncated = outputTruncated
    }
}

/// Why running a child process failed.
public enum ChildProcessError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The program could not be started (not found, not executable, an empty command).
    case launchFailed(program: String, reason: String)
    /// It wrote more than the limit to standard output (with ``ChildProcess/OutputOverflow/terminate``);
    /// its group was killed.
    case outputTooLarge(program: String, limit: Int)
    /// The system failed while the program ran (watching it, reading its pipes).
    case failed(program: String, reason: String)

    init(launching program: String, _ error: any Error) {
        guard let error = error as? SubprocessError else {
            self = .launchFailed(program: program, reason: "\(error)")
            return
        }
        if let code = error.underlyingError?.rawValue {
            self = .launchFailed(program: program, reason: String(cString: strerror(code)))
        } else if error.code == .executableNotFound {
            // swift-subprocess checks the file itself before spawning.
            let reason = program.contains("/") ? "no executable file there" : "not found on PATH"
            self = .launchFailed(program: program, reason: reason)
        } else {
            self = .launchFailed(program: program, reason: "\(error)")
        }
    }

    public var description: String {
        switch self {
        case let .launchFailed(program, reason): return "cannot run \(program): \(reason)"
        case let .outputTooLarge(program, limit): return "\(program) wrote more than \(limit) bytes and was killed"
        case let .failed(program, reason): return "running \(program) failed: \(reason)"
        }
    }
}
