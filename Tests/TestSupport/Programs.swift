import Foundation
import Locking
import Platform

/// What a finished child process left behind.
public struct ProgramResult: Sendable {
    /// The exit status, or the signal number when a signal ended the process (Foundation's `terminationStatus`).
    public var status: Int32
    /// Everything the process wrote to standard output (and standard error, when merged).
    public var standardOutput: Data
    /// Everything the process wrote to standard error when it was captured separately; empty otherwise.
    public var standardError: Data

    /// `standardOutput` decoded as UTF-8 (invalid bytes replaced).
    public var outputText: String { String(decoding: standardOutput, as: UTF8.self) }
    /// `standardError` decoded as UTF-8 (invalid bytes replaced).
    public var errorText: String { String(decoding: standardError, as: UTF8.self) }
}

/// Where a child's standard error goes.
public enum StandardErrorDestination: Sendable {
    /// Into `ProgramResult.standardError`, read on its own thread so a chatty child never blocks.
    case captured
    /// Into the same pipe as standard output (`2>&1`), so `standardOutput` interleaves both.
    case mergedWithOutput
    /// To the test process's own standard error, where a failing tool's message shows in the test log.
    case inherited
    /// To /dev/null.
    case discarded
}

/// Runs `executable` with `arguments` to its end (``Platform/ChildProcess``, the project's one spawner) and returns
/// its status and output.
///
/// - Parameters:
///   - environment: the child's whole environment; nil passes the test process's.
///   - directory: the working folder; nil keeps the test process's.
///   - input: written to the child's standard input, which is then closed; nil closes it at once.
public func runProgram(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
    input: Data? = nil, standardError: StandardErrorDestination = .captured
) async throws -> ProgramResult {
    let child = try await startProgram(
        executable, arguments, environment: environment, directory: directory, standardError: standardError)
    if let input { child.write(Array(input)) }
    child.closeInput()
    return ProgramResult(await child.wait(), child)
}

/// Starts `executable` with `arguments` and returns while it runs (a server, a daemon under test, a program a test
/// talks with): its output is collected as it comes; it stops at its end, at `stop()`/`kill()`, after `lifetime`, or
/// when the test lets go of it.
public func startProgram(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
    standardError: StandardErrorDestination = .captured, lifetime: Duration = .seconds(900)
) async throws -> RunningChild {
    let route: ChildProcess.StandardErrorRoute =
        switch standardError {
        case .captured: .collected
        case .mergedWithOutput: .mergedWithOutput
        case .inherited: .inherited
        case .discarded: .discarded
        }
    let program = ChildProcess(
        executable: executable, arguments: arguments,
        environment: ChildEnvironment(exactly: environment ?? ProcessInfo.processInfo.environment),
        timeout: lifetime, terminationGrace: .seconds(2), outputLimit: 256 << 20, outputOverflow: .truncate,
        workingDirectory: directory)
    return try await program.start(standardError: route)
}

/// `runProgram` for tests that start programs by the hundred (parameterised cases): first waits, suspended,
/// for one of `ProgramSlots.shared`'s slots, so those cases do not all run their programs at the same moment.
/// Tests that run a few programs in sequence call `runProgram` and never queue behind them.
public func runProgramInSharedSlot(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
    input: Data? = nil, standardError: StandardErrorDestination = .captured
) async throws -> ProgramResult {
    await ProgramSlots.shared.acquire()
    do {
        let result = try await runProgram(
            executable, arguments, environment: environment, directory: directory, input: input, standardError: standardError)
        await ProgramSlots.shared.release()
        return result
    } catch {
        await ProgramSlots.shared.release()
        throw error
    }
}

/// Bounds how many child programs `runProgramInSharedSlot` runs at once. Hundreds of parameterised test cases each
/// start a program; with every one of them on its own thread at the same moment the machine (two cores)
/// only thrashes, so the rest wait, suspended, for a free slot. The programs are CPU-bound, so one per
/// core keeps the cores busy without starving the tests that run beside them (the crash test's writer
/// must make progress within its random pause).
public actor ProgramSlots {
    /// The slots `runProgramInSharedSlot` uses: one per active processor, at least two.
    public static let shared = ProgramSlots(limit: max(2, ProcessInfo.processInfo.activeProcessorCount))

    /// How many programs may run at once.
    public let limit: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// A limiter letting `limit` holders in at once.
    public init(limit: Int) {
        precondition(limit > 0, "ProgramSlots needs at least one slot")
        self.limit = limit
    }

    /// Takes a slot, suspending until one is free.
    public func acquire() async {
        if running < limit {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Gives a slot back: to the longest waiter if there is one.
    public func release() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// `runProgram` for a caller on a thread of its own (inside an `onDedicatedThread` body), which it blocks until the
/// program ended. Never call it from a test's task.
public func runProgramOnThisThread(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
    input: Data? = nil, standardError: StandardErrorDestination = .captured
) throws -> ProgramResult {
    let done = DispatchSemaphore(value: 0)
    let outcome = Locked<Result<ProgramResult, any Error>?>(nil)
    Task.detached {
        let result: Result<ProgramResult, any Error>
        do {
            result = .success(try await runProgram(
                executable, arguments, environment: environment, directory: directory, input: input, standardError: standardError))
        } catch {
            result = .failure(error)
        }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0 }?.get() ?? ProgramResult(status: -1, standardOutput: Data(), standardError: Data())
}

extension ProgramResult {
    /// What `child`, ended as `termination` says, left.
    init(_ termination: ProcessTermination, _ child: RunningChild) {
        let status: Int32 =
            switch termination {
            case .exited(let code): code
            case .signaled(let signal): signal
            case .timedOut, .cancelled: -1
            }
        self.init(status: status, standardOutput: Data(child.standardOutput), standardError: Data(child.standardError))
    }
}

extension RunningChild {
    /// Standard output so far, as text (invalid UTF-8 replaced).
    public var outputText: String { String(decoding: standardOutput, as: UTF8.self) }
    /// Standard error so far, as text (invalid UTF-8 replaced).
    public var errorText: String { String(decoding: standardError, as: UTF8.self) }
    /// Whether it has not ended yet.
    public var isRunning: Bool { termination == nil }
}

/// The executable `name` that SwiftPM built beside the running test bundle (`swift build --build-tests`
/// builds every program of the package, the test-only ones included), or the path in the environment
/// variable `override` when that is set; nil when neither exists.
public func builtProgram(_ name: String, override: String? = nil) -> String? {
    if let override, let path = ProcessInfo.processInfo.environment[override], !path.isEmpty { return path }
    let tests = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let candidate = tests.deletingLastPathComponent().appendingPathComponent(name).path
    return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
}
