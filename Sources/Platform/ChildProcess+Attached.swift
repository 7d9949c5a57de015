#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
internal import Subprocess
internal import SystemPackage

extension ChildProcess {
    /// Runs a user's own command in the foreground, as a shell would (`sessionkeeper exec`), and returns
    /// how it ended.
    ///
    /// Unlike ``run(standardErrorLine:)``:
    /// - the program shares the caller's standard input, output and error, and stays in the caller's
    ///   process group, so it can read the terminal and Ctrl-C reaches it as any foreground program;
    /// - it has no timeout and no output limit: it runs until it ends;
    /// - the `forwarded` signals (SIGINT, SIGTERM, SIGHUP) that another process sends to the caller are
    ///   passed on to the program and do not end the caller, which waits for the program and reports how it
    ///   ended. The same signals sent by the terminal to the whole foreground group are not passed on: the
    ///   program got them already. A signal that arrives before the program has started is passed on once
    ///   it has. The handlers stay for the rest of the process: a forwarded signal that comes after the
    ///   program ended is dropped, so the caller finishes its clean-up (removing a private file) and exits
    ///   with the program's status.
    ///
    /// Other guarantees of ``ChildProcess`` hold: no shell, exactly `environment`, only the three standard
    /// descriptors inherited. One attached run at a time per process.
    ///
    /// - Parameter started: called once with a handle that sends signals to the program while it runs (to
    ///   tell it its cookies changed).
    public static func runAttached(
        executable: String, arguments: [String], environment: ChildEnvironment, forwarded: [Int32],
        started: @Sendable (AttachedChild) -> Void = { _ in }
    ) async throws(ChildProcessError) -> ProcessTermination {
        // On the watcher thread, as every run (ChildProcessExecutor says why).
        try await withTaskExecutorPreference(ChildProcessExecutor.shared) { () async throws(ChildProcessError) in
            try await runAttachedWatched(
                executable: executable, arguments: arguments, environment: environment, forwarded: forwarded, started: started)
        }
    }

    private static func runAttachedWatched(
        executable: String, arguments: [String], environment: ChildEnvironment, forwarded: [Int32],
        started: @Sendable (AttachedChild) -> Void
    ) async throws(ChildProcessError) -> ProcessTermination {
        guard !executable.isEmpty else { throw .launchFailed(program: "(empty command)", reason: "no program named") }
        SignalForwarding.install(forwarded)
        let outcome: ExecutionResult<Void, FileDescriptorOutput, FileDescriptorOutput>
        do {
            outcome = try await Subprocess.run(
                subprocessExecutable(executable), arguments: Arguments(arguments), environment: environment.subprocessEnvironment,
                platformOptions: PlatformOptions(),
                input: .fileDescriptor(.standardInput, closeAfterSpawningProcess: false),
                output: .fileDescriptor(.standardOutput, closeAfterSpawningProcess: false),
                error: .fileDescriptor(.standardError, closeAfterSpawningProcess: false)
            ) { execution in
                SignalForwarding.started(execution.processIdentifier.value)
                started(AttachedChild(pid: execution.processIdentifier.value))
            }
        } catch {
            SignalForwarding.ended()
            throw ChildProcessError(launching: executable, error)
        }
        SignalForwarding.ended()
        return ProcessTermination(outcome.terminationStatus)
    }
}

/// The program of a ``ChildProcess/runAttached(executable:arguments:environment:forwarded:started:)`` while
/// it runs.
public struct AttachedChild: Sendable {
    /// Its process id.
    public let pid: Int32

    /// Sends `signal` to the program; false once it has ended (nothing is sent then).
    @discardableResult
    public func send(_ signal: Int32) -> Bool {
        guard SignalForwarding.target.load(ordering: .acquiring) == pid else { return false }
        return Glibc.kill(pid, signal) == 0
    }
}

/// The process-wide state of signal forwarding, read by a C signal handler: only atomics, touched before
/// the handler is installed so that no lazy initialisation runs inside it.
enum SignalForwarding {
    /// The program signals go to; 0 while none runs.
    static let target = Atomic<Int32>(0)
    /// Signals that came while no program ran, one bit per signal number.
    static let pending = Atomic<UInt64>(0)

    static func install(_ signals: [Int32]) {
        target.store(0, ordering: .releasing)
        pending.store(0, ordering: .releasing)
        // A caller may have started this process with them blocked (some runners do); blocked, they would
        // never reach the handler.
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        for number in signals {
            var action = sigaction()
            action.__sigaction_handler = .init(sa_sigaction: forwardSignal)
            action.sa_flags = SA_SIGINFO | SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(number, &action, nil)
        }
    }

    static func started(_ pid: Int32) {
        target.store(pid, ordering: .releasing)
        // What came before the program existed goes to it now.
        let early = pending.exchange(0, ordering: .acquiringAndReleasing)
        for number in 1..<64 where early & (1 << UInt64(number)) != 0 { _ = Glibc.kill(pid, Int32(number)) }
    }

    static func ended() {
        target.store(0, ordering: .releasing)
    }
}

/// The handler: async-signal-safe (atomics and kill(2) only). `si_code` > 0 means the kernel sent the
/// signal (the terminal's Ctrl-C to the foreground group, which the program is in): not passed on twice.
private func forwardSignal(_ number: Int32, _ info: UnsafeMutablePointer<siginfo_t>?, _: UnsafeMutableRawPointer?) {
    if let info, info.pointee.si_code > 0 { return }
    let pid = SignalForwarding.target.load(ordering: .acquiring)
    if pid > 0 {
        _ = Glibc.kill(pid, number)
    } else if number > 0, number < 64 {
        SignalForwarding.pending.bitwiseOr(1 << UInt64(number), ordering: .acquiringAndReleasing)
    }
}
