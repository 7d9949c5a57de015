import Foundation
import Testing
@testable import Vault

/// `secret set` on a real pseudo-terminal (util-linux `script`, from the essential bsdutils package,
/// gives the command one): the prompt shows, the typed value is not echoed.
@Suite struct TerminalTests {
    /// Runs `shellCommand` under `script` on a new pseudo-terminal; `typing` is sent once `prompt` showed.
    func runOnTerminal(_ shellCommand: String, in folder: TemporaryFolder, prompt: String, typing: String) throws -> (status: Int32, transcript: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["--quiet", "--return", "--command", shellCommand, "/dev/null"]
        process.currentDirectoryURL = URL(fileURLWithPath: folder.path)
        var environment = ProcessInfo.processInfo.environment
        environment["SHELL"] = "/bin/sh"
        process.environment = environment
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains(prompt) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        input.fileHandleForWriting.write(Data(typing.utf8))
        seen.append(output.fileHandleForReading.readDataToEndOfFile())
        process.waitUntilExit()
        try input.fileHandleForWriting.close()
        return (process.terminationStatus, String(decoding: seen, as: UTF8.self))
    }

    @Test func controlCAtThePromptLeavesTheTerminalEchoing() throws {
        let folder = TemporaryFolder()
        defer { folder.cleanUp() }
        let config = folder.write("state_dir: state\nvault:\n  key: {file: master.key}\n", to: "config.yaml")
        // The shell survives the Ctrl-C (its trap is reset to the default in the child), then shows
        // the terminal's settings after sessionkeeper died.
        let command = "trap ':' INT; \(try sessionkeeperBinary()) secret set tty/secret --config \(config); echo status=$?; stty -a"
        let result = try runOnTerminal(command, in: folder, prompt: "Value for secret 'tty/secret': ", typing: "\u{03}")
        #expect(result.transcript.contains("status=130"), "\(result.transcript)")
        let flags = result.transcript.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == ";" })
        #expect(flags.contains("echo"), "\(result.transcript)")
        #expect(!flags.contains("-echo"))
        #expect(!FileManager.default.fileExists(atPath: folder.state + "/vault"))
    }

    @Test func secretSetOnATerminalDoesNotEchoTheValue() throws {
        let folder = TemporaryFolder()
        defer { folder.cleanUp() }
        let config = folder.write("state_dir: state\nvault:\n  key: {file: master.key}\n", to: "config.yaml")
        let command = "\(try sessionkeeperBinary()) secret set tty/secret --config \(config)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["--quiet", "--return", "--command", command, "/dev/null"]
        process.currentDirectoryURL = URL(fileURLWithPath: folder.path)
        var environment = ProcessInfo.processInfo.environment
        environment["SHELL"] = "/bin/sh"
        process.environment = environment
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()

        var seen = Data()
        let prompt = "Value for secret 'tty/secret': "
        while !String(decoding: seen, as: UTF8.self).contains(prompt) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        #expect(String(decoding: seen, as: UTF8.self).contains(prompt))
        input.fileHandleForWriting.write(Data("typed-on-a-tty-42\n".utf8))
        seen.append(output.fileHandleForReading.readDataToEndOfFile())
        process.waitUntilExit()
        try input.fileHandleForWriting.close()
        let transcript = String(decoding: seen, as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(transcript)")
        #expect(!transcript.contains("typed-on-a-tty-42"))
        #expect(transcript.contains("stored secret 'tty/secret'"))
        let vault = try Vault.open(stateDirectory: folder.state, key: .keyFile(path: folder.keyFile))
        #expect(try vault.value(of: ItemReference(.credential, "tty/secret")) == bytes("typed-on-a-tty-42"))
    }
}
