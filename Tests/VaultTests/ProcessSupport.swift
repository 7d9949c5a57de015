import Foundation
import Testing

/// The `sessionkeeper` executable built beside this test bundle (`swift build --build-tests` builds
/// it), or `$SESSIONKEEPER_BINARY`.
func sessionkeeperBinary() throws -> String {
    if let path = ProcessInfo.processInfo.environment["SESSIONKEEPER_BINARY"], !path.isEmpty { return path }
    let tests = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let candidate = tests.deletingLastPathComponent().appendingPathComponent("sessionkeeper").path
    try #require(
        FileManager.default.isExecutableFile(atPath: candidate),
        "no sessionkeeper executable at \(candidate); build it first (swift build --build-tests builds it)")
    return candidate
}

struct CommandResult {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs `sessionkeeper ARGS` with `input` on standard input.
func runCLI(_ arguments: [String], input: String = "", environment: [String: String] = [:], in directory: String) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try sessionkeeperBinary())
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    var merged = ProcessInfo.processInfo.environment
    merged["SESSIONKEEPER_CONFIG"] = nil
    for (key, value) in environment { merged[key] = value }
    process.environment = merged
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(
        status: process.terminationStatus, standardOutput: String(decoding: out, as: UTF8.self),
        standardError: String(decoding: err, as: UTF8.self))
}

/// A running `sessionkeeper vault crash-writer` child.
final class CrashWriter {
    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private var buffer = Data()

    init(state: String, keyFile: String, items: Int, firstRound: Int, rotate: Bool) throws {
        process.executableURL = URL(fileURLWithPath: try sessionkeeperBinary())
        process.arguments = ["vault", "crash-writer", "--state", state, "--key-file", keyFile,
                             "--items", String(items), "--first-round", String(firstRound)] + (rotate ? ["--rotate"] : [])
        var environment = ProcessInfo.processInfo.environment
        environment["SESSIONKEEPER_CRASH_WRITER"] = "1"
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// Blocks until the child printed `ready` (it holds the vault open). Throws with its stderr if it
    /// exited instead.
    func waitUntilReady() throws {
        while !String(decoding: buffer, as: UTF8.self).hasPrefix("ready\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                process.waitUntilExit()
                let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                throw CrashWriterFailed(message: "crash-writer exited (\(process.terminationStatus)) before ready: \(message)")
            }
            buffer.append(chunk)
        }
    }

    /// SIGKILLs the child, waits for it, and returns the last round acknowledged for each item.
    func kill() -> [Int: Int] {
        _ = Foundation.kill(pid, SIGKILL)
        process.waitUntilExit()
        buffer.append(output.fileHandleForReading.readDataToEndOfFile())
        var acknowledged: [Int: Int] = [:]
        for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n").dropFirst() {
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

/// The crash writer's values (Sources/sessionkeeper/VaultCommand.swift, `CrashTestValue`); the
/// formula is repeated here so the test checks every byte.
func crashTestValue(item: Int, round: Int) -> [UInt8] {
    let header = Array("item=\(item) round=\(round);".utf8)
    let size = (item * 7919 + round * 104_729) % 20_000
    return header + (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ item &* 31 &+ round) }
}
