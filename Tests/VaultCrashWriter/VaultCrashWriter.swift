import ArgumentParser
import Foundation
import TestSupport
import Vault

/// The child of the crash test (Tests/VaultTests/CrashTests.swift), built only for the tests and never
/// part of `sessionkeeper`. Opens the vault, prints `ready`, then rewrites `--items` items round after
/// round, printing `ITEM ROUND` after each write has returned (so is durable), until it is killed.
/// Values are synthetic (``CrashTestValue``), never real secrets.
@main
struct VaultCrashWriter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vault-crash-writer", abstract: "Test helper: write vault items in a loop until killed.")

    @Option(name: .long, help: "The state folder holding the vault.") var state: String
    @Option(name: .long, help: "The master key file (created when missing).") var keyFile: String
    @Option(name: .long, help: "How many items each round rewrites.") var items: Int = 5
    @Option(name: .long, help: "The round number of the first round.") var firstRound: Int = 1
    @Flag(name: .long, help: "Rotate the master key between rounds as well.") var rotate = false

    func run() throws {
        // It fills a vault with synthetic items: never let a stray invocation touch a real one.
        guard ProcessInfo.processInfo.environment["SESSIONKEEPER_CRASH_WRITER"] == "1" else {
            throw ValidationError("vault-crash-writer is a test helper; it runs only with SESSIONKEEPER_CRASH_WRITER=1")
        }
        let vault = try Vault.open(stateDirectory: state, key: .keyFile(path: keyFile), createIfMissing: true)
        say("ready")
        var round = firstRound
        while true {
            // Rotating first puts a rotation in progress right after `ready`, where most kills land.
            if rotate { try vault.rotate() }
            for item in 0..<items {
                try vault.set(CrashTestValue.bytes(item: item, round: round), for: ItemReference(.siteState, "item-\(item)"))
                say("\(item) \(round)")
            }
            round += 1
        }
    }

    /// One line on standard output, unbuffered: the test reads each acknowledgement as it is written.
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
