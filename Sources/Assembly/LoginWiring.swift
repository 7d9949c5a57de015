import Credentials
import CurlTransport
import Foundation
import Logging
import Sessions
import SiteConfig
import Vault

/// The real parts behind the one login path, put together the same way for `login`, `probe` and the daemon: the
/// store config.yaml names (``StoreBackend``: the vault folder, created on first use, or in fleet mode the fleet's
/// database), the libcurl client, and a ``SiteLogin`` over them whose credentials come from the store, the
/// environment, private files and commands.
public struct LoginWiring: Sendable {
    public let store: StoreBackend
    public let client: CurlHTTPClient
    public var login: SiteLogin

    /// Opens the store (the vault folder is made when missing; the fleet's database is not yet running) and
    /// starts the client. Call ``close()`` when done.
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
        let store = try StoreBackend.open(config, create: true, environment: environment, keyEnvironment: keyEnvironment, logger: logger)
        let client: CurlHTTPClient
        do {
            client = try CurlHTTPClient()
        } catch {
            store.close()
            throw .httpClient("\(error)")
        }
        let resolver = CredentialResolver(secrets: store.items, environment: environment, standardError: credentialOutput)
        let login = SiteLogin(
            client: client, store: store.sessions, credentials: { ResolverCredentialProvider(resolver: resolver, site: $0) })
        return LoginWiring(store: store, client: client, login: login)
    }

    /// Stops the client and closes the vault (the fleet's store is closed by its service).
    public func close() {
        client.shutdown()
        store.close()
    }
}
