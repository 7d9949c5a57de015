import ArgumentParser
import Assembly
import Credentials
import Foundation
import Locking
import Platform
import Sessions
import SiteConfig
import Vault

/// The options of the `secret`, `vault` and `store` subcommands: `--config`, and from it `state_dir`,
/// `vault.key` and `store`.
struct VaultConfigOptions: ParsableArguments {
    @OptionGroup var config: ConfigOptions

    /// config.yaml, loaded.
    func loadConfig() throws -> DaemonConfig {
        try config.load(ConfigurationLoader())
    }

    /// Runs `body` with the configured store's items (``StoreAccess``). `create` makes a new vault (and its key
    /// file) when there is none.
    func withItems<T: Sendable>(
        of config: DaemonConfig, create: Bool, _ body: @Sendable (any ItemStore) async throws -> T
    ) async throws -> T {
        try await StoreAccess.with(config, create: create) { store in try await body(store.items) }
    }
}

/// The store config.yaml names (``Assembly/StoreBackend``: the vault folder or a fleet's database) for one
/// command: opened after ``VaultAccess/protectProcess()`` with the key's environment, open for the length of
/// `body`; failures to open it become CLI failures.
enum StoreAccess {
    static func with<T: Sendable>(
        _ config: DaemonConfig, create: Bool, _ body: @Sendable (StoreBackend) async throws -> T
    ) async throws -> T {
        let keyEnvironment = try keyEnvironment(of: config)
        do {
            return try await StoreBackend.withOpen(
                config, create: create, environment: ProcessInfo.processInfo.environment, keyEnvironment: keyEnvironment, body)
        } catch let error as AssemblyError {
            throw CLIFailure(assemblyError: error)
        }
    }

    /// What a command does before it opens the store: ``VaultAccess/protectProcess()``, then the environment the
    /// key of `config` is read with (a passphrase variable leaves the process's environment before it is read).
    static func keyEnvironment(of config: DaemonConfig) throws -> [String: String] {
        try VaultAccess.protectProcess()
        return VaultAccess.environment(for: MasterKeySource(config.vault.key))
    }
}

/// What every command that opens the vault does first (docs/SECURITY.md, "Secrets stay in the process"): the
/// process becomes non-dumpable, and a passphrase variable (`vault.key: {passphrase_env: NAME}`) leaves the
/// environment, its bytes wiped from the block `/proc/PID/environ` shows, before the vault is unlocked with it.
enum VaultAccess {
    /// Values taken out of the environment, for a second unlock in the same process (`rekey` reads the new one).
    private static let taken = Locked<[String: String]>([:])

    /// The process stops being dumpable and traceable by its own uid. First thing in `run`, `login`, `secret`,
    /// `vault` and `import`; `cookie` and `exec` call it through ``open(stateDirectory:key:create:)`` when they
    /// fall back to the vault.
    static func protectProcess() throws {
        do {
            try ProcessSecrets.forbidDumpsAndTracing()
        } catch {
            throw CLIFailure.failed("cannot keep this process's memory from other processes: \(error)")
        }
    }

    /// The environment a vault of `key` is unlocked with: the process's own, and for a passphrase variable its
    /// value, taken out of the process's environment.
    static func environment(for key: MasterKeySource) -> [String: String] {
        let passphrase = takePassphrase(of: key)
        var environment = ProcessInfo.processInfo.environment
        if case .passphraseEnvironment(let name) = key { environment[name] = passphrase }
        return environment
    }

    /// Takes the passphrase variable of `key` (when it names one) out of the environment; its value, kept for
    /// the unlock.
    @discardableResult
    static func takePassphrase(of key: MasterKeySource) -> String? {
        guard case .passphraseEnvironment(let name) = key else { return nil }
        return take(name)
    }

    /// The value of `name`, removed from the environment (and its bytes wiped) the first time.
    private static func take(_ name: String) -> String? {
        taken.withLock { taken in
            if let value = taken[name] { return value }
            let value = ProcessSecrets.takeFromEnvironment(name)
            taken[name] = value
            return value
        }
    }

    /// The session the store holds for `site`, for a client when no daemon answers, after ``protectProcess()``.
    static func storedSession(site: SiteDefinition, config: DaemonConfig) async throws -> SessionRecord {
        let keyEnvironment = try StoreAccess.keyEnvironment(of: config)
        do {
            return try await StoreBackend.withOpen(
                config, create: false, environment: ProcessInfo.processInfo.environment, keyEnvironment: keyEnvironment
            ) { store in try await StoredSession.load(site: site, from: store.sessions) }
        } catch AssemblyError.vault(let error as VaultError) where error.reason == .notInitialized {
            return try await StoredSession.load(site: site, from: nil)
        } catch let error as AssemblyError {
            throw CLIFailure(assemblyError: error)
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
        self.init(message: error.description, code: AssemblyError.isConfigurationProblem(error.reason) ? Exit.usage : Exit.failed)
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
