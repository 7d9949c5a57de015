import Credentials
import CurlTransport
import Foundation
import Logging
import PostgresStore
import Sessions
import SiteConfig
import Vault

/// The real parts behind the one login path, put together the same way for `login`, `probe` and the daemon: the
/// store (the vault folder, created on first use, or in fleet mode the fleet's database), the libcurl client, and
/// a ``SiteLogin`` over them whose credentials come from the store, the environment, private files and commands.
public struct LoginWiring: Sendable {
    /// Where sessions and secrets live.
    public enum Store: Sendable {
        case vault(Vault)
        /// Fleet mode: not yet running nor open; the daemon runs it in its ``FleetService``.
        case fleet(PostgresStore)
    }

    public let store: Store
    public let client: CurlHTTPClient
    public var login: SiteLogin

    /// Opens the vault (or makes the fleet's store) and starts the client. Call ``close()`` when done.
    /// - Parameters:
    ///   - environment: the process's environment, without a passphrase variable: where credentials'
    ///     `{env: NAME}` and the database URL's `{env: NAME}` are looked up.
    ///   - keyEnvironment: the environment the master key is read with (a `passphrase_env` variable's value is
    ///     in it after the process took it out of its own environment).
    ///   - logger: the fleet store's log (its reachability), in fleet mode.
    ///   - credentialOutput: receives credential commands' stderr lines, already masked by the resolver.
    public static func open(
        _ config: DaemonConfig, environment: [String: String], keyEnvironment: [String: String], logger: Logger? = nil,
        credentialOutput: @escaping CredentialResolver.StandardErrorSink
    ) throws(AssemblyError) -> LoginWiring {
        let key = MasterKeySource(config.vault.key)
        let store: Store
        switch config.store {
        case .vaultFolder:
            do {
                store = .vault(try Vault.open(
                    stateDirectory: config.stateDirectory, key: key, createIfMissing: true, environment: keyEnvironment))
            } catch {
                throw .vault(error)
            }
        case let .postgres(settings):
            store = .fleet(try fleetStore(settings, key: key, environment: environment, keyEnvironment: keyEnvironment, logger: logger))
        }
        let client: CurlHTTPClient
        do {
            client = try CurlHTTPClient()
        } catch {
            if case .vault(let vault) = store { vault.close() }
            throw .httpClient("\(error)")
        }
        let secrets: any ItemStore
        let sessions: any SessionStore
        switch store {
        case .vault(let vault):
            secrets = vault.background
            sessions = VaultSessionStore(vault: vault)
        case .fleet(let database):
            secrets = database.items
            sessions = VaultSessionStore(items: database.items)
        }
        let resolver = CredentialResolver(secrets: secrets, environment: environment, standardError: credentialOutput)
        let login = SiteLogin(
            client: client, store: sessions, credentials: { ResolverCredentialProvider(resolver: resolver, site: $0) })
        return LoginWiring(store: store, client: client, login: login)
    }

    /// The fleet's database as config.yaml names it, not yet running.
    private static func fleetStore(
        _ settings: PostgresStoreSettings, key: MasterKeySource, environment: [String: String], keyEnvironment: [String: String],
        logger: Logger?
    ) throws(AssemblyError) -> PostgresStore {
        let url: DatabaseURL
        do {
            url = try settings.url.resolve(environment: environment)
        } catch {
            throw .databaseURL(error)
        }
        do {
            return try PostgresStore(
                url: url, settings: settings, key: key, environment: keyEnvironment, logger: logger ?? Logger(label: "sessionkeeper.store"))
        } catch {
            throw .store(error)
        }
    }

    /// Stops the client and closes the vault (the fleet's store is closed by its service).
    public func close() {
        client.shutdown()
        if case .vault(let vault) = store { vault.close() }
    }
}
