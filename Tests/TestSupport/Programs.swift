import Foundation
import Locking

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

/// Runs `executable` with `arguments` to its end on a dedicated thread (never blocking the cooperative
/// pool) and returns its status and output.
///
/// - Parameters:
///   - environment: the child's whole environment; nil inherits the test process's.
///   - directory: the working folder; nil keeps the test process's.
///   - input: written to the child's standard input, which is then closed; nil gives it /dev/null.
public func runProgram(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
    input: Data? = nil, standardError: StandardErrorDestination = .captured
) async throws -> ProgramResult {
    try await onDedicatedThread {
        try runProgramOnThisThread(
            executable, arguments, environment: environment, directory: directory, input: input, standardError: standardError)
    }
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

/// Starts `process` (Foundation's `Process.run()`), one launch at a time across the test process.
///
/// swift-corelibs-foundation's `Process.run()` crashed (a bad read in memcpy inside `run()`) when hundreds
/// of test threads launched children at the same moment; launches are short, so serialising them costs
/// nothing measurable. Every test helper that starts a `Process` goes through here.
public func launch(_ process: Process) throws {
    try launchLock.withLock { try process.run() }
}

let launchLock = NSLock()

/// A pipe whose four descriptors close on exec, made under the same lock as every launch.
///
/// swift-corelibs-foundation's `Process` does not close a parent's other descriptors in the child, and
/// `Pipe()` makes inheritable ones: a program launched while another test's pipe exists would hold that
/// pipe's ends, so the other test's read would never reach its end while the program lives (a slow
/// login holding a concurrent `secret set`'s standard input open, say). `Process` puts the child's ends
/// on 0, 1 and 2 with dup2, which clears the flag there; everywhere else they close on exec. Every test
/// helper that gives a `Process` a pipe makes it here.
public func makePipe() -> Pipe {
    launchLock.withLock {
        let pipe = Pipe()
        for descriptor in [pipe.fileHandleForReading.fileDescriptor, pipe.fileHandleForWriting.fileDescriptor] {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        return pipe
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

/// `runProgram` on the calling thread, for blocking work that is itself already on a dedicated thread
/// (inside an `onDedicatedThread` body). Never call it from a test's task.
public func runProgramOnThisThread(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
    input: Data? = nil, standardError: StandardErrorDestination = .captured
) throws -> ProgramResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let output = makePipe()
    process.standardOutput = output
    let errors = makePipe()
    switch standardError {
    case .captured: process.standardError = errors
    case .mergedWithOutput: process.standardError = output
    case .inherited: break
    case .discarded: process.standardError = FileHandle.nullDevice
    }
    let stdin = makePipe()
    process.standardInput = input == nil ? FileHandle.nullDevice : stdin
    try launch(process)
    if let input {
        // Small inputs only: they fit the pipe's buffer, so writing before reading cannot deadlock.
        try stdin.fileHandleForWriting.write(contentsOf: input)
        try stdin.fileHandleForWriting.close()
    }
    // Read both pipes before waiting, so a child filling one of them cannot block.
    let errorReader = standardError == .captured ? PipeDrain(errors.fileHandleForReading) : nil
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProgramResult(
        status: process.terminationStatus, standardOutput: outputData, standardError: errorReader?.wait() ?? Data())
}

/// Reads a file handle to its end on its own thread.
private final class PipeDrain: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let data = Locked(Data())

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            let read = handle.readDataToEndOfFile()
            data.withLock { $0 = read }
            done.signal()
        }
    }

    /// Blocks until the reader reached the end; call only from a dedicated thread.
    func wait() -> Data {
        done.wait()
        return data.withLock { $0 }
    }
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
