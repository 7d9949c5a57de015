import ArgumentParser
import Assembly
import Foundation
import Vault

/// `sessionkeeper vault init|rekey|rotate`: key management (SPEC sections 6 and 9).
struct VaultCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "Create the vault, change its passphrase or key, or rotate its master key.",
        subcommands: [VaultInitCommand.self, VaultRekeyCommand.self, VaultRotateCommand.self]
    )
}

struct VaultInitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create an empty vault in state_dir, unlocked by config.yaml's vault.key.",
        discussion: "With vault.key {file: PATH} the key file is created (32 random bytes, mode 0600) unless it exists."
    )

    @OptionGroup var options: VaultConfigOptions

    func run() async throws {
        try await reportingFailures {
            let config = try options.loadConfig()
            let keyEnvironment = try StoreAccess.keyEnvironment(of: config)
            do {
                try await StoreBackend.initializeVault(config, environment: ProcessInfo.processInfo.environment, keyEnvironment: keyEnvironment)
            } catch let error as AssemblyError {
                throw CLIFailure(assemblyError: error)
            }
            Console.out("created a vault in \(StoreBackend.location(of: config)), unlocked by \(MasterKeySource(config.vault.key))")
        }
    }
}

struct VaultRekeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Unlock the vault with a new passphrase or key file; no item is re-encrypted.",
        discussion: """
            The new passphrase is read from standard input (asked twice, without echo, on a terminal) \
            unless --new-passphrase-env, --new-passphrase-file or --new-key-file says otherwise. \
            Afterwards point config.yaml's vault.key at the new secret.
            """
    )

    @Option(name: .long, help: "Take the new passphrase from this environment variable.")
    var newPassphraseEnv: String?

    @Option(name: .long, help: "Take the new passphrase from this file (mode 0600).")
    var newPassphraseFile: String?

    @Option(name: .long, help: "Create a new key file here (it must not exist) and use it instead of a passphrase.")
    var newKeyFile: String?

    @OptionGroup var options: VaultConfigOptions

    func run() async throws {
        try await reportingFailures {
            let given = [newPassphraseEnv, newPassphraseFile, newKeyFile].compactMap { $0 }
            guard given.count <= 1 else {
                throw CLIFailure.usage("give at most one of --new-passphrase-env, --new-passphrase-file, --new-key-file")
            }
            let newSource: MasterKeySource
            if let newPassphraseEnv {
                newSource = .passphraseEnvironment(name: newPassphraseEnv)
            } else if let newPassphraseFile {
                newSource = .passphraseFile(path: absolute(newPassphraseFile))
            } else if let newKeyFile {
                newSource = .keyFile(path: absolute(newKeyFile))
            } else {
                newSource = .passphrase(try SecretInput.newPassphrase())
            }
            let holders = try await StoreAccess.with(try options.loadConfig(), create: false) { store in
                do throws(AssemblyError) {
                    try await store.rekey(to: newSource, environment: VaultAccess.environment(for: newSource))
                } catch {
                    throw CLIFailure(assemblyError: error)
                }
                return store.keyHolders
            }
            Console.out("the vault is now unlocked by \(newSource); update vault.key in \(holders) to match")
        }
    }

    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}

struct VaultRotateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Re-encrypt every item under a new random master key.",
        discussion: "Safe to interrupt: the vault keeps opening, and running rotate again finishes the job."
    )

    @OptionGroup var options: VaultConfigOptions

    func run() async throws {
        try await reportingFailures {
            let summary = try await StoreAccess.with(try options.loadConfig(), create: false) { store in
                do throws(AssemblyError) {
                    return try store.rotate()
                } catch {
                    throw CLIFailure(assemblyError: error)
                }
            }
            Console.out("re-encrypted \(summary.reencrypted) item(s); every item now uses key generation \(summary.keyID)")
        }
    }
}
