import Foundation
import Locking
import TestSupport
import Testing

/// The `sessionkeeper` executable built beside this test bundle (`swift build --build-tests` builds
/// it), or `$SESSIONKEEPER_BINARY`.
func sessionkeeperBinary() throws -> String {
    try #require(
        builtProgram("sessionkeeper", override: "SESSIONKEEPER_BINARY"),
        "no sessionkeeper executable beside the tests; build it first (swift build --build-tests builds it)")
}

/// The test-only `vault-crash-writer` executable (Tests/VaultCrashWriter), built beside this test bundle.
func crashWriterBinary() throws -> String {
    try #require(
        builtProgram("vault-crash-writer"),
        "no vault-crash-writer executable beside the tests; build it first (swift build --build-tests builds it)")
}

struct CommandResult {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs `sessionkeeper ARGS` with `input` on standard input, to its end on a dedicated thread.
func runCLI(_ arguments: [String], input: String = "", environment: [String: String] = [:], in directory: String) async throws -> CommandResult {
    let binary = try sessionkeeperBinary()
    var merged = ProcessInfo.processInfo.environment
    merged["SESSIONKEEPER_CONFIG"] = nil
    for (key, value) in environment { merged[key] = value }
    let result = try await runProgram(binary, arguments, environment: merged, directory: directory, input: Data(input.utf8))
    return CommandResult(status: result.status, standardOutput: result.outputText, standardError: result.errorText)
}

/// A running `vault-crash-writer` child. Its methods block: call them inside `onDedicatedThread`, never
/// on a test's task.
final class CrashWriter: Sendable {
    let process = Process()
    private let output = makePipe()
    private let errors = makePipe()
    /// What the child printed so far; only one thread at a time uses a writer, the lock makes that checkable.
    private let buffer = Locked(Data())

    /// Starts `binary --state ...`; `binary` comes from `crashWriterBinary()`, called on the test's task
    /// (its `#require` records the failure there).
    init(binary: String, state: String, keyFile: String, items: Int, firstRound: Int, rotate: Bool) throws {
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--state", state, "--key-file", keyFile,
                             "--items", String(items), "--first-round", String(firstRound)] + (rotate ? ["--rotate"] : [])
        var environment = ProcessInfo.processInfo.environment
        environment["SESSIONKEEPER_CRASH_WRITER"] = "1"
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        try launch(process)
    }

    var pid: Int32 { process.processIdentifier }

    /// Blocks until the child printed `ready` (it holds the vault open). Throws with its stderr if it
    /// exited instead.
    func waitUntilReady() throws {
        try readUntil { $0.hasPrefix("ready\n") }
    }

    /// Blocks until the child acknowledged a write of every item from 0 to `items - 1`.
    func waitUntilEveryItemWritten(items: Int) throws {
        try readUntil { printed in
            let lines = printed.split(separator: "\n").dropFirst()
            return (0..<items).allSatisfy { item in lines.contains { $0.hasPrefix("\(item) ") } }
        }
    }

    /// Reads the child's output until `done` holds for all of it. Throws with its stderr if it exited first.
    private func readUntil(_ done: (String) -> Bool) throws {
        while !done(buffer.withLock({ String(decoding: $0, as: UTF8.self) })) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                process.waitUntilExit()
                let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                throw CrashWriterFailed(message: "vault-crash-writer exited (\(process.terminationStatus)) early: \(message)")
            }
            buffer.withLock { $0.append(chunk) }
        }
    }

    /// SIGKILLs the child, waits for it, and returns the last round acknowledged for each item.
    func kill() -> [Int: Int] {
        _ = Foundation.kill(pid, SIGKILL)
        process.waitUntilExit()
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        let printed = buffer.withLock { $0.append(rest); return String(decoding: $0, as: UTF8.self) }
        var acknowledged: [Int: Int] = [:]
        for line in printed.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // A line cut by the kill is not an acknowledgement.
            guard fields.count == 2, let item = Int(fields[0]), let round = Int(fields[1]) else { continue }
            acknowledged[item] = round
        }
        return acknowledged
    }
}

struct CrashWriterFailed: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
