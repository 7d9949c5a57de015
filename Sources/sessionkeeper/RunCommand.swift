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
import SocketAPI
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
            systemd, Type=notify is supported through NOTIFY_SOCKET. Clients read the cookies over the \
            socket API at socket.path (curl --unix-socket PATH http://localhost/v1/sites).
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
            let wiring = try LoginWiring.open(daemonConfig, credentialOutput: { site, credential, line in
                logger.info("credential command: \(line)", metadata: ["site": "\(site)", "credential": "\(credential)"])
            })
            defer { wiring.close() }
            let login = wiring.login
            let keeper = Keeper(login: login, settings: daemonConfig.scheduler, logger: logger)
            let storeChanges: VaultChangeFeed?
            do {
                storeChanges = try VaultChangeFeed(vault: wiring.vault)
            } catch {
                storeChanges = nil
                logger.error(
                    "cannot watch the vault; secrets set and sessions stored by other processes are seen at each site's next check",
                    metadata: ["error": "\(error)"])
            }
            let service = KeeperService(
                configPath: path, config: daemonConfig, loader: loader, keeper: keeper, notifier: ServiceNotifier(),
                logger: logger, storeChanges: storeChanges)
            // The socket is the last service: on shutdown it stops first, so no client is answered by a keeper
            // that has stopped.
            let socket = SocketServer(
                settings: daemonConfig.socket, metricsEnabled: daemonConfig.metrics, keeper: keeper,
                reload: { service.reload() }, logger: logger)
            do throws(SocketFileError) {
                try socket.prepareSocketFile()
            } catch {
                throw CLIFailure.failed(error.description)
            }
            let group = ServiceGroup(configuration: .init(
                services: [service, socket], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            do {
                try await group.run()
            } catch {
                throw CLIFailure.failed("the daemon stopped: \(error)")
            }
        }
    }
}
