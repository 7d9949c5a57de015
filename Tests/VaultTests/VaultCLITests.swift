import Foundation
import TestSupport
import Testing
@testable import Vault

/// `sessionkeeper secret ...` and `vault ...` as a user runs them, checking that no secret reaches
/// standard output, standard error or any file in clear.
@Suite struct VaultCLITests {
    static let secretValue = "S3cr3t-CLI-Value-8675309"

    func writeConfig(_ folder: TemporaryFolder, key: String) throws -> String {
        try folder.write("state_dir: state\nvault:\n  key: \(key)\n", to: "config.yaml")
    }

    @Test func secretsRoundTripThroughTheCLIAndNeverAppearInClear() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try writeConfig(folder, key: "{file: master.key}")
        var transcript: [CommandResult] = []
        func run(_ arguments: [String], input: String = "", environment: [String: String] = [:]) async throws -> CommandResult {
            let result = try await runCLI(arguments + ["--config", config], input: input, environment: environment, in: folder.path)
            transcript.append(result)
            return result
        }

        #expect(try await run(["vault", "init"]).status == 0)
        #expect(try await run(["vault", "init"]).status == 2)
        let set = try await run(["secret", "set", "wiki/password"], input: Self.secretValue + "\n")
        #expect(set.status == 0)
        #expect(set.standardError.contains("stored secret 'wiki/password'"))
        let empty = try await run(["secret", "set", "wiki/empty"], input: "")
        #expect(empty.status == 2)
        #expect(empty.standardError.contains("empty value refused"))
        let badName = try await run(["secret", "set", "bad\tname"], input: "second value")
        #expect(badName.status == 2)
        #expect(badName.standardError.contains("invalid secret name"))
        #expect(try await run(["secret", "set", "other"], input: "second value").status == 0)
        #expect(try await run(["secret", "list"]).standardOutput == "other\nwiki/password\n")

        let vault = try Vault.open(stateDirectory: folder.state, key: .keyFile(path: folder.keyFile))
        #expect(try vault.value(of: ItemReference(.credential, "wiki/password")) == bytes(Self.secretValue))
        #expect(try vault.value(of: ItemReference(.credential, "other")) == bytes("second value"))
        vault.close()

        let rotate = try await run(["vault", "rotate"])
        #expect(rotate.status == 0)
        #expect(rotate.standardOutput.contains("re-encrypted 2 item(s)"))

        // A damaged file: list still prints the rest and names the problem, never a value.
        let damagedVault = try Vault.open(stateDirectory: folder.state, key: .keyFile(path: folder.keyFile))
        let files = itemFiles(damagedVault)
        damagedVault.close()
        let original = readFile(files[0])
        var damaged = original
        damaged[20] ^= 0x04
        writeFile(files[0], damaged)
        let listed = try await run(["secret", "list"])
        #expect(listed.status == 1)
        #expect(listed.standardOutput.split(separator: "\n").count == 1)
        #expect(listed.standardError.contains("authentication failed"))
        writeFile(files[0], original)

        let rekey = try await run(["vault", "rekey", "--new-passphrase-env", "NEW_VAULT_PASS"], environment: ["NEW_VAULT_PASS": "a new passphrase"])
        #expect(rekey.status == 0)
        let oldKey = try await run(["secret", "list"])
        #expect(oldKey.status == 2)
        _ = try writeConfig(folder, key: "{passphrase_env: NEW_VAULT_PASS}")
        let afterRekey = try await run(["secret", "list"], environment: ["NEW_VAULT_PASS": "a new passphrase"])
        #expect(afterRekey.standardOutput == "other\nwiki/password\n")
        let wrong = try await run(["secret", "list"], environment: ["NEW_VAULT_PASS": "not it"])
        #expect(wrong.status == 2)
        #expect(wrong.standardError.contains("wrong key"))

        #expect(try await run(["secret", "rm", "other"], environment: ["NEW_VAULT_PASS": "a new passphrase"]).status == 0)
        let again = try await run(["secret", "rm", "other"], environment: ["NEW_VAULT_PASS": "a new passphrase"])
        #expect(again.status == 1)
        #expect(again.standardError.contains("no secret 'other'"))

        for result in transcript {
            for text in [result.standardOutput, result.standardError] {
                #expect(!text.contains(Self.secretValue))
                #expect(!text.contains("second value"))
                #expect(!text.contains("a new passphrase"))
            }
        }
        for file in allBytes(under: folder.state) {
            #expect(!contains(file, bytes(Self.secretValue)))
            #expect(!contains(file, bytes("second value")))
            #expect(!contains(file, bytes("a new passphrase")))
        }
    }

    /// The umask is per process, so this runs the CLI under `umask 000` rather than changing the test
    /// process's own (which would affect every test running beside it).
    @Test func foldersAre0700AndFiles0600WhateverTheUmask() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try writeConfig(folder, key: "{file: master.key}")
        let command = "umask 000; exec \(try sessionkeeperBinary()) secret set umask/test --config \(config)"
        let result = try await runProgram("/bin/sh", ["-c", command], input: Data("value".utf8), standardError: .discarded)
        #expect(result.status == 0)
        #expect(mode(of: folder.state) == 0o700)
        #expect(mode(of: folder.state + "/vault") == 0o700)
        #expect(mode(of: folder.keyFile) == 0o600)
        // The CLI never takes the daemon's lock.
        #expect(!FileManager.default.fileExists(atPath: folder.state + "/lock"))
        #expect(mode(of: folder.state + "/keyring.lock") == 0o600)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.state + "/vault")
        #expect(names.count == 2)
        for name in names { #expect(mode(of: folder.state + "/vault/" + name) == 0o600, "\(name)") }
    }

    @Test func aLooseKeyFileIsRefusedByTheCLI() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let config = try writeConfig(folder, key: "{file: master.key}")
        #expect(try await runCLI(["secret", "set", "x", "--config", config], input: "v", in: folder.path).status == 0)
        chmod(folder.keyFile, 0o644)
        let refused = try await runCLI(["secret", "list", "--config", config], in: folder.path)
        #expect(refused.status == 2)
        #expect(refused.standardError.contains("mode 0644"))
        #expect(refused.standardError.contains("chmod 600"))
    }

    @Test func theCrashWriterRefusesToRunOutsideTheCrashTest() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        var environment = ProcessInfo.processInfo.environment
        environment["SESSIONKEEPER_CRASH_WRITER"] = nil
        let result = try await runProgram(
            try crashWriterBinary(), ["--state", folder.state, "--key-file", folder.keyFile], environment: environment,
            directory: folder.path)
        #expect(result.status != 0)
        #expect(result.errorText.contains("test helper"))
        #expect(!FileManager.default.fileExists(atPath: folder.state))
        // The shipped program has no such subcommand.
        #expect(try await runCLI(["vault", "crash-writer"], in: folder.path).status != 0)
    }

    @Test func aMissingConfigIsAUsageError() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let result = try await runCLI(["secret", "list", "--config", folder.path + "/absent.yaml"], in: folder.path)
        #expect(result.status == 2)
        #expect(result.standardError.contains("no such file"))
        // `secret set` says so before reading any value.
        let set = try await runCLI(["secret", "set", "x", "--config", folder.path + "/absent.yaml"], input: "never read", in: folder.path)
        #expect(set.status == 2)
        #expect(set.standardError.contains("no such file"))
    }
}
