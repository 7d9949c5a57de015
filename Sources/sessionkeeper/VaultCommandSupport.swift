import ArgumentParser
import Credentials
import Foundation
import Platform
import SiteConfig
import Vault

/// The options of the `secret` and `vault` subcommands: `--config`, and from it `state_dir` and `vault.key`.
struct VaultConfigOptions: ParsableArguments {
    @OptionGroup var config: ConfigOptions

    /// The state folder and the vault key source that config.yaml names.
    func vaultLocation() throws -> (stateDirectory: String, key: MasterKeySource) {
        let loaded = try config.load(ConfigurationLoader())
        return (loaded.stateDirectory, MasterKeySource(loaded.vault.key))
    }

    /// Opens the vault the config names; `create` makes a new one (and its key file) when none exists.
    func openVault(create: Bool) throws -> Vault {
        try openVault(at: try vaultLocation(), create: create)
    }

    /// Opens the vault at a location found earlier by ``vaultLocation()``.
    func openVault(at location: (stateDirectory: String, key: MasterKeySource), create: Bool) throws -> Vault {
        do {
            return try Vault.open(stateDirectory: location.stateDirectory, key: location.key, createIfMissing: create)
        } catch {
            throw CLIFailure(vaultError: error)
        }
    }
}

extension CLIFailure {
    /// A vault error as a CLI failure: key and configuration problems are usage errors (exit 2), the
    /// rest operation failures (exit 1). The message names the item, never a value.
    init(vaultError error: any Error) {
        guard let error = error as? VaultError else {
            self = .failed("\(error)")
            return
        }
        switch error.reason {
        case .keySource, .wrongKey, .rekeyedElsewhere, .notInitialized, .alreadyInitialized, .invalidName:
            self = .usage(error.description)
        default:
            self = .failed(error.description)
        }
    }
}

/// Reading a new secret or passphrase from standard input.
enum SecretInput {
    /// One value from standard input (no echo on a terminal); refuses an empty one.
    static func read(prompt: String, what: String) throws -> [UInt8] {
        let value: [UInt8]
        do {
            value = try Terminal.readSecret(prompt: prompt)
        } catch {
            throw CLIFailure.failed("reading \(what) from standard input: \(error)")
        }
        guard !value.isEmpty else { throw CLIFailure.usage("empty \(what) refused; nothing was changed") }
        return value
    }

    /// A new passphrase: on a terminal asked twice and compared.
    static func newPassphrase() throws -> VaultPassphrase {
        let first = try read(prompt: "New vault passphrase: ", what: "passphrase")
        if Terminal.isTerminal(0) {
            let second = try read(prompt: "Repeat the new passphrase: ", what: "passphrase")
            guard first == second else { throw CLIFailure.usage("the passphrases differ; nothing was changed") }
        }
        return VaultPassphrase(first)
    }
}
