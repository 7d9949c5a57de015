import Credentials
import CurlTransport
import Foundation
import Logging
import PostgresStore
import Sessions
import SiteConfig
import Vault

/// The real parts behind the one login path, put together the same way for `login` and `run`: the store
/// (the vault folder, created on first use, or in fleet mode the fleet's database), the libcurl client, and a
/// ``SiteLogin`` over them whose credentials come from the store, the environment, private files and commands.
struct LoginWiring {
    /// Where sessions and secrets live.
    enum Store {
        case vault(Vault)
        /// Fleet mode: not yet running nor open; `run` runs it in its ``Daemon/FleetService``.
        case fleet(PostgresStore)
    }

    let store: Store
    let client: CurlHTTPClient
    let login: SiteLogin

    /// Opens the vault and starts the client; `credentialOutput` receives credential commands' stderr
    /// lines, already masked by the resolver. Call ``close()`` when done.
    /// - Parameter logger: the fleet store's log (its reachability), in fleet mode.
    static func open(
        _ config: DaemonConfig, logger: Logger? = nil, credentialOutput: @escaping CredentialResolver.StandardErrorSink
    ) throws -> LoginWiring {
        let store: Store
        switch config.store {
        case .vaultFolder:
            do {
                store = .vault(try VaultAccess.open(stateDirectory: config.stateDirectory, key: MasterKeySource(config.vault.key), create: true))
            } catch {
                throw CLIFailure(vaultError: error)
            }
        case let .postgres(settings):
            store = .fleet(try fleetStore(settings, key: MasterKeySource(config.vault.key), logger: logger))
        }
        let client: CurlHTTPClient
        do {
            client = try CurlHTTPClient()
        } catch {
            if case .vault(let vault) = store { vault.close() }
            throw CLIFailure.failed("cannot start the HTTP client: \(error)")
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
        let resolver = CredentialResolver(secrets: secrets, standardError: credentialOutput)
        let login = SiteLogin(
            client: client, store: sessions, credentials: { ResolverCredentialProvider(resolver: resolver, site: $0) })
        return LoginWiring(store: store, client: client, login: login)
    }

    /// The fleet's database as config.yaml names it, not yet running.
    private static func fleetStore(_ settings: PostgresStoreSettings, key: MasterKeySource, logger: Logger?) throws -> PostgresStore {
        let url: DatabaseURL
        do {
            url = try settings.url.resolve(environment: ProcessInfo.processInfo.environment)
        } catch {
            throw CLIFailure.usage("store.postgres.url: \(error)")
        }
        do {
            return try PostgresStore(
                url: url, settings: settings, key: key, environment: VaultAccess.environment(for: key),
                logger: logger ?? Logger(label: "sessionkeeper.store"))
        } catch {
            throw CLIFailure(storeError: error)
        }
    }

    /// ``open(_:logger:credentialOutput:)`` for a command that shows a run as it goes (`login`, `probe`): credential
    /// commands' output goes to `progress` (the resolver masks their own output first), and with `-vv` the
    /// login path traces every exchange.
    static func open(_ config: DaemonConfig, progress: LoginProgress) throws -> LoginWiring {
        // A login outside the fleet's leases would run beside the keeper holding the site: two logins at once.
        if case .postgres = config.store {
            throw CLIFailure.usage(
                "config.yaml names a fleet's database (store: postgres): `login` and `probe` would run outside the fleet's "
                    + "leases, beside the keeper that holds the site; ask a running keeper instead (`sessionkeeper refresh SITE`: "
                    + "the keeper holding the site's lease logs in), or store a session with `sessionkeeper import`")
        }
        let wiring = try open(config, credentialOutput: progress.credentialOutput)
        var login = wiring.login
        login.tracesExchanges = progress.verbosity >= 2
        return LoginWiring(store: wiring.store, client: wiring.client, login: login)
    }

    /// Stops the client and closes the vault (the fleet's store is closed by its service).
    func close() {
        client.shutdown()
        if case .vault(let vault) = store { vault.close() }
    }
}
