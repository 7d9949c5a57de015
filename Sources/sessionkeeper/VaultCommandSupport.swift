import ArgumentParser
import Credentials
import Foundation
import Locking
import Logging
import Platform
import PostgresStore
import Sessions
import SiteConfig
import Vault

/// Where config.yaml keeps the vault: the state folder, the key, and whether the items live in the folder
/// or in a fleet's database.
struct VaultLocation {
    var stateDirectory: String
    var key: MasterKeySource
    var store: StoreSettings

    /// Says where the items are, for messages (never a password).
    var description: String {
        switch store {
        case .vaultFolder: "\(stateDirectory)/vault"
        case let .postgres(settings): "the database of \(settings.url)"
        }
    }
}

/// The options of the `secret`, `vault` and `store` subcommands: `--config`, and from it `state_dir`,
/// `vault.key` and `store`.
struct VaultConfigOptions: ParsableArguments {
    @OptionGroup var config: ConfigOptions

    /// The state folder and the vault key source that config.yaml names.
    func vaultLocation() throws -> (stateDirectory: String, key: MasterKeySource) {
        let location = try location()
        return (location.stateDirectory, location.key)
    }

    /// Where config.yaml keeps the vault.
    func location() throws -> VaultLocation {
        let loaded = try config.load(ConfigurationLoader())
        return VaultLocation(stateDirectory: loaded.stateDirectory, key: MasterKeySource(loaded.vault.key), store: loaded.store)
    }

    /// Runs `body` with the configured store's items: the vault folder's (on the vault's I/O threads), or
    /// the fleet database's. `create` makes a new vault (and its key file) when there is none.
    func withItems<T: Sendable>(
        at location: VaultLocation, create: Bool, _ body: @Sendable (any ItemStore) async throws -> T
    ) async throws -> T {
        switch location.store {
        case .vaultFolder:
            let vault = try openVault(at: (location.stateDirectory, location.key), create: create)
            defer { vault.close() }
            return try await body(vault.background)
        case let .postgres(settings):
            return try await FleetStoreAccess.with(settings, key: location.key, create: create) { store in try await body(store.items) }
        }
    }

    /// Opens the vault the config names; `create` makes a new one (and its key file) when none exists.
    func openVault(create: Bool) throws -> Vault {
        try openVault(at: try vaultLocation(), create: create)
    }

    /// Opens the vault at a location found earlier by ``vaultLocation()``.
    func openVault(at location: (stateDirectory: String, key: MasterKeySource), create: Bool) throws -> Vault {
        do {
            return try VaultAccess.open(stateDirectory: location.stateDirectory, key: location.key, create: create)
        } catch {
            throw CLIFailure(vaultError: error)
        }
    }
}

/// The fleet's database for one command: the store runs for the length of `body`.
enum FleetStoreAccess {
    /// Opens the database that `settings` names (its URL from the environment when `{env: NAME}`), runs
    /// `body`, and closes it; failures become CLI failures.
    static func with<T: Sendable>(
        _ settings: PostgresStoreSettings, key: MasterKeySource, create: Bool, seed: VaultKeys? = nil,
        _ body: @Sendable (PostgresStore) async throws -> T
    ) async throws -> T {
        let url: DatabaseURL
        do {
            url = try settings.url.resolve(environment: ProcessInfo.processInfo.environment)
        } catch {
            throw CLIFailure.usage("store.postgres.url: \(error)")
        }
        // Failures reach the user as the command's error; the store's own lines (reachability) would repeat them.
        let logger = Logger(label: "sessionkeeper.store") { _ in SwiftLogNoOpLogHandler() }
        try VaultAccess.protectProcess()
        do {
            let store = try PostgresStore(
                url: url, settings: settings, key: key, environment: VaultAccess.environment(for: key), logger: logger)
            return try await PostgresStore.withRunning(store, createIfMissing: create, seed: seed, body)
        } catch let error as PostgresStoreError {
            throw CLIFailure(storeError: error)
        }
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

    /// The session the vault holds for `site`, for a client when no daemon answers, after ``protectProcess()``.
    static func storedSession(site: SiteDefinition, config: DaemonConfig) async throws -> SessionRecord {
        try protectProcess()
        if case let .postgres(settings) = config.store {
            let record = try await FleetStoreAccess.with(settings, key: MasterKeySource(config.vault.key), create: false) { store in
                do {
                    return try await VaultSessionStore(items: store.items).load(site: site.name)
                } catch {
                    throw CLIFailure.failed("\(error)")
                }
            }
            guard let record else {
                throw CLIFailure.failed(
                    "no session of site '\(site.name)' is stored in the fleet's database; start a keeper ('sessionkeeper run')")
            }
            return record
        }
        return try await StoredSession.load(
            site: site, config: config, environment: environment(for: MasterKeySource(config.vault.key)))
    }

    /// Opens (with `create`, creates when missing) the vault in `stateDirectory`, after ``protectProcess()``.
    static func open(stateDirectory: String, key: MasterKeySource, create: Bool) throws -> Vault {
        try protectProcess()
        return try Vault.open(stateDirectory: stateDirectory, key: key, createIfMissing: create, environment: environment(for: key))
    }
}

extension CLIFailure {
    /// A store error as a CLI failure: keys, configuration and a missing vault are usage errors (exit 2), an
    /// unreachable database or a refused statement operation failures (exit 1). Never shows a password.
    init(storeError error: PostgresStoreError) {
        switch error.kind {
        case let .vault(reason):
            let code = CLIFailure(vaultError: VaultError(reason)).code
            self = CLIFailure(message: error.description, code: code)
        case .configuration, .schemaTooNew, .unsupported:
            self = .usage(error.description)
        default:
            self = .failed(error.description)
        }
    }

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
