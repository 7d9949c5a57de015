import Foundation
import Testing
@testable import Vault

/// `secret set` on a real pseudo-terminal (util-linux `script`, from the essential bsdutils package,
/// gives the command one): the prompt shows, the typed value is not echoed.
@Suite struct TerminalTests {
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
