import ArgumentParser
import Credentials
import CurlTransport
import Daemon
import Foundation
import Logging
import Platform
import ServiceLifecycle
import Sessions
import SiteConfig
import Vault

/// `sessionkeeper run [--config config.yaml]` (SPEC section 7): the daemon, in the foreground. Stops
/// cleanly on SIGTERM or SIGINT; SIGHUP reloads config.yaml and every site.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Keep every site logged in (the daemon, in the foreground).",
        discussion: """
            Loads config.yaml and every site of sites_dir, restores each site's session from the vault (a \
            valid one is kept, not logged in again), and keeps them logged in: before the essential cookies \
            expire, at least every refresh.max_age, and when a check says the session died. Site files \
            added, changed or removed take effect at once; a file that fails to parse keeps its last good \
            definition. SIGHUP reloads config.yaml and every site; SIGTERM and SIGINT stop cleanly. Under \
            systemd, Type=notify is supported through NOTIFY_SOCKET. The socket API is not built yet: read \
            sessions with `sessionkeeper login` or the sites' outputs: files meanwhile.
            """
    )

    @OptionGroup var config: ConfigOptions

    func run() async throws {
        try await reportingFailures {
            let loader = ConfigurationLoader()
            let path = try config.locate(loader)
            let daemonConfig = try config.load(loader)
            LogFormat.bootstrap(daemonConfig.log)
            let logger = Logger(label: "sessionkeeper")

            // One daemon per state folder (SPEC section 6); the CLI's other commands share the vault freely.
            let daemonLock: StateFolderLock
            do {
                daemonLock = try StateFolderLock.acquire(stateDirectory: daemonConfig.stateDirectory)
            } catch {
                throw CLIFailure(vaultError: error)
            }
            defer { daemonLock.release() }
            let vault: Vault
            do {
                vault = try Vault.open(
                    stateDirectory: daemonConfig.stateDirectory, key: MasterKeySource(daemonConfig.vault.key),
                    createIfMissing: true)
            } catch {
                throw CLIFailure(vaultError: error)
            }
            defer { vault.close() }
            let client: CurlHTTPClient
            do {
                client = try CurlHTTPClient()
            } catch {
                throw CLIFailure.failed("cannot start the HTTP client: \(error)")
            }
            defer { client.shutdown() }

            let resolver = CredentialResolver(vault: vault, standardError: { site, credential, line in
                logger.info("credential command: \(line)", metadata: ["site": "\(site)", "credential": "\(credential)"])
            })
            let login = SiteLogin(
                client: client, store: VaultSessionStore(vault: vault),
                credentials: { ResolverCredentialProvider(resolver: resolver, site: $0) })
            let keeper = Keeper(login: login, settings: daemonConfig.scheduler, logger: logger)
            let service = KeeperService(
                configPath: path, config: daemonConfig, loader: loader, keeper: keeper, notifier: ServiceNotifier(),
                logger: logger)
            let group = ServiceGroup(configuration: .init(
                services: [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            do {
                try await group.run()
            } catch {
                throw CLIFailure.failed("the daemon stopped: \(error)")
            }
        }
    }
}
