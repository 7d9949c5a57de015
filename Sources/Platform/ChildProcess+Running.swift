#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Locking
internal import Subprocess
internal import SystemPackage

extension ChildProcess {
    /// Where a started program's standard error goes.
    public enum StandardErrorRoute: Sendable, Hashable {
        /// Collected on its own (``RunningChild/standardError``).
        case collected
        /// Into standard output, interleaved as written (`2>&1`).
        case mergedWithOutput
        /// To the caller's own standard error.
        case inherited
        /// To /dev/null.
        case discarded
    }

    /// Starts the program and returns once it runs, for a caller that talks with it while it runs or keeps it
    /// running (a server, a daemon under test). Its standard output (and error) are collected as they come, up to
    /// ``outputLimit`` bytes each; ``input`` is written first, and standard input stays open for
    /// ``RunningChild/write(_:)`` until ``RunningChild/closeInput()``.
    ///
    /// The guarantees of ``run(standardErrorLine:)`` hold: no shell, exactly ``environment``, a process group of its
    /// own, no inherited descriptor besides the standard three; at ``timeout`` the group is stopped (SIGTERM, then
    /// SIGKILL after ``terminationGrace``), and when the program ends, what it left in its group is killed.
    public func start(standardError route: StandardErrorRoute = .collected) async throws(ChildProcessError) -> RunningChild {
        guard !executable.isEmpty else { throw .launchFailed(program: "(empty command)", reason: "no program named") }
        _ = Self.brokenPipesIgnored
        let core = RunningChild.Core(program: executable, outputLimit: outputLimit, grace: terminationGrace)
        let started: Result<Int32, ChildProcessError> = await withCheckedContinuation { continuation in
            core.onStart = { continuation.resume(returning: $0) }
            // On the watcher thread, as every run (ChildProcessExecutor says why).
            Task.detached(executorPreference: ChildProcessExecutor.shared) {
                switch route {
                case .collected: await self.drive(core, error: .sequence) { $0.standardError }
                case .mergedWithOutput: await self.drive(core, error: .combinedWithOutput) { _ in nil }
                case .inherited:
                    await self.drive(core, error: .fileDescriptor(.standardError, closeAfterSpawningProcess: false)) { _ in nil }
                case .discarded: await self.drive(core, error: .discarded) { _ in nil }
                }
            }
        }
        let pid = try started.get()
        let child = RunningChild(pid: pid, core: core)
        core.armTimeout(timeout, pid: pid)
        if !input.isEmpty { child.write(input) }
        return child
    }

    /// Runs the program to its end inside swift-subprocess's closure, feeding ``RunningChild/Core`` its output and
    /// its input, and records how it ended.
    private func drive<E: ErrorOutputProtocol>(
        _ core: RunningChild.Core, error: E,
        errorSequence: @escaping @Sendable (Execution<CustomWriteInput, SequenceOutput, E>) -> SubprocessOutputSequence?
    ) async {
        var options = PlatformOptions()
        options.processGroupID = 0
        let commands = core.inputCommands
        do {
            let outcome = try await Subprocess.run(
                Self.subprocessExecutable(executable), arguments: Arguments(arguments), environment: environment.subprocessEnvironment,
                workingDirectory: workingDirectory.map { FilePath($0) }, platformOptions: options,
                input: .inputWriter, output: .sequence, error: error
            ) { execution in
                core.started(execution.processIdentifier.value)
                await withTaskGroup(of: Void.self) { pumps in
                    pumps.addTask {
                        for await command in commands {
                            switch command {
                            case .write(let bytes):
                                // A program that no longer reads makes this fail (EPIPE): what it wrote still tells.
                                _ = try? await execution.standardInputWriter.write(bytes)
                            case .finish:
                                try? await execution.standardInputWriter.finish()
                                return
                            }
                        }
                    }
                    await withTaskGroup(of: Void.self) { readers in
                        readers.addTask {
                            do {
                                for try await buffer in execution.standardOutput { buffer.withUnsafeBytes { core.append($0, error: false) } }
                            } catch {
                                // A read error ends the stream like an end of file: the status still tells.
                            }
                        }
                        if let errors = errorSequence(execution) {
                            readers.addTask {
                                do {
                                    for try await buffer in errors { buffer.withUnsafeBytes { core.append($0, error: true) } }
                                } catch {
                                    // As for standard output.
                                }
                            }
                        }
                    }
                    // The program closed its output (it ended): nothing more will be read from its input.
                    pumps.cancelAll()
                }
            }
            core.ended(ProcessTermination(outcome.terminationStatus))
        } catch {
            core.failed(ChildProcessError(launching: executable, error))
        }
    }
}

/// A program started by ``ChildProcess/start(standardError:)``, while it runs and after it ended.
///
/// Letting go of it kills what is left of its process group, so a caller that fails half-way leaves nothing running.
public final class RunningChild: Sendable {
    /// The program's process id, which is also its process group's.
    public let pid: Int32
    private let core: Core

    fileprivate init(pid: Int32, core: Core) {
        self.pid = pid
        self.core = core
    }

    deinit { core.killGroupIfRunning() }

    /// What it wrote to standard output so far (with standard error, when merged).
    public var standardOutput: [UInt8] { core.state.withLock { $0.output } }
    /// What it wrote to standard error so far, when collected on its own.
    public var standardError: [UInt8] { core.state.withLock { $0.errorOutput } }
    /// How it ended; nil while it runs.
    public var termination: ProcessTermination? { core.state.withLock { $0.termination } }

    /// Writes `bytes` to its standard input (in order with earlier writes).
    public func write(_ bytes: [UInt8]) { core.input.yield(.write(bytes)) }

    /// Closes its standard input: it reads the end of the file.
    public func closeInput() { core.input.yield(.finish) }

    /// Sends `signal` to the program; false once it has ended (nothing is sent then).
    @discardableResult
    public func send(_ signal: Int32) -> Bool {
        core.state.withLock { state in state.termination == nil && Glibc.kill(pid, signal) == 0 }
    }

    /// Waits until standard output (with standard error, when merged) satisfies `condition`, checked on everything
    /// written so far each time more comes. False when the program ended or `timeout` passed first.
    public func waitForOutput(within timeout: Duration, until condition: @escaping @Sendable ([UInt8]) -> Bool) async -> Bool {
        await core.waitForOutput(within: timeout, until: condition)
    }

    /// Waits until it has ended, its output read to the end.
    public func wait() async -> ProcessTermination {
        // Without a time limit the wait ends only with the program.
        await core.waitForEnd(within: nil) ?? .cancelled
    }

    /// Waits at most `timeout` for it to end; nil when it still runs then.
    public func wait(within timeout: Duration) async -> ProcessTermination? { await core.waitForEnd(within: timeout) }

    /// SIGTERM to its group, SIGKILL when it has not ended `grace` later; returns how it ended.
    public func stop(grace: Duration? = nil) async -> ProcessTermination {
        await core.stop(pid: pid, grace: grace)
    }

    /// SIGKILL to its group at once, as a crash would end it; returns once it has ended.
    public func kill() async -> ProcessTermination {
        core.signalGroup(pid: pid, SIGKILL)
        return await wait()
    }

    enum InputCommand: Sendable {
        case write([UInt8])
        case finish
    }

    /// What the handle and the task that drives the program share. Its timers (the timeout, the grace before
    /// SIGKILL, the bounded waits) run on ``ChildProcessExecutor`` as the program's watching does, so a busy
    /// cooperative pool delays none of them.
    final class Core: Sendable {
        struct State {
            var pid: Int32?
            var output: [UInt8] = []
            var errorOutput: [UInt8] = []
            var termination: ProcessTermination?
            var onStart: (@Sendable (Result<Int32, ChildProcessError>) -> Void)?
            var nextID: UInt64 = 0
            var outputWaiters: [UInt64: (condition: @Sendable ([UInt8]) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]
            var endWaiters: [UInt64: CheckedContinuation<ProcessTermination?, Never>] = [:]
            var timeout: Task<Void, Never>?
        }

        let program: String
        let outputLimit: Int
        let grace: Duration
        let state = Locked(State())
        let inputCommands: AsyncStream<InputCommand>
        let input: AsyncStream<InputCommand>.Continuation

        init(program: String, outputLimit: Int, grace: Duration) {
            self.program = program
            self.outputLimit = max(0, outputLimit)
            self.grace = grace
            (inputCommands, input) = AsyncStream.makeStream(of: InputCommand.self, bufferingPolicy: .unbounded)
        }

        var onStart: (@Sendable (Result<Int32, ChildProcessError>) -> Void)? {
            get { state.withLock { $0.onStart } }
            set { state.withLock { $0.onStart = newValue } }
        }

        func started(_ pid: Int32) {
            let report = state.withLock { state in
                state.pid = pid
                defer { state.onStart = nil }
                return state.onStart
            }
            report?(.success(pid))
        }

        func failed(_ error: ChildProcessError) {
            let report = state.withLock { state in
                defer { state.onStart = nil }
                return state.onStart
            }
            report?(.failure(error))
            // Started and then failed (a pipe's read): it counts as ended, however it ended.
            ended(.exited(-1))
        }

        func armTimeout(_ timeout: Duration, pid: Int32) {
            let task = Task(executorPreference: ChildProcessExecutor.shared) { [weak self] in
                do { try await Task.sleep(for: timeout) } catch { return }
                _ = await self?.stop(pid: pid, grace: nil)
            }
            let ended = state.withLock { state in
                state.timeout = task
                return state.termination != nil
            }
            if ended { task.cancel() }
        }

        func append(_ bytes: UnsafeRawBufferPointer, error: Bool) {
            let ready = state.withLock { state in
                let kept = error ? state.errorOutput.count : state.output.count
                let room = max(0, outputLimit - kept)
                if error {
                    state.errorOutput.append(contentsOf: bytes.prefix(room))
                    return [CheckedContinuation<Bool, Never>]()
                }
                state.output.append(contentsOf: bytes.prefix(room))
                let output = state.output
                let met = state.outputWaiters.filter { $0.value.condition(output) }
                for id in met.keys { state.outputWaiters[id] = nil }
                return met.values.map(\.continuation)
            }
            for continuation in ready { continuation.resume(returning: true) }
        }

        func ended(_ termination: ProcessTermination) {
            let (waiters, ends, timeout, pid) = state.withLock { state in
                if state.termination == nil { state.termination = termination }
                let final = state.termination ?? termination
                let output = state.output
                let waiters = state.outputWaiters.values.map { ($0.continuation, $0.condition(output)) }
                state.outputWaiters = [:]
                defer { state.endWaiters = [:] }
                return (waiters, state.endWaiters.values.map { ($0, final) }, state.timeout, state.pid)
            }
            timeout?.cancel()
            input.finish()
            // Whatever the program left running in its group goes with it (see ChildProcess.run).
            if let pid { _ = Glibc.kill(-pid, SIGKILL) }
            for (continuation, met) in waiters { continuation.resume(returning: met) }
            for (continuation, termination) in ends { continuation.resume(returning: termination) }
        }

        /// How it ended, once it has; nil when `timeout` passed first.
        func waitForEnd(within timeout: Duration?) async -> ProcessTermination? {
            let id = state.withLock { state in
                state.nextID += 1
                return state.nextID
            }
            let timer = timeout.map { timeout in
                Task(executorPreference: ChildProcessExecutor.shared) { [weak self] in
                    do { try await Task.sleep(for: timeout) } catch { return }
                    let waiter = self?.state.withLock { $0.endWaiters.removeValue(forKey: id) }
                    waiter?.resume(returning: nil)
                }
            }
            defer { timer?.cancel() }
            return await withCheckedContinuation { continuation in
                let done = state.withLock { state -> ProcessTermination? in
                    if let termination = state.termination { return termination }
                    state.endWaiters[id] = continuation
                    return nil
                }
                if let done { continuation.resume(returning: done) }
            }
        }

        func waitForOutput(within timeout: Duration, until condition: @escaping @Sendable ([UInt8]) -> Bool) async -> Bool {
            let id = state.withLock { state in
                state.nextID += 1
                return state.nextID
            }
            let timer = Task(executorPreference: ChildProcessExecutor.shared) { [weak self] in
                do { try await Task.sleep(for: timeout) } catch { return }
                self?.resumeOutputWaiter(id, with: false)
            }
            defer { timer.cancel() }
            return await withCheckedContinuation { continuation in
                let answer: Bool? = state.withLock { state in
                    if condition(state.output) { return true }
                    if state.termination != nil { return false }
                    state.outputWaiters[id] = (condition, continuation)
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        }

        private func resumeOutputWaiter(_ id: UInt64, with answer: Bool) {
            let waiter = state.withLock { $0.outputWaiters.removeValue(forKey: id) }
            waiter?.continuation.resume(returning: answer)
        }

        func signalGroup(pid: Int32, _ signal: Int32) {
            state.withLock { state in
                if state.termination == nil { _ = Glibc.kill(-pid, signal) }
            }
        }

        func stop(pid: Int32, grace: Duration?) async -> ProcessTermination {
            signalGroup(pid: pid, SIGTERM)
            let killer = Task(executorPreference: ChildProcessExecutor.shared) { [weak self, grace = grace ?? self.grace] in
                do { try await Task.sleep(for: grace) } catch { return }
                self?.signalGroup(pid: pid, SIGKILL)
            }
            defer { killer.cancel() }
            return await waitForEnd(within: nil) ?? .cancelled
        }

        func killGroupIfRunning() {
            let pid = state.withLock { $0.termination == nil ? $0.pid : nil }
            if let pid { _ = Glibc.kill(-pid, SIGKILL) }
        }
    }
}
