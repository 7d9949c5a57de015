import Foundation
import Platform
import TestSupport
import Testing
@testable import Vault

/// `secret set` on a real pseudo-terminal (util-linux `script`, from the essential bsdutils package,
/// gives the command one): the prompt shows, the typed value is not echoed.
@Suite struct TerminalTests {
    /// What a run under `script` showed: the exit status, the output up to the prompt (before anything
    /// was typed) and the whole transcript.
    struct TerminalRun: Sendable {
        var status: Int32
        var beforeTyping: String
        var transcript: String
    }

    /// Runs `shellCommand` under `script` on a new pseudo-terminal; `typing` is sent once `prompt` showed
    /// (or the output ended).
    func runOnTerminal(_ shellCommand: String, in folder: TemporaryFolder, prompt: String, typing: String) async throws -> TerminalRun {
        var environment = ProcessInfo.processInfo.environment
        environment["SHELL"] = "/bin/sh"
        let child = try await startProgram(
            "/usr/bin/script", ["--quiet", "--return", "--command", shellCommand, "/dev/null"], environment: environment,
            directory: folder.path, standardError: .mergedWithOutput)
        _ = await child.waitForOutput(within: .seconds(60)) { String(decoding: $0, as: UTF8.self).contains(prompt) }
        let beforeTyping = child.outputText
        // A child that ended without asking has closed its input: the transcript says what happened instead.
        child.write(Array(typing.utf8))
        let termination = await child.wait()
        let status: Int32 = if case .exited(let code) = termination { code } else { -1 }
        return TerminalRun(status: status, beforeTyping: beforeTyping, transcript: child.outputText)
    }

    @Test func controlCAtThePromptLeavesTheTerminalEchoing() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try folder.write("state_dir: state\nvault:\n  key: {file: master.key}\n", to: "config.yaml")
        // The shell survives the Ctrl-C (its trap is reset to the default in the child), then shows
        // the terminal's settings after sessionkeeper died.
        let command = "trap ':' INT; \(try sessionkeeperBinary()) secret set tty/secret --config \(config); echo status=$?; stty -a"
        let result = try await runOnTerminal(command, in: folder, prompt: "Value for secret 'tty/secret': ", typing: "\u{03}")
        #expect(result.transcript.contains("status=130"), "\(result.transcript)")
        let flags = result.transcript.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == ";" })
        #expect(flags.contains("echo"), "\(result.transcript)")
        #expect(!flags.contains("-echo"))
        #expect(!FileManager.default.fileExists(atPath: folder.state + "/vault"))
    }

    @Test func secretSetOnATerminalDoesNotEchoTheValue() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try folder.write("state_dir: state\nvault:\n  key: {file: master.key}\n", to: "config.yaml")
        let command = "\(try sessionkeeperBinary()) secret set tty/secret --config \(config)"
        let prompt = "Value for secret 'tty/secret': "
        let run = try await runOnTerminal(command, in: folder, prompt: prompt, typing: "typed-on-a-tty-42\n")
        #expect(run.beforeTyping.contains(prompt))
        let transcript = run.transcript
        #expect(run.status == 0, "\(transcript)")
        #expect(!transcript.contains("typed-on-a-tty-42"))
        #expect(transcript.contains("stored secret 'tty/secret'"))
        let vault = try Vault.open(stateDirectory: folder.state, key: .keyFile(path: folder.keyFile))
        #expect(try vault.value(of: ItemReference(.credential, "tty/secret")) == bytes("typed-on-a-tty-42"))
    }
}
