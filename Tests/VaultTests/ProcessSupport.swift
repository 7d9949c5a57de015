import Foundation
import Platform
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

/// A running `vault-crash-writer` child.
final class CrashWriter: Sendable {
    private let child: RunningChild

    private init(child: RunningChild) {
        self.child = child
    }

    /// Starts `binary --state ...`; `binary` comes from `crashWriterBinary()`.
    static func start(binary: String, state: String, keyFile: String, items: Int, firstRound: Int, rotate: Bool) async throws -> CrashWriter {
        var environment = ProcessInfo.processInfo.environment
        environment["SESSIONKEEPER_CRASH_WRITER"] = "1"
        let arguments = ["--state", state, "--key-file", keyFile, "--items", String(items), "--first-round", String(firstRound)]
            + (rotate ? ["--rotate"] : [])
        let child = try await startProgram(binary, arguments, environment: environment)
        child.closeInput()
        return CrashWriter(child: child)
    }

    var pid: Int32 { child.pid }

    /// Returns once the child printed `ready` (it holds the vault open). Throws with its stderr if it exited instead.
    func waitUntilReady() async throws {
        try await readUntil { $0.hasPrefix("ready\n") }
    }

    /// Returns once the child acknowledged a write of every item from 0 to `items - 1`.
    func waitUntilEveryItemWritten(items: Int) async throws {
        try await readUntil { printed in
            let lines = printed.split(separator: "\n").dropFirst()
            return (0..<items).allSatisfy { item in lines.contains { $0.hasPrefix("\(item) ") } }
        }
    }

    /// The writes the child acknowledged so far (whole lines after `ready`).
    var acknowledgedWrites: Int { Self.acknowledgedWrites(in: child.outputText) }

    /// Returns once the child acknowledged `count` writes beyond the first `since`.
    func waitForWrites(_ count: Int, after since: Int) async throws {
        try await readUntil { Self.acknowledgedWrites(in: $0) >= since + count }
    }

    private static func acknowledgedWrites(in printed: String) -> Int {
        max(0, printed.utf8.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 } - 1)
    }

    /// Waits until `done` holds for all the child printed. Throws with its stderr if it exited first.
    private func readUntil(_ done: @escaping @Sendable (String) -> Bool) async throws {
        guard await child.waitForOutput(within: .seconds(120), until: { done(String(decoding: $0, as: UTF8.self)) }) else {
            throw CrashWriterFailed(message: "vault-crash-writer exited (\(String(describing: child.termination))) early: \(child.errorText)")
        }
    }

    /// SIGKILLs the child, waits for it, and returns the last round acknowledged for each item.
    func kill() async -> [Int: Int] {
        _ = await child.kill()
        var acknowledged: [Int: Int] = [:]
        for line in child.outputText.split(separator: "\n").dropFirst() {
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
