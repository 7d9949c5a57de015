import Daemon
import Foundation
import Logging
import Platform
import PostgresStore
import ServiceLifecycle
import Sessions
import SiteConfig
import Vault

/// The store config.yaml names (`store:`), opened once: the vault folder under `state_dir`, or in fleet mode a
/// fleet's PostgreSQL database (SPEC section 11). It hands out what its users need (the items, the sessions, the
/// change feed, who may run a site, and in fleet mode the lease service) and does what differs between the two
/// (key management, `store migrate`), so that neither the CLI's commands nor the daemon ask which one it is. The
/// database URL is resolved here and nowhere else.
public final class StoreBackend: Sendable {
    private enum Place: Sendable {
        case folder(Vault)
        /// Not yet running nor open: the daemon runs it in its lease service, ``withOpen(_:create:environment:keyEnvironment:_:)`` for a command.
        case database(PostgresStore, LeaseGate)
    }

    private let place: Place

    private init(place: Place) {
        self.place = place
    }

    /// Where the items of `config`'s store are, for messages: the vault folder's path, or the database's URL (never
    /// its password).
    public static func location(of config: DaemonConfig) -> String {
        switch config.store {
        case .vaultFolder: "\(config.stateDirectory)/vault"
        case let .postgres(settings): "the database of \(settings.url)"
        }
    }

    /// Opens the store `config` names: the vault folder (with `create`, made when missing, and its key file),
    /// or the fleet's database, not yet running. Call ``close()`` when done.
    /// - Parameters:
    ///   - environment: the process's environment without a passphrase variable: the database URL's `{env: NAME}`
    ///     is looked up there.
    ///   - keyEnvironment: the environment the master key is read with.
    ///   - logger: the database's log (its reachability); nil for a command, whose error says it all.
    public static func open(
        _ config: DaemonConfig, create: Bool, environment: [String: String], keyEnvironment: [String: String], logger: Logger? = nil
    ) throws(AssemblyError) -> StoreBackend {
        let key = MasterKeySource(config.vault.key)
        switch config.store {
        case .vaultFolder:
            do {
                let vault = try Vault.open(
                    stateDirectory: config.stateDirectory, key: key, createIfMissing: create, environment: keyEnvironment)
                return StoreBackend(place: .folder(vault))
            } catch {
                throw .vault(error)
            }
        case let .postgres(settings):
            let store = try database(settings, config: config, environment: environment, keyEnvironment: keyEnvironment, logger: logger)
            return StoreBackend(place: .database(store, LeaseGate()))
        }
    }

    /// The fleet's database `settings` name, not yet running: its URL resolved (`{env: NAME}` from
    /// `environment`), the only place that does.
    private static func database(
        _ settings: PostgresStoreSettings, config: DaemonConfig, environment: [String: String], keyEnvironment: [String: String],
        logger: Logger? = nil
    ) throws(AssemblyError) -> PostgresStore {
        let url: DatabaseURL
        do {
            url = try settings.url.resolve(environment: environment)
        } catch {
            throw .databaseURL(error)
        }
        // A command's failures reach the user as its error; the store's own lines (reachability) would repeat them.
        let logger = logger ?? Logger(label: "sessionkeeper.store") { _ in SwiftLogNoOpLogHandler() }
        do {
            return try PostgresStore(
                url: url, settings: settings, key: MasterKeySource(config.vault.key), environment: keyEnvironment, logger: logger)
        } catch {
            throw .store(error)
        }
    }

    /// Runs `body` with the database running and open (`create`: the schema made when missing; `seed`: the
    /// keyring a new vault gets), then closes it; its errors become ``AssemblyError/store(_:)``.
    private static func running<T: Sendable>(
        _ store: PostgresStore, create: Bool, seed: VaultKeys? = nil, _ body: @Sendable (PostgresStore) async throws -> T
    ) async throws -> T {
        do {
            return try await PostgresStore.withRunning(store, createIfMissing: create, seed: seed, body)
        } catch let error as PostgresStoreError {
            throw AssemblyError.store(error)
        }
    }

    /// Runs `body` with the store `config` names, open for its length, then closes it: for a command that uses
    /// the store once. `create` makes a new vault (the folder and its key file, or the database's schema) when
    /// there is none. Errors opening the store are ``AssemblyError``s; `body`'s pass through.
    public static func withOpen<T: Sendable>(
        _ config: DaemonConfig, create: Bool, environment: [String: String], keyEnvironment: [String: String],
        _ body: @Sendable (StoreBackend) async throws -> T
    ) async throws -> T {
        let backend = try open(config, create: create, environment: environment, keyEnvironment: keyEnvironment)
        switch backend.place {
        case .folder(let vault):
            defer { vault.close() }
            return try await body(backend)
        case .database(let store, _):
            return try await running(store, create: create) { _ in try await body(backend) }
        }
    }

    /// Closes the vault folder (the database is closed by whoever runs it: its lease service, or ``withOpen``).
    public func close() {
        if case .folder(let vault) = place { vault.close() }
    }

    // MARK: What its users need

    /// Sessions and secrets, as items: the vault folder's (on its I/O threads) or the database's.
    public var items: any ItemStore {
        switch place {
        case .folder(let vault): vault.background
        case .database(let store, _): store.items
        }
    }

    /// Every site's session, unfenced: what the CLI stores and reads, and what the keeper reads. A keeper of a
    /// fleet writes each session through the store its lease fences (``siteGate``).
    public var sessions: any SessionStore { VaultSessionStore(items: items) }

    /// Who may run a site now: every site here, or in fleet mode only under its lease (the lease service's gate).
    public var siteGate: any SiteGate {
        switch place {
        case .folder: OpenSiteGate()
        case .database(_, let gate): gate
        }
    }

    /// What other processes change in the store while the daemon runs: inotify on the vault folder, or the
    /// database's LISTEN/NOTIFY. Nil when the folder cannot be watched (logged: changes are then seen at each
    /// site's next check).
    public func changeFeed(logger: Logger) -> (any StoreChangeFeed)? {
        switch place {
        case .folder(let vault):
            do {
                return try VaultChangeFeed(vault: vault)
            } catch {
                logger.error(
                    "cannot watch the vault; secrets set and sessions stored by other processes are seen at each site's next check",
                    metadata: ["error": "\(error)"])
                return nil
            }
        case .database(let store, _):
            return PostgresChangeFeed(store: store)
        }
    }

    /// Fleet mode's lease service for `keeper` (a `Service` the daemon runs before the keeper's: it runs and opens
    /// the database and drives ``siteGate``); nil for the vault folder, which needs none.
    public func leaseService(for keeper: Keeper, logger: Logger) -> FleetService? {
        guard case .database(let store, let gate) = place else { return nil }
        return FleetService(store: store, gate: gate, keeper: keeper, logger: logger)
    }

    /// Refuses a login outside the daemon (`login`, `probe`) when sites run under a fleet's leases: it would run
    /// beside the keeper holding the site, two logins at once.
    public static func checkLoginOutsideDaemon(_ config: DaemonConfig) throws(AssemblyError) {
        if case .postgres = config.store { throw .loginOutsideLeases }
    }

    // MARK: Key management and migration

    /// `vault init`: a new vault, unlocked by config.yaml's `vault.key` (a key file named there and missing is
    /// made). A database that keeps no keyring of it afterwards (another vault is there, or it cannot be reached)
    /// has the key file made for it removed again, so a failed init leaves no key behind that unlocks nothing.
    public static func initializeVault(_ config: DaemonConfig, environment: [String: String], keyEnvironment: [String: String]) async throws {
        let key = MasterKeySource(config.vault.key)
        guard case let .postgres(settings) = config.store else {
            do {
                try Vault.initialize(stateDirectory: config.stateDirectory, key: key, environment: keyEnvironment).close()
            } catch {
                throw AssemblyError.vault(error)
            }
            return
        }
        var madeKeyFile: String?
        if case let .keyFile(path) = key, !Syscall.exists(path) {
            do {
                try VaultKey.createKeyFile(at: path)
            } catch {
                throw AssemblyError.vault(error)
            }
            madeKeyFile = path
        }
        do {
            let store = try database(settings, config: config, environment: environment, keyEnvironment: keyEnvironment)
            guard try await running(store, create: true, { $0.storedKeyring }) else { throw AssemblyError.vault(VaultError(.alreadyInitialized)) }
        } catch {
            if let madeKeyFile { _ = try? Syscall.unlinkIfPresent(madeKeyFile) }
            throw error
        }
    }

    /// `vault rekey`: the master keys sealed under `newSource` (a key file it names is made, and must not exist);
    /// no item is re-encrypted.
    public func rekey(to newSource: MasterKeySource, environment: [String: String]) async throws(AssemblyError) {
        do {
            if case let .keyFile(path) = newSource { try VaultKey.createKeyFile(at: path) }
        } catch {
            throw .vault(error)
        }
        switch place {
        case .folder(let vault):
            do { try vault.rekey(to: newSource, environment: environment) } catch { throw .vault(error) }
        case .database(let store, _):
            do { try await store.rekey(to: newSource) } catch { throw .store(error) }
        }
    }

    /// Who must point `vault.key` at a new key after ``rekey(to:environment:)``: this machine, or every keeper.
    public var keyHolders: String {
        switch place {
        case .folder: "config.yaml"
        case .database: "config.yaml on every keeper"
        }
    }

    /// `vault rotate`: every item re-encrypted under a new master key. The vault folder's only: a fleet's
    /// database does not rotate (docs/FLEET.md, "What the store does not do").
    public func rotate() throws(AssemblyError) -> RotationSummary {
        guard case .folder(let vault) = place else {
            throw .unsupported(
                "vault rotate re-encrypts the vault folder's items; with store: postgres (fleet mode) it is not available "
                    + "(docs/FLEET.md, \"What the store does not do\")")
        }
        do { return try vault.rotate() } catch { throw .vault(error) }
    }

    /// `store migrate`: the state folder's vault copied into the database config.yaml names, or with `toFolder`
    /// the database's into the state folder. Needs `store: {postgres: ...}`.
    public static func migrate(
        _ config: DaemonConfig, toFolder: Bool, environment: [String: String], keyEnvironment: [String: String]
    ) async throws -> MigrationSummary {
        guard case let .postgres(settings) = config.store else {
            throw AssemblyError.unsupported("config.yaml has no store: {postgres: ...}; store migrate needs the database to copy to or from")
        }
        let key = MasterKeySource(config.vault.key)
        let store = try database(settings, config: config, environment: environment, keyEnvironment: keyEnvironment)
        if toFolder {
            return try await running(store, create: false) { store in
                do {
                    return try await StoreMigration.copy(from: store, toFolder: config.stateDirectory, key: key)
                } catch {
                    throw AssemblyError.vault(error)
                }
            }
        }
        let vault: Vault
        do {
            vault = try Vault.open(stateDirectory: config.stateDirectory, key: key, environment: keyEnvironment)
        } catch {
            throw AssemblyError.vault(error)
        }
        defer { vault.close() }
        let seed: VaultKeys
        do { seed = try vault.keys() } catch { throw AssemblyError.vault(error) }
        return try await running(store, create: false, seed: seed) { store in
            do {
                return try await StoreMigration.copy(from: vault, to: store, seeded: store.storedKeyring)
            } catch {
                throw AssemblyError.vault(error)
            }
        }
    }
}
