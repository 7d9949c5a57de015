import ArgumentParser
import Foundation
import Platform
import PostgresStore
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
            try VaultAccess.protectProcess()
            let location = try options.location()
            if case let .postgres(settings) = location.store {
                // As for a folder, a missing key file is made; it is removed again when the database keeps no
                // keyring of it (another vault is there, or the database cannot be reached), so a failed init
                // leaves no key behind that unlocks nothing.
                var madeKeyFile: String?
                if case let .keyFile(path) = location.key, !Syscall.exists(path) {
                    do {
                        try VaultKey.createKeyFile(at: path)
                    } catch {
                        throw CLIFailure(vaultError: error)
                    }
                    madeKeyFile = path
                }
                do {
                    guard try await FleetStoreAccess.with(settings, key: location.key, create: true, { $0.storedKeyring }) else {
                        throw CLIFailure.usage("\(location.description) already holds a vault")
                    }
                } catch {
                    if let madeKeyFile { _ = try? Syscall.unlinkIfPresent(madeKeyFile) }
                    throw error
                }
                Console.out("created a vault in \(location.description), unlocked by \(location.key)")
                return
            }
            do {
                let vault = try Vault.initialize(
                    stateDirectory: location.stateDirectory, key: location.key, environment: VaultAccess.environment(for: location.key))
                vault.close()
            } catch {
                throw CLIFailure(vaultError: error)
            }
            Console.out("created a vault in \(location.stateDirectory)/vault, unlocked by \(location.key)")
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
            let location = try options.location()
            if case let .postgres(settings) = location.store {
                try await FleetStoreAccess.with(settings, key: location.key, create: false) { store in
                    do {
                        if case let .keyFile(path) = newSource { try VaultKey.createKeyFile(at: path) }
                    } catch {
                        throw CLIFailure(vaultError: error)
                    }
                    try await store.rekey(to: newSource)
                }
                Console.out("the vault is now unlocked by \(newSource); update vault.key in config.yaml on every keeper to match")
                return
            }
            let vault = try options.openVault(at: (location.stateDirectory, location.key), create: false)
            defer { vault.close() }
            do {
                if case let .keyFile(path) = newSource { try VaultKey.createKeyFile(at: path) }
                try vault.rekey(to: newSource, environment: VaultAccess.environment(for: newSource))
            } catch {
                throw CLIFailure(vaultError: error)
            }
            Console.out("the vault is now unlocked by \(newSource); update vault.key in config.yaml to match")
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
            let location = try options.location()
            if case .postgres = location.store {
                throw CLIFailure.usage(
                    "vault rotate re-encrypts the vault folder's items; with store: postgres (fleet mode) it is not available "
                        + "(docs/FLEET.md, \"What the store does not do\")")
            }
            let vault = try options.openVault(at: (location.stateDirectory, location.key), create: false)
            defer { vault.close() }
            let summary: RotationSummary
            do {
                summary = try vault.rotate()
            } catch {
                throw CLIFailure(vaultError: error)
            }
            Console.out("re-encrypted \(summary.reencrypted) item(s); every item now uses key generation \(summary.keyID)")
        }
    }
}
