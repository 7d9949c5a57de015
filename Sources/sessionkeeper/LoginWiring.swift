import Credentials
import CurlTransport
import Sessions
import SiteConfig
import Vault

/// The real parts behind the one login path, put together the same way for `login` and `run`: the vault
/// (created on first use), the libcurl client, and a ``SiteLogin`` over them whose credentials come from
/// the vault, the environment, private files and commands.
struct LoginWiring {
    let vault: Vault
    let client: CurlHTTPClient
    let login: SiteLogin

    /// Opens the vault and starts the client; `credentialOutput` receives credential commands' stderr
    /// lines, already masked by the resolver. Call ``close()`` when done.
    static func open(
        _ config: DaemonConfig, credentialOutput: @escaping CredentialResolver.StandardErrorSink
    ) throws -> LoginWiring {
        let vault: Vault
        do {
            vault = try VaultAccess.open(stateDirectory: config.stateDirectory, key: MasterKeySource(config.vault.key), create: true)
        } catch {
            throw CLIFailure(vaultError: error)
        }
        let client: CurlHTTPClient
        do {
            client = try CurlHTTPClient()
        } catch {
            vault.close()
            throw CLIFailure.failed("cannot start the HTTP client: \(error)")
        }
        let resolver = CredentialResolver(secrets: vault.background, standardError: credentialOutput)
        let login = SiteLogin(
            client: client, store: VaultSessionStore(vault: vault),
            credentials: { ResolverCredentialProvider(resolver: resolver, site: $0) })
        return LoginWiring(vault: vault, client: client, login: login)
    }

    /// ``open(_:credentialOutput:)`` for a command that shows a run as it goes (`login`, `probe`): credential
    /// commands' output goes to `progress` (the resolver masks their own output first), and with `-vv` the
    /// login path traces every exchange.
    static func open(_ config: DaemonConfig, progress: LoginProgress) throws -> LoginWiring {
        let wiring = try open(config, credentialOutput: progress.credentialOutput)
        var login = wiring.login
        login.tracesExchanges = progress.verbosity >= 2
        return LoginWiring(vault: wiring.vault, client: wiring.client, login: login)
    }

    /// Stops the client and closes the vault.
    func close() {
        client.shutdown()
        vault.close()
    }
}
